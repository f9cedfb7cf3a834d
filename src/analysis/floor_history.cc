#include "analysis/floor_history.h"

#include <algorithm>

namespace colo {

bool steady_epoch_end(const std::map<std::string, double>& metrics) {
  for (const char* mark : {"checkpoint", "eval", "evaluation"}) {
    auto it = metrics.find(mark);
    if (it != metrics.end() && it->second != 0) return false;
  }
  return true;
}

std::vector<EpochRate> epoch_rates(const std::vector<ProgressEvent>& events) {
  std::vector<EpochRate> rates;
  int attempt = 1;
  bool ended_one = false;       // an epoch of this attempt ended
  UnixMillis previous_end = 0;  // when
  for (const ProgressEvent& e : events) {
    if (e.kind == "requeued") {
      ++attempt;
      ended_one = false;
      continue;
    }
    if (e.kind != "epoch_end") continue;
    if (ended_one && e.samples && e.time_ms > previous_end) {
      const int64_t took = e.time_ms - previous_end;
      rates.push_back({e.time_ms, took,
                       static_cast<double>(*e.samples) * 1000.0 / static_cast<double>(took),
                       steady_epoch_end(e.metrics), attempt});
    }
    ended_one = true;
    previous_end = e.time_ms;
  }
  return rates;
}

bool below_floor(double speed, double min_speed) { return speed < min_speed; }

void FloorTime::add(int64_t epoch_ms, bool below) {
  if (epoch_ms <= 0) return;
  steady_ms += epoch_ms;
  if (below) below_ms += epoch_ms;
}

std::optional<double> FloorTime::below_share() const {
  if (steady_ms <= 0) return std::nullopt;
  return std::clamp(static_cast<double>(below_ms) / static_cast<double>(steady_ms), 0.0, 1.0);
}

std::optional<double> FloorHistory::latest_speed() const {
  if (points.empty()) return std::nullopt;
  return points.back().speed;
}

std::optional<double> FloorHistory::median_speed() const {
  if (points.empty()) return std::nullopt;
  std::vector<double> speeds;
  speeds.reserve(points.size());
  for (const FloorPoint& p : points) speeds.push_back(p.speed);
  const size_t middle = (speeds.size() - 1) / 2;
  std::nth_element(speeds.begin(), speeds.begin() + static_cast<std::ptrdiff_t>(middle),
                   speeds.end());
  return speeds[middle];
}

std::optional<double> FloorHistory::lowest_speed() const {
  if (points.empty()) return std::nullopt;
  return std::min_element(
             points.begin(), points.end(),
             [](const FloorPoint& a, const FloorPoint& b) { return a.speed < b.speed; })
      ->speed;
}

std::optional<FloorHistory> floor_history(const std::vector<EpochRate>& rates, double min_speed,
                                          double solo_samples_per_s) {
  if (!(solo_samples_per_s > 0)) return std::nullopt;
  FloorHistory h;
  h.min_speed = min_speed;
  h.solo_samples_per_s = solo_samples_per_s;
  for (const EpochRate& r : rates) {
    if (!r.steady || r.epoch_ms <= 0) continue;
    const double speed = r.samples_per_s / solo_samples_per_s;
    h.points.push_back({r.ended_ms, r.attempt, r.epoch_ms, speed});
    h.time.add(r.epoch_ms, below_floor(speed, min_speed));
  }
  return h;
}

}  // namespace colo
