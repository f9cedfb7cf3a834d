// PNG figures for READMEs: each figure page screenshot by headless Chromium.
//
// Chromium runs with a fresh temporary profile, no sandbox (it may run as
// root in containers), no GPU and every background network feature off; the
// pages themselves need no network. Each screenshot is one child process in
// its own process group, killed with the group when it exceeds its timeout.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace colo {

struct PngExportOptions {
  std::string browser;  // path of chromium / google-chrome; see find_browser()
  int width_px = 1000;  // window size: the figure pages are 1000x600
  int height_px = 600;
  int virtual_time_budget_ms = 3000;  // page time Chromium lets pass before the screenshot
  int timeout_ms = 60'000;            // per figure, wall clock
};

// The first of chromium, chromium-browser, google-chrome, google-chrome-stable
// on PATH; nullopt when none is.
std::optional<std::string> find_browser();

// What to tell a user without a browser.
std::string browser_missing_hint();

// Screenshots each page (an .html file) to `png_dir`/<page stem>.png and
// returns the PNG paths. Fails on the first page that yields no PNG, naming
// it and quoting the browser's last error lines.
Result<std::vector<std::string>> export_pngs(const std::vector<std::string>& pages,
                                             const std::string& png_dir,
                                             const PngExportOptions& options);

// Loads `page` in the browser and checks that every chart on it (each
// data-figure element) drew (data-rendered="yes"); the error names each chart
// that did not and why ("its script did not run", or the chart's error). A
// screenshot of a chart that did not draw is blank: this is how the PNG step
// knows.
Status verify_charts_drawn(const PngExportOptions& options, const std::string& page);

// Runs the browser headless on `url` with the options above plus `extra_args`
// (e.g. "--dump-dom") and returns its stdout. For tests and for export_pngs.
Result<std::string> run_headless_browser(const PngExportOptions& options,
                                         const std::vector<std::string>& extra_args,
                                         const std::string& url);

}  // namespace colo
