#include "analysis/estimate_event.h"

namespace colo {

ProgressEvent estimate_event(const JobProfile& estimate, UnixMillis time_ms) {
  ProgressEvent e;
  e.time_ms = time_ms;
  e.kind = kEstimateEvent;
  if (estimate.peak_memory_bytes)
    e.metrics["peak_memory_bytes"] = static_cast<double>(*estimate.peak_memory_bytes);
  e.metrics["memory_uncertainty"] = estimate.memory_uncertainty;
  if (estimate.sm_active_pct) e.metrics["sm_active_pct"] = *estimate.sm_active_pct;
  e.metrics["sm_uncertainty"] = estimate.sm_uncertainty;
  if (estimate.gpu_util_pct) e.metrics["gpu_util_pct"] = *estimate.gpu_util_pct;
  if (estimate.samples_per_s) {
    e.metrics["samples_per_s"] = *estimate.samples_per_s;
    e.metrics["rate_uncertainty"] = estimate.rate_uncertainty;
  }
  return e;
}

std::optional<JobProfile> estimate_of(const ProgressEvent& event) {
  if (event.kind != kEstimateEvent) return std::nullopt;
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
  p.source = "estimate";
  return p;
}

}  // namespace colo
