// What a `colo report` page shows, independent of how it is written: the
// paper's figures (as ECharts options) for an experiment, or the per-job view
// of one run, each with the table of numbers behind it. Pure functions.
//
// Every chart has a title saying what it shows, axis names with units and a
// caption in plain words; mechanisms keep one colour everywhere (exclusive
// grey, naive orange, mps blue, mig green); configurations that did not fit or
// were not run appear as labelled gaps; animation is off so a screenshot taken
// at any moment is complete.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/case_metrics.h"
#include "report/run_comparison.h"
#include "report/table.h"

namespace colo {

struct Figure {
  std::string name;       // file stem: figures/<name>.html, png/<name>.png, csv/<name>.csv
  std::string paper_ref;  // "Fig. 2a-4a", or "" when the paper has no such figure
  std::string title;
  std::string caption;    // what it shows and what to look for
  nlohmann::json option;  // the ECharts option
  Table data;             // every number drawn
  // A line chart of curves: the page offers a log-scale switch and a
  // smoothing slider (an exponential moving average, debiased, as
  // TensorBoard's), which redraw it; the CSV keeps the values as reported.
  bool curve_controls = false;
};

struct Section {
  std::string heading;
  std::string intro;
  std::vector<Figure> figures;
  std::vector<Table> tables;
  std::string preformatted;  // shown as-is (the guidelines), may be empty
  // Its long lines wrap (prose); false: they scroll sideways (text tables).
  bool preformatted_wraps = true;
};

struct ReportContent {
  std::string title;
  std::vector<std::string> facts;  // one line each under the title
  bool simulated = false;
  std::vector<Section> sections;
  std::string summary_text;  // summary.txt
};

// Colour of a mechanism in every chart ("#1f5fbf" for mps, ...).
std::string mechanism_color(const std::string& mechanism);

// The experiment's figures (Fig. 2-9 of the paper where it has the cases),
// Table 2 for a recommender workload, the table of all cases and the five
// guidelines.
ReportContent experiment_report(const ExperimentMetrics& metrics);

// One run: its totals, the per-job table and utilization, memory, power and
// PCIe over time. `run_summary_text` (format_run_summary) opens summary.txt.
ReportContent run_report(const RunMetrics& metrics, const std::string& run_summary_text);

// Two runs (`colo report A B`): the comparison's tables (compare_runs()),
// then what the jobs of both learned on shared charts, each job named by its
// run ("#3 lr-sweep: job"). summary.txt is format_run_comparison()'s text.
ReportContent comparison_report(const RunComparison& comparison, const RunMetrics& a,
                                const RunMetrics& b);

}  // namespace colo
