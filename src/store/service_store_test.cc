// Tests of the service's queue half of RunStore (service_store.cc) and of
// migration 6.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/run_store.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

constexpr UnixMillis kT0 = 1'700'000'000'000;

std::unique_ptr<RunStore> open_memory() {
  auto store = RunStore::open(":memory:");
  EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message());
  return store.ok() ? std::move(store).value() : nullptr;
}

NewServiceJob submitted(const std::string& name, uid_t uid) {
  NewServiceJob j;
  j.submitted_ms = kT0;
  j.owner_uid = uid;
  j.owner_name = uid == 0 ? "root" : "alice";
  j.job_file = "/home/alice/jobs.toml";
  j.name = name;
  j.group = "g";
  j.spec_json = R"({"name":")" + name + R"("})";
  j.env_json = R"({"PATH":"/usr/bin"})";
  return j;
}

// A run with one jobs row, for the attempts to point at.
int64_t attempt_row(RunStore& store, const std::string& name) {
  NewRun run;
  run.started_ms = kT0;
  run.mechanism = "naive";
  run.backend = "sim";
  run.host = "h";
  run.colo_pid = getpid();
  auto run_id = store.begin_run(run);
  EXPECT_TRUE(run_id.ok());
  JobSpec spec;
  spec.name = name;
  spec.command = {"x"};
  auto ids = store.add_jobs(*run_id, {spec}, {}, kT0);
  EXPECT_TRUE(ids.ok());
  return ids->front();
}

TEST(ServiceStore, AJobGoesFromQueuedThroughAttemptsToItsEnd) {
  auto store = open_memory();
  ASSERT_TRUE(store);
  auto ids = store->add_service_jobs({submitted("a", 1000), submitted("b", 1001)});
  ASSERT_TRUE(ids.ok()) << ids.error().message();
  ASSERT_EQ(ids->size(), 2u);

  auto queued = store->unfinished_service_jobs();
  ASSERT_TRUE(queued.ok()) << queued.error().message();
  ASSERT_EQ(queued->size(), 2u);
  const ServiceJobRow& a = (*queued)[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.owner_uid, 1000u);
  EXPECT_EQ(a.owner_name, "alice");
  EXPECT_EQ(a.job_file, "/home/alice/jobs.toml");
  EXPECT_EQ(a.env_json, R"({"PATH":"/usr/bin"})");
  EXPECT_EQ(a.state, JobState::kQueued);
  EXPECT_EQ(a.attempts, 0);
  EXPECT_FALSE(a.job_id);

  const int64_t first = attempt_row(*store, "a");
  ASSERT_TRUE(store->service_job_started((*ids)[0], first, 1, kT0 + 10, "/logs/a.log").ok());
  ASSERT_TRUE(store->service_job_requeued((*ids)[0], "attempt 1 interrupted").ok());
  const int64_t second = attempt_row(*store, "a");
  ASSERT_TRUE(
      store->service_job_started((*ids)[0], second, 0, kT0 + 20, "/logs/a.attempt2.log").ok());
  auto running = store->service_jobs_by_id({(*ids)[0], 999});
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->size(), 1u);
  EXPECT_EQ((*running)[0].state, JobState::kRunning);
  EXPECT_EQ((*running)[0].attempts, 2);
  EXPECT_EQ((*running)[0].job_id, second);
  EXPECT_EQ((*running)[0].device, 0);
  EXPECT_EQ((*running)[0].started_ms, kT0 + 20);
  EXPECT_EQ((*running)[0].log_path, "/logs/a.attempt2.log");
  EXPECT_EQ((*running)[0].reason, "attempt 1 interrupted");

  ASSERT_TRUE(store->service_job_ended((*ids)[0], JobState::kOk, "", kT0 + 30).ok());
  ASSERT_TRUE(
      store->service_job_ended((*ids)[1], JobState::kCancelled, "cancelled by alice", kT0 + 5)
          .ok());
  auto left = store->unfinished_service_jobs();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
  auto ended = store->ended_service_jobs(10);
  ASSERT_TRUE(ended.ok());
  ASSERT_EQ(ended->size(), 2u);
  EXPECT_EQ((*ended)[0].name, "b") << "newest first";
  EXPECT_EQ((*ended)[0].state, JobState::kCancelled);
  EXPECT_EQ((*ended)[1].state, JobState::kOk);
  EXPECT_EQ((*ended)[1].ended_ms, kT0 + 30);
  EXPECT_EQ(store->ended_service_jobs(1)->size(), 1u);
}

TEST(ServiceStore, UnknownIdsAndNonFinalEndsAreErrors) {
  auto store = open_memory();
  ASSERT_TRUE(store);
  Status missing = store->service_job_requeued(42, "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message(), HasSubstr("no service job #42"));
  auto ids = store->add_service_jobs({submitted("a", 0)});
  ASSERT_TRUE(ids.ok());
  Status not_final = store->service_job_ended(ids->front(), JobState::kRunning, "", kT0);
  ASSERT_FALSE(not_final.ok());
  EXPECT_THAT(not_final.error().message(), HasSubstr("cannot end in state 'running'"));
}

TEST(ProcessIsAlive, AZombieIsDead) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  for (int i = 0; i < 200 && process_is_alive(child); ++i) usleep(5000);
  EXPECT_FALSE(process_is_alive(child)) << "killed but not yet reaped";
  EXPECT_TRUE(process_is_alive(getpid()));
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(process_is_alive(child));
}

}  // namespace
}  // namespace colo
