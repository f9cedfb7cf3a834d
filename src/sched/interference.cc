#include "sched/interference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace colo {
namespace {

// The jobs' summed solo load in percent of the GPU (InterferenceModel::weight).
double summed_load_pct(ShareMode mode, std::span<const SoloLoad> jobs) {
  double load = 0;
  for (const SoloLoad& j : jobs) load += InterferenceModel::weight(mode, j);
  return 100.0 * load;
}

}  // namespace

double InterferenceModel::weight(ShareMode mode, const SoloLoad& job) {
  return (mode == ShareMode::kSpatial ? job.sm_active_pct : job.gpu_busy_pct) / 100.0;
}

std::string InterferenceModel::describe() const {
  return fmt::format(
      "{} (MPS: level beyond {:.0f}% summed SM activity, overhead {:.3f} per extra job; naive: "
      "switch loss {:.2f}, overhead {:.3f} per job beyond two)",
      source, spatial_capacity_pct, spatial_overhead, sliced_switch_loss, sliced_overhead);
}

double InterferenceModel::rate_each(ShareMode mode, size_t n, double load) const {
  if (n <= 1) return 1.0;
  const auto extra = static_cast<double>(n - 1);
  if (mode == ShareMode::kSpatial) {
    const double share = load > spatial_capacity_pct ? spatial_capacity_pct / load : 1.0;
    return share / (1.0 + spatial_overhead * extra);
  }
  const double share = load > 100.0 ? 100.0 / load : 1.0;
  return share * (1.0 - sliced_switch_loss) / (1.0 + sliced_overhead * (extra - 1.0));
}

std::vector<double> InterferenceModel::rates(ShareMode mode, std::span<const SoloLoad> jobs) const {
  return std::vector<double>(jobs.size(), rate_of_each(mode, jobs));
}

double InterferenceModel::rate_of_each(ShareMode mode, std::span<const SoloLoad> jobs) const {
  return rate_each(mode, jobs.size(), summed_load_pct(mode, jobs));
}

double InterferenceModel::total(ShareMode mode, std::span<const SoloLoad> jobs) const {
  return static_cast<double>(jobs.size()) *
         rate_each(mode, jobs.size(), summed_load_pct(mode, jobs));
}

double InterferenceModel::work(ShareMode mode, std::span<const SoloLoad> jobs) const {
  const double load = summed_load_pct(mode, jobs);
  return load / 100.0 * rate_each(mode, jobs.size(), load);
}

double InterferenceModel::peak_work(ShareMode mode, std::span<const SoloLoad> jobs) const {
  double load = 0;
  double peak = 0;
  for (size_t k = 1; k <= jobs.size(); ++k) {
    load += weight(mode, jobs[k - 1]);
    peak = std::max(peak, load * rate_each(mode, k, 100.0 * load));
  }
  return peak;
}

InterferenceModel calibrate(const InterferenceModel& base,
                            std::span<const Collocation> measurements) {
  // Squared error of `m` over the measurements of one mode; nullopt: none.
  auto error_of = [&](const InterferenceModel& m, ShareMode mode) -> std::optional<double> {
    double error = 0;
    int count = 0;
    for (const Collocation& c : measurements) {
      if (c.mode != mode || c.jobs.size() < 2) continue;
      const double d = m.total(mode, c.jobs) - c.measured_total;
      error += d * d;
      ++count;
    }
    return count > 0 ? std::optional<double>(error) : std::nullopt;
  };
  const auto used = std::count_if(measurements.begin(), measurements.end(),
                                  [](const Collocation& c) { return c.jobs.size() >= 2; });
  InterferenceModel out = base;
  // Spatial: capacity and overhead together. Measurements that never fill
  // the GPU say nothing about the capacity: among equal fits, the one
  // nearest the base's capacity wins.
  if (std::optional<double> base_error = error_of(base, ShareMode::kSpatial)) {
    double best = *base_error;
    for (int capacity = 50; capacity <= 200; ++capacity) {
      for (int step = 0; step <= 100; ++step) {
        InterferenceModel m = base;
        m.spatial_capacity_pct = capacity;
        m.spatial_overhead = step * 0.001;
        const double error = *error_of(m, ShareMode::kSpatial);
        const bool nearer = std::abs(m.spatial_capacity_pct - base.spatial_capacity_pct) <
                            std::abs(out.spatial_capacity_pct - base.spatial_capacity_pct);
        if (error < best - 1e-9 || (error <= best + 1e-9 && nearer)) {
          best = std::min(best, error);
          out.spatial_capacity_pct = m.spatial_capacity_pct;
          out.spatial_overhead = m.spatial_overhead;
        }
      }
    }
  }
  // Time slicing: the per-job overhead.
  if (std::optional<double> base_error = error_of(base, ShareMode::kTimeSliced)) {
    double best = *base_error;
    for (int step = 0; step <= 300; ++step) {
      InterferenceModel m = base;
      m.sliced_overhead = step * 0.001;
      const double error = *error_of(m, ShareMode::kTimeSliced);
      if (error < best - 1e-9) {
        best = error;
        out.sliced_overhead = m.sliced_overhead;
      }
    }
  }
  if (used > 0) out.source = fmt::format("calibrated from {} measured collocations", used);
  return out;
}

}  // namespace colo
