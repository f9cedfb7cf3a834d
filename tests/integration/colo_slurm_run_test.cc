// `colo run` inside a Slurm allocation (Slurm's environment variables, set
// by hand here; tests/integration/colo_slurm_test.sh runs a real Slurm), and
// one shard of a `colo slurm submit --dry-run` plan run and collected without
// Slurm. The real binary on the simulated backend.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "analysis/stored.h"
#include "integration_util.h"
#include "store/run_store.h"

namespace colo {
namespace {

class ColoSlurmRun : public ColoTestDir {
 protected:
  std::string colo(const std::string& env, const std::string& args) const {
    return "env -u SLURM_JOB_ID -u SLURM_JOB_GPUS -u SLURM_STEP_GPUS -u CUDA_VISIBLE_DEVICES "
           "COLO_HOME='" +
           dir_ + "/home' TMPDIR='" + dir_ + "' " + env + " " + std::string(COLO_BINARY) + " " +
           args;
  }
  // `n` jobs of `ms` milliseconds each that report one epoch.
  std::string jobs_file(int n, int ms) {
    return write_file(
        "jobs.toml",
        "[run]\nmax_per_gpu = 2\n\n[[job]]\nname = \"toy\"\ncommand = [\"sh\", \"-c\", \"sleep " +
            std::to_string(ms / 1000.0) +
            "; printf '{\\\"event\\\":\\\"epoch_end\\\",\\\"epoch\\\":1,\\\"samples\\\":10}\\\\n' "
            ">> \\\"$COLO_PROGRESS_FILE\\\"\"]\nrepeat = " +
            std::to_string(n) + "\n");
  }
};

constexpr const char* kAllocation =
    "SLURM_JOB_ID=77 SLURM_ARRAY_JOB_ID=70 SLURM_ARRAY_TASK_ID=7 SLURMD_NODENAME=node9 "
    "SLURM_RESTART_COUNT=2";

TEST_F(ColoSlurmRun, InsideAnAllocationOnlyItsGpusAreUsedAndWhereItRanIsRecorded) {
  std::string file = jobs_file(4, 300);
  CommandResult r =
      shell(colo(std::string(kAllocation) + " SLURM_JOB_GPUS=1,3 CUDA_VISIBLE_DEVICES=1,3",
                 "run " + file +
                     " --backend sim --sim-devices 4 --mechanism naive --policy fixed "
                     "--plain --db " +
                     db()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("inside Slurm job 70_7 (step batch, node node9, restart 2)"),
            std::string::npos)
      << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  Result<RunSummary> summary = analyse_run(*store, 0);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run.slurm.job_id, "70_7");
  EXPECT_EQ(summary->run.slurm.step, "batch");
  EXPECT_EQ(summary->run.slurm.node, "node9");
  EXPECT_EQ(summary->run.slurm.restart_count, 2);
  std::set<int> used;
  for (const JobSummary& j : summary->jobs) used.insert(j.device.value_or(-1));
  EXPECT_EQ(used, (std::set<int>{1, 3})) << r.output;
  EXPECT_NE(shell(colo("", "show --db " + db())).output.find("Slurm job 70_7 step batch on node9"),
            std::string::npos);
}

TEST_F(ColoSlurmRun, AnAllocationWithoutGpusIsAClearError) {
  std::string file = jobs_file(1, 100);
  CommandResult r = shell(colo(kAllocation, "run " + file + " --backend sim --plain --db " + db()));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("Slurm job 70_7 on node9 was given no GPU"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--gres=gpu:N"), std::string::npos) << r.output;
}

TEST_F(ColoSlurmRun, ASallocShellOnTheSubmitHostOnlyWarns) {
  std::string file = jobs_file(1, 100);
  CommandResult r = shell(colo("SLURM_JOB_ID=5 SLURM_JOB_GPUS=0",
                               "run " + file + " --backend sim --plain --db " + db()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: SLURM_JOB_ID=5 is set, but this is not a node"),
            std::string::npos)
      << r.output;
}

TEST_F(ColoSlurmRun, OneShardOfAPlanRunsItsJobsPublishesItsStoreAndIsCollected) {
  std::string file = jobs_file(4, 200);
  std::string sub = dir_ + "/sub";
  CommandResult plan =
      shell(colo("", "slurm submit " + file + " --nodes 2 --backend sim --dry-run --dir " + sub));
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("4 jobs from"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("shard 1: 2 jobs"), std::string::npos) << plan.output;
  ASSERT_TRUE(std::filesystem::exists(sub + "/shard.sbatch"));

  CommandResult run = shell(colo(
      "", "run " + file + " --shard-plan " + sub + "/plan.json --shard 1 --backend sim --plain"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(std::filesystem::exists(sub + "/shards/1/attempt-0.db")) << run.output;
  EXPECT_TRUE(std::filesystem::exists(sub + "/shards/1/attempt-0/logs")) << run.output;

  // Shard 0 never ran: its jobs are recorded failed, none is lost.
  CommandResult collect = shell(colo("", "slurm collect " + sub));
  EXPECT_EQ(collect.exit_code, 1) << collect.output;
  EXPECT_NE(collect.output.find("merged 4 jobs of 4 planned"), std::string::npos) << collect.output;
  EXPECT_NE(collect.output.find("2 ok, 2 not ok"), std::string::npos) << collect.output;
  Result<std::unique_ptr<RunStore>> merged = RunStore::open(sub + "/colo.db");
  ASSERT_TRUE(merged.ok());
  Result<RunSummary> summary = analyse_run(*(*merged), 0);
  ASSERT_TRUE(summary.ok());
  ASSERT_EQ(summary->jobs.size(), 4u);
  int failed = 0;
  for (const JobSummary& j : summary->jobs) {
    if (j.state == JobState::kFailed) {
      ++failed;
      EXPECT_NE(j.reason.find("shard 0: no attempt published a store"), std::string::npos);
    }
  }
  EXPECT_EQ(failed, 2);

  // The job file may not change under a plan.
  write_file("jobs.toml", "[[job]]\nname = \"other\"\ncommand = [\"true\"]\n");
  CommandResult changed = shell(colo(
      "", "run " + file + " --shard-plan " + sub + "/plan.json --shard 0 --backend sim --plain"));
  EXPECT_EQ(changed.exit_code, 2) << changed.output;
  EXPECT_NE(changed.output.find("is not in the file any more"), std::string::npos)
      << changed.output;
}

TEST_F(ColoSlurmRun, ShardsUseTheProfilesOfTheStoreTheSweepWasPlannedWith) {
  std::string file = jobs_file(2, 200);
  const std::string db = dir_ + "/planned.db";
  // No store yet: nothing to pass on.
  ASSERT_EQ(shell(colo("", "slurm submit " + file + " --backend sim --dry-run --db " + db +
                               " --dir " + dir_ + "/none"))
                .exit_code,
            0);
  EXPECT_EQ(shell("cat " + dir_ + "/none/shard.sbatch").output.find("--profiles-from"),
            std::string::npos);

  ASSERT_EQ(shell(colo("", "run " + file + " --backend sim --plain --local --db " + db)).exit_code,
            0);
  CommandResult plan = shell(colo("", "slurm submit " + file + " --backend sim --dry-run --db " +
                                          db + " --dir " + dir_ + "/sub"));
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  // The batch script's colo run reads the profiles of that store.
  const std::string script = shell("cat " + dir_ + "/sub/shard.sbatch").output;
  EXPECT_NE(script.find("'--profiles-from' '" + db + "'"), std::string::npos) << script;

  // A simulated node has the GPUs each node asks for (issue 33, item 14).
  ASSERT_EQ(shell(colo("", "slurm submit " + file +
                               " --backend sim --gpus-per-node 2 --dry-run "
                               "--db " +
                               db + " --dir " + dir_ + "/two"))
                .exit_code,
            0);
  const std::string two = shell("cat " + dir_ + "/two/shard.sbatch").output;
  EXPECT_NE(two.find("'--sim-devices' '2'"), std::string::npos) << two;
}

TEST_F(ColoSlurmRun, SubmitPlansNodesForADeadline) {
  // 8 jobs of 10 minutes alone, exclusive, 2 GPUs a node: 4 nodes end within 12 minutes.
  std::string file = write_file("long.toml",
                                "[[job]]\nname = \"long\"\ncommand = [\"true\"]\nrepeat = 8\n"
                                "solo_time = \"10m\"\ngpu_memory = \"1GiB\"\n");
  CommandResult r = shell(colo("", "slurm submit " + file +
                                       " --deadline 12m --gpus-per-node 2 --mechanism exclusive "
                                       "--dry-run --dir " +
                                       dir_ + "/sub"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("as 4 shards"), std::string::npos) << r.output;
  CommandResult both = shell(colo("", "slurm submit " + file + " --deadline 1h --nodes 2"));
  EXPECT_EQ(both.exit_code, 2) << both.output;
}

}  // namespace
}  // namespace colo
