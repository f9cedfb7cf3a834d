#include "sched/profile.h"

#include <algorithm>

namespace colo {

double JobProfile::gpu_busy_pct() const {
  if (gpu_util_pct) return std::clamp(*gpu_util_pct, 0.0, 100.0);
  return std::clamp(2.0 * sm_active_pct.value_or(50.0), 0.0, 100.0);
}

bool JobProfile::has_solo_rate() const {
  return (samples_per_s || epoch_ms) && rate_uncertainty < kNoSoloRateUncertainty;
}

JobProfile merge_profiles(const JobProfile& measured, const JobProfile& hint) {
  JobProfile out = measured;
  bool used_hint = false;
  auto fill = [&](auto& field, const auto& from) {
    if (!field && from) {
      field = from;
      used_hint = true;
    }
  };
  if (!out.peak_memory_bytes) out.memory_uncertainty = hint.memory_uncertainty;
  if (!out.sm_active_pct) out.sm_uncertainty = hint.sm_uncertainty;
  if (!out.samples_per_s) out.rate_uncertainty = hint.rate_uncertainty;
  fill(out.peak_memory_bytes, hint.peak_memory_bytes);
  fill(out.sm_active_pct, hint.sm_active_pct);
  fill(out.gpu_util_pct, hint.gpu_util_pct);
  fill(out.samples_per_s, hint.samples_per_s);
  fill(out.epoch_ms, hint.epoch_ms);
  fill(out.solo_ms, hint.solo_ms);
  fill(out.startup_ms, hint.startup_ms);
  if (used_hint) out.source = out.source.empty() ? hint.source : out.source + " + " + hint.source;
  return out;
}

}  // namespace colo
