// InPlaceMeasurement: what colo measures of a job it has never seen, while
// the job runs where the auto policy placed it: alone on an idle GPU, or
// beside running jobs with a memory limit (docs/policy.md, "Cold start").
//
// The measurement lasts until the job's memory plateaus: after its first
// progress (a step or an epoch, where it reports them), its processes' peak
// memory has grown by no more than `plateau_growth` for `plateau_ms`. A job
// that reports no progress plateaus once its memory has been seen for
// `without_progress_ms` and held still. Then profile() is what the policy
// places its family by; it may be refined later (more rates seen).
//
//   memory       the peak of its processes' summed memory (NVML lists MPS
//                clients one by one)
//   SM activity  the GPU's while the job works (from its first progress,
//                until another job starts working beside it), less the
//                GPU's just before it started (`baseline`: the jobs already
//                there), with 30% uncertainty when there was a baseline; once
//                the last of them ended, the GPU's alone; when another job
//                started working beside it before it did, or one of several
//                neighbours ended, its share of the GPU's since, less the
//                baseline: divided among the jobs that started with or after
//                it and work (50% uncertainty)
//   rate         its own progress; measured beside other jobs it is slowed
//                by them, so it is no solo rate: 50% uncertainty
//   start-up     from its start to its first progress
//
// Pure value type, no I/O; the engine feeds it.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "common/clock.h"
#include "gpu/gpu_backend.h"
#include "sched/profile.h"

namespace colo {

struct MeasurementOptions {
  int64_t plateau_ms = 1000;  // two process samples apart at the default sampling
  double plateau_growth = 0.02;
  int64_t without_progress_ms = 15'000;
};

// The GPU's load from the jobs already there when a job started.
struct GpuBaseline {
  double sm_active_pct = 0;
  double gpu_util_pct = 0;
};

// The average load of a GPU over the `window_ms` before `started_ms`, from
// its device samples (`samples`, oldest first; those without SM activity
// skipped, a missing utilization taken as twice the SM activity); zero when
// none fall in the window.
GpuBaseline baseline_before(const std::deque<DeviceSample>& samples, UnixMillis started_ms,
                            int64_t window_ms);

class InPlaceMeasurement {
 public:
  InPlaceMeasurement(UnixMillis started_ms, std::optional<GpuBaseline> baseline,
                     MeasurementOptions options = {});

  // Its first progress event.
  void first_progress(UnixMillis time_ms);
  // Its processes' summed memory at one sample.
  void memory(uint64_t bytes, UnixMillis sampled_ms);
  // A sample of its GPU; `sharers`: the jobs that started with or after it
  // and work at the sample's time, itself included (1: it works alone beside
  // the baseline).
  void device(const DeviceSample& sample, int sharers = 1);
  // A job that was on its GPU when it started ended; `alone`: none is left.
  void neighbour_left(bool alone);
  // A progress rate it showed (samples per second), or its first epoch.
  void rate(double samples_per_s);
  void first_epoch(UnixMillis ended_ms, std::optional<int64_t> samples);

  bool plateaued() const;
  int rates_seen() const { return rates_seen_; }
  bool beside_others() const { return beside_ || mixed_.samples > 0; }
  // What it measured; `source` names where ("probe: resnet50#1 in run 3").
  JobProfile profile(std::string source) const;

 private:
  UnixMillis started_ms_;
  std::optional<GpuBaseline> baseline_;  // the neighbours' load now; none: alone
  bool beside_;                          // it started beside other jobs
  bool comparable_ = true;               // the baseline still holds
  MeasurementOptions options_;
  std::optional<UnixMillis> first_progress_ms_;
  uint64_t peak_bytes_ = 0;
  UnixMillis plateau_since_ms_ = 0;  // when the peak last grew by more than the allowed growth
  UnixMillis first_memory_ms_ = 0;
  UnixMillis last_memory_ms_ = 0;
  struct Load {
    double sm_sum = 0;
    double util_sum = 0;
    int samples = 0;
  };
  Load clean_;  // beyond a known load of the other jobs (none: alone)
  Load mixed_;  // after another job began working beside it, or one of several ended
  int rates_seen_ = 0;
  std::optional<double> last_rate_;
  std::optional<double> first_epoch_rate_;
};

}  // namespace colo
