// A run's profiling windows (docs/profiling.md) as `colo show`, `colo report`
// and the dashboard's run page show them: each profiled job's windows (read
// from its profile directory), and each job's kernel time per family alone
// on its GPU against beside others (profiling/interference.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/run_summary.h"
#include "profiling/windows.h"
#include "report/figures.h"
#include "store/run_store.h"

namespace colo {

struct RunProfiling {
  std::vector<JobWindows> jobs;  // the jobs with windows, in the summary's order
  std::vector<int64_t> job_ids;  // theirs
  // The interference table: text for `colo show` ("" when no job has a
  // window alone and one beside others), and the same as a JSON array.
  std::string interference_text;
  nlohmann::json interference = nlohmann::json::array();
};

// The windows of `summary`'s jobs, as their profile directories hold them, and
// the interference table; a signature with no window alone in this run takes
// one of another run of `store`. What could not be read (a summary that does
// not parse, a kernels file gone) is named in `problems`.
RunProfiling run_profiling(RunStore& store, const RunSummary& summary,
                           std::vector<std::string>& problems);

// The report's section: a table of every window (its job, figures, top op
// and a link to its trace) and the interference table; none without windows.
std::optional<Section> profiling_section(const RunProfiling& profiling);

}  // namespace colo
