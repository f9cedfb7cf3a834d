// GpuRates: the rate of the jobs on each simulated GPU, kept as jobs join
// and leave, not found again from every running job at every step (a
// cluster's day has a hundred thousand steps and thousands of jobs running).
//
// A GPU's rate is InterferenceModel::rate_of_each(mode, loads) over the
// jobs that joined it and have not left, their loads in ascending `order`
// (the simulator's running list: the order it walks them in): the same list
// in the same order as computing it afresh, so the same rate to the bit.
// update() computes again only the GPUs whose jobs changed since the last
// call; rate_of() reads what it left. A job on several GPUs (a gang) joins
// each of them. Not thread-safe; one per simulation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/interference.h"

namespace colo {

class GpuRates {
 public:
  // GPUs 0 to gpus-1, their rates by `model` under `mode` (copied).
  GpuRates(int gpus, InterferenceModel model, ShareMode mode);

  // A job (`order`: unique among the jobs joined, its place in the walk)
  // starts counting on each of `gpus`, with its solo `load`.
  void join(uint64_t order, std::span<const int> gpus, SoloLoad load);
  // The job of `order` stops counting on each of `gpus`; nothing where it
  // did not join.
  void leave(uint64_t order, std::span<const int> gpus);
  // Computes again the rate of each GPU whose jobs changed.
  void update();
  // The rate of a job that joined `gpus`, as the last update() left them:
  // the slowest of its GPUs', at most 1.
  double rate_of(std::span<const int> gpus) const;
  // How many jobs count on `gpu` now.
  size_t jobs_on(int gpu) const;

 private:
  struct Gpu {
    std::vector<uint64_t> orders;  // ascending
    std::vector<SoloLoad> loads;   // the same jobs', same order
    double rate = 1.0;             // as the last update() computed it
    bool changed = false;
  };
  InterferenceModel model_;
  ShareMode mode_;
  std::vector<Gpu> gpus_;
  std::vector<int> changed_;  // GPUs with `changed` set
};

}  // namespace colo
