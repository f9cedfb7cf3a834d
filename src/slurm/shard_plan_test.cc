#include "slurm/shard_plan.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace colo {
namespace {

struct SplitCase {
  std::vector<int64_t> work;
  int shards;
  std::vector<std::vector<size_t>> want;
};

TEST(SplitByWork, LongestFirstToTheLeastLoaded) {
  const std::vector<SplitCase> cases = {
      {{10, 10, 10, 10}, 2, {{0, 2}, {1, 3}}},
      {{30, 10, 10, 10}, 2, {{0}, {1, 2, 3}}},
      {{5, 40, 5, 20, 20}, 2, {{0, 1}, {2, 3, 4}}},
      {{1, 2, 3}, 1, {{0, 1, 2}}},
      {{7, 7}, 3, {{0}, {1}, {}}},
      {{}, 2, {{}, {}}},
  };
  for (const SplitCase& c : cases) {
    EXPECT_EQ(split_by_work(c.work, c.shards), c.want)
        << "work of " << c.work.size() << " jobs into " << c.shards;
  }
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/colo-shard-plan-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ShardPlanFile, RoundTrips) {
  TempDir dir;
  ShardPlan plan;
  plan.job_file = "/home/u/sweep.toml";
  plan.total_jobs = 3;
  plan.mechanism = "mps";
  plan.gpus_per_node = 4;
  plan.how = "--nodes 2";
  plan.shards = {{{"a", "c"}, 1000}, {{"b"}, 500}};
  plan.run_arguments = {"--backend", "sim"};
  plan.colo_binary = "/opt/colo";
  plan.array_job_id = "42";
  plan.submitted_ms = 1234;
  ASSERT_TRUE(write_plan(plan_path(dir.path()), plan).ok());
  Result<ShardPlan> back = read_plan(plan_path(dir.path()));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->job_file, plan.job_file);
  EXPECT_EQ(back->total_jobs, 3);
  EXPECT_EQ(back->mechanism, "mps");
  EXPECT_EQ(back->gpus_per_node, 4);
  ASSERT_EQ(back->shards.size(), 2u);
  EXPECT_EQ(back->shards[0].jobs, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(back->shards[1].estimated_ms, 500);
  EXPECT_EQ(back->run_arguments, plan.run_arguments);
  EXPECT_EQ(back->array_job_id, "42");
  EXPECT_FALSE(std::filesystem::exists(plan_path(dir.path()) + ".tmp"));
}

TEST(ShardPlanFile, BadFilesSayWhatIsWrong) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {R"({"version": 9})", "plan version 9"},
      {R"({"version": 1, "job_file": "x"})", "total_jobs"},
      {R"({"version": 1, "job_file": "x", "total_jobs": 0, "gpus_per_node": 1, "shards": []})",
       "no shards"},
  };
  for (const auto& [text, want] : cases) {
    std::ofstream(dir.path() + "/plan.json") << text;
    Result<ShardPlan> plan = read_plan(dir.path() + "/plan.json");
    ASSERT_FALSE(plan.ok()) << text;
    EXPECT_NE(plan.error().message().find(want), std::string::npos) << plan.error().message();
    EXPECT_NE(plan.error().message().find("plan.json"), std::string::npos);
  }
  EXPECT_NE(read_plan(dir.path() + "/none.json").error().message().find("cannot read"),
            std::string::npos);
}

TEST(ShardPaths, FollowTheLayout) {
  EXPECT_EQ(shard_store_path("/d", 3, 1), "/d/shards/3/attempt-1.db");
  EXPECT_EQ(shard_logs_dir("/d", 0, 2), "/d/shards/0/attempt-2/logs");
}

// Jobs that run 10 minutes alone, 20% of the GPU each, 1 GiB.
std::vector<SimJob> ten_minute_jobs(int n) {
  std::vector<SimJob> jobs;
  for (int i = 0; i < n; ++i) {
    SimJob j;
    j.name = "j" + std::to_string(i);
    j.signature = "sig";
    j.truth.solo_ms = 600'000;
    j.truth.startup_ms = 10'000;
    j.truth.peak_memory_bytes = 1ull << 30;
    j.truth.sm_active_pct = 20;
    j.truth.gpu_util_pct = 40;
    j.known = j.truth;
    jobs.push_back(j);
  }
  return jobs;
}

SimOptions one_node(int gpus) {
  SimOptions o;
  o.gpus = gpus;
  o.gpu_memory_bytes = 80ull << 30;
  return o;
}

TEST(PlanNodes, NodesGivenOrOne) {
  const PolicySpec exclusive{"exclusive", PolicyKind::kExclusive, 0};
  Result<NodePlan> two = plan_nodes(ten_minute_jobs(6), exclusive, one_node(1), 2, {}, 64);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->shards.size(), 2u);
  EXPECT_EQ(two->shards[0].size(), 3u);
  ASSERT_EQ(two->makespan_ms.size(), 2u);
  EXPECT_GE(two->makespan_ms[0], 3 * 600'000);  // three 10-minute jobs one after another
  Result<NodePlan> capped = plan_nodes(ten_minute_jobs(2), exclusive, one_node(1), 5, {}, 64);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->shards.size(), 2u);
  EXPECT_NE(capped->how.find("only 2 jobs"), std::string::npos) << capped->how;
  Result<NodePlan> one = plan_nodes(ten_minute_jobs(2), exclusive, one_node(1), {}, {}, 64);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->shards.size(), 1u);
}

TEST(PlanNodes, DeadlineTakesTheFewestNodesWhoseShardsEndInTime) {
  const PolicySpec exclusive{"exclusive", PolicyKind::kExclusive, 0};
  // 8 ten-minute jobs, one at a time on each of 2 GPUs per node: 40 minutes
  // on one node, 20 on two, 10 on four.
  for (const auto& [deadline_min, want_nodes] :
       std::vector<std::pair<int64_t, size_t>>{{45, 1}, {25, 2}, {15, 4}}) {
    Result<NodePlan> plan =
        plan_nodes(ten_minute_jobs(8), exclusive, one_node(2), {}, deadline_min * 60'000, 64);
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    EXPECT_EQ(plan->shards.size(), want_nodes) << "deadline " << deadline_min << "m";
    for (int64_t m : plan->makespan_ms) EXPECT_LE(m, deadline_min * 60'000);
    EXPECT_NE(plan->how.find("--deadline"), std::string::npos);
  }
  Result<NodePlan> impossible =
      plan_nodes(ten_minute_jobs(8), exclusive, one_node(2), {}, 5 * 60'000, 64);
  ASSERT_FALSE(impossible.ok());
  EXPECT_NE(impossible.error().message().find("--deadline 5m00s"), std::string::npos)
      << impossible.error().message();
}

}  // namespace
}  // namespace colo
