#include "slurm/slurm_client.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

TEST(ParseSbatch, TheJobId) {
  EXPECT_EQ(parse_sbatch_output("1234\n").value(), "1234");
  EXPECT_EQ(parse_sbatch_output("1234;cluster\n").value(), "1234");
  EXPECT_EQ(parse_sbatch_output("sbatch: warning: something\n77\n").value(), "77");
  Result<std::string> bad = parse_sbatch_output("sbatch: error: Batch job submission failed\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("submission failed"), std::string::npos);
}

TEST(ParseSqueue, OneElementPerLine) {
  // As `squeue --noheader --array --format %K|%A|%T|%N|%r` prints them.
  std::vector<ElementState> e = parse_squeue(
      "0|11|RUNNING|n1|None\n"
      "1|12|PENDING||BeginTime\n"
      "garbage\n"
      "N/A|13|RUNNING|n2|None\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].task, 0);
  EXPECT_EQ(e[0].job_id, "11");
  EXPECT_EQ(e[0].state, "RUNNING");
  EXPECT_EQ(e[0].node, "n1");
  EXPECT_EQ(e[1].task, 1);
  EXPECT_EQ(e[1].node, "");
  EXPECT_EQ(e[1].reason, "BeginTime");
  EXPECT_TRUE(e[0].in_queue && e[1].in_queue);
}

TEST(ParseSacct, ElementsNotStepsNorPendingRanges) {
  std::vector<ElementState> e = parse_sacct(
      "10_0|11|COMPLETED|n2\n"
      "10_0.batch|11.batch|COMPLETED|n2\n"
      "10_1|10|CANCELLED by 0|n1\n"
      "10_[2-5]|10|PENDING|None assigned\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].task, 0);
  EXPECT_EQ(e[0].state, "COMPLETED");
  EXPECT_EQ(e[1].task, 1);
  EXPECT_EQ(e[1].state, "CANCELLED");
  EXPECT_FALSE(e[0].in_queue || e[1].in_queue);
}

TEST(QueuedElements, AnArrayThatLeftTheQueueIsEmptyNotAnError) {
  CommandRunner gone = [](const std::vector<std::string>& argv) -> Result<CommandOutput> {
    EXPECT_EQ(argv.front(), "squeue");
    return CommandOutput{1, "", "slurm_load_jobs error: Invalid job id specified\n"};
  };
  Result<std::vector<ElementState>> e = queued_elements(gone, "10");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->empty());
  CommandRunner down = [](const std::vector<std::string>&) -> Result<CommandOutput> {
    return CommandOutput{1, "", "slurm_load_jobs error: Unable to contact slurm controller\n"};
  };
  Result<std::vector<ElementState>> d = queued_elements(down, "10");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("Unable to contact"), std::string::npos);
  CommandRunner no_accounting = [](const std::vector<std::string>&) -> Result<CommandOutput> {
    return CommandOutput{1, "", "Slurm accounting storage is disabled\n"};
  };
  Result<std::vector<ElementState>> a = accounted_elements(no_accounting, "10");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("sacct: Slurm accounting storage is disabled"),
            std::string::npos);
}

TEST(BatchScript, OneElementPerShardRunningColoRunOnItsShard) {
  ShardPlan plan;
  plan.job_file = "/home/u/it's.toml";
  plan.gpus_per_node = 4;
  plan.shards.resize(3);
  plan.mechanism = "mps";
  plan.run_arguments = {"--backend", "sim"};
  plan.colo_binary = "/opt/colo/bin/colo";
  SbatchOptions options;
  options.partition = "gpu";
  options.time_limit = "2:00:00";
  options.job_name = "colo-sweep";
  options.extra = {"--account=proj"};
  Result<std::string> script = batch_script(plan, "/scratch/sub", options);
  ASSERT_TRUE(script.ok()) << script.error().message();
  for (const char* line :
       {"#SBATCH --array=0-2\n", "#SBATCH --gres=gpu:4\n", "#SBATCH --requeue\n",
        "#SBATCH --nodes=1\n", "#SBATCH --open-mode=append\n",
        "#SBATCH --output=/scratch/sub/slurm/shard-%a.out\n", "#SBATCH --partition=gpu\n",
        "#SBATCH --time=2:00:00\n", "#SBATCH --job-name=colo-sweep\n", "#SBATCH --account=proj\n",
        "exec '/opt/colo/bin/colo' run '/home/u/it'\\''s.toml' --shard-plan "
        "'/scratch/sub/plan.json' --shard-first-attempt \"${1:-0}\" --plain --mechanism 'mps' "
        "'--backend' 'sim'\n",
        "attempt $((${1:-0} + ${SLURM_RESTART_COUNT:-0}))"}) {
    EXPECT_NE(script->find(line), std::string::npos) << line << "\n" << *script;
  }
  // Every #SBATCH line comes before the first command.
  EXPECT_LT(script->rfind("#SBATCH"), script->find("\necho"));
  EXPECT_FALSE(batch_script(plan, "/scratch/my dir", options).ok());
  EXPECT_TRUE(script_numbers_attempts(*script));
}

TEST(SbatchCommand, TheArrayOrOneShardFromItsFirstAttempt) {
  EXPECT_EQ(sbatch_command("/s/shard.sbatch"),
            (std::vector<std::string>{"sbatch", "--parsable", "/s/shard.sbatch"}));
  // Options before the script, its argument after.
  EXPECT_EQ(
      sbatch_command("/s/shard.sbatch", 3, 2),
      (std::vector<std::string>{"sbatch", "--parsable", "--array=3", "/s/shard.sbatch", "2"}));
}

TEST(ShellQuote, OneWord) {
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

}  // namespace
}  // namespace colo
