#include "run/simulated_load.h"

namespace colo {

SimulatedLoad::SimulatedLoad(const JobSpec& spec)
    : hint_{spec.gpu_memory_bytes.value_or(0), 0.0},
      memory_assumed_(!spec.gpu_memory_bytes),
      sm_from_progress_(spec.sm_share_pct ? static_cast<double>(*spec.sm_share_pct)
                                          : kDefaultSmPct) {}

bool SimulatedLoad::update(const std::vector<ProgressEvent>& events) {
  if (events.empty()) return false;
  bool changed = false;
  if (!progressed_) {
    progressed_ = true;
    hint_.sm_active_pct = sm_from_progress_;
    changed = true;
  }
  for (const ProgressEvent& e : events) {
    auto memory = e.metrics.find("simulated_gpu_memory_mib");
    if (memory != e.metrics.end() && memory->second >= 0) {
      hint_.memory_bytes = static_cast<uint64_t>(memory->second * 1024 * 1024);
      memory_assumed_ = false;
      changed = true;
    }
    auto sm = e.metrics.find("simulated_sm_active_pct");
    if (sm != e.metrics.end() && sm->second >= 0) {
      hint_.sm_active_pct = sm->second;
      changed = true;
    }
  }
  if (memory_assumed_) {
    hint_.memory_bytes = kDefaultMemoryBytes;
    memory_assumed_ = false;
    changed = true;
  }
  return changed;
}

}  // namespace colo
