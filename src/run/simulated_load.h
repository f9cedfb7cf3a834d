// SimulatedLoad: what the simulated backend (gpu/SimBackend) is told about a
// job's process, so that its samples follow the job. Real backends ignore
// it.
//
// At the start: the job's memory hint (else nothing: start-up holds no GPU
// memory) and no SM activity (start-up does no GPU work, as `colo simulate`
// models it; a neighbour measured meanwhile is not charged for it). From its
// progress: what it states through the metrics simulated_gpu_memory_mib and
// simulated_sm_active_pct (bench/sim_train.py does), else, from its first
// progress on, kDefaultMemoryBytes when it gave no memory hint and its SM
// share hint (else kDefaultSmPct).
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/gpu_backend.h"
#include "jobs/job_spec.h"
#include "jobs/progress_event.h"

namespace colo {

class SimulatedLoad {
 public:
  static constexpr uint64_t kDefaultMemoryBytes = 2ull << 30;
  static constexpr double kDefaultSmPct = 30.0;

  explicit SimulatedLoad(const JobSpec& spec);
  const SimLoadHint& hint() const { return hint_; }
  // Takes a batch of the job's progress events; true when hint() changed.
  bool update(const std::vector<ProgressEvent>& events);

 private:
  SimLoadHint hint_;
  bool memory_assumed_;      // it holds nothing yet and will hold the default
  double sm_from_progress_;  // its SM activity from its first progress, unless it states one
  bool progressed_ = false;
};

}  // namespace colo
