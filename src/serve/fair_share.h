// What fair share charges a running job for a span of a GPU: from what colo
// measured, never only from what the job reports (docs/serve.md, Fair share).
// Pure.
#pragma once

#include <optional>
#include <vector>

namespace colo {

// One job running on a GPU during a span.
struct JobOnGpu {
  // Its processes' SM utilisation there, as the driver measured it (NVML's
  // per-process samples, summed); nullopt where the driver gives none.
  std::optional<double> sm_util_pct;
  // The share of the GPU's SMs colo gave it under MPS (its active thread
  // percentage); nullopt: none given.
  std::optional<double> mps_sm_share_pct;
  // Its reported rate over its reported rate alone; nullopt when either is
  // unknown. A claim of the job's, used only to split a GPU colo cannot split
  // itself.
  std::optional<double> reported_progress;
};

// Each job's share of the GPU, in the order of `jobs`: a job alone holds the
// whole GPU (1, whatever it reports). Beside others, the split colo measured
// (each job's SM utilisation over their sum) where every job there has a
// positive reading; else the split of the MPS SM shares colo gave them,
// where it gave every job one; else the split their reported progress gives
// where every job reported it; else an equal split. No job's share falls below
// half of an equal split, so no report lowers a job's charge further.
std::vector<double> charged_shares(const std::vector<JobOnGpu>& jobs);

}  // namespace colo
