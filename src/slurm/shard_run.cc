#include "slurm/shard_run.h"

#include <fmt/format.h>
#include <stdio.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "common/paths.h"
#include "slurm/shard_plan.h"

namespace colo {

Result<ShardRun> prepare_shard_run(const std::string& plan_file, std::optional<int> shard,
                                   int first_attempt, const JobFile& file,
                                   const std::optional<SlurmAllocation>& allocation,
                                   const EnvLookup& env) {
  Result<ShardPlan> plan = read_plan(plan_file);
  if (!plan.ok()) return plan.error();
  ShardRun run;
  if (!shard && allocation) shard = allocation->array_task;
  if (!shard) {
    return Error(
        fmt::format("--shard-plan {}: which shard? Outside an element of a Slurm job array (no "
                    "SLURM_ARRAY_TASK_ID) give --shard N",
                    plan_file));
  }
  if (*shard < 0 || *shard >= static_cast<int>(plan->shards.size())) {
    return Error(fmt::format("--shard-plan {}: there is no shard {}; the plan has {} (0 to {})",
                             plan_file, *shard, plan->shards.size(), plan->shards.size() - 1));
  }
  if (absolute_path(file.path) != plan->job_file) {
    return Error(fmt::format("--shard-plan {}: the plan was made from {}, not {}", plan_file,
                             plan->job_file, absolute_path(file.path)));
  }
  run.shard = *shard;
  run.attempt = first_attempt + (allocation ? allocation->restart_count : 0);
  run.file = file;
  run.file.jobs.clear();
  const std::vector<std::string>& names = plan->shards[static_cast<size_t>(*shard)].jobs;
  std::set<std::string> wanted(names.begin(), names.end());
  for (const JobSpec& job : file.jobs) {
    if (wanted.erase(job.name) > 0) run.file.jobs.push_back(job);
  }
  if (!wanted.empty()) {
    return Error(fmt::format(
        "{}: job '{}' of shard {} is not in the file any more (it changed after colo slurm "
        "submit): restore it, or submit the sweep again",
        file.path, *wanted.begin(), *shard));
  }

  const std::string dir = std::filesystem::path(plan_file).parent_path().string();
  run.published_db = shard_store_path(dir, run.shard, run.attempt);
  run.logs_root = shard_logs_dir(dir, run.shard, run.attempt);
  for (const std::string& earlier : {run.published_db, run.logs_root}) {
    if (std::filesystem::exists(std::filesystem::symlink_status(earlier))) {
      return Error(fmt::format(
          "shard {}'s attempt {} ran before ({} exists), and its files stay: to run the shard "
          "again, `colo slurm resubmit {} {}` submits it as a new attempt",
          run.shard, run.attempt, earlier, dir, run.shard));
    }
  }
  std::string element = allocation ? allocation->job_id : fmt::format("pid{}", getpid());
  run.local_dir = fmt::format("{}/shard-{}-attempt{}", node_local_state_dir(allocation, env),
                              element, run.attempt);
  run.local_db = run.local_dir + "/colo.db";
  std::error_code ec;
  std::filesystem::remove_all(run.local_dir, ec);  // a leftover of this very attempt
  if (Status s = make_dirs(run.local_dir, 0700); !s.ok()) return s.error();
  if (Status s = make_dirs(run.logs_root); !s.ok()) return s.error();
  return run;
}

Status publish_shard_store(RunStore& store, const ShardRun& run) {
  Result<StoreCopy> copy = store.copy_to(run.published_db, ExistingFile::kReplace);
  if (!copy.ok()) return copy.error();
  return OkStatus();
}

void remove_shard_local_dir(const ShardRun& run) {
  std::error_code ec;
  std::filesystem::remove_all(run.local_dir, ec);
}

}  // namespace colo
