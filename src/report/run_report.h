// The report of one run (`colo report RUN`) and of two runs compared
// (`colo report A B`). Pure.
#pragma once

#include <string>

#include "report/case_metrics.h"
#include "report/figures.h"
#include "report/run_comparison.h"

namespace colo {

// One run: its totals, the per-job table and each job's second epoch, what
// the jobs learned (a chart per metric, the grid parameters against each
// metric's best), and memory, SM activity, utilization, power and PCIe over
// time. `run_summary_text` (format_run_summary) opens summary.txt, the
// steady state's figures follow.
ReportContent run_report(const RunMetrics& metrics, const std::string& run_summary_text);

// Two runs: the comparison's tables (compare_runs()), then what the jobs of
// both learned on shared charts, each job named by its run ("#3 lr-sweep:
// job"). summary.txt is format_run_comparison()'s text.
ReportContent comparison_report(const RunComparison& comparison, const RunMetrics& a,
                                const RunMetrics& b);

}  // namespace colo
