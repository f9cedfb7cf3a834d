// A sweep's submission to Slurm: its directory (the plan, the batch script,
// slurm/ for Slurm's output and shards/ for the shards' stores), written
// before anything is submitted, and the job array submitted with sbatch.
#pragma once

#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "slurm/shard_plan.h"
#include "slurm/slurm_client.h"

namespace colo {

struct Submission {
  std::string dir;          // absolute
  std::string script_path;  // <dir>/shard.sbatch
  ShardPlan plan;           // as written to plan_path(dir)
};

// Writes `plan` and its batch script into `dir` (made, with slurm/ and
// shards/). An error when `dir` already holds a submission, or cannot be
// written.
Result<Submission> write_submission(ShardPlan plan, const std::string& dir,
                                    const SbatchOptions& sbatch);

// Submits the job array (sbatch through `run`) and records its id and time
// in the plan file.
Status submit_array(Submission& submission, const CommandRunner& run, Clock& clock);

}  // namespace colo
