#include "slurm/submission.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace colo {
namespace {

TEST(NextAttempt, OnePastEveryAttemptTheShardHadAndNeverTheArraysOwn) {
  struct Case {
    ShardAttempts attempts;
    int want;
  };
  const std::vector<Case> cases = {
      {{}, 1},                  // never ran: still not 0, the array's
      {{{0}, {0}, {}}, 1},      // attempt 0 ran and published
      {{{}, {0}, {}}, 1},       // attempt 0 started and published nothing (scancel before)
      {{{0}, {0, 1}, {}}, 2},   // requeued by Slurm: attempt 1 died with its node
      {{{0}, {0}, {3}}, 4},     // resubmitted as 3, which has not started yet
      {{{0, 5}, {2}, {1}}, 6},  // the highest of all
  };
  for (const Case& c : cases) {
    EXPECT_EQ(next_attempt(c.attempts), c.want)
        << c.attempts.published.size() << " published, " << c.attempts.started.size()
        << " started, " << c.attempts.resubmitted.size() << " resubmitted";
  }
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ResubmitTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/colo-resubmit-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ShardPlan plan;
    plan.job_file = dir_ + "/sweep.toml";
    plan.total_jobs = 4;
    plan.gpus_per_node = 1;
    plan.colo_binary = "/opt/colo";
    plan.shards = {{{"a", "b"}, 0}, {{"c", "d"}, 0}};
    Result<Submission> written = write_submission(plan, dir_ + "/sub", {});
    ASSERT_TRUE(written.ok()) << written.error().message();
    submission_ = *written;
    submission_.plan.array_job_id = "10";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // sbatch answering `id`, each call's arguments kept.
  CommandRunner sbatch(const std::string& id) {
    return [this, id](const std::vector<std::string>& argv) -> Result<CommandOutput> {
      calls_.push_back(argv);
      return CommandOutput{0, id + "\n", ""};
    };
  }

  std::string dir_;
  Submission submission_;
  std::vector<std::vector<std::string>> calls_;
  FakeClock clock_{1'700'000'000'000};
};

TEST_F(ResubmitTest, TakesTheNextAttemptSubmitsOneElementAndRecordsItsArray) {
  const std::string shard_dir = submission_.dir + "/shards/1";
  std::filesystem::create_directories(shard_dir + "/attempt-0/logs");
  std::ofstream(shard_dir + "/attempt-0.db") << "";

  Result<Resubmission> r = resubmit_shard(submission_, 1, sbatch("20"), clock_);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->shard, 1);
  EXPECT_EQ(r->first_attempt, 1);
  EXPECT_EQ(r->array_job_id, "20");
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0], (std::vector<std::string>{"sbatch", "--parsable", "--array=1",
                                                 submission_.script_path, "1"}));
  std::vector<Resubmission> recorded = read_resubmissions(submission_.dir, 2);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].shard, 1);
  EXPECT_EQ(recorded[0].first_attempt, 1);
  EXPECT_EQ(recorded[0].array_job_id, "20");
  EXPECT_EQ(recorded[0].submitted_ms, 1'700'000'000'000);
  // The earlier attempt's files stay.
  EXPECT_TRUE(std::filesystem::exists(shard_dir + "/attempt-0.db"));
  EXPECT_TRUE(std::filesystem::exists(shard_dir + "/attempt-0/logs"));

  // Again, before the first one ran: the next number.
  Result<Resubmission> again = resubmit_shard(submission_, 1, sbatch("30"), clock_);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->first_attempt, 2);
  EXPECT_EQ(calls_.back().back(), "2");

  // The arrays of the submission, oldest first: status asks about each.
  std::vector<SubmittedArray> arrays =
      submitted_arrays(submission_.plan, read_resubmissions(submission_.dir, 2));
  ASSERT_EQ(arrays.size(), 3u);
  EXPECT_EQ(arrays[0].array_job_id, "10");
  EXPECT_EQ(arrays[0].shards, (std::vector<int>{0, 1}));
  EXPECT_EQ(arrays[1].array_job_id, "20");
  EXPECT_EQ(arrays[2].array_job_id, "30");
  EXPECT_EQ(arrays[2].shards, (std::vector<int>{1}));
}

TEST_F(ResubmitTest, ASbatchThatFailsLeavesNoRecordAndTakesNoNumber) {
  CommandRunner refuses = [](const std::vector<std::string>&) -> Result<CommandOutput> {
    return CommandOutput{1, "", "sbatch: error: Invalid partition name specified\n"};
  };
  Result<Resubmission> r = resubmit_shard(submission_, 0, refuses, clock_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("Invalid partition"), std::string::npos)
      << r.error().message();
  EXPECT_TRUE(read_resubmissions(submission_.dir, 2).empty());
  EXPECT_EQ(next_attempt(shard_attempts(submission_.dir, 0)), 1);
}

TEST_F(ResubmitTest, ANumberTakenIsNeverTakenTwiceAndOnlyShardsOfThePlan) {
  // Another resubmission holds attempt 1 (its sbatch not answered yet): the
  // next one takes 2.
  std::filesystem::create_directories(submission_.dir + "/shards/0");
  std::ofstream(resubmission_path(submission_.dir, 0, 1)) << R"({"array_job_id": ""})";
  Result<Resubmission> r = resubmit_shard(submission_, 0, sbatch("40"), clock_);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->first_attempt, 2);
  // Not submitted to Slurm: no array to ask about.
  EXPECT_EQ(submitted_arrays(submission_.plan, read_resubmissions(submission_.dir, 2)).size(), 2u);

  Result<Resubmission> none = resubmit_shard(submission_, 2, sbatch("50"), clock_);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("there is no shard 2"), std::string::npos);
}

TEST_F(ResubmitTest, AScriptOfAnOlderColoIsNotResubmitted) {
  std::ofstream(submission_.script_path)
      << "#!/bin/sh\nexec '/opt/colo' run 'x.toml' --shard-plan 'plan.json' --plain\n";
  Result<Resubmission> r = resubmit_shard(submission_, 0, sbatch("60"), clock_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("older colo"), std::string::npos) << r.error().message();
  EXPECT_TRUE(calls_.empty());
}

ElementState element(int task, const std::string& job, const std::string& state, bool in_queue) {
  return {task, job, state, in_queue ? "n1" : "", "", in_queue};
}

TEST(MergeSlurmStates, EachShardFromTheLastArrayThatRunsIt) {
  const Resubmission shard1_first{1, 1, "20", 0};
  const Resubmission shard1_second{1, 2, "30", 0};
  const SubmittedArray array{"10", {0, 1, 2}, std::nullopt};
  std::map<std::string, ArrayJobState> states = {
      {"10",
       {{element(2, "13", "RUNNING", true)},
        {element(0, "11", "COMPLETED", false), element(1, "12", "CANCELLED", false),
         element(2, "13", "PENDING", false)}}},
      {"20", {{}, {element(1, "21", "FAILED", false)}}},
  };

  // Shard 1 resubmitted once: its state is its resubmission's; the queue
  // wins over accounting in one array.
  ShardsInSlurm once = merge_slurm_states({array, {"20", {1}, shard1_first}}, states);
  EXPECT_EQ(once.latest.at(0).state, "COMPLETED");
  EXPECT_EQ(once.latest.at(1).state, "FAILED");
  EXPECT_EQ(once.latest.at(1).job_id, "21");
  EXPECT_EQ(once.latest.at(2).state, "RUNNING");
  EXPECT_TRUE(once.latest.at(2).in_queue);
  EXPECT_EQ(once.resubmitted.at(1).array_job_id, "20");
  EXPECT_EQ(once.resubmitted.count(0), 0u);
  ASSERT_EQ(once.queued.size(), 1u);
  EXPECT_EQ(once.queued[0].task, 2);

  // Resubmitted again, and Slurm knows nothing of the last one yet (no
  // accounting, left the queue): unknown, never an earlier array's state.
  ShardsInSlurm twice =
      merge_slurm_states({array, {"20", {1}, shard1_first}, {"30", {1}, shard1_second}}, states);
  EXPECT_EQ(twice.latest.count(1), 0u);
  EXPECT_EQ(twice.resubmitted.at(1).first_attempt, 2);

  states["30"] = {{element(1, "31", "PENDING", true)}, {}};
  ShardsInSlurm pending =
      merge_slurm_states({array, {"20", {1}, shard1_first}, {"30", {1}, shard1_second}}, states);
  EXPECT_EQ(pending.latest.at(1).state, "PENDING");
  EXPECT_EQ(pending.queued.size(), 2u);  // shard 2 of the array, shard 1 of 30
}

}  // namespace
}  // namespace colo
