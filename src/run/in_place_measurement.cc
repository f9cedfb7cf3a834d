#include "run/in_place_measurement.h"

#include <algorithm>

namespace colo {

InPlaceMeasurement::InPlaceMeasurement(UnixMillis started_ms, std::optional<GpuBaseline> baseline,
                                       MeasurementOptions options)
    : started_ms_(started_ms),
      baseline_(baseline),
      beside_(baseline.has_value()),
      options_(options) {}

void InPlaceMeasurement::first_progress(UnixMillis time_ms) {
  if (!first_progress_ms_) first_progress_ms_ = time_ms;
}

void InPlaceMeasurement::memory(uint64_t bytes, UnixMillis sampled_ms) {
  if (bytes == 0) return;
  if (first_memory_ms_ == 0) first_memory_ms_ = sampled_ms;
  if (static_cast<double>(bytes) > static_cast<double>(peak_bytes_) * (1 + options_.plateau_growth))
    plateau_since_ms_ = sampled_ms;
  peak_bytes_ = std::max(peak_bytes_, bytes);
  last_memory_ms_ = std::max(last_memory_ms_, sampled_ms);
}

void InPlaceMeasurement::device(const DeviceSample& sample, int sharers) {
  if (!first_progress_ms_ || sample.time_ms < *first_progress_ms_ || !sample.sm_active_pct) return;
  // What the GPU did beyond its other jobs' load, while that load is known;
  // shared with the jobs that came with or after it.
  const bool clean = sharers <= 1 && comparable_;
  const GpuBaseline base = baseline_.value_or(GpuBaseline{});
  const double share = 1.0 / std::max(1, sharers);
  Load& load = clean ? clean_ : mixed_;
  load.sm_sum += (*sample.sm_active_pct - base.sm_active_pct) * share;
  load.util_sum +=
      (sample.gpu_util_pct.value_or(*sample.sm_active_pct * 2) - base.gpu_util_pct) * share;
  ++load.samples;
}

void InPlaceMeasurement::neighbour_left(bool alone) {
  if (alone) {
    baseline_.reset();  // the GPU is its own from now on
    comparable_ = true;
  } else {
    comparable_ = false;  // what the others left is unknown
  }
}

void InPlaceMeasurement::rate(double samples_per_s) {
  last_rate_ = samples_per_s;
  ++rates_seen_;
}

void InPlaceMeasurement::first_epoch(UnixMillis ended_ms, std::optional<int64_t> samples) {
  // One epoch: its rate from the first progress (start-up left out).
  if (first_epoch_rate_ || !samples || !first_progress_ms_ || ended_ms <= *first_progress_ms_)
    return;
  first_epoch_rate_ =
      static_cast<double>(*samples) * 1000.0 / static_cast<double>(ended_ms - *first_progress_ms_);
}

bool InPlaceMeasurement::plateaued() const {
  if (peak_bytes_ == 0 || last_memory_ms_ - plateau_since_ms_ < options_.plateau_ms) return false;
  if (first_progress_ms_)
    return last_memory_ms_ >= *first_progress_ms_ && clean_.samples + mixed_.samples > 0;
  return last_memory_ms_ - first_memory_ms_ >= options_.without_progress_ms;
}

JobProfile InPlaceMeasurement::profile(std::string source) const {
  JobProfile p;
  if (peak_bytes_ > 0) p.peak_memory_bytes = peak_bytes_;
  const Load& load = clean_.samples > 0 ? clean_ : mixed_;
  if (load.samples > 0) {
    p.sm_active_pct = std::clamp(load.sm_sum / load.samples, 1.0, 100.0);
    p.gpu_util_pct = std::clamp(load.util_sum / load.samples, 1.0, 100.0);
    p.sm_uncertainty = clean_.samples == 0 ? 0.5 : beside_ ? 0.3 : 0.0;
  }
  p.samples_per_s = rates_seen_ > 0 ? last_rate_ : first_epoch_rate_;
  if (p.samples_per_s && (beside_ || mixed_.samples > 0)) p.rate_uncertainty = 0.5;
  if (first_progress_ms_) p.startup_ms = *first_progress_ms_ - started_ms_;
  p.source = std::move(source);
  return p;
}

GpuBaseline baseline_before(const std::deque<DeviceSample>& samples, UnixMillis started_ms,
                            int64_t window_ms) {
  GpuBaseline base;
  int n = 0;
  for (const DeviceSample& d : samples) {
    if (d.time_ms < started_ms - window_ms || d.time_ms > started_ms || !d.sm_active_pct) continue;
    base.sm_active_pct += *d.sm_active_pct;
    base.gpu_util_pct += d.gpu_util_pct.value_or(*d.sm_active_pct * 2);
    ++n;
  }
  if (n > 0) {
    base.sm_active_pct /= n;
    base.gpu_util_pct /= n;
  }
  return base;
}

}  // namespace colo
