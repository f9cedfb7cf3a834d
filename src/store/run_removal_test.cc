#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/run_store.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using testing::add_fake_experiment;
using testing::add_fake_run;
using testing::FakeRun;
using ::testing::HasSubstr;
using testing::kFakeT0;
using testing::open_memory_store;

TEST(RemoveRun, TakesEverythingItRecordedAndLeavesTheOthers) {
  std::unique_ptr<RunStore> store = open_memory_store();
  FakeRun two_jobs;
  two_jobs.degree = 2;
  const int64_t first = add_fake_run(*store, two_jobs, kFakeT0);
  const int64_t second = add_fake_run(*store, FakeRun{}, kFakeT0 + 60'000);
  Result<RunRecord> before = store->run_record(first);
  ASSERT_TRUE(before.ok()) << before.error().message();
  ASSERT_FALSE(before->device_samples.empty());

  Result<std::vector<std::string>> logs = store->remove_run(first);
  ASSERT_TRUE(logs.ok()) << logs.error().message();
  EXPECT_EQ(logs->size(), 2U);
  EXPECT_FALSE(store->run(first).ok());
  EXPECT_TRUE(store->device_samples(first)->empty());
  EXPECT_TRUE(store->process_samples(first)->empty());
  EXPECT_TRUE(store->job_events(before->jobs.front().id)->empty());
  Result<std::vector<RunRow>> left = store->list_runs(10);
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1U);
  EXPECT_EQ(left->front().id, second);
  EXPECT_FALSE(store->device_samples(second)->empty());
  EXPECT_FALSE(store->remove_run(first).ok()) << "a removed run is gone";
}

TEST(RemoveRun, RefusesARunStillRunning) {
  std::unique_ptr<RunStore> store = open_memory_store();
  NewRun run;
  run.started_ms = kFakeT0;
  run.mechanism = "naive";
  run.backend = "sim";
  run.colo_pid = getpid();  // alive: not marked interrupted
  Result<int64_t> id = store->begin_run(run);
  ASSERT_TRUE(id.ok()) << id.error().message();
  Result<std::vector<std::string>> refused = store->remove_run(*id);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("still running"));
  EXPECT_TRUE(store->run(*id).ok());
}

TEST(RemoveExperiment, KeepsItsRuns) {
  std::unique_ptr<RunStore> store = open_memory_store();
  const int64_t experiment = add_fake_experiment(*store);
  Result<std::vector<CaseRow>> cases = store->experiment_cases(experiment);
  ASSERT_TRUE(cases.ok());
  std::optional<int64_t> run;
  for (const CaseRow& c : *cases) {
    if (c.run_id) run = c.run_id;
  }
  ASSERT_TRUE(run.has_value());
  ASSERT_TRUE(store->remove_experiment(experiment).ok());
  EXPECT_FALSE(store->experiment(experiment).ok());
  Result<std::vector<CaseRow>> gone = store->experiment_cases(experiment);
  EXPECT_TRUE(!gone.ok() || gone->empty());
  EXPECT_TRUE(store->run(*run).ok());
}

}  // namespace
}  // namespace colo
