// StallWatch: whether a running job still makes progress (docs/reliability.md).
//
// A job that reports no progress (no event in its progress file, no line its
// epoch_regex or step_regex matches) for longer than its bound is stalled:
// an NCCL hang, a deadlocked data loader, a client stuck on a faulted MPS
// server. The bound is, in order:
//   - the job's own `stall_timeout` (0: never stalled);
//   - the run's default (`colo run/serve --stall-timeout`; 0: off);
//   - adaptive: floor_ms + multiple x the longest of its last epoch's time and
//     the longest gap between two of its progress reports in this attempt;
//     before its first report, before_progress_ms when the job is known to
//     report progress (it declares a regex, reported in an earlier attempt, or
//     its signature has a measured rate), else no bound (a job that never
//     says anything cannot be told from a stalled one).
//
// Pure: times are passed in (wall clock, UnixMillis). Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"

namespace colo {

struct StallOptions {
  // The bound of every job that sets no stall_timeout; nullopt: adaptive; 0: off.
  std::optional<int64_t> timeout_ms;
  // Adaptive: the bound is floor_ms + multiple x the job's longest progress gap.
  int64_t floor_ms = 60'000;
  double multiple = 3.0;
  // Adaptive, before a job's first progress report (if it is known to report).
  int64_t before_progress_ms = 900'000;  // 15 minutes
  // After a fatal fault on its GPU (fault_seen()), a job that has reported
  // progress is watched with this floor instead (a client of a faulted MPS
  // server hangs).
  int64_t after_fault_floor_ms = 5'000;
};

class StallWatch {
 public:
  // `own_timeout_ms`: the job's stall_timeout. `expects_progress`: the job is
  // known to report progress (see the file comment).
  StallWatch(UnixMillis started_ms, std::optional<int64_t> own_timeout_ms, bool expects_progress,
             const StallOptions& options);

  // A progress report seen at `at_ms`; an epoch end gives its epoch number and
  // how long the epoch took, when known.
  void progress(UnixMillis at_ms, std::optional<int64_t> epoch = std::nullopt,
                std::optional<int64_t> epoch_ms = std::nullopt);

  // A fatal fault was seen on its GPU: from now on, once it has reported
  // progress, its bound is after_fault_floor_ms + multiple x its longest gap.
  void fault_seen() { after_fault_ = true; }
  bool after_fault() const { return after_fault_; }

  // How long the job may now go without progress; nullopt: it is not watched.
  std::optional<int64_t> bound_ms() const;
  // Why it is stalled at `now_ms` ("stalled: no progress for 74 s after
  // epoch 2 (last epoch took 2.1 s)"); nullopt while it is not.
  std::optional<std::string> stalled(UnixMillis now_ms) const;
  // When it last reported progress (its start, before any report).
  UnixMillis last_progress_ms() const { return last_ms_; }
  bool reported() const { return reports_ > 0; }

 private:
  std::optional<int64_t> fixed_ms_;  // a set bound (own or the run's default); 0: off
  bool expects_progress_;
  StallOptions options_;
  UnixMillis started_ms_;
  UnixMillis last_ms_;
  int64_t reports_ = 0;
  bool after_fault_ = false;
  int64_t longest_gap_ms_ = 0;
  std::optional<int64_t> last_epoch_;
  std::optional<int64_t> last_epoch_ms_;
};

}  // namespace colo
