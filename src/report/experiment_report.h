// The report of an experiment, or of several as one (`colo report exp:ID
// ...`): the paper's figures where it has their cases, its tables, every
// case, and the five guidelines checked against the data. Pure.
#pragma once

#include "report/case_metrics.h"
#include "report/figures.h"

namespace colo {

// The guidelines first; then per workload of the uniform suites Fig. 2-4
// (time per epoch, SM activity, memory), the speed-up and Fig. 6 (energy per
// epoch), with Fig. 5 and 7 (PCIe and power over time) for the first;
// Fig. 8-9 for mixed workloads, Table 2 for a recommender; the table of
// every case. summary.txt: one line per configuration, then the guidelines.
ReportContent experiment_report(const ExperimentMetrics& metrics);

}  // namespace colo
