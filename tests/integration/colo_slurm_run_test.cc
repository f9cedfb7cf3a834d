// `colo run` inside a Slurm allocation (Slurm's environment variables, set
// by hand here; tests/integration/colo_slurm_test.sh runs a real Slurm), and
// one shard of a `colo slurm submit --dry-run` plan run and collected without
// Slurm. The real binary on the simulated backend.
#include <gtest/gtest.h>
#include <signal.h>

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

// Issue 54 (item 8): a shard cancelled, then run again with `colo slurm
// resubmit` as a new attempt beside the old one, with stand-ins for sbatch
// and squeue (sacct: no accounting) and each element's batch script run as
// Slurm would run it (tests/integration/colo_slurm_test.sh does it all on a
// real Slurm). The jobs wait for a file, so that the first attempt of shard
// 1 can be cancelled while they run.
TEST_F(ColoSlurmRun, ACancelledShardRunsAgainAsANewAttemptBesideTheOld) {
  const std::string bin = dir_ + "/bin";
  shell("mkdir -p '" + bin + "'");
  write_file("bin/sbatch", "#!/bin/sh\necho \"$*\" >> '" + dir_ + "/sbatch.log'\nn=$(cat '" + dir_ +
                               "/next-id' 2>/dev/null || echo 100)\n"
                               "echo $((n + 1)) > '" +
                               dir_ + "/next-id'\necho \"$n\"\n");
  write_file("bin/squeue",
             "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --jobs ] && id=$2; shift; "
             "done\ncat '" +
                 dir_ + "/queue-'\"$id\" 2>/dev/null\nexit 0\n");
  write_file("bin/sacct", "#!/bin/sh\necho 'Slurm accounting storage is disabled' >&2\nexit 1\n");
  shell("chmod +x '" + bin + "'/*");
  const std::string path = "PATH='" + bin + "':\"$PATH\"";
  auto slurm = [&](const std::string& args) { return shell(colo(path, "slurm " + args)); };
  const std::string sub = dir_ + "/sub";
  // Element `task` of array `array` (its own job id `job`), attempt `first` on.
  auto element = [&](const std::string& array, int task, const std::string& job, int first) {
    return "env -u SLURM_STEP_GPUS COLO_HOME='" + dir_ + "/home' TMPDIR='" + dir_ + "' " + path +
           " SLURM_JOB_ID=" + job + " SLURM_ARRAY_JOB_ID=" + array +
           " SLURM_ARRAY_TASK_ID=" + std::to_string(task) +
           " SLURMD_NODENAME=n1 SLURM_RESTART_COUNT=0 SLURM_JOB_GPUS=0 CUDA_VISIBLE_DEVICES=0 "
           "sh '" +
           sub + "/shard.sbatch' " + std::to_string(first);
  };
  const std::string release = dir_ + "/release";
  std::string file = write_file(
      "jobs.toml",
      "[run]\nmax_per_gpu = 2\n\n[[job]]\nname = \"toy\"\ncommand = [\"sh\", \"-c\", \"while [ ! "
      "-e '" +
          release +
          "' ]; do sleep 0.1; done; printf "
          "'{\\\"event\\\":\\\"epoch_end\\\",\\\"epoch\\\":1,\\\"samples\\\":10}\\\\n' >> "
          "\\\"$COLO_PROGRESS_FILE\\\"\"]\nrepeat = 4\n");

  CommandResult submitted = slurm("submit " + file + " --nodes 2 --backend sim --dir " + sub);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  EXPECT_NE(submitted.output.find("submitted array job 100"), std::string::npos)
      << submitted.output;

  // Both elements in the queue: nothing to collect yet, nothing to resubmit.
  write_file("queue-100", "0|200|RUNNING|n1|None\n1|201|RUNNING|n2|None\n");
  CommandResult early = slurm("collect " + sub);
  EXPECT_EQ(early.exit_code, 4) << early.output;
  EXPECT_NE(early.output.find("still has shards of this submission in its queue"),
            std::string::npos)
      << early.output;
  CommandResult running = slurm("resubmit " + sub + " 1");
  EXPECT_EQ(running.exit_code, 4) << running.output;
  EXPECT_NE(running.output.find("shard 1 is still RUNNING in Slurm (job 201)"), std::string::npos)
      << running.output;

  // Shard 1's element is cancelled (scancel sends SIGTERM) while its jobs run.
  const std::string out1 = dir_ + "/shard-1-attempt-0.out";
  CommandResult started =
      shell("(" + element("100", 1, "201", 0) + ") > '" + out1 + "' 2>&1 & echo $!");
  const pid_t pid = std::stoi(started.output);
  ASSERT_TRUE(eventually(
      [&] { return shell("grep -c ' started on gpu' '" + out1 + "'").output.rfind("2", 0) == 0; },
      60'000))
      << shell("cat '" + out1 + "'").output;
  ::kill(pid, SIGTERM);
  ASSERT_TRUE(
      eventually([&] { return std::filesystem::exists(sub + "/shards/1/attempt-0.db"); }, 60'000))
      << shell("cat '" + out1 + "'").output;
  // Shard 0 runs to its end.
  write_file("release", "");
  CommandResult shard0 = shell(element("100", 0, "200", 0));
  ASSERT_EQ(shard0.exit_code, 0) << shard0.output;
  EXPECT_NE(shard0.output.find("colo shard 0, attempt 0"), std::string::npos) << shard0.output;
  shell("rm '" + dir_ + "/queue-100'");

  CommandResult ok = slurm("resubmit " + sub + " 0");
  EXPECT_EQ(ok.exit_code, 2) << ok.output;
  EXPECT_NE(ok.output.find("shard 0's attempt 0 ended ok"), std::string::npos) << ok.output;
  CommandResult resubmitted = slurm("resubmit " + sub + " 1");
  ASSERT_EQ(resubmitted.exit_code, 0) << resubmitted.output;
  EXPECT_NE(resubmitted.output.find("shard 1: submitted again as array job 101, attempt 1"),
            std::string::npos)
      << resubmitted.output;
  EXPECT_NE(shell("tail -n 1 '" + dir_ + "/sbatch.log'")
                .output.find("--parsable --array=1 " + sub + "/shard.sbatch 1"),
            std::string::npos);

  // Status asks about both arrays and shows the new one's element.
  write_file("queue-101", "1|202|PENDING||Resources\n");
  CommandResult status = slurm("status " + sub);
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("resubmitted as array job 101, attempts from 1; waiting: "
                               "Resources"),
            std::string::npos)
      << status.output;
  EXPECT_EQ(slurm("collect " + sub).exit_code, 4);
  EXPECT_EQ(slurm("resubmit " + sub + " 1").exit_code, 4);

  // The resubmitted element runs as attempt 1.
  CommandResult again = shell(element("101", 1, "202", 1));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("colo shard 1, attempt 1"), std::string::npos) << again.output;
  shell("rm '" + dir_ + "/queue-101'");
  status = slurm("status " + sub);
  EXPECT_NE(status.output.find("0,1       ok"), std::string::npos) << status.output;

  CommandResult collected = slurm("collect " + sub);
  ASSERT_EQ(collected.exit_code, 0) << collected.output;
  EXPECT_NE(collected.output.find("shard 1 attempt 1 (Slurm 101_1 on n1): 2 jobs, run ok; "
                                  "earlier attempt 0 ignored"),
            std::string::npos)
      << collected.output;
  EXPECT_NE(collected.output.find("merged 4 jobs of 4 planned"), std::string::npos)
      << collected.output;
  EXPECT_NE(collected.output.find("4 ok, 0 not ok"), std::string::npos) << collected.output;
  // The cancelled attempt's files stay.
  EXPECT_TRUE(std::filesystem::exists(sub + "/shards/1/attempt-0.db"));
  EXPECT_TRUE(std::filesystem::exists(sub + "/shards/1/attempt-0/logs"));
  Result<std::unique_ptr<RunStore>> cancelled =
      RunStore::open_read_only(sub + "/shards/1/attempt-0.db");
  ASSERT_TRUE(cancelled.ok()) << cancelled.error().message();
  EXPECT_EQ((*cancelled)->run(0)->state, RunState::kCancelled);

  // The same attempt never runs twice: an element submitted again by hand
  // (sbatch --array=1, attempt 0 again) refuses, and says what to do.
  CommandResult by_hand = shell(element("102", 1, "203", 0));
  EXPECT_EQ(by_hand.exit_code, 2) << by_hand.output;
  EXPECT_NE(by_hand.output.find("shard 1's attempt 0 ran before"), std::string::npos)
      << by_hand.output;
  EXPECT_NE(by_hand.output.find("colo slurm resubmit " + sub + " 1"), std::string::npos)
      << by_hand.output;
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
