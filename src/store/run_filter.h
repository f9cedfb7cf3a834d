// RunFilter: which recorded runs `colo runs` lists when asked for some of
// them (--name, --tag, --state): a run matches when every given criterion
// holds. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "store/rows.h"

namespace colo {

struct RunFilter {
  // The run's name, or the name of one of its named submissions (a
  // service's run), exactly; "" matches any.
  std::string name;
  // Each (key, value): the run has tag `key`, with that value when given.
  std::vector<std::pair<std::string, std::optional<std::string>>> tags;
  std::optional<RunState> state;

  bool any() const { return !name.empty() || !tags.empty() || state.has_value(); }
  // Whether `run` (with its named submissions) matches.
  bool matches(const RunRow& run, const std::vector<SubmissionRow>& submissions) const;
};

// A filter from the command line's values: tags as KEY or KEY=VALUE, a state
// by its name. Errors name the flag and what it takes.
Result<RunFilter> parse_run_filter(std::string name, const std::vector<std::string>& tags,
                                   const std::optional<std::string>& state);

}  // namespace colo
