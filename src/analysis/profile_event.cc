#include "analysis/profile_event.h"

namespace colo {

ProgressEvent profile_event(std::string_view kind, const JobProfile& profile, UnixMillis time_ms) {
  ProgressEvent e;
  e.time_ms = time_ms;
  e.kind = std::string(kind);
  if (profile.peak_memory_bytes)
    e.metrics["peak_memory_bytes"] = static_cast<double>(*profile.peak_memory_bytes);
  e.metrics["memory_uncertainty"] = profile.memory_uncertainty;
  if (profile.sm_active_pct) e.metrics["sm_active_pct"] = *profile.sm_active_pct;
  e.metrics["sm_uncertainty"] = profile.sm_uncertainty;
  if (profile.gpu_util_pct) e.metrics["gpu_util_pct"] = *profile.gpu_util_pct;
  if (profile.samples_per_s) {
    e.metrics["samples_per_s"] = *profile.samples_per_s;
    e.metrics["rate_uncertainty"] = profile.rate_uncertainty;
  }
  if (profile.startup_ms) e.metrics["startup_ms"] = static_cast<double>(*profile.startup_ms);
  return e;
}

std::optional<JobProfile> profile_in(const ProgressEvent& event, std::string_view kind) {
  if (event.kind != kind) return std::nullopt;
  auto metric = [&](const char* name) -> std::optional<double> {
    auto it = event.metrics.find(name);
    return it == event.metrics.end() ? std::nullopt : std::optional<double>(it->second);
  };
  std::optional<double> memory = metric("peak_memory_bytes");
  if (!memory || *memory < 0) return std::nullopt;
  JobProfile p;
  p.peak_memory_bytes = static_cast<uint64_t>(*memory);
  p.memory_uncertainty = metric("memory_uncertainty").value_or(0);
  p.sm_active_pct = metric("sm_active_pct");
  p.sm_uncertainty = metric("sm_uncertainty").value_or(0);
  p.gpu_util_pct = metric("gpu_util_pct");
  p.samples_per_s = metric("samples_per_s");
  p.rate_uncertainty = metric("rate_uncertainty").value_or(0);
  if (std::optional<double> startup = metric("startup_ms"); startup && *startup >= 0)
    p.startup_ms = static_cast<int64_t>(*startup);
  p.source = std::string(kind);
  return p;
}

}  // namespace colo
