// MIG layouts for a run's jobs: which GPU instances to create, where, and
// which jobs share each one (one compute instance per job). Pure and
// deterministic, like the planner it builds on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "mig/mig_planner.h"
#include "mig/mig_profiles.h"

namespace colo {

// What one job asks of MIG, from its job file entry.
struct MigJobDemand {
  std::string job;                       // the job's name
  std::optional<std::string> profile;    // mig_profile: a GPU-instance profile name
  std::optional<uint64_t> memory_bytes;  // gpu_memory hint
  // mig_group: jobs with the same group share one GPU instance and its
  // memory, each on its own compute instance (the paper's recommender + vision).
  std::optional<std::string> group;
};

// One GPU instance to create, and the jobs that run in it.
struct MigInstancePlan {
  MigPlacement placement;
  std::string group;              // the mig_group, "" for a job alone
  std::vector<std::string> jobs;  // one compute instance each
  int compute_slices_per_job = 0;
};

// Lays out the jobs on a GPU already holding `occupied`. A job alone, or a
// group, gets one GPU instance of:
//   - its mig_profile (a group's members must not ask for different ones);
//   - else the smallest profile (fewest memory, then compute slices; never
//     "+me") holding its gpu_memory (summed over a group) with a compute
//     slice per member;
//   - else, for every job or group with neither, one common profile: the
//     largest with which the whole layout fits.
// Each job of an instance gets an equal compute instance: the largest size
// NVIDIA offers in that instance with one per member (a job alone: the whole
// instance). Placements come from plan_mig (no overlap, little
// fragmentation). The Error names the job or group and why.
Result<std::vector<MigInstancePlan>> plan_mig_for_jobs(
    const MigGeometry& geometry, const std::vector<MigJobDemand>& demands,
    const std::vector<MigPlacement>& occupied = {});

}  // namespace colo
