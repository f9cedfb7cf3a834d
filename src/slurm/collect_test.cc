#include "slurm/collect.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/paths.h"
#include "store/run_store.h"

namespace colo {
namespace {

constexpr UnixMillis kT0 = 1'700'000'000'000;

class CollectTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/colo-collect-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    plan_.job_file = dir_ + "/sweep.toml";
    plan_.total_jobs = 4;
    plan_.gpus_per_node = 1;
    plan_.array_job_id = "10";
    plan_.shards = {{{"a", "b"}, 0}, {{"c", "d"}, 0}};
    ASSERT_TRUE(write_plan(plan_path(dir_), plan_).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Publishes attempt `attempt` of `shard`: one run on `node` whose jobs end
  // in the given states.
  void publish(int shard, int attempt, const std::string& node,
               const std::map<std::string, JobState>& jobs) {
    std::string path = shard_store_path(dir_, shard, attempt);
    ASSERT_TRUE(make_dirs(std::filesystem::path(path).parent_path().string()).ok());
    Result<std::unique_ptr<RunStore>> store = RunStore::open(path);
    ASSERT_TRUE(store.ok()) << store.error().message();
    NewRun run;
    run.started_ms = kT0 + attempt * 100'000;
    run.mechanism = "naive";
    run.backend = "sim";
    run.simulated = true;
    run.devices_json = R"([{"index":0,"uuid":"GPU-)" + node + R"("}])";
    run.slurm = {fmt::format("10_{}", shard), "batch", node, attempt};
    Result<int64_t> id = (*store)->begin_run(run);
    ASSERT_TRUE(id.ok());
    std::vector<JobSpec> specs;
    for (const auto& [name, state] : jobs) {
      JobSpec spec;
      spec.name = name;
      spec.command = {"true", name};
      specs.push_back(spec);
    }
    Result<std::vector<int64_t>> ids = (*store)->add_jobs(*id, specs, {}, run.started_ms);
    ASSERT_TRUE(ids.ok());
    size_t k = 0;
    for (const auto& [name, state] : jobs) {
      int64_t job = (*ids)[k++];
      ASSERT_TRUE((*store)->job_started(job, 100, 0, run.started_ms + 10).ok());
      JobExit exit{state, state == JobState::kOk ? 0 : 1, std::nullopt,
                   state == JobState::kOk ? "" : "exit code 1"};
      ASSERT_TRUE((*store)->job_finished(job, exit, run.started_ms + 5'000, 0).ok());
    }
    ASSERT_TRUE((*store)->end_run(*id, RunState::kOk, run.started_ms + 6'000).ok());
  }

  // The merged run: job name -> (state, reason).
  std::map<std::string, std::pair<JobState, std::string>> merged_jobs(const std::string& path) {
    std::map<std::string, std::pair<JobState, std::string>> out;
    Result<std::unique_ptr<RunStore>> store = RunStore::open(path);
    EXPECT_TRUE(store.ok());
    Result<std::vector<RunRow>> runs = (*store)->list_runs(50);
    EXPECT_EQ(runs->size(), 1u);  // one run however often collect ran
    Result<RunRecord> summary = (*store)->run_record(0);
    EXPECT_TRUE(summary.ok());
    for (const JobRow& j : summary->jobs) {
      EXPECT_EQ(out.count(j.name), 0u) << "job " << j.name << " twice";
      out[j.name] = {j.state, j.reason};
    }
    return out;
  }

  std::string dir_;
  ShardPlan plan_;
};

TEST_F(CollectTest, EachShardsLastAttemptWinsAndNoJobIsLostOrDuplicated) {
  // Shard 0 ran twice: attempt 0 lost job b (its node died), attempt 1 reran both.
  publish(0, 0, "n1", {{"a", JobState::kOk}, {"b", JobState::kFailed}});
  publish(0, 1, "n2", {{"a", JobState::kOk}, {"b", JobState::kOk}});
  publish(1, 0, "n1", {{"c", JobState::kOk}, {"d", JobState::kOk}});
  Result<CollectResult> r = collect_shards(plan_, dir_, {}, nullptr, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->out_path, dir_ + "/colo.db");
  EXPECT_EQ(r->jobs, 4);
  EXPECT_EQ(r->jobs_ok, 4);
  EXPECT_EQ(r->jobs_missing, 0);
  ASSERT_EQ(r->lines.size(), 2u);
  EXPECT_NE(r->lines[0].find("shard 0 attempt 1 (Slurm 10_0 on n2)"), std::string::npos)
      << r->lines[0];
  EXPECT_NE(r->lines[0].find("earlier attempt 0 ignored"), std::string::npos) << r->lines[0];

  auto jobs = merged_jobs(r->out_path);
  EXPECT_EQ(jobs.size(), 4u);
  for (const auto& [name, state] : jobs) EXPECT_EQ(state.first, JobState::kOk) << name;

  Result<std::unique_ptr<RunStore>> store = RunStore::open(r->out_path);
  RunRow run = (*store)->list_runs(50).value().front();
  EXPECT_EQ(run.state, RunState::kOk);
  EXPECT_EQ(run.slurm.job_id, "10");
  EXPECT_EQ(run.slurm.node, "n2,n1");
  EXPECT_EQ(run.started_ms, kT0);  // shard 1's attempt 0 started first
}

TEST_F(CollectTest, CollectingAgainReplacesTheMergedStore) {
  publish(0, 0, "n1", {{"a", JobState::kOk}, {"b", JobState::kOk}});
  publish(1, 0, "n1", {{"c", JobState::kOk}, {"d", JobState::kOk}});
  ASSERT_TRUE(collect_shards(plan_, dir_, {}, nullptr, {}).ok());
  Result<CollectResult> again = collect_shards(plan_, dir_, {}, nullptr, {});
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(merged_jobs(again->out_path).size(), 4u);
  // Built under a name of its own beside it (common/replace_file.h), none left.
  const std::filesystem::path out(again->out_path);
  for (const auto& entry : std::filesystem::directory_iterator(out.parent_path())) {
    EXPECT_FALSE(entry.path().filename().string().starts_with("." + out.filename().string()))
        << entry.path() << ": a staged store left behind";
  }
}

TEST_F(CollectTest, JobsNoStoreHoldsAreRecordedFailedWithTheReason) {
  publish(0, 0, "n1", {{"a", JobState::kOk}});  // b never recorded
  JobFile file;
  JobSpec c;
  c.name = "c";
  c.command = {"train", "--c"};
  file.jobs = {c};
  Result<CollectResult> r = collect_shards(plan_, dir_, {}, &file, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs, 4);
  EXPECT_EQ(r->jobs_ok, 1);
  EXPECT_EQ(r->jobs_missing, 3);
  auto jobs = merged_jobs(r->out_path);
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_EQ(jobs["a"].first, JobState::kOk);
  EXPECT_EQ(jobs["b"].first, JobState::kFailed);
  EXPECT_NE(jobs["b"].second.find("attempt 0 did not record it"), std::string::npos)
      << jobs["b"].second;
  EXPECT_EQ(jobs["c"].first, JobState::kFailed);
  EXPECT_NE(jobs["c"].second.find("shard 1: no attempt published a store"), std::string::npos)
      << jobs["c"].second;
  Result<std::unique_ptr<RunStore>> store = RunStore::open(r->out_path);
  EXPECT_EQ((*store)->list_runs(50).value().front().state, RunState::kFailed);
}

TEST_F(CollectTest, RefusesWhileShardsAreQueuedUnlessPartial) {
  publish(0, 0, "n1", {{"a", JobState::kOk}, {"b", JobState::kOk}});
  std::vector<ElementState> queued = {{1, "12", "RUNNING", "n2", "None"}};
  Result<CollectResult> r = collect_shards(plan_, dir_, queued, nullptr, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("shard 1 RUNNING"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("--partial"), std::string::npos);
  CollectOptions partial;
  partial.partial = true;
  partial.out_path = dir_ + "/partial.db";
  Result<CollectResult> p = collect_shards(plan_, dir_, queued, nullptr, partial);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->jobs_ok, 2);
  EXPECT_EQ(p->jobs_missing, 2);
}

TEST_F(CollectTest, AStoreWithAJobOutsideItsShardIsRefused) {
  publish(0, 0, "n1", {{"a", JobState::kOk}, {"z", JobState::kOk}});
  Result<CollectResult> r = collect_shards(plan_, dir_, {}, nullptr, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("holds job 'z'"), std::string::npos) << r.error().message();
}

TEST_F(CollectTest, PublishedAttemptsAreOnlyFinishedStoreFiles) {
  std::filesystem::create_directories(dir_ + "/shards/0");
  for (const char* name :
       {"attempt-0.db", "attempt-2.db", "attempt-1.db.tmp", "attempt-x.db", "attempt-3.db-wal",
        "other.db", ".attempt-4.db.Ab12Cd", "resubmission-5.json", "resubmission-6.json.tmp"})
    std::ofstream(dir_ + "/shards/0/" + name) << "";
  for (const char* started : {"attempt-0", "attempt-3", "attempt-y"})
    std::filesystem::create_directories(dir_ + "/shards/0/" + started + "/logs");
  ShardAttempts attempts = shard_attempts(dir_, 0);
  EXPECT_EQ(attempts.published, (std::vector<int>{0, 2}));
  EXPECT_EQ(attempts.started, (std::vector<int>{0, 3}));
  EXPECT_EQ(attempts.resubmitted, (std::vector<int>{5}));
  EXPECT_TRUE(shard_attempts(dir_, 7).published.empty());
}

// Issue 54 (item 8): a shard resubmitted runs in an array of its own;
// status asks Slurm about every array of the submission and shows the
// shard's latest, whose queue collect waits for.
TEST_F(CollectTest, StatusAsksEveryArrayAndShowsAResubmittedShardsLatest) {
  publish(0, 0, "n1", {{"a", JobState::kOk}, {"b", JobState::kOk}});
  publish(1, 0, "n2", {{"c", JobState::kCancelled}, {"d", JobState::kCancelled}});
  std::ofstream(resubmission_path(dir_, 1, 1))
      << R"({"shard": 1, "first_attempt": 1, "array_job_id": "20", "submitted_ms": 5})";
  std::set<std::string> asked;
  CommandRunner slurm = [&asked](const std::vector<std::string>& argv) -> Result<CommandOutput> {
    const std::string array =
        argv[std::find(argv.begin(), argv.end(), "--jobs") - argv.begin() + 1];
    asked.insert(argv.front() + " " + array);
    if (argv.front() == "squeue")
      return CommandOutput{0, array == "20" ? "1|21|PENDING||Resources\n" : "", ""};
    return CommandOutput{
        0, array == "10" ? "10_0|11|COMPLETED|n1\n10_1|12|CANCELLED by 0|n2\n" : "", ""};
  };
  SweepStatus s = sweep_status(plan_, dir_, slurm);
  EXPECT_EQ(asked, (std::set<std::string>{"squeue 10", "sacct 10", "squeue 20", "sacct 20"}));
  ASSERT_EQ(s.shards.size(), 2u);
  ASSERT_TRUE(s.shards[0].slurm.has_value());
  EXPECT_EQ(s.shards[0].slurm->state, "COMPLETED");
  EXPECT_FALSE(s.shards[0].resubmitted.has_value());
  ASSERT_TRUE(s.shards[1].slurm.has_value());
  EXPECT_EQ(s.shards[1].slurm->state, "PENDING");
  EXPECT_EQ(s.shards[1].slurm->job_id, "21");
  ASSERT_TRUE(s.shards[1].resubmitted.has_value());
  EXPECT_EQ(s.shards[1].resubmitted->array_job_id, "20");
  EXPECT_EQ(s.shards[1].resubmitted->first_attempt, 1);
  EXPECT_EQ(s.shards[1].jobs_not_ok, 2);  // its last published attempt, 0: cancelled
  EXPECT_EQ(resubmittable(s.shards[1], /*force=*/true), Resubmittable::kStillInSlurm);

  Result<std::vector<ElementState>> queued = queued_shards(plan_, dir_, slurm);
  ASSERT_TRUE(queued.ok());
  ASSERT_EQ(queued->size(), 1u);
  EXPECT_EQ((*queued)[0].task, 1);
  Result<CollectResult> refused = collect_shards(plan_, dir_, *queued, nullptr, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("shard 1 PENDING"), std::string::npos);

  CommandRunner down = [](const std::vector<std::string>&) -> Result<CommandOutput> {
    return CommandOutput{1, "", "slurm_load_jobs error: Unable to contact slurm controller\n"};
  };
  EXPECT_FALSE(queued_shards(plan_, dir_, down).ok());
}

TEST(Resubmittable, OnlyWhenSlurmNoLongerHasItAndOnlyForcedWhenItEndedOk) {
  struct Case {
    const char* slurm_state;  // "" = unknown to Slurm
    bool in_queue;
    const char* run_state;  // its last published attempt's; "" = none
    int jobs_not_ok;
    bool force;
    Resubmittable want;
  };
  const std::vector<Case> cases = {
      {"PENDING", true, "", 0, false, Resubmittable::kStillInSlurm},
      {"RUNNING", true, "cancelled", 2, true, Resubmittable::kStillInSlurm},
      {"CANCELLED", false, "cancelled", 2, false, Resubmittable::kYes},
      {"FAILED", false, "", 0, false, Resubmittable::kYes},
      {"", false, "failed", 1, false, Resubmittable::kYes},
      {"COMPLETED", false, "ok", 1, false, Resubmittable::kYes},
      {"COMPLETED", false, "ok", 0, false, Resubmittable::kEndedOk},
      {"COMPLETED", false, "ok", 0, true, Resubmittable::kYes},
  };
  for (const Case& c : cases) {
    ShardStatus s;
    if (*c.slurm_state != '\0')
      s.slurm = ElementState{1, "12", c.slurm_state, "n1", "", c.in_queue};
    s.run_state = c.run_state;
    s.attempts = s.run_state.empty() ? std::vector<int>{} : std::vector<int>{0};
    s.jobs_not_ok = c.jobs_not_ok;
    EXPECT_EQ(resubmittable(s, c.force), c.want)
        << c.slurm_state << " " << c.run_state << " not ok " << c.jobs_not_ok << " force "
        << c.force;
  }
}

TEST_F(CollectTest, StatusReadsSlurmAndTheStores) {
  publish(0, 0, "n1", {{"a", JobState::kOk}, {"b", JobState::kFailed}});
  CommandRunner slurm = [](const std::vector<std::string>& argv) -> Result<CommandOutput> {
    if (argv.front() == "squeue") return CommandOutput{0, "1|12|RUNNING|n2|None\n", ""};
    return CommandOutput{1, "", "Slurm accounting storage is disabled\n"};
  };
  SweepStatus s = sweep_status(plan_, dir_, slurm);
  ASSERT_EQ(s.shards.size(), 2u);
  EXPECT_FALSE(s.shards[0].slurm.has_value());
  EXPECT_EQ(s.shards[0].attempts, std::vector<int>{0});
  EXPECT_EQ(s.shards[0].run_state, "ok");
  EXPECT_EQ(s.shards[0].node, "n1");
  EXPECT_EQ(s.shards[0].jobs_ok, 1);
  EXPECT_EQ(s.shards[0].jobs_not_ok, 1);
  ASSERT_TRUE(s.shards[1].slurm.has_value());
  EXPECT_EQ(s.shards[1].slurm->state, "RUNNING");
  EXPECT_TRUE(s.shards[1].attempts.empty());
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("accounting storage is disabled"), std::string::npos);
}

// Without accounting, an element that ended without publishing is known by
// no Slurm command: its output is where the reason is, and status says it.
TEST_F(CollectTest, StatusOfAShardThatPublishedNothingQuotesItsOutput) {
  std::filesystem::create_directories(dir_ + "/slurm");
  std::ofstream(dir_ + "/slurm/shard-0.out")
      << "colo: attempt 0 of shard 0\ncolo: no GPU here: pass --backend sim\n\n";
  CommandRunner slurm = [](const std::vector<std::string>& argv) -> Result<CommandOutput> {
    if (argv.front() == "squeue") return CommandOutput{0, "", ""};
    return CommandOutput{1, "", "Slurm accounting storage is disabled\n"};
  };
  SweepStatus s = sweep_status(plan_, dir_, slurm);
  ASSERT_EQ(s.shards.size(), 2u);
  EXPECT_EQ(s.shards[0].error,
            "no store published; " + dir_ +
                "/slurm/shard-0.out ends: colo: no GPU here: pass --backend sim");
  EXPECT_EQ(s.shards[1].error,
            "no store published, and no output at " + dir_ + "/slurm/shard-1.out");
}

}  // namespace
}  // namespace colo
