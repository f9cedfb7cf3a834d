// Writes a ReportContent to a directory:
//   DIR/index.html            the whole report in one file: ECharts (embedded in
//                             colo at build time), the data as JSON, no network
//   DIR/figures/<name>.html   one page per figure (1000x600, for PNGs); they
//                             share DIR/figures/echarts.min.js
//   DIR/csv/<name>.csv        every number behind each figure and table
//   DIR/summary.txt           the plain-text summary
// Charts use ECharts' SVG renderer, so a rendered chart is <svg> in the DOM.
// Existing files of the same names are replaced; other files are left alone.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "report/figures.h"

namespace colo {

// The ECharts build compiled into colo (third_party/echarts/echarts.min.js).
std::string_view echarts_js();

struct WrittenReport {
  std::string index_html;
  std::vector<std::string> figure_pages;  // DIR/figures/<name>.html, in report order
  std::vector<std::string> csv_files;
  std::string summary_txt;
};

// The self-contained page (index.html) as text.
std::string render_index_html(const ReportContent& content);

// One figure's page; it loads echarts.min.js from its own directory. The
// chart's subtitle carries SIMULATED where the data is simulated.
std::string render_figure_html(const Figure& figure);

// Creates DIR and its subdirectories and writes every file. Errors name the
// path that could not be written.
Result<WrittenReport> write_html_report(const ReportContent& content, const std::string& dir);

}  // namespace colo
