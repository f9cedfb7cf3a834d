// One element of a shard array: `colo run FILE --shard-plan <dir>/plan.json`
// runs only its shard's jobs, writes its store on the node (SQLite must not
// be written over a network filesystem) and publishes a copy of it into the
// submission directory when the run ends, however it ends, as
// shards/<i>/attempt-<r>.db (r = the submission's first attempt, 0 for the
// array, + SLURM_RESTART_COUNT). An attempt whose node died publishes
// nothing; its rerun is the next attempt. An attempt never runs twice: one
// whose files exist (a shard submitted again by hand with sbatch) is
// refused, so that nothing it left is overwritten.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "jobs/job_spec.h"
#include "slurm/allocation.h"
#include "store/run_store.h"

namespace colo {

struct ShardRun {
  int shard = 0;
  int attempt = 0;
  JobFile file;              // the shard's jobs only
  std::string local_dir;     // node-local, removed after publishing
  std::string local_db;      // the store the run writes
  std::string published_db;  // where its copy goes
  std::string logs_root;     // job logs, in the submission directory
};

// Reads the plan at `plan_file`; `shard` defaults to the array element
// (SLURM_ARRAY_TASK_ID); the attempt is `first_attempt` plus Slurm's
// restart count. Checks that `file` is the job file the plan was made from
// and still holds every job of the shard, keeps only those, that the
// attempt did not run before, and prepares the directories. Errors say what
// to do.
Result<ShardRun> prepare_shard_run(const std::string& plan_file, std::optional<int> shard,
                                   int first_attempt, const JobFile& file,
                                   const std::optional<SlurmAllocation>& allocation,
                                   const EnvLookup& env);

// Copies `store` (the run's, at run.local_db) to run.published_db in one
// piece (RunStore::copy_to: a file beside it, renamed over it; mode 0600).
Status publish_shard_store(RunStore& store, const ShardRun& run);

// Removes run.local_dir (call once the store is closed).
void remove_shard_local_dir(const ShardRun& run);

}  // namespace colo
