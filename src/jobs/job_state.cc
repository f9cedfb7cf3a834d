#include "jobs/job_state.h"

#include <array>
#include <utility>

namespace colo {
namespace {

constexpr std::array<std::pair<JobState, const char*>, 8> kNames = {{
    {JobState::kQueued, "queued"},
    {JobState::kRunning, "running"},
    {JobState::kOk, "ok"},
    {JobState::kFailed, "failed"},
    {JobState::kOutOfMemory, "oom"},
    {JobState::kKilled, "killed"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kInterrupted, "interrupted"},
}};

}  // namespace

std::string to_string(JobState state) {
  for (const auto& [s, name] : kNames) {
    if (s == state) return name;
  }
  return "unknown";
}

Result<JobState> parse_job_state(std::string_view text) {
  for (const auto& [s, name] : kNames) {
    if (text == name) return s;
  }
  return Error("unknown job state '" + std::string(text) + "'");
}

bool is_final(JobState state) { return state != JobState::kQueued && state != JobState::kRunning; }

}  // namespace colo
