// A sweep's submission to Slurm: its directory (the plan, the batch script,
// slurm/ for Slurm's output and shards/ for the shards' stores), written
// before anything is submitted, the job array submitted with sbatch, and
// each shard submitted again by hand (`colo slurm resubmit`).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

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

// One shard submitted again: the same batch script as a one-element array
// (sbatch --array=K), whose attempts are numbered from `first_attempt` on
// (Slurm's requeues of it add SLURM_RESTART_COUNT), past every attempt the
// shard had, so that none of their files is overwritten. Recorded as
// resubmission_path(dir, shard, first_attempt).
struct Resubmission {
  int shard = 0;
  int first_attempt = 1;
  std::string array_job_id;  // "" when sbatch never answered
  UnixMillis submitted_ms = 0;
};

// The resubmissions recorded for shards 0 to shards - 1, by shard, then
// first attempt. A record that cannot be read counts with no array job.
std::vector<Resubmission> read_resubmissions(const std::string& dir, int shards);

// The first attempt of a new submission of `shard`: one past every attempt
// its directory names (a published store, a log directory, a resubmission),
// and never 0, the array's.
int next_attempt(const ShardAttempts& attempts);

// Submits `shard` of `submission` again (sbatch through `run`): takes its
// next attempt number (creating the record exclusively: two resubmissions
// at once never share one), submits, and records the array job id. An
// error when the shard does not exist, the batch script was written by a
// colo that cannot number attempts, or sbatch fails (the record removed).
// Whether the shard may run again (Slurm no longer has it; it did not end
// well) is the caller's to check (resubmittable(), collect.h).
Result<Resubmission> resubmit_shard(const Submission& submission, int shard,
                                    const CommandRunner& run, Clock& clock);

// One sbatch of a submission: the array (every shard) or a resubmission.
struct SubmittedArray {
  std::string array_job_id;
  std::vector<int> shards;  // the shards its elements run
  std::optional<Resubmission> resubmission;
};

// The array of `plan` (when submitted) and each resubmission that reached
// Slurm, in the order they were submitted per shard.
std::vector<SubmittedArray> submitted_arrays(const ShardPlan& plan,
                                             const std::vector<Resubmission>& resubmissions);

// What Slurm said of one array job: its elements in the queue (squeue) and
// in accounting (sacct; empty without accounting).
struct ArrayJobState {
  std::vector<ElementState> queued;
  std::vector<ElementState> accounted;
};

// Slurm's view of the shards, from what it said of each array.
struct ShardsInSlurm {
  // Per shard, its element in the last array that runs it (its latest
  // resubmission, else the array): the queue's, else accounting's; absent
  // when neither knows it.
  std::map<int, ElementState> latest;
  std::map<int, Resubmission> resubmitted;  // per shard, its latest resubmission
  // Every element of any array still in the queue.
  std::vector<ElementState> queued;
};
ShardsInSlurm merge_slurm_states(const std::vector<SubmittedArray>& arrays,
                                 const std::map<std::string, ArrayJobState>& states);

}  // namespace colo
