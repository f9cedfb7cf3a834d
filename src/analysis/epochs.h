// A job's epochs as its progress events record them, and what follows from
// them alone: its steady epochs (2..n; the first is warm-up: CUDA context,
// cuDNN autotuning, data loader start) and its progress between any two
// instants, linear within each epoch.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "jobs/progress_event.h"

namespace colo {

struct EpochEnd {
  UnixMillis time_ms = 0;
  std::optional<int64_t> samples;  // samples of the epoch that ended, when reported
  std::optional<int64_t> epoch;    // its number, when reported
};

// The epoch_end events of a job's last attempt (those at or after
// `started_ms`: an attempt that ran out of memory may have ended some
// before), oldest first.
std::vector<EpochEnd> epoch_ends(const std::vector<ProgressEvent>& events,
                                 std::optional<UnixMillis> started_ms);

// Epochs 2..n: from the end of the first to the end of the last.
struct SteadyEpochs {
  UnixMillis start_ms = 0;  // end of epoch 1
  UnixMillis end_ms = 0;    // end of epoch n
  int64_t epochs = 0;       // n - 1
  double epoch_ms = 0;      // mean time per epoch
  // Their samples and rate, when every one of them reported its samples.
  std::optional<int64_t> samples;
  std::optional<double> samples_per_s;
};

// nullopt with fewer than two epoch ends or when the last is not after the first.
std::optional<SteadyEpochs> steady_epochs(const std::vector<EpochEnd>& ends);

// Whether every epoch after the first reported its samples (progress can be
// counted in samples; otherwise only in epochs).
bool counts_samples(const std::vector<EpochEnd>& ends);

// The job's progress between `from` and `to`, in samples (`in_samples`,
// which needs counts_samples) or in epochs: within each steady epoch it
// grows linearly from the previous epoch end to the next. Instants outside
// [end of epoch 1, end of epoch n] count as the nearest of the two.
double progress_between(const std::vector<EpochEnd>& ends, UnixMillis from, UnixMillis to,
                        bool in_samples);

}  // namespace colo
