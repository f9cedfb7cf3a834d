// JobState and JobExit: how a job stands and how it ended. Every job ends in
// a final state, recorded in the store.
#pragma once

#include <cstdint>
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
  kStopped,      // stopped early by its sweep's [early_stop] rule: a result, not a failure
};

// "queued", "running", "ok", "failed", "oom", "killed", "cancelled",
// "interrupted", "stopped".
std::string to_string(JobState state);
Result<JobState> parse_job_state(std::string_view text);
bool is_final(JobState state);
// Ended as it should: ok, or stopped early by its rule (neither counts as
// not ok in a run's state or colo's exit code).
bool ended_well(JobState state);
bool ended_well(std::string_view state);

// What everything a job ran (its cgroup) used on the host; absent where
// colo could not measure it (no cgroup, or no memory controller).
struct JobUsage {
  std::optional<int64_t> cpu_ms;              // CPU time, all processes together
  std::optional<uint64_t> memory_peak_bytes;  // peak host memory of the cgroup
  std::optional<uint64_t> memory_max_bytes;   // its host memory limit, when it had one
  int64_t oom_kills = 0;                      // processes the kernel killed for that limit
};

struct JobExit {
  JobState state = JobState::kFailed;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string
      reason;  // one line for people: "exit code 1", "CUDA out of memory (log line 88)", ...
  JobUsage usage;
};

}  // namespace colo
