#include "run/floor_watch.h"

#include <fmt/format.h>

namespace colo {

FloorWatch::FloorWatch(double min_speed, std::optional<double> solo_samples_per_s,
                       const FloorOptions& options)
    : min_speed_(min_speed), options_(options) {
  if (solo_samples_per_s) solo(*solo_samples_per_s);
}

void FloorWatch::solo(double samples_per_s) {
  if (samples_per_s > 0) solo_ = samples_per_s;
}

std::optional<FloorBreach> FloorWatch::report(const EpochRate& epoch) {
  if (!solo_ || !epoch.steady || epoch.epoch_ms <= 0) return std::nullopt;
  const double speed = epoch.samples_per_s / *solo_;
  latest_speed_ = speed;
  const bool below = below_floor(speed, min_speed_);
  time_.add(epoch.epoch_ms, below);
  if (!below) {
    run_ms_ = 0;
    run_reports_ = 0;
    return std::nullopt;
  }
  run_ms_ += epoch.epoch_ms;
  ++run_reports_;
  if (run_reports_ < options_.reports || run_ms_ < options_.window_ms) return std::nullopt;
  FloorBreach breach{min_speed_, speed, run_ms_, run_reports_};
  // A new run starts: the next breach needs a full window after this one.
  run_ms_ = 0;
  run_reports_ = 0;
  return breach;
}

std::string floor_stop_reason(const std::string& protected_label, const FloorBreach& breach) {
  return fmt::format("stopped for {}'s floor {:.2f}: it ran at {:.2f} beside this job",
                     protected_label, breach.floor, breach.speed);
}

}  // namespace colo
