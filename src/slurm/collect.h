// `colo slurm collect` and `colo slurm status`: the shards' published stores
// (see shard_plan.h for the layout) read together with what Slurm says.
//
// Which attempt wins: for each shard, the attempt with the highest number
// that published a store (Slurm's requeues count up with
// SLURM_RESTART_COUNT; a `colo slurm resubmit` starts past every attempt
// before). Slurm requeues an element only after ending the attempt before,
// a shard is resubmitted only once Slurm no longer has it, and each attempt
// reruns the whole shard into its own store, so the last one is complete on
// its own and no job is counted twice; the earlier ones are listed as
// ignored. Jobs of the plan that no winning store holds (the
// shard never published, or colo failed before recording them) are added to
// the merged run as failed, with the reason, so no job is lost.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "jobs/job_spec.h"
#include "slurm/shard_plan.h"
#include "slurm/slurm_client.h"
#include "slurm/submission.h"

namespace colo {

struct ShardStatus {
  int shard = 0;
  int jobs = 0;  // in the plan
  // Of its latest submission (merge_slurm_states): squeue, else sacct;
  // nullopt: neither knows it.
  std::optional<ElementState> slurm;
  std::optional<Resubmission> resubmitted;  // its latest `colo slurm resubmit`
  std::vector<int> attempts;                // published
  // From the last published attempt:
  std::string run_state;  // "ok", "failed", "cancelled", ...
  std::string node;
  int jobs_ok = 0;
  int jobs_not_ok = 0;
  // Its store could not be read; or it published none and is no longer
  // queued: the last line of its Slurm output (slurm/shard-N.out), or that
  // it has none.
  std::string error;
};

struct SweepStatus {
  std::vector<ShardStatus> shards;
  std::vector<std::string> notes;  // "sacct: accounting storage is disabled", ...
};

// Each shard's Slurm state (squeue, then sacct for elements that left the
// queue) in the latest array that runs it (the array, or its latest
// resubmission), and its published stores.
SweepStatus sweep_status(const ShardPlan& plan, const std::string& dir, const CommandRunner& run);

// The elements Slurm still has in its queue, of every array of the
// submission (the array and each resubmission); an error when squeue
// cannot tell.
Result<std::vector<ElementState>> queued_shards(const ShardPlan& plan, const std::string& dir,
                                                const CommandRunner& run);

// Whether a shard may be submitted again (`colo slurm resubmit`): not while
// Slurm has it in its queue (pending, running); when its last attempt ended
// ok with every job, only when forced.
enum class Resubmittable { kYes, kStillInSlurm, kEndedOk };
Resubmittable resubmittable(const ShardStatus& shard, bool force);

struct CollectOptions {
  std::string out_path;      // default <dir>/colo.db
  bool partial = false;      // merge although shards are still queued or running
  std::string command_line;  // recorded with the merged run
};

struct CollectResult {
  std::string out_path;
  int64_t run_id = 0;
  int jobs = 0;
  int jobs_ok = 0;
  int jobs_missing = 0;            // added as failed: no store held them
  std::vector<std::string> lines;  // one per shard: which attempt, from where
};

// Merges each shard's winning attempt into one run of a new store at
// out_path (written beside it and renamed into place, so an earlier merge
// stays intact until the new one is complete). `queued` are the elements
// Slurm still has in its queue: an error unless options.partial. `file`,
// when given, supplies the specs of jobs recorded as missing.
Result<CollectResult> collect_shards(const ShardPlan& plan, const std::string& dir,
                                     const std::vector<ElementState>& queued, const JobFile* file,
                                     const CollectOptions& options);

}  // namespace colo
