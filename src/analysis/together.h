// The collocated speed-up: how much more work jobs did while they truly ran
// together than each would have done alone, measured so that start-ups
// cannot fool it (docs/measurements.md).
//
//   W, the window in which the jobs ran together, runs from the latest end
//   of any job's first epoch to the earliest end of any job's last epoch:
//   inside it every job is past its warm-up and none has finished.
//
//   Each job's progress inside W is interpolated linearly within its epochs
//   (epochs.h), in samples where the job reports them, else in epochs; its
//   rate in W over its solo steady rate is its normalized rate, and its
//   slowdown is the inverse (epoch time together / epoch time alone).
//
//   speed-up = sum of the normalized rates / the number of GPUs the jobs ran
//   on. On one GPU that is the work done in W in solo jobs' worth (for
//   identical jobs, the aggregate throughput over one job alone; for mixed
//   jobs the normalized, "weighted" speed-up); over several GPUs it is the
//   same per GPU, so one job per GPU gives 1.0: the gain over running the
//   jobs one per GPU, as the exclusive mechanism does.
//
//   When W is shorter than two steady epochs of the slowest job (its mean
//   epoch time in this run), the jobs did not run together long enough and
//   there is no figure, only the reason. A job alone has nothing to run
//   together with: its W is its steady epochs, however short.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/epochs.h"

namespace colo {

struct TogetherWindow {
  UnixMillis start_ms = 0;
  UnixMillis end_ms = 0;
  int64_t length_ms() const { return end_ms - start_ms; }
};

// A job's solo steady rate and where it was measured.
struct SoloRate {
  std::optional<double> samples_per_s;
  std::optional<double> epoch_ms;  // time per steady epoch
  std::string source;              // "exclusive run #4", "profile: store: run 7 job 12 (...)"
  // Not measured alone: a prior, or a measurement beside other jobs.
  bool estimated = false;
};

// One job of a run as measure_together() needs it.
struct TogetherJob {
  std::string name;
  const std::vector<EpochEnd>* ends = nullptr;  // its last attempt's epoch ends; not null
  std::optional<int> device;                    // the GPU it ran on
  std::optional<SoloRate> solo;
};

struct JobInWindow {
  std::optional<double> samples_per_s;  // its rate in W, when it reports samples
  double epochs_per_s = 0;
  std::optional<double> normalized_rate;  // rate in W / solo rate
  std::optional<double> slowdown;         // 1 / normalized_rate
};

struct Together {
  // W, when every job ended at least two epochs and the window is not empty.
  std::optional<TogetherWindow> window;
  // Per job (same order as the input), when W is long enough.
  std::vector<JobInWindow> jobs;
  int gpus = 0;                         // distinct GPUs of the jobs (unknown counts as one)
  std::optional<double> samples_per_s;  // summed rates in W, when every job reports samples
  std::optional<double> speedup;
  // Why there is no speed-up, in words, when there is none.
  std::string why_not;
};

// W for these jobs' epoch ends (see above); nullopt when a job has fewer
// than two epoch ends or the window is empty.
std::optional<TogetherWindow> together_window(
    const std::vector<const std::vector<EpochEnd>*>& jobs);

// Everything above for the jobs of one run (those that started).
Together measure_together(const std::vector<TogetherJob>& jobs);

// The normalized throughput: whenever two or more jobs ran in their steady
// epochs on one GPU, the sum over them of rate / solo rate (each job's rate
// in an epoch: its samples, else one epoch, over the epoch's time), averaged
// over that time and over the GPUs. Unlike the speed-up it needs no window
// in which every job ran together: it counts every stretch of overlap. 1.0:
// sharing gained nothing; the figure is in "solo jobs' worth" per GPU.
struct NormalizedThroughput {
  std::optional<double> value;
  int64_t shared_ms = 0;   // the time it averages over, summed over GPUs
  bool estimated = false;  // a solo rate it used was estimated
  std::string why_not;     // when there is no value
  // Per job (as given): its own rate / solo rate averaged over the same
  // time, that of the stretches it was in; nullopt for a job in none.
  std::vector<std::optional<double>> job_normalized;
};
NormalizedThroughput normalized_throughput(const std::vector<TogetherJob>& jobs);

}  // namespace colo
