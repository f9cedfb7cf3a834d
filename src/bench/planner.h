// Planner: epoch sizes and time estimates for a list of bench cases, and the
// "does it fit in GPU memory" decision.
//
// Default solo throughputs (samples/s, one job alone on an NVIDIA H200, epochs
// 2+, bf16, bench/train.py) come from docs/results/ (the GPU check's
// smoke-models.sh and the ResNet26x7 benchmark):
//
//   resnet26/cifar10/b128            15900   (docs/results/2026-11-22-h200-resnet26x7)
//   resnet50/imagenet64/b128          7900   (docs/results/2026-11-22-h200-gpu-check/smoke.log)
//   efficientnetv2_s/imagenet64/b32    750   (smoke.log)
//   resnet152/imagenet/b32             810   (smoke.log)
//   cait_xxs24_224/imagenet/b128      1040   (smoke.log)
//   dlrm/criteo/b2048               335000   (on an H100 80GB: 149,504-sample epochs
//                                            in 446 ms, the median of epochs 2-6 alone in
//                                            docs/results/2026-11-23-h100-study/recsys;
//                                            its first epoch, 8.9 s, is mostly warm-up)
//
// Default peak GPU memory per job (torch's max_memory_reserved in smoke.log
// plus a CUDA context of about 0.8 GiB, rounded up):
//
//   resnet26 1.2 GiB, resnet50 b128 64 px 2.0 GiB, efficientnetv2_s b32 64 px
//   1.5 GiB, resnet152 b32 224 px 5.0 GiB, cait_xxs24_224 b128 224 px 11.0 GiB,
//   dlrm: twice its --memory-gib (the tables and their dense gradients) + 1.5 GiB.
//
// Estimates are estimates: a case is estimated as its start-up plus the work
// of all its jobs added up, as if collocation gave no speed-up (an upper
// bound where it helps; naive collocation of large models comes close to it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/suite.h"
#include "common/result.h"

namespace colo {

// Solo throughput from the table above; nullopt for a workload not in it.
std::optional<double> default_samples_per_s(const Workload& workload);

// Peak GPU memory of one job from the table above. `dlrm_memory_gib` is the
// recommender's --memory-gib.
uint64_t default_memory_bytes(const Workload& workload, double dlrm_memory_gib);

struct PlanOptions {
  // Total time the cases may take (estimated); nullopt: default epochs.
  std::optional<int64_t> budget_ms;
  // Per job; the first is warm-up. Four leave the jobs of a case three
  // steady epochs, so that they run together for the two epochs the steady
  // speed-up needs (analysis/together.h) while their start-ups differ by up
  // to one epoch (seven ResNet-26 jobs started at once on an H200 ended their
  // first epochs within 1 s of each other: docs/results/2026-11-22-h200-resnet26x7).
  int epochs = 4;
  // Start-up of one job (Python, CUDA context, cuDNN autotuning): about 15 s
  // with bench/train.py on a GPU, about 1 s with bench/sim_train.py.
  double startup_s = 15.0;
  // Without a budget: samples per epoch make one solo epoch take this long.
  double default_epoch_s = 5.0;
  // A budget never makes a solo epoch shorter than this: shorter epochs let
  // start-up, epoch-boundary effects (data loader restarts, evaluation) and
  // the timing of progress lines distort the figures. A budget that would
  // need shorter epochs is an error naming the least budget that fits.
  double min_epoch_s = 5.0;
  // Epochs never have fewer batches than this.
  int min_batches = 4;
  // Measured solo throughputs by Workload::label(), overriding the table.
  std::map<std::string, double> measured_samples_per_s;
};

struct WorkloadPlan {
  Workload workload;
  double samples_per_s = 0;
  std::string rate_source;    // "default table (H200)" or "measured in run 12"
  int64_t epoch_samples = 0;  // whole batches
};

struct Plan {
  std::map<std::string, WorkloadPlan> workloads;  // by Workload::label()
  std::vector<double> case_seconds;  // estimate per case, same order; 0 for cases not run
  double total_seconds = 0;
  double solo_epoch_seconds = 0;  // the length of one solo epoch the sizes aim at
  int epochs = 2;
};

// Chooses samples per epoch (the same for every case of a workload, whole
// batches, at least min_batches) so that the estimated total fits the budget
// with solo epochs of at least min_epoch_s, or so that a solo epoch takes
// default_epoch_s. Only cases with status "planned" count. Errors: a workload
// with no throughput, a budget too small for epochs of min_epoch_s (the
// message gives the least budget that fits).
Result<Plan> make_plan(const std::vector<BenchCase>& cases, const PlanOptions& options);

// The estimated seconds of one case under `plan` (start-up included).
double estimate_case_seconds(const BenchCase& c, const Plan& plan, double startup_s);

// One line per case ("  small/resnet26/mps/x3/r1  planned  ~42s") and the
// total, all labelled estimates; for --dry-run.
// With `device_memory_bytes`, cases whose jobs do not fit by the default
// memory table are marked "does not fit (by default estimates)".
std::string format_plan(const std::string& suite, const std::vector<BenchCase>& cases,
                        const Plan& plan,
                        std::optional<uint64_t> device_memory_bytes = std::nullopt,
                        double dlrm_memory_gib = 16.0);

// Where a job's memory figure comes from.
struct MemoryFigure {
  uint64_t bytes = 0;
  std::string source;  // "measured in small/resnet26/exclusive/x1/r1" or "default estimate"
};

struct FitDecision {
  bool fits = true;
  uint64_t needed_bytes = 0;
  std::string reason;  // when it does not fit: the numbers and their sources
};

// Whether the case's jobs fit `device_memory_bytes` together: the sum of
// their memory for collocated cases, the largest for serial/exclusive ones.
// `measured` maps Workload::label() to a measured peak; others use the table.
FitDecision check_fit(const BenchCase& c, uint64_t device_memory_bytes,
                      const std::map<std::string, MemoryFigure>& measured, double dlrm_memory_gib);

}  // namespace colo
