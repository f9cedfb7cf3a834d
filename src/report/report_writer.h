// `colo report`: which run or experiment to report on, and writing the whole
// report (HTML, figure pages, CSV, summary, PNGs) for it from the store.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "report/html_report.h"
#include "store/run_store.h"

namespace colo {

struct ReportTarget {
  enum class Kind {
    kRun,         // one `colo run`
    kExperiment,  // one `colo bench`
    kLatest,      // the most recent experiment, else the most recent run
  };
  Kind kind = Kind::kLatest;
  int64_t id = 0;  // 0: the most recent of its kind
};

// "run:ID", "exp:ID", a bare number (a run id), "last-run", "last-exp", "last"
// (or empty: the same as "last"). Errors say which forms are accepted.
Result<ReportTarget> parse_report_target(std::string_view text);

struct ReportOptions {
  std::string out_dir;                 // required
  bool png = true;                     // screenshot each figure when a browser is found
  std::optional<std::string> browser;  // overrides find_browser()
  // Told each step as it starts ("rendering PNG 3 of 12"), for a progress
  // line; may be empty.
  std::function<void(const std::string&)> progress;
};

struct ReportOutcome {
  std::string description;  // "experiment #3 (paper-uniform)" or "run #2 (mps)"
  WrittenReport files;
  std::vector<std::string> pngs;
  // Why there are no PNGs (asked not to; no browser), or "" when they were made.
  std::string png_note;
};

// What the targets name as report content (sections, figures, tables), and
// how it is described ("run #2 (mps)"): what write_report writes, and what
// colo serve's dashboard shows for a run. Reads the store only.
struct BuiltReport {
  std::string description;
  ReportContent content;
};
Result<BuiltReport> build_report(RunStore& store, const std::vector<ReportTarget>& targets);

// Reads what `target` names from the store and writes its report into
// options.out_dir. A browser that fails is an error (the HTML and CSV are
// written by then and the message says so); a missing browser is not (see
// png_note).
Result<ReportOutcome> write_report(RunStore& store, const ReportTarget& target,
                                   const ReportOptions& options);

// One report over several targets: experiments only (their cases together,
// so that every guideline can get a verdict on one page), or one target as above.
Result<ReportOutcome> write_report(RunStore& store, const std::vector<ReportTarget>& targets,
                                   const ReportOptions& options);

}  // namespace colo
