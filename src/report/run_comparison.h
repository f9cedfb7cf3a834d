// Two runs or submissions side by side (`colo show A B`, `colo report A B`):
// what the comparison holds, and its text. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/run_summary.h"

namespace colo {

// Two runs side by side: their state, label, jobs, makespan, throughput and
// energy, with B over A, and the best value of `metric` and which job had
// it, when `metric` is not ""; then their jobs matched by name (A's in its
// order, then those only B has): each one's state in both and, with
// `metric`, its best value in both and the change from A to B ("better" or
// "worse" by the metric's goal).
struct RunComparison {
  std::string title_a;  // "#3", "#3 lr-sweep", a submission's "#3/2"
  std::string title_b;
  bool simulated = false;
  std::string metric;
  bool lower = false;                           // lower `metric` is better
  std::vector<std::vector<std::string>> facts;  // what, A, B, B over A ("" or "-")
  std::vector<std::string> job_header;          // JOB, PARAMS, both states[, metric A, B, CHANGE]
  std::vector<std::vector<std::string>> jobs;   // one row per job name, as job_header
  size_t in_both = 0;
  size_t only_a = 0;
  size_t only_b = 0;
};
RunComparison compare_runs(const RunSummary& a, const RunSummary& b, std::string_view metric);

// `colo show A B`: the comparison as text (its summary.txt in `colo report A B`).
std::string format_run_comparison(const RunComparison& c);

}  // namespace colo
