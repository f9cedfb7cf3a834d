#include "sched/interference.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace colo {

std::vector<double> InterferenceModel::rates(ShareMode mode, std::span<const SoloLoad> jobs) const {
  const auto n = static_cast<double>(jobs.size());
  if (jobs.empty()) return {};
  if (jobs.size() == 1) return {1.0};
  double load = 0;
  double share = 1.0;
  double overhead = 1.0;
  if (mode == ShareMode::kSpatial) {
    for (const SoloLoad& j : jobs) load += j.sm_active_pct;
    if (load > spatial_capacity_pct) share = spatial_capacity_pct / load;
    overhead = 1.0 / (1.0 + spatial_overhead * (n - 1));
  } else {
    for (const SoloLoad& j : jobs) load += j.gpu_busy_pct;
    if (load > 100.0) share = 100.0 / load;
    overhead = (1.0 - sliced_switch_loss) / (1.0 + sliced_overhead * (n - 2));
  }
  return std::vector<double>(jobs.size(), share * overhead);
}

double InterferenceModel::total(ShareMode mode, std::span<const SoloLoad> jobs) const {
  double sum = 0;
  for (double r : rates(mode, jobs)) sum += r;
  return sum;
}

InterferenceModel calibrate(const InterferenceModel& base,
                            std::span<const Collocation> measurements) {
  InterferenceModel out = base;
  int used = 0;
  for (ShareMode mode : {ShareMode::kSpatial, ShareMode::kTimeSliced}) {
    double best_error = std::numeric_limits<double>::infinity();
    double best = mode == ShareMode::kSpatial ? base.spatial_overhead : base.sliced_overhead;
    bool any = false;
    for (int step = 0; step <= 300; ++step) {
      InterferenceModel m = base;
      double value = step * 0.001;
      (mode == ShareMode::kSpatial ? m.spatial_overhead : m.sliced_overhead) = value;
      double error = 0;
      int count = 0;
      for (const Collocation& c : measurements) {
        if (c.mode != mode || c.jobs.size() < 2) continue;
        double d = m.total(mode, c.jobs) - c.measured_total;
        error += d * d;
        ++count;
      }
      if (count == 0) break;
      any = true;
      if (step == 0) used += count;
      if (error < best_error) {
        best_error = error;
        best = value;
      }
    }
    if (any) (mode == ShareMode::kSpatial ? out.spatial_overhead : out.sliced_overhead) = best;
  }
  if (used > 0) out.source = fmt::format("calibrated from {} measured collocations", used);
  return out;
}

}  // namespace colo
