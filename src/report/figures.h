// What a `colo report` page shows, independent of how it is written
// (html_report.h writes it): sections of figures (each an ECharts option,
// echarts.h) and tables, each figure with the table of numbers behind it.
// The reports that fill it: experiment_report.h, run_report.h and, for a
// run's profiling windows, run_profiling.h.
//
// Every chart has a title saying what it shows, axis names with units and a
// caption in plain words.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

}  // namespace colo
