#include "store/rows.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace colo {
namespace {

constexpr std::array<std::pair<RunState, const char*>, 5> kRunStateNames = {{
    {RunState::kRunning, "running"},
    {RunState::kOk, "ok"},
    {RunState::kFailed, "failed"},
    {RunState::kCancelled, "cancelled"},
    {RunState::kInterrupted, "interrupted"},
}};

}  // namespace

std::string to_string(RunState state) {
  for (const auto& [s, name] : kRunStateNames) {
    if (s == state) return name;
  }
  return "unknown";
}

Result<RunState> parse_run_state(std::string_view text) {
  for (const auto& [s, name] : kRunStateNames) {
    if (text == name) return s;
  }
  return Error(fmt::format(
      "unknown run state '{}'; expected running, ok, failed, cancelled or interrupted", text));
}

}  // namespace colo
