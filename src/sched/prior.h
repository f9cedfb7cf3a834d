// PriorModel: what the auto policy assumes about a job it has never measured,
// before the job runs: a prior, with its source and its uncertainty, from
// what the store measured on this GPU model (sched/profile.h's profiles,
// each with the features of its command, jobs/job_features.h). In order:
//
//   same model  the measured jobs of the same model name (any script or
//               family): memory scaled by the step's size (batch x pixels x
//               sequence length) from the nearest measured size, or fitted
//               across two or more sizes; SM activity and start-up from the
//               nearest. Uncertainty 10% at the same size, 25% fitted, 40%
//               scaled from one size.
//   across      no measured job of that model, but three or more with a
//               known size: log(memory) fitted against log(size) across
//               every measured model, never below their median; SM
//               activity their 75th percentile. Uncertainty from the fit's
//               scatter, at least 50%.
//   quantile    otherwise: the 90th percentile of the memory and of the SM
//               activity measured on this GPU model, uncertainty 50%.
//   default     nothing measured on this GPU model: a quarter of its memory
//               and half its SMs, uncertainty 100%.
//
// Hints and a family's measured siblings come first (the scheduler's own
// profiles and sched/family.h); a prior is only what is left. A prior never
// claims a job's own solo rate as measured: its rate, when it has one, is
// another job's, with at least 50% uncertainty. Pure value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jobs/job_features.h"
#include "sched/profile.h"

namespace colo {

// One measured job: its name (for sources), its command's features and what
// was measured alone.
struct PriorSample {
  std::string name;
  JobFeatures features;
  JobProfile measured;
};

class PriorModel {
 public:
  PriorModel(std::vector<PriorSample> measured, uint64_t gpu_memory_bytes);

  // The prior of a job whose command has `features` (see the file comment).
  // Always has peak memory and SM activity; source starts with "prior: ".
  JobProfile prior(const JobFeatures& features) const;
  // Measured jobs it draws on.
  size_t samples() const { return samples_.size(); }

 private:
  std::vector<PriorSample> samples_;  // with peak memory and SM activity
  uint64_t gpu_memory_bytes_;
};

}  // namespace colo
