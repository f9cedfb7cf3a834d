#include "store/run_filter.h"

#include <fmt/format.h>

#include <algorithm>

namespace colo {

bool RunFilter::matches(const RunRow& run, const std::vector<SubmissionRow>& submissions) const {
  if (state && run.state != *state) return false;
  for (const auto& [key, value] : tags) {
    auto it = run.label.tags.find(key);
    if (it == run.label.tags.end() || (value && it->second != *value)) return false;
  }
  if (name.empty() || run.label.name == name) return true;
  return std::any_of(submissions.begin(), submissions.end(),
                     [&](const SubmissionRow& s) { return s.label.name == name; });
}

Result<RunFilter> parse_run_filter(std::string name, const std::vector<std::string>& tags,
                                   const std::optional<std::string>& state) {
  RunFilter filter;
  filter.name = std::move(name);
  for (const std::string& tag : tags) {
    const size_t eq = tag.find('=');
    const std::string key = tag.substr(0, eq);
    if (key.empty()) {
      return Error(
          fmt::format("--tag '{}': give KEY or KEY=VALUE (a tag's key is not empty)", tag));
    }
    filter.tags.emplace_back(
        key, eq == std::string::npos ? std::nullopt : std::optional(tag.substr(eq + 1)));
  }
  if (state) {
    Result<RunState> s = parse_run_state(*state);
    if (!s.ok()) {
      return Error(
          fmt::format("--state '{}': give running, ok, failed, cancelled or interrupted", *state));
    }
    filter.state = *s;
  }
  return filter;
}

}  // namespace colo
