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
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/proc_stat.h"
#include "run/run_samples.h"

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
  // server may hang), until it reports progress again.
  int64_t after_fault_floor_ms = 5'000;
  // After a fault, a job silent for after_fault_floor_ms and its last gap,
  // whose processes used less than this share of one core (in %) over at
  // least after_fault_floor_ms, is stalled at once: a
  // client hung on a faulted MPS server sleeps (measured on an H100: in
  // futex_do_wait), while one that trains drives its GPU from the CPU.
  double after_fault_idle_cpu_pct = 2.0;
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

  // A fatal fault was seen on its GPU at `at_ms`: until it reports progress
  // made after_fault_floor_ms or more after that, a job that has reported progress before is
  // bounded by after_fault_floor_ms + multiple x its latest pace (the gap between its last two
  // reports, which leaves out the warm-up of a first epoch), not by its longest gap. A job that
  // reports again has run on past the fault.
  void fault_seen(UnixMillis at_ms);
  bool after_fault() const { return fault_ms_.has_value(); }
  // The CPU time (ms) its processes had used by `at_ms`, read while it is
  // watched after a fault (the first read after fault_seen is the baseline).
  void cpu_used(UnixMillis at_ms, int64_t cpu_ms);

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
  std::optional<UnixMillis> fault_ms_;
  struct CpuRead {
    UnixMillis at_ms = 0;
    int64_t cpu_ms = 0;
  };
  std::optional<CpuRead> fault_cpu_first_;  // since the fault
  std::optional<CpuRead> fault_cpu_last_;
  int64_t longest_gap_ms_ = 0;
  int64_t last_gap_ms_ = 0;  // between its last two reports (its start and its first)
  std::optional<int64_t> last_epoch_;
  std::optional<int64_t> last_epoch_ms_;
};

// What colo sees of a stalled job (`job_id`, on `gpus`), for its log and
// events: its processes' GPU memory and SM use in the latest process sample,
// its GPUs' latest SM activity, and the states and kernel wait channels of
// the processes of its group (`group`: process_group_states()). Pure.
std::string stall_evidence(int64_t job_id, const std::vector<int>& gpus,
                           const std::map<int, std::vector<EngineProcess>>& processes,
                           const std::map<int, std::deque<DeviceSample>>& recent_samples,
                           const std::vector<ProcessState>& group);

}  // namespace colo
