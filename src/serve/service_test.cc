// The service's requests over a real engine: the simulated GPU, real child
// processes, a real SQLite file; requests go straight to handle().
#include "serve/service.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gpu/sim_backend.h"
#include "jobs/job_spec_json.h"
#include "run/leftovers.h"
#include "serve/snapshot.h"
#include "sharing/make_mechanism.h"
#include "store/sqlite_util.h"

namespace colo {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

JobSpec shell_job(const std::string& name, const std::string& script) {
  JobSpec spec;
  spec.name = name;
  spec.group = name;
  spec.command = {"/bin/sh", "-c", script};
  spec.working_dir = "/";
  return spec;
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "service.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    auto backend = SimBackend::create("H200", 1, clock_);
    ASSERT_TRUE(backend.ok());
    backend_ = std::move(backend).value();
    auto store = RunStore::open(dir_ + "/colo.db");
    ASSERT_TRUE(store.ok());
    store_ = std::move(store).value();
    auto mechanism = make_mechanism(MechanismKind::kNaive, MechanismOptions{});
    ASSERT_TRUE(mechanism.ok());
    mechanism_ = std::move(mechanism).value();
    devices_ = *backend_->devices();
    ASSERT_TRUE(mechanism_->prepare(devices_).ok());
    options_.logs_root = dir_ + "/serve";
    options_.engine.policy = "fixed";
    options_.engine.sample_period_ms = 100;
    options_.engine.stop_grace_ms = 500;
    NewRun run;
    run.started_ms = clock_.now_ms();
    run.mechanism = "naive";
    run.backend = "sim";
    run.host = "h";
    run.colo_pid = getpid();
    run_id_ = *store_->begin_run(run);
    ctx_ = std::make_unique<ServeContext>(
        ServeContext{clock_, *backend_, *store_, *mechanism_, MechanismOptions{}, log_, stops_});
    writer_ = std::make_unique<StoreWriter>(*store_, clock_);
    engine_ = std::make_unique<RunEngine>(
        EngineContext{clock_, *backend_, *store_, *writer_, *mechanism_, nullptr, log_},
        // A token of this run alone: a job's end stops the processes that
        // carry its token, so a token shared by tests running side by side
        // let one test's job 1 end kill another's job 1 ("killed" under load).
        options_.engine, run_id_, run_token(run.host, run.colo_pid, run.started_ms), devices_);
    engine_->start();
    ServiceInfo info;
    info.mechanism = "naive";
    info.policy = engine_->policy_description();
    info.run_id = run_id_;
    info.state = "running";
    info.user = "root";
    service_ = std::make_unique<Service>(*ctx_, options_, *engine_, *writer_, info);
  }
  void TearDown() override {
    service_.reset();
    if (engine_) engine_->finish();
    engine_.reset();
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  json submit(const Caller& caller, const std::vector<JobSpec>& specs) {
    json jobs = json::array();
    for (const JobSpec& s : specs) jobs.push_back(job_spec_to_json(s));
    return service_->handle(caller, json{{"op", "submit"},
                                         {"job_file", "t.toml"},
                                         {"jobs", jobs},
                                         {"env", {{"PATH", "/usr/bin:/bin"}, {"MARK", "m"}}}});
  }
  // Ticks until every job has ended, or 60 s passed: a generous bound, so
  // that a loaded machine (its jobs and the sampler slow to get a core) only
  // makes the test slower.
  void run_until_idle() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!engine_->idle() && std::chrono::steady_clock::now() < deadline) {
      engine_->tick();
      service_->record_changes();
      clock_.sleep_for_ms(50);
    }
    engine_->tick();
    service_->record_changes();
  }
  json status(const std::vector<int64_t>& ids) {
    return service_->handle(root_, json{{"op", "status"}, {"ids", ids}});
  }

  std::string dir_;
  SystemClock clock_;
  std::unique_ptr<SimBackend> backend_;
  std::unique_ptr<RunStore> store_;
  std::unique_ptr<Mechanism> mechanism_;
  std::vector<DeviceInfo> devices_;
  ServeOptions options_;
  int64_t run_id_ = 0;
  std::ostringstream log_;
  std::atomic<int> stops_{0};
  std::unique_ptr<ServeContext> ctx_;
  std::unique_ptr<StoreWriter> writer_;
  std::unique_ptr<RunEngine> engine_;
  std::unique_ptr<Service> service_;
  Caller root_{0, 0, 1, "root"};
  Caller nobody_{65534, 65534, 2, "nobody"};
};

TEST_F(ServiceTest, SubmittedJobsRunWithTheSubmittersEnvironmentAndEndInTheStore) {
  json answer =
      submit(root_, {shell_job("a", "echo mark=$MARK job=$COLO_JOB_ID ckpt=$COLO_CHECKPOINT_DIR"),
                     shell_job("b", "exit 3")});
  ASSERT_TRUE(answer["ok"].get<bool>()) << answer.dump();
  std::vector<int64_t> ids = answer["ids"];
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(answer["service"]["mechanism"], "naive");
  EXPECT_THAT(answer["service"]["policy"].get<std::string>(), HasSubstr("fixed, up to"));
  run_until_idle();

  json st = status(ids);
  ASSERT_TRUE(st["ok"].get<bool>()) << st.dump();
  ASSERT_EQ(st["jobs"].size(), 2u);
  // Its reason says why when it did not end ok (once, under load, "killed").
  EXPECT_EQ(st["jobs"][0]["state"], "ok") << st.dump() << log_.str();
  EXPECT_EQ(st["jobs"][0]["attempts"], 1);
  EXPECT_EQ(st["jobs"][0]["owner"], "root");
  EXPECT_EQ(st["jobs"][1]["state"], "failed");
  EXPECT_EQ(st["jobs"][1]["reason"], "exit code 3");

  json log = service_->handle(root_, json{{"op", "logs"}, {"id", ids[0]}});
  ASSERT_TRUE(log["ok"].get<bool>()) << log.dump();
  EXPECT_EQ(log["data"],
            fmt::format("mark=m job={} ckpt={}/serve/checkpoints/{}\n", ids[0], dir_, ids[0]));
  EXPECT_TRUE(log["ended"].get<bool>());
  json rest =
      service_->handle(root_, json{{"op", "logs"}, {"id", ids[0]}, {"offset", log["offset"]}});
  EXPECT_EQ(rest["data"], "");

  // Each attempt is a row of the service's run, linked to its service job.
  auto record = store_->run_record(run_id_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->jobs.size(), 2u);
}

// Issue 33 (3): `colo submit --resume SUB` queues again the jobs of a
// submission that did not end ok, each with its checkpoint directory.
TEST_F(ServiceTest, AResumedSubmissionRunsOnlyItsJobsThatDidNotEndOkWithTheirCheckpoints) {
  json first =
      submit(root_, {shell_job("a", "true"),
                     shell_job("b",
                               "if [ -e \"$COLO_CHECKPOINT_DIR/state\" ]; then echo resumed from "
                               "$(cat \"$COLO_CHECKPOINT_DIR/state\"); else echo 7 > "
                               "\"$COLO_CHECKPOINT_DIR/state\"; exit 3; fi"),
                     shell_job("c", "true")});
  ASSERT_TRUE(first["ok"].get<bool>()) << first.dump();
  ASSERT_TRUE(first.contains("submission")) << first.dump();
  const std::vector<int64_t> ids = first["ids"];
  const std::string sub = fmt::format("{}/{}", run_id_, first["submission"].get<int64_t>());
  const auto resume = [&](const Caller& caller, const std::string& which) {
    return service_->handle(
        caller, json{{"op", "submit"}, {"resume", which}, {"env", {{"PATH", "/usr/bin:/bin"}}}});
  };
  // Not before its jobs have ended.
  json early = resume(root_, sub);
  EXPECT_FALSE(early["ok"].get<bool>());
  EXPECT_THAT(early["error"].get<std::string>(), HasSubstr("queued or running")) << early.dump();
  run_until_idle();
  ASSERT_EQ(status(ids)["jobs"][1]["state"], "failed") << log_.str();

  json other = resume(nobody_, sub);
  EXPECT_FALSE(other["ok"].get<bool>());
  EXPECT_THAT(other["error"].get<std::string>(), HasSubstr("only they or the service's admins"));
  json unknown = resume(root_, "no-such-sweep");
  EXPECT_THAT(unknown["error"].get<std::string>(), HasSubstr("is no submission"));

  json again = resume(root_, sub);
  ASSERT_TRUE(again["ok"].get<bool>()) << again.dump();
  ASSERT_EQ(again["ids"].size(), 1u);
  EXPECT_EQ(again["ended_well"], 2);
  EXPECT_EQ(again["resumed"][0]["from"], ids[1]);
  EXPECT_TRUE(again["resumed"][0]["checkpoint"].get<bool>());
  // Resumed once: a second command is refused, naming the job that resumed it.
  json twice = resume(root_, sub);
  EXPECT_THAT(twice["error"].get<std::string>(),
              HasSubstr(fmt::format("resumed already, as job {}", again["ids"][0].get<int64_t>())))
      << twice.dump();
  run_until_idle();
  const int64_t id = again["ids"][0];
  EXPECT_EQ(status({id})["jobs"][0]["state"], "ok") << log_.str();
  json log = service_->handle(root_, json{{"op", "logs"}, {"id", id}});
  EXPECT_EQ(log["data"], "resumed from 7\n");
  // The resumption is a submission of its own, which says what it resumes.
  auto row = store_->submission(again["submission"].get<int64_t>());
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ((*row)->label.note, "resumes submission " + sub);
  // It ended ok: nothing of it is left to resume.
  json done = resume(root_, fmt::format("{}/{}", run_id_, again["submission"].get<int64_t>()));
  EXPECT_THAT(done["error"].get<std::string>(), HasSubstr("nothing to resume"));
}

// Issue 58, item 9: a resumption carries the name and tags of the
// submission it resumes; its label changes them, a tag given empty (`colo
// submit --resume SUB --tag KEY=`) removing the carried one. A new
// submission keeps no tag given empty.
TEST_F(ServiceTest, AResumptionsTagGivenEmptyRemovesTheCarriedTag) {
  json jobs = json::array({job_spec_to_json(shell_job("w", "exit 3"))});
  json first = service_->handle(
      root_,
      json{{"op", "submit"},
           {"job_file", "t.toml"},
           {"jobs", jobs},
           {"env", {{"PATH", "/usr/bin:/bin"}}},
           {"label", {{"name", "lr-a"}, {"tags", {{"model", "r26"}, {"team", "a"}, {"x", ""}}}}}});
  ASSERT_TRUE(first["ok"].get<bool>()) << first.dump();
  run_until_idle();
  auto row = store_->submission(first["submission"].get<int64_t>());
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ((*row)->label.tags,
            (std::map<std::string, std::string>{{"model", "r26"}, {"team", "a"}}));
  json again = service_->handle(root_, json{{"op", "submit"},
                                            {"resume", "lr-a"},
                                            {"env", {{"PATH", "/usr/bin:/bin"}}},
                                            {"label", {{"tags", {{"team", ""}, {"seed", "2"}}}}}});
  ASSERT_TRUE(again["ok"].get<bool>()) << again.dump();
  auto resumed = store_->submission(again["submission"].get<int64_t>());
  ASSERT_TRUE(resumed.ok() && *resumed);
  EXPECT_EQ((*resumed)->label.name, "lr-a");
  EXPECT_EQ((*resumed)->label.tags,
            (std::map<std::string, std::string>{{"model", "r26"}, {"seed", "2"}}));
  run_until_idle();
}

// A job once ran with the service's whole environment when its submission
// sent no environment, an empty one or one that is no object: a secret of
// the service was readable by the user.
TEST_F(ServiceTest, AJobGetsOnlyTheEnvironmentItsSubmitterSentNeverTheServices) {
  setenv("COLO_TEST_SERVICE_SECRET", "hunter2", 1);
  for (const json& env : {json(), json::object(), json("PATH=/bin"), json::array()}) {
    SCOPED_TRACE(env.dump());
    json request{{"op", "submit"},
                 {"job_file", "t.toml"},
                 {"jobs", json::array({job_spec_to_json(shell_job("e", "env"))})}};
    if (!env.is_null()) request["env"] = env;
    json answer = service_->handle(root_, request);
    if (!answer["ok"].get<bool>()) {
      EXPECT_THAT(answer["error"].get<std::string>(), HasSubstr("env")) << answer.dump();
      continue;
    }
    run_until_idle();
    const int64_t id = answer["ids"][0];
    json log = service_->handle(root_, json{{"op", "logs"}, {"id", id}});
    ASSERT_TRUE(log["ok"].get<bool>()) << log.dump();
    const std::string seen = log["data"];
    EXPECT_THAT(seen, HasSubstr("COLO_JOB_ID="));
    EXPECT_THAT(seen, Not(HasSubstr("hunter2")));
    EXPECT_THAT(seen, Not(HasSubstr("COLO_TEST_SERVICE_SECRET")));
  }
  unsetenv("COLO_TEST_SERVICE_SECRET");
}

TEST_F(ServiceTest, AJobReadingADatasetWithoutItsTableIsRefusedWithWhatToDoInstead) {
  JobSpec reader = shell_job("reader", "true");
  reader.dataset = "imagenet";
  json answer = submit(root_, {shell_job("plain", "true"), reader});
  EXPECT_FALSE(answer["ok"].get<bool>());
  EXPECT_THAT(answer["error"].get<std::string>(),
              HasSubstr("job 'reader' reads dataset 'imagenet', but its [data.imagenet] table did "
                        "not come with it"));
  EXPECT_EQ(engine_->job_count(), 0u) << "nothing of the file was queued";
  reader.data_source = DataSourceSpec{"imagenet", "/data/imagenet", std::string("jpegs")};
  json bad = submit(root_, {reader});
  EXPECT_FALSE(bad["ok"].get<bool>());
  EXPECT_THAT(bad["error"].get<std::string>(), HasSubstr("jpegs"));
}

TEST_F(ServiceTest, OnlyTheOwnerOrAnAdminMayCancelOrReadLogs) {
  json answer = submit(root_, {shell_job("long", "sleep 30")});
  ASSERT_TRUE(answer["ok"].get<bool>()) << answer.dump();
  const int64_t id = answer["ids"][0];
  engine_->tick();
  service_->record_changes();

  json refused = service_->handle(nobody_, json{{"op", "cancel"}, {"ids", {id}}});
  ASSERT_TRUE(refused["ok"].get<bool>());
  EXPECT_FALSE(refused["results"][0]["ok"].get<bool>());
  EXPECT_THAT(refused["results"][0]["error"].get<std::string>(),
              HasSubstr("belongs to root; you (nobody) may cancel only your own jobs"));
  // Refusals of permission say so, for the client's exit code (issue 58, item 15).
  EXPECT_EQ(refused["results"][0].value(protocol::kPermissionDenied, false), true);
  json logs = service_->handle(nobody_, json{{"op", "logs"}, {"id", id}});
  EXPECT_FALSE(logs["ok"].get<bool>());
  EXPECT_EQ(logs.value(protocol::kPermissionDenied, false), true);
  json drain = service_->handle(nobody_, protocol::drain_request(true));
  EXPECT_FALSE(drain["ok"].get<bool>());
  EXPECT_EQ(drain.value(protocol::kPermissionDenied, false), true);
  json missing = service_->handle(nobody_, json{{"op", "logs"}, {"id", 999}});
  EXPECT_FALSE(missing["ok"].get<bool>());
  EXPECT_FALSE(missing.contains(protocol::kPermissionDenied)) << "not a refusal of permission";
  EXPECT_EQ(status({id})["jobs"][0]["state"], "running");

  json cancelled = service_->handle(root_, json{{"op", "cancel"}, {"ids", {id, 999}}});
  EXPECT_TRUE(cancelled["results"][0]["ok"].get<bool>()) << cancelled.dump();
  EXPECT_THAT(cancelled["results"][1]["error"].get<std::string>(), HasSubstr("no job 999"));
  run_until_idle();
  json st = status({id});
  EXPECT_EQ(st["jobs"][0]["state"], "cancelled");
  EXPECT_THAT(st["jobs"][0]["reason"].get<std::string>(), HasSubstr("cancelled by root"));
  json again = service_->handle(root_, json{{"op", "cancel"}, {"ids", {id}}});
  EXPECT_THAT(again["results"][0]["error"].get<std::string>(), HasSubstr("already ended"));
}

// Issue 58 (8): `colo cancel` of a submission (RUN/SUB or its name) cancels
// its jobs not yet ended; `mine` every job of the caller's; another user's
// submission by name is never found.
TEST_F(ServiceTest, CancelTakesASubmissionByIdOrNameAndEveryJobOfTheCallers) {
  ASSERT_EQ(service_->handle(root_, protocol::drain_request(true))["ok"], true);
  json first = service_->handle(
      root_,
      json{{"op", "submit"},
           {"job_file", "t.toml"},
           {"jobs",
            {job_spec_to_json(shell_job("a", "true")), job_spec_to_json(shell_job("b", "true"))}},
           {"label", {{"name", "sweep-a"}}},
           {"env", {{"PATH", "/usr/bin:/bin"}}}});
  ASSERT_EQ(first["ok"], true) << first.dump();
  json second = submit(root_, {shell_job("c", "true"), shell_job("d", "true")});
  json third = submit(root_, {shell_job("e", "true")});
  ASSERT_EQ(third["ok"], true);
  const std::string sub2 =
      fmt::format("{}/{}", second["run"].get<int64_t>(), second["submission"].get<int64_t>());

  auto cancelled_ids = [](const json& answer) {
    std::vector<int64_t> ids;
    for (const json& r : answer["results"]) {
      if (r.value("ok", false)) ids.push_back(r["id"]);
    }
    return ids;
  };
  json by_name = service_->handle(root_, protocol::cancel_request({}, {"sweep-a"}));
  EXPECT_EQ(cancelled_ids(by_name), (std::vector<int64_t>{first["ids"][0], first["ids"][1]}))
      << by_name.dump();
  json by_id = service_->handle(root_, protocol::cancel_request({}, {sub2}));
  EXPECT_EQ(cancelled_ids(by_id), (std::vector<int64_t>{second["ids"][0], second["ids"][1]}));
  json again = service_->handle(root_, protocol::cancel_request({}, {sub2}));
  ASSERT_EQ(again["results"].size(), 1u);
  EXPECT_THAT(again["results"][0]["error"].get<std::string>(),
              HasSubstr("submission " + sub2 + " has no queued or running job"));
  json wrong_run = service_->handle(root_, protocol::cancel_request({}, {"999/1"}));
  EXPECT_THAT(wrong_run["results"][0]["error"].get<std::string>(),
              HasSubstr("'999/1' is no submission of this service"));
  json theirs = service_->handle(nobody_, protocol::cancel_request({}, {"sweep-a"}));
  EXPECT_THAT(theirs["results"][0]["error"].get<std::string>(),
              HasSubstr("'sweep-a' names no submission of yours"));
  json none_of_nobodys = service_->handle(nobody_, protocol::cancel_request({}, {}, true));
  EXPECT_EQ(none_of_nobodys["ok"], true);
  EXPECT_TRUE(none_of_nobodys["results"].empty());
  json mine = service_->handle(root_, protocol::cancel_request({}, {}, true));
  EXPECT_EQ(cancelled_ids(mine), (std::vector<int64_t>{third["ids"][0]})) << mine.dump();
  EXPECT_EQ(service_->handle(root_, protocol::cancel_request({}))["ok"], false);
}

// Issue 58 (11): the queue lists queued jobs in the order they will start:
// under fair share the user who used least first, and each says what
// really holds it (the first: the drain; the others: the order).
TEST_F(ServiceTest, TheQueueListsJobsInStartOrderWithTheRealReason) {
  ASSERT_TRUE(
      store_->keep_service_usage({{0, "root", 3'600'000, 3'600'000, clock_.now_ms()}}).ok());
  ASSERT_TRUE(service_->load_usage().ok());
  ASSERT_EQ(service_->handle(root_, protocol::drain_request(true))["ok"], true);
  json roots = submit(root_, {shell_job("r1", "true"), shell_job("r2", "true")});
  ASSERT_EQ(roots["ok"], true) << roots.dump();
  json theirs = submit(nobody_, {shell_job("n1", "true")});
  ASSERT_EQ(theirs["ok"], true) << theirs.dump();
  const ServiceSnapshot s = service_->snapshot();
  std::vector<int64_t> order;
  std::map<int64_t, std::string> why;
  for (const QueueJob& j : s.jobs) {
    if (j.state != "queued") continue;
    order.push_back(j.id);
    why[j.id] = j.reason;
  }
  const int64_t n1 = theirs["ids"][0];
  const int64_t r1 = roots["ids"][0];
  const int64_t r2 = roots["ids"][1];
  EXPECT_EQ(order, (std::vector<int64_t>{n1, r1, r2}));
  EXPECT_THAT(why[n1], HasSubstr("drained"));
  // root's hour decays by the half-life while the test runs (a busy machine
  // shows 59m59s): its figure is not asserted.
  EXPECT_THAT(why[r1],
              HasSubstr("fair share: nobody's jobs go first (nobody used 0ms, root used "));
  EXPECT_THAT(why[r1], HasSubstr(" of GPU time lately; half-life 1d 0h)"));
  EXPECT_EQ(why[r1], why[r2]);
  const std::string table = format_queue(s, s.time_ms);
  ASSERT_NE(table.find(" n1"), std::string::npos) << table;
  EXPECT_LT(table.find(" n1"), table.find(" r1")) << table;
  // The second page starts where the first ended, in the same order.
  const ServiceSnapshot rest = service_->snapshot(1, 5);
  std::vector<int64_t> paged;
  for (const QueueJob& j : rest.jobs)
    if (j.state == "queued") paged.push_back(j.id);
  EXPECT_EQ(paged, (std::vector<int64_t>{r1, r2}));
}

// Fair share's usage: counted while a job runs, shown with the owner's
// weight, kept in the store, and read back decayed over the time since it
// was kept (a restart forgives no one).
TEST_F(ServiceTest, UsageIsKeptInTheStoreAndReadBackDecayedWithTheOwnersWeight) {
  options_.usage.user_weights[0] = 2;
  json answer = submit(root_, {shell_job("u", "sleep 30")});
  ASSERT_TRUE(answer["ok"].get<bool>());
  auto root_usage = [&]() -> OwnerJobs {
    ServiceSnapshot s = service_->snapshot();
    auto it = s.owners.find("root");
    return it == s.owners.end() ? OwnerJobs{} : it->second;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (root_usage().usage_ms <= 0 && std::chrono::steady_clock::now() < deadline) {
    engine_->tick();
    service_->record_changes();
    service_->account_usage();
    clock_.sleep_for_ms(20);
  }
  const OwnerJobs counted = root_usage();
  ASSERT_GT(counted.usage_ms, 0) << "a running job's owner is accounted";
  EXPECT_EQ(counted.weight, 2);
  EXPECT_GE(counted.total_ms, counted.usage_ms);
  EXPECT_THAT(format_usage({service_->snapshot().owners, {}}, "in the last 7d"),
              ::testing::ContainsRegex("root +2 .*100% .* 1 +0"));

  ASSERT_TRUE(service_->keep_usage().ok());
  Result<std::vector<ServiceUsageRow>> kept = store_->service_usage();
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].owner_uid, 0u);
  EXPECT_EQ((*kept)[0].owner_name, "root");
  EXPECT_GT((*kept)[0].usage_ms, 0);

  // Kept a half-life ago (as by a service stopped a day ago): half remains.
  ASSERT_TRUE(store_
                  ->keep_service_usage(
                      {{0, "root", 4000, 9000, clock_.now_ms() - options_.usage.half_life_ms}})
                  .ok());
  ASSERT_TRUE(service_->load_usage().ok());
  const OwnerJobs read_back = root_usage();
  EXPECT_NEAR(read_back.usage_ms, 2000, 5);
  EXPECT_EQ(read_back.total_ms, 9000) << "usage in all does not decay";
  engine_->stop_all(RunEngine::StopKind::kShutdown, 0, "test over");
  run_until_idle();
}

// Issue 56 (5): a protected job and its opportunistic neighbour on one
// GPU are charged the GPU whole between them (the protected job paying what
// the neighbour does not harvest), where the split of normal jobs would
// charge the light neighbour at least a quarter on top of the heavy one's
// measured share (80/90 + 1/4: 1.14 GPUs).
TEST_F(ServiceTest, AProtectedJobAndItsOpportunisticNeighbourAreChargedTheGpuWhole) {
  // Each job states the SM activity the simulated GPU then reads for it.
  const auto busy = [](int sm_pct) {
    return "printf '{\"event\":\"metric\",\"metrics\":{\"simulated_sm_active_pct\":" +
           std::to_string(sm_pct) + "}}\\n' >> \"$COLO_PROGRESS_FILE\"; sleep 3";
  };
  JobSpec heavy = shell_job("heavy", busy(80));
  heavy.qos = QosClass::kProtected;
  JobSpec light = shell_job("light", busy(10));
  light.qos = QosClass::kOpportunistic;
  json answer = submit(root_, {heavy, light});
  ASSERT_TRUE(answer["ok"].get<bool>()) << answer.dump();
  const std::vector<int64_t> ids = answer["ids"].get<std::vector<int64_t>>();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!engine_->idle() && std::chrono::steady_clock::now() < deadline) {
    engine_->tick();
    service_->record_changes();
    service_->account_usage();
    clock_.sleep_for_ms(20);
  }
  run_until_idle();
  Result<std::vector<ServiceJobRow>> rows = store_->service_jobs_by_id(ids);
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_EQ(rows->size(), 2u);
  UnixMillis first_start = 0, last_end = 0, overlap_start = 0, overlap_end = 0;
  for (const ServiceJobRow& r : *rows) {
    ASSERT_EQ(r.state, JobState::kOk) << r.name << ": " << r.reason;
    ASSERT_TRUE(r.started_ms && r.ended_ms) << r.name;
    first_start = first_start == 0 ? *r.started_ms : std::min(first_start, *r.started_ms);
    last_end = std::max(last_end, *r.ended_ms);
    overlap_start = std::max(overlap_start, *r.started_ms);
    overlap_end = overlap_end == 0 ? *r.ended_ms : std::min(overlap_end, *r.ended_ms);
  }
  ASSERT_GT(overlap_end - overlap_start, 2000) << "the two ran side by side";
  Result<std::vector<ServiceUsageReport>> used = store_->service_usage_since(0);
  ASSERT_TRUE(used.ok()) << used.error().message();
  ASSERT_EQ(used->size(), 1u);
  // One GPU held from the first start to the last end: charged about that
  // long, not 1.14 times it (the accounting's ticks give a little slack).
  const double held_ms = static_cast<double>(last_end - first_start);
  EXPECT_NEAR((*used)[0].share_ms, held_ms, 0.03 * held_ms)
      << "gpu_ms " << (*used)[0].gpu_ms << ", overlap " << overlap_end - overlap_start;
}

TEST_F(ServiceTest, ASnapshotListsGpusJobsAndRunsAndServesQueue) {
  json answer = submit(root_, {shell_job("q1", "sleep 30"), shell_job("q2", "sleep 30")});
  ASSERT_TRUE(answer["ok"].get<bool>());
  engine_->tick();
  service_->record_changes();
  json queue = service_->handle(root_, json{{"op", "queue"}});
  ASSERT_TRUE(queue["ok"].get<bool>());
  Result<ServiceSnapshot> s = snapshot_from_json(queue["snapshot"]);
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_EQ(s->gpus.size(), 1u);
  EXPECT_EQ(s->gpus[0].uuid, devices_[0].uuid);
  ASSERT_EQ(s->jobs.size(), 2u);
  EXPECT_EQ(s->jobs[0].state, "running");
  EXPECT_EQ(s->jobs[0].gpu, 0);
  EXPECT_EQ(s->jobs[0].run_id, run_id_);
  ASSERT_FALSE(s->runs.empty());
  EXPECT_EQ(s->runs[0].id, run_id_);
  service_->publish();
  ASSERT_TRUE(service_->latest_snapshot());
  engine_->stop_all(RunEngine::StopKind::kShutdown, 0, "test over");
  run_until_idle();
}

// The engine hands its gathered events to the writer every flush_ms; here
// not again within the test (an hour), as when a job ends between two
// flushes on a loaded machine. The store's write lock can be held by a
// second connection, as another colo holds it.
class ServiceRecordingTest : public ServiceTest {
 protected:
  void SetUp() override {
    options_.engine.flush_ms = 3'600'000;
    ServiceTest::SetUp();
  }
  void TearDown() override {
    unlock();
    ServiceTest::TearDown();
  }
  void lock() {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/colo.db").c_str(), &raw), SQLITE_OK);
    locker_.reset(raw);
    ASSERT_TRUE(exec_sql(raw, dir_ + "/colo.db", "BEGIN IMMEDIATE", "lock").ok());
  }
  void unlock() { locker_.reset(); }
  // The epochs the store holds of service job `id`'s latest attempt.
  int64_t stored_epochs(int64_t id) {
    Result<std::vector<ServiceJobRow>> rows = store_->service_jobs_by_id({id});
    if (!rows.ok() || rows->empty() || !rows->front().job_id) return 0;
    Result<std::vector<ProgressEvent>> events = store_->job_events(*rows->front().job_id);
    if (!events.ok()) return 0;
    return std::count_if(events->begin(), events->end(),
                         [](const ProgressEvent& e) { return e.kind == "epoch_end"; });
  }
  // Ticks (as the service's loop does) until `id` reads ended in a status
  // answer, or 60 s passed.
  json tick_until_ended(int64_t id) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      engine_->tick();
      service_->record_changes();
      json st = status({id});
      if (is_final_state(st["jobs"][0]["state"].get<std::string>())) return st;
      clock_.sleep_for_ms(20);
    }
    return status({id});
  }
  static std::string epochs(int n) {
    std::string script;
    for (int i = 1; i <= n; ++i) {
      script += "printf '{\"event\":\"epoch_end\",\"epoch\":" + std::to_string(i) +
                ",\"samples\":100}\\n' >> \"$COLO_PROGRESS_FILE\"; ";
    }
    return script;
  }
  SqliteDb locker_;
};

// A job that wrote its progress and exited at once reads ended (what `colo
// wait` waits for) only when the store holds all it reported: its events
// were once queued after its end, up to a flush later, so that `colo wait &&
// colo show` saw it ended with no epochs.
TEST_F(ServiceRecordingTest, AJobReadsEndedOnlyOnceAllItReportedIsInTheStore) {
  json answer = submit(root_, {shell_job("e", epochs(3) + "exit 0")});
  ASSERT_TRUE(answer["ok"].get<bool>()) << answer.dump();
  const int64_t id = answer["ids"][0];
  json st = tick_until_ended(id);
  ASSERT_EQ(st["jobs"][0]["state"], "ok") << st.dump() << log_.str();
  EXPECT_EQ(stored_epochs(id), 3);
  EXPECT_FALSE(st.contains("recording")) << st.dump();
}

// Its end waits in the writer while another process holds the store's lock:
// the job does not read ended, the answer says it is being recorded and why
// it waits; once the lock is gone, it reads ended with its epochs stored.
TEST_F(ServiceRecordingTest, AJobEndedWhileTheStoreIsLockedReadsBeingRecordedAndWhy) {
  const std::string go = dir_ + "/go";
  json answer = submit(root_, {shell_job("e", "while [ ! -e '" + go + "' ]; do sleep 0.02; done; " +
                                                  epochs(2) + "exit 0")});
  ASSERT_TRUE(answer["ok"].get<bool>()) << answer.dump();
  const int64_t id = answer["ids"][0];
  // Running (its rows written), then the store locked, then it reports and ends.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (status({id})["jobs"][0]["state"] != "running" &&
         std::chrono::steady_clock::now() < deadline) {
    engine_->tick();
    service_->record_changes();
    clock_.sleep_for_ms(20);
  }
  ASSERT_EQ(status({id})["jobs"][0]["state"], "running") << log_.str();
  lock();
  std::ofstream(go).put('\n');
  run_until_idle();  // the job ended in the engine; nothing of it written since
  json st = status({id});
  ASSERT_TRUE(st["ok"].get<bool>()) << st.dump();
  EXPECT_FALSE(is_final_state(st["jobs"][0]["state"].get<std::string>())) << st.dump();
  EXPECT_EQ(st["recording"], json::array({id})) << st.dump();
  EXPECT_THAT(st.value("store_trouble", ""), HasSubstr("locked")) << st.dump();
  EXPECT_THAT(st.value("store_trouble", ""), HasSubstr("cannot write the store for"));
  EXPECT_EQ(stored_epochs(id), 0);

  unlock();
  st = tick_until_ended(id);
  ASSERT_EQ(st["jobs"][0]["state"], "ok") << st.dump() << log_.str();
  EXPECT_EQ(stored_epochs(id), 2);
  EXPECT_FALSE(st.contains("recording")) << st.dump();
  EXPECT_THAT(log_.str(), HasSubstr("writable again"));
}

// An ended job keeps what was last known of it: its epoch, rate, peak
// memory and run (they once turned to "-" as it ended).
TEST_F(ServiceTest, AnEndedJobKeepsItsLastEpochPeakMemoryAndRun) {
  auto epoch = [](int n) {
    return "printf '{\"event\":\"epoch_end\",\"epoch\":" + std::to_string(n) +
           ",\"samples\":100}\\n' >> \"$COLO_PROGRESS_FILE\"; ";
  };
  json answer = submit(root_, {shell_job("e", epoch(1) + "sleep 0.8; " + epoch(2) + "sleep 0.3")});
  ASSERT_TRUE(answer["ok"].get<bool>()) << answer.dump();
  const int64_t id = answer["ids"][0];
  run_until_idle();
  Result<ServiceSnapshot> s =
      snapshot_from_json(service_->handle(root_, json{{"op", "queue"}})["snapshot"]);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto job =
      std::find_if(s->jobs.begin(), s->jobs.end(), [&](const QueueJob& j) { return j.id == id; });
  ASSERT_NE(job, s->jobs.end());
  EXPECT_EQ(job->state, "ok");
  EXPECT_EQ(job->epoch, 2);
  EXPECT_EQ(job->run_id, run_id_);
  ASSERT_TRUE(job->peak_memory_bytes);
  EXPECT_GT(*job->peak_memory_bytes, 0u);
  EXPECT_TRUE(job->samples_per_s);
  EXPECT_FALSE(job->pid) << "no longer running";
  json st = status({id});
  EXPECT_EQ(st["jobs"][0]["epoch"], 2);
}

TEST_F(ServiceTest, ASnapshotNamesWhoRunsEachProcessOnTheGpus) {
  // The seam in place of /proc (options_ is read by reference).
  options_.describe_process = [](uint32_t pid) {
    return ProcessIdentity{"alice", fmt::format("cmd{}", pid)};
  };
  ASSERT_TRUE(submit(root_, {shell_job("p1", "sleep 30")})["ok"].get<bool>());
  std::optional<ServiceSnapshot> s;
  // Up to 60 s: the sampler's thread may be slow to get a core on a loaded machine.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    engine_->tick();
    service_->record_changes();
    Result<ServiceSnapshot> now =
        snapshot_from_json(service_->handle(root_, json{{"op", "queue"}})["snapshot"]);
    ASSERT_TRUE(now.ok()) << now.error().message();
    if (!now->processes.empty()) {
      s = *now;
      break;
    }
    clock_.sleep_for_ms(50);
  }
  ASSERT_TRUE(s) << "no process was sampled on the GPU in 60 s";
  for (const ProcessView& p : s->processes) {
    EXPECT_EQ(p.user, "alice");
    EXPECT_EQ(p.command, fmt::format("cmd{}", p.pid));
  }
  engine_->stop_all(RunEngine::StopKind::kShutdown, 0, "test over");
  run_until_idle();
}

TEST_F(ServiceTest, BadRequestsGetClearErrors) {
  EXPECT_THAT(service_->answer(root_, "not json"), HasSubstr("not a JSON object"));
  EXPECT_THAT(service_->answer(root_, R"({"op":"launch"})"), HasSubstr("unknown request 'launch'"));
  json empty = service_->handle(root_, json{{"op", "submit"}, {"jobs", json::array()}});
  EXPECT_THAT(empty["error"].get<std::string>(), HasSubstr("non-empty array"));
  json bad = service_->handle(
      root_, json{{"op", "submit"}, {"jobs", {{{"name", "x"}, {"command", json::array()}}}}});
  EXPECT_THAT(bad["error"].get<std::string>(), HasSubstr("job #1"));
  service_->set_state("draining");
  json refused = submit(root_, {shell_job("late", "true")});
  EXPECT_THAT(refused["error"].get<std::string>(), HasSubstr("colo serve is draining"));
}

// Each of these once made the service exit ("internal error: type_error.302"),
// ending every running job.
TEST_F(ServiceTest, AWrongTypedFieldGetsAnErrorAnswerAndTheServiceGoesOn) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"op":1})", "'op' must be a string"},
      {R"({"op":null})", "unknown request ''"},
      {R"({"op":"queue","op":1})", "'op' must be a string"},
      {R"({"op":"logs","id":"x"})", "'id' must be a whole number"},
      {R"({"op":"logs","id":1,"offset":-5})", "'offset' must be a whole number"},
      {R"({"op":"logs","id":1,"max_bytes":[1]})", "'max_bytes' must be a whole number"},
      {R"({"op":"status","ids":"1"})", "'ids' must be an array of job ids"},
      {R"({"op":"cancel","ids":[1,"2"]})", "'ids' must be an array of job ids"},
      {R"({"op":"submit","job_file":5,"jobs":[]})", "'job_file' must be a string"},
  };
  for (const auto& [request, error] : cases) {
    json a = json::parse(service_->answer(root_, request));
    EXPECT_EQ(a["ok"], false) << request;
    EXPECT_THAT(a["error"].get<std::string>(), HasSubstr(error)) << request;
  }
  json ok = json::parse(service_->answer(root_, R"({"op":"queue"})"));
  EXPECT_EQ(ok["ok"], true);
}

TEST_F(ServiceTest, AJobNameThatWouldForgeLinesOrFloodTheQueueIsRefused) {
  for (const std::string& name : {std::string("a\nfake: job 9 ended ok"), std::string("bell\a"),
                                  std::string("esc\x1b[2J"), std::string(100'000, 'n')}) {
    json a = submit(root_, {shell_job(name, "true")});
    EXPECT_EQ(a["ok"], false);
    const std::string error = a["error"].get<std::string>();
    EXPECT_THAT(error, HasSubstr("'name'"));
    EXPECT_EQ(error.find(name), std::string::npos) << "the error echoes the name";
  }
  EXPECT_EQ(submit(root_, {shell_job("grid[lr=0.1,wd=0.01]", "true")})["ok"], true);
  run_until_idle();
}

TEST_F(ServiceTest, SecretsReachTheJobButNeitherTheStoreNorAnyFileAfterItEnds) {
  JobSpec spec = shell_job("s", "echo key=$WANDB_API_KEY token=$GITHUB_TOKEN mark=$MARK");
  spec.env["WANDB_API_KEY"] = "wandb-secret-1";
  json jobs = json::array({job_spec_to_json(spec)});
  json answer = service_->handle(
      root_, json{{"op", "submit"},
                  {"jobs", jobs},
                  {"env", {{"PATH", "/usr/bin:/bin"}, {"MARK", "m"}, {"GITHUB_TOKEN", "gh-2"}}}});
  ASSERT_TRUE(answer["ok"].get<bool>()) << answer.dump();
  const int64_t id = answer["ids"][0];
  const std::string secrets = fmt::format("{}/serve/secrets/{}.json", dir_, id);
  struct stat st {};
  ASSERT_EQ(::stat(secrets.c_str(), &st), 0) << "kept for a restart while it waits";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto rows = store_->service_jobs_by_id({id});
  ASSERT_TRUE(rows.ok());
  for (const std::string& stored : {rows->front().spec_json, rows->front().env_json}) {
    EXPECT_THAT(stored, HasSubstr("<redacted>"));
    EXPECT_EQ(stored.find("wandb-secret-1"), std::string::npos) << stored;
    EXPECT_EQ(stored.find("gh-2"), std::string::npos) << stored;
  }
  run_until_idle();
  json log = service_->handle(root_, json{{"op", "logs"}, {"id", id}});
  EXPECT_EQ(log["data"], "key=wandb-secret-1 token=gh-2 mark=m\n");
  EXPECT_NE(::access(secrets.c_str(), F_OK), 0) << "forgotten once the job ended";
}

TEST_F(ServiceTest, ARetriedSubmissionGetsTheJobsStoredTheFirstTime) {
  json request = {{"op", "submit"},
                  {"submit_key", "k-123"},
                  {"jobs", json::array({job_spec_to_json(shell_job("once", "true"))})}};
  json first = service_->handle(root_, request);
  ASSERT_TRUE(first["ok"].get<bool>()) << first.dump();
  EXPECT_FALSE(first["service"]["policy"].get<std::string>().empty());
  json again = service_->handle(root_, request);
  EXPECT_EQ(again["ids"], first["ids"]);
  EXPECT_EQ(again["already_submitted"], true);
  // The key is per user; and without a key every submit is new.
  json other = service_->handle(Caller{1000, 1000, 3, "u"}, request);
  EXPECT_NE(other["ids"], first["ids"]);
  request.erase("submit_key");
  EXPECT_NE(service_->handle(root_, request)["ids"], first["ids"]);
  EXPECT_NE(service_->handle(root_, request)["ids"], first["ids"]);
  run_until_idle();
}

TEST_F(ServiceTest, OnlyAnAdminMaySetAPriorityAboveZero) {
  JobSpec urgent = shell_job("urgent", "true");
  urgent.priority = 10;
  json refused = submit(Caller{1000, 1000, 3, "u"}, {urgent});
  EXPECT_FALSE(refused["ok"].get<bool>());
  EXPECT_THAT(refused["error"].get<std::string>(),
              HasSubstr("job 'urgent': priority 10 is above 0, which only the service's admins"));
  urgent.priority = -10;
  EXPECT_TRUE(submit(Caller{1000, 1000, 3, "u"}, {urgent})["ok"].get<bool>()) << "below 0: anyone";
  urgent.priority = 10;
  EXPECT_TRUE(submit(root_, {urgent})["ok"].get<bool>());
  run_until_idle();
}

TEST_F(ServiceTest, ASubmissionOfTooManyJobsIsRefusedWhole) {
  json jobs = json::array();
  for (int i = 0; i <= 10'000; ++i) jobs.push_back(job_spec_to_json(shell_job("j", "true")));
  json a = service_->handle(root_, json{{"op", "submit"}, {"jobs", jobs}});
  EXPECT_EQ(a["ok"], false);
  EXPECT_THAT(a["error"].get<std::string>(), HasSubstr("10001 jobs in one submission"));
  EXPECT_EQ(store_->unfinished_service_jobs()->size(), 0u);
}

// A user's jobs not yet ended are bounded (--max-jobs-per-user): a submission
// that would pass the bound is refused whole, saying what to do, and jobs
// that end make room again.
TEST_F(ServiceTest, AUsersJobsNotYetEndedAreBoundedAndEndedOnesMakeRoom) {
  options_.quotas.max_jobs_per_user = 3;
  const std::string go = dir_ + "/go";
  const std::string wait = "while [ ! -e '" + go + "' ]; do sleep 0.05; done";
  EXPECT_EQ(submit(root_, {shell_job("a", wait), shell_job("b", wait)})["ok"], true);
  json over = submit(root_, {shell_job("c", wait), shell_job("d", wait)});
  EXPECT_EQ(over["ok"], false);
  EXPECT_THAT(over["error"].get<std::string>(),
              HasSubstr("you have 2 jobs queued or running, and this colo serve takes at most 3 "
                        "per user (its --max-jobs-per-user); the 2 jobs of this submission would "
                        "pass that"));
  EXPECT_EQ(store_->unfinished_service_jobs()->size(), 2u) << "nothing of it was queued";
  EXPECT_EQ(submit(root_, {shell_job("c", wait)})["ok"], true);
  EXPECT_EQ(submit(root_, {shell_job("d", wait)})["ok"], false);
  std::ofstream(go).put('\n');
  run_until_idle();
  ASSERT_EQ(store_->unfinished_service_jobs()->size(), 0u);
  EXPECT_EQ(
      submit(root_, {shell_job("e", "true"), shell_job("f", "true"), shell_job("g", "true")})["ok"],
      true);
  run_until_idle();
}

// Issue 35, item 8: `colo queue --json` with 60,000 jobs queued took 6-14 s
// for 45 MB. A snapshot holds one page of queued jobs, counts the whole queue
// per owner, and another page is asked for by offset.
TEST_F(ServiceTest, TheQueueIsPagedAndCountedWhateverItsLength) {
  std::vector<JobSpec> many;
  for (int i = 0; i < 1203; ++i) many.push_back(shell_job("j" + std::to_string(i), "true"));
  ASSERT_EQ(submit(root_, many)["ok"], true);
  const auto queued_in = [](const ServiceSnapshot& s) {
    return std::count_if(s.jobs.begin(), s.jobs.end(),
                         [](const QueueJob& j) { return j.state == "queued"; });
  };
  Result<ServiceSnapshot> first =
      snapshot_from_json(service_->handle(root_, json{{"op", "queue"}})["snapshot"]);
  ASSERT_TRUE(first.ok()) << first.error().message();
  const OwnerJobs root_jobs = first->owners.at("root");
  EXPECT_EQ(root_jobs.queued + root_jobs.running, 1203);
  EXPECT_EQ(first->queued_total, root_jobs.queued);
  EXPECT_EQ(queued_in(*first), 500);
  const std::string text = format_queue(*first, first->time_ms);
  EXPECT_THAT(text, HasSubstr(fmt::format("queued (1 to 500 of {})", first->queued_total)));
  EXPECT_THAT(text, HasSubstr(fmt::format("... {} more queued: colo queue --offset 500",
                                          first->queued_total - 500)));

  Result<ServiceSnapshot> last = snapshot_from_json(
      service_->handle(root_, json{{"op", "queue"}, {"offset", 1000}, {"limit", 500}})["snapshot"]);
  ASSERT_TRUE(last.ok()) << last.error().message();
  EXPECT_EQ(last->queued_offset, 1000);
  EXPECT_EQ(queued_in(*last), last->queued_total - 1000);
  EXPECT_THAT(service_->handle(root_, json{{"op", "queue"}, {"limit", 0}})["error"].dump(),
              HasSubstr("'limit' must be from 1 to 5000"));
  EXPECT_THAT(service_->handle(root_, json{{"op", "queue"}, {"offset", -1}})["error"].dump(),
              HasSubstr("'offset' must be a whole number"));
}

// colo queue's request (the first page, no samples) is answered from a text
// made once per change: the same bytes as the answer made afresh, and a
// submission shows at once.
TEST_F(ServiceTest, TheFirstQueuePageIsAnsweredFromItsCachedTextUntilSomethingChanges) {
  const std::string request = protocol::queue_request(0, protocol::kQueuedPage, false).dump();
  ASSERT_EQ(submit(root_, {shell_job("a", "sleep 30")})["ok"], true);
  const std::string first = service_->answer(root_, request);
  EXPECT_EQ(first, service_->answer(root_, request));
  EXPECT_EQ(json::parse(first), service_->handle(root_, json::parse(request)));
  ASSERT_EQ(submit(root_, {shell_job("b", "sleep 30")})["ok"], true);
  const json after = json::parse(service_->answer(root_, request));
  EXPECT_EQ(after["snapshot"]["jobs"].size(), 2u) << "the submission is seen at once";
  engine_->stop_all(RunEngine::StopKind::kShutdown, 0, "test over");
  run_until_idle();
}

// colo queue's table (issue 37: the client parsed a 400 KB page of 500 jobs
// to print it) is the service's format_queue of the same page, kept until
// something changes; other pages are made when asked; a table that is not a
// boolean is refused.
TEST_F(ServiceTest, TheQueueTableIsTheServicesFormatOfTheSamePage) {
  const std::string request = protocol::queue_table_request(0, protocol::kQueuedPage).dump();
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back(shell_job("alpha" + std::to_string(i), "sleep 30"));
  ASSERT_EQ(submit(root_, jobs)["ok"], true);
  const std::string first = service_->answer(root_, request);
  EXPECT_EQ(first, service_->answer(root_, request));
  Result<ServiceSnapshot> page = snapshot_from_json(service_->handle(
      root_, protocol::queue_request(0, protocol::kQueuedPage, false))["snapshot"]);
  ASSERT_TRUE(page.ok()) << page.error().message();
  EXPECT_EQ(json::parse(first)["table"], format_queue(*page, page->time_ms));
  EXPECT_THAT(json::parse(first)["table"].get<std::string>(), HasSubstr("alpha5"));

  ASSERT_EQ(submit(root_, {shell_job("later", "sleep 30")})["ok"], true);
  EXPECT_THAT(json::parse(service_->answer(root_, request))["table"].get<std::string>(),
              HasSubstr("later"))
      << "a submission shows at once";
  const json second = service_->handle(root_, protocol::queue_table_request(1, 1));
  EXPECT_THAT(second["table"].get<std::string>(), HasSubstr("queued (2 to 2 of"));
  EXPECT_THAT(service_->handle(root_, json{{"op", "queue"}, {"table", 1}})["error"].dump(),
              HasSubstr("'table' must be true or false"));
  engine_->stop_all(RunEngine::StopKind::kShutdown, 0, "test over");
  run_until_idle();
}

// Text other users see is cleaned at the boundary: the job file's name loses
// its control characters, and a command whose program holds one is refused.
TEST_F(ServiceTest, ControlCharactersNeverReachAnotherUsersQueue) {
  json jobs = json::array({job_spec_to_json(shell_job("clean", "true"))});
  json a = service_->handle(
      root_, json{{"op", "submit"}, {"job_file", "jobs\x1b[2J\r.toml"}, {"jobs", jobs}});
  ASSERT_EQ(a["ok"], true) << a.dump();
  run_until_idle();
  json queue = service_->handle(root_, json{{"op", "queue"}});
  EXPECT_THAT(queue.dump(), HasSubstr("jobs[2J.toml"));
  EXPECT_THAT(queue.dump(), Not(HasSubstr("\\u001b")));
  JobSpec bad = shell_job("bad", "true");
  bad.command[0] = "/bin/sh\x07";
  json refused = submit(root_, {bad});
  EXPECT_EQ(refused["ok"], false);
  EXPECT_THAT(refused["error"].get<std::string>(),
              HasSubstr("'command[0]' holds a control character (byte 7, 0x07)"));
}

// Issue 54 (1): an attempt a killed service left running was cut short by
// the service, not by the job: it runs again, not counted, even on the job's
// last attempt (after four restarts and a SIGKILL, jobs that never failed
// ended "gave up after 5 attempts").
TEST_F(ServiceTest, RecoveringRequeuesAttemptsAKilledServiceLeftRunningWithoutCountingThem) {
  // What a killed service leaves: one job running (attempt 1), one queued, one
  // running that must not restart, one running on its last counted attempt.
  JobSpec never = shell_job("never", "true");
  never.restart = RestartPolicy::kNever;
  std::vector<NewServiceJob> rows;
  for (const JobSpec& spec : {shell_job("again", "true"), shell_job("waiting", "true"), never,
                              shell_job("last", "true")}) {
    rows.push_back({clock_.now_ms(), 0, "root", "t.toml", spec.name, spec.group,
                    job_spec_to_json(spec).dump(), "{}"});
  }
  auto ids = store_->add_service_jobs(rows);
  ASSERT_TRUE(ids.ok());
  auto attempt_row = store_->add_jobs(run_id_, {shell_job("x", "true")}, {}, clock_.now_ms());
  ASSERT_TRUE(attempt_row.ok());
  for (int64_t id : {(*ids)[0], (*ids)[2], (*ids)[3]})
    ASSERT_TRUE(store_->service_job_started(id, attempt_row->front(), 0, clock_.now_ms(), "").ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(store_->service_job_requeued((*ids)[3], "x").ok());
    ASSERT_TRUE(
        store_->service_job_started((*ids)[3], attempt_row->front(), 0, clock_.now_ms(), "").ok());
  }

  ASSERT_TRUE(service_->recover_queue().ok());
  run_until_idle();
  json st = status(*ids);
  EXPECT_EQ(st["jobs"][0]["state"], "ok");
  EXPECT_EQ(st["jobs"][0]["attempts"], 2);
  EXPECT_EQ(st["jobs"][1]["state"], "ok");
  EXPECT_EQ(st["jobs"][1]["attempts"], 1);
  EXPECT_EQ(st["jobs"][2]["state"], "interrupted");
  EXPECT_THAT(st["jobs"][2]["reason"].get<std::string>(), HasSubstr("restart = \"never\""));
  EXPECT_EQ(st["jobs"][3]["state"], "ok");
  EXPECT_EQ(st["jobs"][3]["attempts"], 4);
  EXPECT_THAT(log_.str(), HasSubstr("running it again (attempt 2)"));
  auto after = store_->service_jobs_by_id(*ids);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)[0].uncounted, 1);
  EXPECT_EQ((*after)[1].uncounted, 0);
  EXPECT_EQ((*after)[3].uncounted, 1) << "the two requeues before were counted";
}

// Issue 53 (10): a gang that needs more GPUs at once than its user may ever
// hold is refused at submit, naming the bound (it waited for ever, its
// reason "fair share: ... used 0ms"); one within it is taken.
TEST_F(ServiceTest, AGangThatCanNeverFitItsUsersQuotaIsRefusedAtSubmit) {
  options_.quotas.max_gpus_per_user = 1;  // the service reads its options by reference
  JobSpec gang = shell_job("gang", "true");
  gang.gpus = 4;
  json refused = submit(Caller{0, 0, 1, "root"}, {shell_job("one", "true"), gang});
  EXPECT_EQ(refused["ok"], false);
  EXPECT_THAT(refused["error"].get<std::string>(),
              HasSubstr("job 'gang' needs 4 GPUs at once, but this colo serve lets root hold at "
                        "most 1 GPUs' worth (its --max-gpus-per-user 1), so it could never start"));
  gang.gpus = 1;
  EXPECT_EQ(submit(Caller{0, 0, 1, "root"}, {gang})["ok"], true);
}

}  // namespace
}  // namespace colo
