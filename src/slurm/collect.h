// `colo slurm collect` and `colo slurm status`: the shards' published stores
// (see shard_plan.h for the layout) read together with what Slurm says.
//
// Which attempt wins: for each shard, the attempt with the highest number
// (SLURM_RESTART_COUNT) that published a store. Slurm requeues an element
// only after ending the attempt before, and each attempt reruns the whole
// shard into its own store, so the last one is complete on its own and no
// job is counted twice. Jobs of the plan that no winning store holds (the
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

namespace colo {

// Attempts of `shard` that published a store, ascending.
std::vector<int> published_attempts(const std::string& dir, int shard);

struct ShardStatus {
  int shard = 0;
  int jobs = 0;                       // in the plan
  std::optional<ElementState> slurm;  // squeue, else sacct; nullopt: neither knows it
  std::vector<int> attempts;          // published
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
// queue) and its published stores.
SweepStatus sweep_status(const ShardPlan& plan, const std::string& dir, const CommandRunner& run);

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
