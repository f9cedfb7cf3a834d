// JobState and JobExit: how a job stands and how it ended. Every job ends in
// a final state, recorded in the store.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace colo {

// How a job ended. Every job ends in one of these, recorded in the store.
enum class JobState {
  kQueued,
  kRunning,
  kOk,           // exit code 0
  kFailed,       // non-zero exit code, or could not start (reason says which)
  kOutOfMemory,  // GPU out of memory, detected from the job's log
  kKilled,       // ended by a signal colo did not send
  kCancelled,    // stopped by colo (Ctrl-C, or the run was cancelled)
  kInterrupted,  // colo itself died while the job ran (found on next start)
};

// "queued", "running", "ok", "failed", "oom", "killed", "cancelled", "interrupted".
std::string to_string(JobState state);
Result<JobState> parse_job_state(std::string_view text);
bool is_final(JobState state);

struct JobExit {
  JobState state = JobState::kFailed;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string
      reason;  // one line for people: "exit code 1", "CUDA out of memory (log line 88)", ...
};

}  // namespace colo
