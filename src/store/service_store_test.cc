// Tests of the service's queue half of RunStore (service_store.cc) and of
// migration 6.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/run_store.h"
#include "store/testing/fake_runs.h"
#include "store/testing/lifecycle_runs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

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

// Issue 33 (5): each submission is recorded with its label, found by name,
// listed under its run when named, and leads to its jobs' rows.
TEST(ServiceStore, EachSubmissionIsRecordedNamedAndLeadsToItsJobs) {
  auto store = open_memory();
  ASSERT_TRUE(store);
  auto first = store->add_service_jobs({submitted("a", 1000), submitted("b", 1000)}, 7,
                                       {"lr-a", {{"model", "r26"}}, "first"});
  auto second = store->add_service_jobs({submitted("c", 1000)}, 7);  // no label
  ASSERT_TRUE(first.ok() && second.ok());
  auto rows = store->service_jobs_by_id({(*first)[0], (*first)[1], (*second)[0]});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);
  ASSERT_TRUE((*rows)[0].submission_id && (*rows)[2].submission_id);
  EXPECT_EQ((*rows)[0].submission_id, (*rows)[1].submission_id);
  EXPECT_NE((*rows)[0].submission_id, (*rows)[2].submission_id);
  // Each row names its submission's run and name (issue 58, item 14: the
  // queue tells two submissions' jobs of one name apart), listings too.
  EXPECT_EQ((*rows)[0].submission_run_id, 7);
  EXPECT_EQ((*rows)[0].submission_name, "lr-a");
  EXPECT_EQ((*rows)[2].submission_run_id, 7);
  EXPECT_EQ((*rows)[2].submission_name, "");
  auto listing = store->queued_service_jobs(0, 10);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 3u);
  EXPECT_EQ((*listing)[1].submission_name, "lr-a");
  EXPECT_EQ((*listing)[1].submission_run_id, 7);

  auto found = store->find_named("lr-a", 1000, NameKinds::kSubmissions);
  ASSERT_TRUE(found.ok() && *found);
  auto named = store->submission((*found)->id);
  ASSERT_TRUE(named.ok() && *named);
  EXPECT_EQ((*named)->id, *(*rows)[0].submission_id);
  EXPECT_EQ((*named)->owner_uid, 1000u);
  EXPECT_EQ((*named)->run_id, 7);
  EXPECT_EQ((*named)->owner_name, "alice");
  EXPECT_EQ((*named)->jobs, 2);
  EXPECT_EQ((*named)->label.tags.at("model"), "r26");
  EXPECT_EQ((*named)->label.note, "first");
  EXPECT_FALSE(store->find_named("", 1000)->has_value());
  auto listed = store->named_submissions_of(7, 10);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);  // the unnamed one is not listed
  EXPECT_TRUE(store->submission(*(*rows)[2].submission_id)->has_value());

  // Its jobs' rows, once they started.
  EXPECT_TRUE(store->submission_jobs((*named)->id)->empty());
  const int64_t row = attempt_row(*store, "a");
  ASSERT_TRUE(store->service_job_started((*first)[0], row, 0, kT0 + 10, "/logs/a.log").ok());
  auto jobs = store->submission_jobs((*named)->id);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].job_id, row);
}

// Issue 58, item 14: a service run's report tells its submissions' jobs
// apart, each `jobs` row by the submission its service job came from.
TEST(ServiceStore, EachJobsRowOfARunLeadsToItsSubmission) {
  auto store = open_memory();
  ASSERT_TRUE(store);
  auto first = store->add_service_jobs({submitted("sw[lr=0.2]", 1000)}, 7, {"lr-a", {}, ""});
  auto second = store->add_service_jobs({submitted("sw[lr=0.2]", 1001)}, 7);
  ASSERT_TRUE(first.ok() && second.ok());
  NewRun run;
  run.started_ms = kT0;
  run.mechanism = "naive";
  run.backend = "sim";
  run.host = "h";
  run.colo_pid = getpid();
  auto run_id = store->begin_run(run);
  ASSERT_TRUE(run_id.ok());
  std::vector<JobSpec> specs(3);
  for (JobSpec& spec : specs) {
    spec.name = "sw[lr=0.2]";
    spec.command = {"x"};
  }
  auto rows = store->add_jobs(*run_id, specs, {}, kT0);
  ASSERT_TRUE(rows.ok() && rows->size() == 3u);
  ASSERT_TRUE(store->service_job_started((*first)[0], (*rows)[0], 0, kT0 + 10, "/l/a.log").ok());
  ASSERT_TRUE(store->service_job_started((*second)[0], (*rows)[1], 0, kT0 + 10, "/l/b.log").ok());
  // (*rows)[2]: a row no service job started.

  auto of = store->submissions_of_run_jobs(*run_id);
  ASSERT_TRUE(of.ok()) << of.error().message();
  ASSERT_EQ(of->size(), 2u);
  const auto sub_of = [&](int64_t id) {
    return *store->service_jobs_by_id({id})->front().submission_id;
  };
  EXPECT_EQ(of->at((*rows)[0]).id, sub_of((*first)[0]));
  EXPECT_EQ(of->at((*rows)[0]).label.name, "lr-a");
  EXPECT_EQ(of->at((*rows)[0]).run_id, 7);
  EXPECT_EQ(of->at((*rows)[1]).id, sub_of((*second)[0]));
  EXPECT_EQ(of->at((*rows)[1]).owner_uid, 1001u);
  EXPECT_FALSE(of->contains((*rows)[2]));
  EXPECT_TRUE(store->submissions_of_run_jobs(*run_id + 1)->empty());
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

TEST(JobAttempts, EachStartIsAnAttemptAndAServiceJobCountsOnAcrossItsRows) {
  auto store = open_memory();
  ASSERT_TRUE(store);
  auto ids = store->add_service_jobs({submitted("a", 1000)});
  ASSERT_TRUE(ids.ok());
  const int64_t id = ids->front();
  // The first service process: attempt 1 runs out of memory and is requeued,
  // attempt 2 runs when the service is killed.
  const int64_t first = attempt_row(*store, "a");
  ASSERT_TRUE(store->service_job_started(id, first, 0, kT0 + 10, "").ok());
  ASSERT_TRUE(store->job_started(first, 100, 0, kT0 + 10, 1).ok());
  ASSERT_TRUE(store->job_requeued(first, "/logs/a.attempt2.log", "out of memory", kT0 + 20).ok());
  ASSERT_TRUE(store->job_started(first, 101, 1, kT0 + 30, 2).ok());
  auto open_attempts = store->job_attempts(first);
  ASSERT_TRUE(open_attempts.ok()) << open_attempts.error().message();
  ASSERT_EQ(open_attempts->size(), 2u);
  EXPECT_EQ((*open_attempts)[1].state, "running");
  EXPECT_FALSE((*open_attempts)[1].ended_ms);
  EXPECT_EQ((*open_attempts)[1].log_path, "/logs/a.attempt2.log");
  // The second service process: attempt 3 in a new row ends ok.
  const int64_t second = attempt_row(*store, "a");
  ASSERT_TRUE(store
                  ->job_finished(first,
                                 JobExit{JobState::kInterrupted, std::nullopt, std::nullopt,
                                         "colo serve was stopped"},
                                 kT0 + 40, 0)
                  .ok());
  ASSERT_TRUE(store->service_job_started(id, second, 0, kT0 + 50, "").ok());
  ASSERT_TRUE(store->job_started(second, 102, 0, kT0 + 50, 3).ok());
  ASSERT_TRUE(
      store->job_finished(second, JobExit{JobState::kOk, 0, std::nullopt, ""}, kT0 + 60, 0).ok());

  auto attempts = store->service_job_attempts(id);
  ASSERT_TRUE(attempts.ok()) << attempts.error().message();
  ASSERT_EQ(attempts->size(), 3u);
  struct Want {
    int attempt;
    int64_t job_id;
    int device;
    UnixMillis started, ended;
    const char* state;
    const char* reason;
  };
  const Want want[] = {{1, first, 0, kT0 + 10, kT0 + 20, "requeued", "out of memory"},
                       {2, first, 1, kT0 + 30, kT0 + 40, "interrupted", "colo serve was stopped"},
                       {3, second, 0, kT0 + 50, kT0 + 60, "ok", ""}};
  for (size_t i = 0; i < 3; ++i) {
    const AttemptRow& a = (*attempts)[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(a.attempt, want[i].attempt);
    EXPECT_EQ(a.job_id, want[i].job_id);
    EXPECT_NE(a.run_id, 0);
    EXPECT_EQ(a.device, want[i].device);
    EXPECT_EQ(a.started_ms, want[i].started);
    EXPECT_EQ(a.ended_ms, want[i].ended);
    EXPECT_EQ(a.state, want[i].state);
    EXPECT_EQ(a.reason, want[i].reason);
  }
}

TEST(JobAttempts, AnAttemptOfAKilledColoEndsInterrupted) {
  auto store = open_memory();
  ASSERT_TRUE(store);
  const int64_t job = attempt_row(*store, "a");
  ASSERT_TRUE(store->job_started(job, 100, 0, kT0 + 10).ok());
  auto marked = store->mark_stale_runs_interrupted([](pid_t) { return false; }, kT0 + 99);
  ASSERT_TRUE(marked.ok());
  ASSERT_EQ(marked->size(), 1u);
  auto attempts = store->job_attempts(job);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].state, "interrupted");
  EXPECT_TRUE((*attempts)[0].ended_ms);
}

TEST(ReadOnlyStore, ReadsWhatAWriterWroteAndCannotWrite) {
  char tmpl[] = "/tmp/colo-ro-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/colo.db";
  auto writer = RunStore::open(path);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->add_service_jobs({submitted("a", 0)}).ok());
  auto reader = RunStore::open_read_only(path);
  ASSERT_TRUE(reader.ok()) << reader.error().message();
  auto rows = (*reader)->unfinished_service_jobs();
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 1u);
  EXPECT_FALSE((*reader)->add_service_jobs({submitted("b", 0)}).ok());
  ASSERT_TRUE((*writer)->add_service_jobs({submitted("c", 0)}).ok());
  EXPECT_EQ((*reader)->unfinished_service_jobs()->size(), 2u) << "sees the writer's new rows";
  auto missing = RunStore::open_read_only(std::string(tmpl) + "/none.db");
  EXPECT_FALSE(missing.ok());
  std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
}

// A submission's environment is stored once, however many jobs it has;
// rows from before migration 11 keep theirs; listings leave spec and
// environment out.
TEST(ServiceStore, AnEnvironmentIsStoredOncePerSubmission) {
  char tmpl[] = "/tmp/colo-env-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/colo.db";
  auto store = RunStore::open(path);
  ASSERT_TRUE(store.ok());
  NewServiceJob other = submitted("d", 1000);
  other.env_json = R"({"PATH":"/opt/bin"})";
  ASSERT_TRUE((*store)
                  ->add_service_jobs(
                      {submitted("a", 1000), submitted("b", 1000), submitted("c", 1000), other})
                  .ok());
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  auto count = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(raw, sql, -1, &s, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
    const int64_t n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
  };
  EXPECT_EQ(count("SELECT COUNT(*) FROM service_envs"), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM service_jobs WHERE env_json != ''"), 0);
  // A row as a service before version 11 wrote it.
  ASSERT_EQ(sqlite3_exec(raw,
                         "INSERT INTO service_jobs (submitted_ms, owner_uid, owner_name, name, "
                         "spec_json, env_json, state) VALUES (1, 1000, 'alice', 'old', '{}', "
                         "'{\"OLD\":\"1\"}', 'queued')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  auto rows = (*store)->unfinished_service_jobs();
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_EQ(rows->size(), 5u);
  EXPECT_EQ((*rows)[0].env_json, R"({"PATH":"/usr/bin"})");
  EXPECT_EQ((*rows)[2].env_json, R"({"PATH":"/usr/bin"})");
  EXPECT_EQ((*rows)[3].env_json, R"({"PATH":"/opt/bin"})");
  EXPECT_EQ((*rows)[4].env_json, R"({"OLD":"1"})");
  auto listed = (*store)->queued_service_jobs(0, 10);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 5u);
  EXPECT_EQ((*listed)[0].name, "a");
  EXPECT_EQ((*listed)[0].env_json, "");
  EXPECT_EQ((*listed)[0].spec_json, "");
  std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
}

TEST(ServiceStore, UsageIsKeptPerOwnerAndReplacedByTheNextKeep) {
  auto store = testing::open_memory_store();
  Result<std::vector<ServiceUsageRow>> none = store->service_usage();
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_TRUE(none->empty());
  const ServiceUsageRow alice{1000, "alice", 1500.5, 9000, 1'700'000'000'000};
  const ServiceUsageRow bob{1001, "bob", 20, 20, 1'700'000'000'000};
  ASSERT_TRUE(store->keep_service_usage({alice, bob}).ok());
  ServiceUsageRow later = alice;
  later.usage_ms = 700;
  later.total_ms = 9500;
  later.at_ms += 60'000;
  ASSERT_TRUE(store->keep_service_usage({later}).ok());
  Result<std::vector<ServiceUsageRow>> kept = store->service_usage();
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  EXPECT_EQ(*kept, (std::vector<ServiceUsageRow>{later, bob})) << "bob's row stays as it was";
}

TEST(ServiceStore, AJobsUsageAddsUpOverItsAttemptsAndIsReportedPerOwnerOnceEnded) {
  auto store = testing::open_memory_store();
  NewServiceJob c = submitted("c", 1002);
  c.owner_name = "bob";
  Result<std::vector<int64_t>> ids =
      store->add_service_jobs({submitted("a", 1000), submitted("b", 1000), c});
  ASSERT_TRUE(ids.ok()) << ids.error().message();
  ASSERT_TRUE(store->add_service_job_usage((*ids)[0], {1000, 600, 500, 90}).ok());
  ASSERT_TRUE(store->add_service_job_usage((*ids)[0], {500, 250, 250, 10}).ok())
      << "a second attempt";
  ASSERT_TRUE(store->add_service_job_usage((*ids)[1], {2000, 2000, 2000, 300}).ok());
  ASSERT_TRUE(store->add_service_job_usage((*ids)[2], {700, 300, 350, 5}).ok());
  ASSERT_TRUE(store->service_job_ended((*ids)[0], JobState::kOk, "", 5000).ok());
  ASSERT_TRUE(store->service_job_ended((*ids)[1], JobState::kFailed, "exit 1", 6000).ok());
  ASSERT_TRUE(store->service_job_ended((*ids)[2], JobState::kOk, "", 1500).ok());
  Result<std::vector<ServiceUsageReport>> since = store->service_usage_since(2000);
  ASSERT_TRUE(since.ok()) << since.error().message();
  ASSERT_EQ(since->size(), 1u) << "bob's job ended before";
  EXPECT_EQ(since->front(), (ServiceUsageReport{"alice", 2, 1, 3500, 2850, 2750, 400}));
  Result<std::vector<ServiceUsageReport>> all = store->service_usage_since(0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
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

// Issue 53 (2): a name finds the caller's own run or submission: the newest
// run of theirs, else their newest submission; another user's never, even
// when newer: the refusal lists those and says to name one by its id.
TEST(ServiceStore, ANameFindsOnlyTheCallersOwnRunOrSubmission) {
  auto store = open_memory();
  ASSERT_TRUE(store);
  auto roots = store->add_service_jobs({submitted("a", 0)}, 7, {"nightly", {}, ""});
  auto alices = store->add_service_jobs({submitted("b", 1000)}, 7, {"nightly", {}, ""});
  ASSERT_TRUE(roots.ok() && alices.ok());
  const int64_t root_sub = *store->service_jobs_by_id({(*roots)[0]})->front().submission_id;
  const int64_t alice_sub = *store->service_jobs_by_id({(*alices)[0]})->front().submission_id;

  auto mine = store->find_named("nightly", 0);
  ASSERT_TRUE(mine.ok() && *mine) << (mine.ok() ? "" : mine.error().message());
  EXPECT_EQ((*mine)->kind, NamedTarget::Kind::kSubmission);
  EXPECT_EQ((*mine)->id, root_sub) << "root's own, though alice's is newer";
  auto hers = store->find_named("nightly", 1000);
  ASSERT_TRUE(hers.ok() && *hers);
  EXPECT_EQ((*hers)->id, alice_sub);

  auto nobodys = store->find_named("nightly", 1001);
  ASSERT_FALSE(nobodys.ok());
  EXPECT_THAT(nobodys.error().message(), HasSubstr("names no run or submission of yours"));
  EXPECT_THAT(nobodys.error().message(),
              HasSubstr("root's submission 7/" + std::to_string(root_sub)));
  EXPECT_THAT(nobodys.error().message(),
              HasSubstr("alice's submission 7/" + std::to_string(alice_sub)));
  EXPECT_THAT(nobodys.error().message(), HasSubstr("name another user's by its id"));
  EXPECT_FALSE(store->find_named("nobody", 0)->has_value());

  // A run of the caller's own comes before their submissions; a run recorded
  // before owners were kept is anyone's; another user's run is not taken.
  NewRun run;
  run.started_ms = kT0;
  run.mechanism = "naive";
  run.backend = "sim";
  run.label.name = "nightly";
  run.owner_uid = 1000;
  run.owner_name = "alice";
  auto alice_run = store->begin_run(run);
  ASSERT_TRUE(alice_run.ok());
  auto runs_first = store->find_named("nightly", 1000);
  ASSERT_TRUE(runs_first.ok() && *runs_first);
  EXPECT_EQ((*runs_first)->kind, NamedTarget::Kind::kRun);
  EXPECT_EQ((*runs_first)->id, *alice_run);
  EXPECT_EQ(store->find_named("nightly", 0)->value().id, root_sub);
  auto only_runs = store->find_named("nightly", 0, NameKinds::kRuns);
  ASSERT_FALSE(only_runs.ok());
  EXPECT_THAT(only_runs.error().message(), HasSubstr("alice's run " + std::to_string(*alice_run)));
  run.owner_uid.reset();
  run.owner_name.clear();
  auto legacy = store->begin_run(run);
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(store->find_named("nightly", 0, NameKinds::kRuns)->value().id, *legacy);
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// Issue 58 (9, 10): a resumed submission and its jobs lead back to what they
// resume, and each service job's row to who submitted it in which submission.
TEST(ServiceStore, AResumedSubmissionAndItsJobsLeadBackAndJobsToTheirSubmitter) {
  auto store = open_memory();
  ASSERT_TRUE(store);
  auto first =
      store->add_service_jobs({submitted("a", 1000)}, 7, {"sweep", {{"model", "r26"}}, ""});
  ASSERT_TRUE(first.ok());
  const int64_t old_row = attempt_row(*store, "a");
  ASSERT_TRUE(store->service_job_started(first->front(), old_row, 0, kT0 + 10, "/l/a.log").ok());
  ASSERT_TRUE(store->service_job_ended(first->front(), JobState::kFailed, "x", kT0 + 20).ok());
  const int64_t old_sub = *store->service_jobs_by_id(*first)->front().submission_id;

  // Resumed after the service restarted: in its next run.
  auto second = store->add_service_jobs({submitted("a", 1000)}, 9,
                                        {"sweep", {{"model", "r26"}}, ""}, old_sub);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(store->set_service_job_resumed_by(first->front(), second->front()).ok());
  const int64_t new_row = attempt_row(*store, "a");
  ASSERT_TRUE(store->service_job_started(second->front(), new_row, 0, kT0 + 30, "/l/b.log").ok());
  const int64_t new_sub = *store->service_jobs_by_id(*second)->front().submission_id;

  auto older = store->submission(old_sub);
  auto newer = store->submission(new_sub);
  ASSERT_TRUE(older.ok() && *older && newer.ok() && *newer);
  EXPECT_EQ((*newer)->resumes_submission, (SubmissionRef{7, old_sub}));
  EXPECT_EQ((*older)->resumed_by, (SubmissionRef{9, new_sub}));
  EXPECT_FALSE((*older)->resumes_submission);

  // The resumed job's row continues the old one's (service_jobs.resumed_by).
  auto row = store->job_row(new_row);
  ASSERT_TRUE(row.ok() && *row);
  ASSERT_TRUE((*row)->resumes);
  EXPECT_EQ((*row)->resumes->job_id, old_row);
  auto old = store->job_row(old_row);
  ASSERT_TRUE(old.ok() && *old);
  EXPECT_FALSE((*old)->resumes);

  const int64_t run_of_new = [&] {
    auto runs = store->list_runs(1);
    return runs->front().id;
  }();
  auto submitters = store->job_submitters(run_of_new);
  ASSERT_TRUE(submitters.ok());
  ASSERT_EQ(submitters->size(), 1u);
  EXPECT_EQ(submitters->at(new_row), (JobSubmitter{1000, "alice", new_sub, "sweep"}));
}

}  // namespace
}  // namespace colo
