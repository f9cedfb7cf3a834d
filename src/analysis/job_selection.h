// `colo show --filter ... --sort ...`: which of a run's jobs to show, and in
// what order, by their grid parameters, their training metrics
// (training_metrics.h) and a few of their fields.
//
// A filter is NAME OP VALUE with OP one of = != < <= > >=. NAME is a grid
// parameter, a training metric (its best value), or one of: name, state,
// gpu, epochs, duration_s, samples_per_s. `=` and `!=` compare as numbers
// when both sides are numbers ("0.10" = "0.1"), else as text; the others
// need numbers. A job that lacks NAME (a metric it never reported) fails
// every filter on it.
//
// A sort key is a metric (by its best value, the best first: lowest first
// for a loss), a grid parameter (ascending, as numbers when all are), or a
// field above (ascending); jobs that lack it come last. `-KEY` reverses.
//
// Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/run_summary.h"
#include "common/result.h"

namespace colo {

struct JobFilter {
  enum class Op { kEq, kNe, kLt, kLe, kGt, kGe };
  std::string name;
  Op op = Op::kEq;
  std::string value;
  std::optional<double> number;  // `value` as a number, when it is one
  std::string text;              // as written, for messages
};

// Parses "lr=0.1", "loss<0.5", "state!=ok". An error says what was expected.
Result<JobFilter> parse_job_filter(std::string_view text);

// Keeps the jobs of `summary` that pass every filter, in the order of
// `sort_key` ("" keeps the run's order). An error, naming the names it
// knows, when a filter or the key names nothing the run's jobs have.
Status select_jobs(RunSummary& summary, const std::vector<JobFilter>& filters,
                   std::string_view sort_key);

// The metric the run's job files declared their objective ([objective]
// metric), when its jobs agree on one and some job reported it: `colo show`
// ranks by it when no --sort is given. "" otherwise.
std::string declared_objective(const RunSummary& summary);

// The order in which colo shows a run's jobs, wherever it lists them (`colo
// show`, the table `colo run` ends with): select_jobs() by `sort_key`, else
// by the declared objective (declared_objective()), else the run's order.
Status order_as_shown(RunSummary& summary, const std::vector<JobFilter>& filters = {},
                      std::string_view sort_key = "");

}  // namespace colo
