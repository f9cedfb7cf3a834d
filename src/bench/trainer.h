// The training scripts `colo bench` runs (bench/ of the repository or of an
// installation): where they are and which one a suite's jobs run.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "gpu/gpu_backend.h"

namespace colo {

struct TrainerConfig {
  std::string python = "python3";  // interpreter (PATH lookup)
  std::string trainer;             // bench/train.py or bench/sim_train.py, absolute
  std::string dlrm;                // bench/dlrm.py, absolute (unused with sim_train)
  std::string working_dir;         // where jobs start; absolute
  // bench/sim_train.py: it plays every model (dlrm included) and is told
  // through COLO_SIM_SHARING how many jobs share the GPU.
  bool sim_trainer = false;
  double dlrm_memory_gib = 16.0;  // the recommender's --memory-gib
};

// What `colo bench`'s flags say about the trainer.
struct TrainerChoice {
  std::string trainer;  // --trainer; empty: bench/train.py, or bench/sim_train.py when simulated
  std::string python = "python3";
  std::optional<double> dlrm_memory_gib;  // empty: dlrm_share_pct of the GPU's memory
  double dlrm_share_pct = 20;
  std::string suite;  // paper-recsys needs the recommender's tables
};

// The directory holding train.py, sim_train.py and dlrm.py: $COLO_BENCH_DIR,
// else bench/ beside or above the colo executable (a build directory inside
// the repository, or share/colo/bench of an installation), else ./bench.
Result<std::string> find_bench_dir();

// The trainer of `choice` on `device` (`simulated`: the simulated backend).
// An error names the flag to change.
Result<TrainerConfig> choose_trainer(const TrainerChoice& choice, const DeviceInfo& device,
                                     bool simulated);

}  // namespace colo
