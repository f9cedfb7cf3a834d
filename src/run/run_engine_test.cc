// RunEngine over real child processes (/bin/sh), the simulated GPU backend,
// a mechanism that hands out no environment, and a store in a temporary
// directory: a job's start and its environment, an ok end, a failure that
// runs again, a user's cancel, a preemption, a protected job's floor, and the
// stops of `colo run` and of the service.
#include "run/run_engine.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/units.h"
#include "gpu/sim_backend.h"
#include "jobs/job_signature.h"
#include "run/log_layout.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// A mechanism with nothing to set up and no environment of its own.
class EngineTestMechanism final : public Mechanism {
 public:
  MechanismKind kind() const override { return MechanismKind::kNaive; }
  int max_jobs_per_device() const override { return 48; }
  Status prepare(const std::vector<DeviceInfo>&) override { return OkStatus(); }
  Result<Environment> environment_for(const Placement&) override { return Environment{}; }
  Status health_check() override { return OkStatus(); }
  Status teardown() override { return OkStatus(); }
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class RunEngineTest : public ::testing::Test {
 protected:
  RunEngineTest()
      : backend_(std::move(SimBackend::create("H100", 2, clock_)).value()),
        store_(std::move(RunStore::open(dir_.path() + "/colo.db")).value()),
        writer_(*store_, clock_) {
    NewRun run;
    run.started_ms = clock_.now_ms();
    run.mechanism = "naive";
    run.backend = "sim";
    run.simulated = true;
    run_id_ = store_->begin_run(run).value();
    options_.policy = "fixed";
    options_.sample_period_ms = 50;
    options_.flush_ms = 50;
    options_.stop_grace_ms = 300;
    options_.health_check_ms = 60'000;
    options_.python_client_dir = std::nullopt;
  }

  std::unique_ptr<RunEngine> make_engine() {
    auto devices = backend_->devices();
    EXPECT_TRUE(devices.ok());
    auto engine = std::make_unique<RunEngine>(
        EngineContext{clock_, *backend_, *store_, writer_, mechanism_, nullptr, out_}, options_,
        // A token of this test's own: the engine kills what carries a job's
        // token when the job ends, and tests run at once, each with job 2.
        run_id_, "token-" + dir_.path(), *devices);
    engine->start();
    return engine;
  }

  // A job that runs `script` under /bin/sh, its files in the test's directory.
  EngineJob job(const std::string& name, const std::string& script) {
    EngineJob j;
    j.spec.name = name;
    j.spec.group = name;
    j.spec.command = {"/bin/sh", "-c", script};
    j.spec.source = dir_.path() + "/jobs.toml:1";
    j.log_stem = run_job_stem(dir_.path() + "/logs", next_index_++, name);
    j.progress_path = attempt_progress_path(j.log_stem, 1);
    j.checkpoint_dir = run_job_dir(j.log_stem, JobDir::kCheckpoint);
    return j;
  }

  // What earlier runs on this GPU model measured of `j` (options_.profiles_elsewhere).
  LearnedProfile learned_of(const EngineJob& j, const JobProfile& profile) {
    LearnedProfile p;
    p.signature = job_signature(j.spec);
    p.gpu_name = (*backend_->devices())[0].name;
    p.simulated = true;
    p.runs = 1;
    p.profile = profile;
    return p;
  }

  // Ticks until `done` holds (at most 30 s), keeping the changes.
  template <class Done>
  bool tick_until(RunEngine& engine, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      engine.tick();
      for (JobChange& c : engine.take_changes()) changes_.push_back(std::move(c));
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::vector<JobChange> changes_of(size_t key, JobChange::Kind kind) const {
    std::vector<JobChange> out;
    for (const JobChange& c : changes_)
      if (c.key == key && c.kind == kind) out.push_back(c);
    return out;
  }

  testing::TempDir dir_{"colo_run_engine_test"};
  SystemClock clock_;
  std::unique_ptr<SimBackend> backend_;
  std::unique_ptr<RunStore> store_;
  StoreWriter writer_;
  EngineTestMechanism mechanism_;
  EngineOptions options_;
  std::ostringstream out_;
  int64_t run_id_ = 0;
  size_t next_index_ = 0;
  std::vector<JobChange> changes_;
};

TEST_F(RunEngineTest, StartsAJobWithItsEnvironmentAndRecordsItsOkEnd) {
  auto engine = make_engine();
  const EngineJob hello = job("hello",
                              "echo \"gpus=$COLO_GPUS count=$COLO_GPU_COUNT name=$COLO_JOB_NAME "
                              "run=$COLO_RUN_ID ckpt=$COLO_CHECKPOINT_DIR\"");
  const size_t key = engine->submit(hello);
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->idle(); })) << out_.str();
  engine->finish();
  const EngineJobView v = engine->view(key);
  EXPECT_EQ(v.state, JobState::kOk) << v.note;
  ASSERT_EQ(changes_of(key, JobChange::Kind::kStarted).size(), 1U);
  ASSERT_EQ(changes_of(key, JobChange::Kind::kEnded).size(), 1U);
  EXPECT_EQ(changes_of(key, JobChange::Kind::kEnded)[0].state, JobState::kOk);
  EXPECT_EQ(v.log_path, attempt_log_path(hello.log_stem, 1));
  EXPECT_THAT(read_text(v.log_path),
              HasSubstr(fmt::format("gpus={} count=1 name=hello run={} ckpt={}", *v.device, run_id_,
                                    hello.checkpoint_dir)));
  EXPECT_EQ(engine->count(true), 1);
  Result<std::optional<JobRow>> row = store_->job_row(v.job_id);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, JobState::kOk);
  EXPECT_THAT(out_.str(), HasSubstr("hello started on gpu"));
}

// A gang whose rank failed runs again whole, as a counted attempt, its log
// the next attempt's (log_layout.h); the second attempt ends well.
TEST_F(RunEngineTest, AFailedGangRunsAgainAndItsSecondAttemptLogsApart) {
  auto engine = make_engine();
  const std::string marker = dir_.path() + "/failed-once";
  EngineJob gang = job("gang", "if [ -e " + marker + " ]; then echo second; exit 0; fi; touch " +
                                   marker + "; echo first; exit 1");
  gang.spec.gpus = 2;
  const size_t key = engine->submit(gang);
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->idle(); })) << out_.str();
  engine->finish();
  const EngineJobView v = engine->view(key);
  EXPECT_EQ(v.state, JobState::kOk) << v.note;
  EXPECT_EQ(v.attempt, 2);
  EXPECT_EQ(v.gang_devices, (std::vector<int>{0, 1}));
  const std::vector<JobChange> requeued = changes_of(key, JobChange::Kind::kRequeued);
  ASSERT_EQ(requeued.size(), 1U);
  EXPECT_TRUE(requeued[0].counted);
  EXPECT_THAT(requeued[0].reason, HasSubstr("a rank failed, so the gang runs again whole "
                                            "(attempt 2 of 3)"));
  EXPECT_EQ(v.log_path, attempt_log_path(gang.log_stem, 2));
  EXPECT_THAT(read_text(attempt_log_path(gang.log_stem, 1)), HasSubstr("first"));
  EXPECT_THAT(read_text(v.log_path), HasSubstr("second"));
}

TEST_F(RunEngineTest, AFailureThatNothingRetriesEndsFailed) {
  auto engine = make_engine();
  const size_t key = engine->submit(job("fails", "echo 'ValueError: no'; exit 3"));
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->idle(); })) << out_.str();
  engine->finish();
  const EngineJobView v = engine->view(key);
  EXPECT_EQ(v.state, JobState::kFailed);
  EXPECT_THAT(v.note, HasSubstr("exit code 3"));
  EXPECT_TRUE(changes_of(key, JobChange::Kind::kRequeued).empty());
  EXPECT_EQ(engine->count(false), 1);
}

// A user's cancel: TERM, and the record says who cancelled it; a second
// cause (a preemption) does not take over a job already being stopped.
TEST_F(RunEngineTest, AUsersCancelEndsItCancelledWithTheirReason) {
  auto engine = make_engine();
  const size_t key = engine->submit(job("sleeper", "exec sleep 30"));
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->running() == 1; })) << out_.str();
  EXPECT_TRUE(engine->cancel(key, "cancelled by alice"));
  EXPECT_FALSE(engine->preempt(key, "for a job of higher priority"));
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->idle(); })) << out_.str();
  engine->finish();
  const EngineJobView v = engine->view(key);
  EXPECT_EQ(v.state, JobState::kCancelled);
  EXPECT_THAT(v.note, HasSubstr("cancelled by alice"));
  EXPECT_THAT(read_text(v.log_path), HasSubstr("cancelled by alice; stopping it"));
  EXPECT_FALSE(engine->cancel(key, "again"));  // it has ended
}

// A preempted job is requeued uncounted and parked until released; then it
// runs again.
TEST_F(RunEngineTest, APreemptedJobWaitsParkedUntilReleased) {
  auto engine = make_engine();
  const std::string marker = dir_.path() + "/preempted-once";
  const size_t key = engine->submit(job(
      "victim", "if [ -e " + marker + " ]; then exit 0; fi; touch " + marker + "; exec sleep 30"));
  // Preempted once it has begun its work (the marker made), not while its shell starts.
  ASSERT_TRUE(tick_until(*engine, [&] { return std::filesystem::exists(marker); })) << out_.str();
  EXPECT_TRUE(engine->preempt(key, "for 7 (priority 5)"));
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->running() == 0; })) << out_.str();
  const std::vector<JobChange> requeued = changes_of(key, JobChange::Kind::kRequeued);
  ASSERT_EQ(requeued.size(), 1U);
  EXPECT_FALSE(requeued[0].counted);
  EXPECT_THAT(requeued[0].reason, HasSubstr("for 7 (priority 5); it runs again later"));
  EXPECT_EQ(engine->queued(), 1U);
  for (int i = 0; i < 10; ++i) engine->tick();  // parked: not placed
  EXPECT_EQ(engine->view(key).state, JobState::kQueued);
  engine->release_parked();
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->idle(); }))
      << out_.str() << to_string(engine->view(key).state) << " queued " << engine->queued()
      << " running " << engine->running() << " log: " << read_text(engine->view(key).log_path);
  engine->finish();
  EXPECT_EQ(engine->view(key).state, JobState::kOk);
  EXPECT_EQ(engine->view(key).attempt, 2);
}

// A protected job (solo rate 1000 samples/s, floor 0.9) reports two steady
// epochs at about 0.5x beside an opportunistic job on the one GPU: the
// opportunistic job is stopped for its floor, requeued not counted, and runs
// again (its second attempt finds the marker its first left, as a job finds
// its checkpoint); the reason is in its log and the store.
TEST_F(RunEngineTest, AProtectedJobBelowItsFloorGetsItsOpportunisticNeighbourStopped) {
  backend_ = std::move(SimBackend::create("H100", 1, clock_)).value();
  options_.floor.window_ms = 300;
  options_.floor.reports = 2;
  EngineJob main = job("main",
                       "t() { date +%s.%N; }; p() { echo \"$1\" >> \"$COLO_PROGRESS_FILE\"; }; "
                       "sleep 0.3; p \"{\\\"event\\\":\\\"epoch_end\\\",\\\"epoch\\\":1,"
                       "\\\"samples\\\":100,\\\"time\\\":$(t)}\"; "
                       "for e in 2 3; do sleep 0.25; p \"{\\\"event\\\":\\\"epoch_end\\\","
                       "\\\"epoch\\\":$e,\\\"samples\\\":100,\\\"time\\\":$(t)}\"; done; "
                       "for e in 4 5; do sleep 0.25; p \"{\\\"event\\\":\\\"epoch_end\\\","
                       "\\\"epoch\\\":$e,\\\"samples\\\":5000,\\\"time\\\":$(t)}\"; done");
  main.spec.qos = QosClass::kProtected;
  main.spec.min_speed = 0.9;
  JobProfile solo;
  solo.samples_per_s = 1000;
  options_.profiles_elsewhere = {learned_of(main, solo)};
  const std::string marker = dir_.path() + "/filler-ran";
  EngineJob filler =
      job("filler", "if [ -e " + marker + " ]; then echo resumed; exit 0; fi; touch " + marker +
                        "; exec sleep 30");
  filler.spec.qos = QosClass::kOpportunistic;
  auto engine = make_engine();
  const size_t opportunistic = engine->submit(filler);
  const size_t protected_key = engine->submit(main);
  ASSERT_TRUE(tick_until(*engine, [&] {
    return !changes_of(opportunistic, JobChange::Kind::kRequeued).empty();
  })) << out_.str();
  const std::vector<JobChange> requeued = changes_of(opportunistic, JobChange::Kind::kRequeued);
  ASSERT_EQ(requeued.size(), 1U);
  EXPECT_FALSE(requeued[0].counted);
  const std::string why = fmt::format("stopped for job {}'s floor 0.90: it ran at 0.",
                                      engine->view(protected_key).job_id);
  EXPECT_THAT(requeued[0].reason, HasSubstr(why));
  EXPECT_THAT(requeued[0].reason, HasSubstr("beside this job; it runs again"));
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->idle(); })) << out_.str();
  engine->finish();
  const EngineJobView v = engine->view(opportunistic);
  EXPECT_EQ(v.state, JobState::kOk) << v.note;
  EXPECT_EQ(v.attempt, 2);
  EXPECT_THAT(read_text(attempt_log_path(filler.log_stem, 1)), HasSubstr(why));
  EXPECT_THAT(read_text(v.log_path), HasSubstr("resumed"));
  Result<std::vector<AttemptRow>> attempts = store_->job_attempts(v.job_id);
  ASSERT_TRUE(attempts.ok() && attempts->size() == 2U);
  EXPECT_THAT((*attempts)[0].reason, HasSubstr(why));
  const EngineJobView p = engine->view(protected_key);
  EXPECT_EQ(p.state, JobState::kOk) << p.note;
  EXPECT_EQ(p.min_speed, 0.9);
  ASSERT_TRUE(p.below_floor_share);
  EXPECT_GT(*p.below_floor_share, 0.3);
  EXPECT_LT(*p.below_floor_share, 0.7);
  // Its latest steady epoch (5000 samples in about 0.25 s) ran far above its floor.
  ASSERT_TRUE(p.speed_of_solo);
  EXPECT_GT(*p.speed_of_solo, 0.9);
  EXPECT_GT(p.below_floor_ms, 0);
  EXPECT_GT(p.steady_ms, p.below_floor_ms);
  EXPECT_THAT(read_text(p.log_path), HasSubstr("below its floor 0.90 of its solo rate"));
}

// A protected job whose solo rate colo does not know (its memory and SM
// activity known, its rate never measured) runs alone under the auto policy
// until its first steady epoch measures one; only then does an opportunistic
// job start beside it, and its floor is judged against that rate.
TEST_F(RunEngineTest, AProtectedJobWithoutASoloRateRunsAloneForItsFirstSteadyEpoch) {
  backend_ = std::move(SimBackend::create("H100", 1, clock_)).value();
  options_.policy = "auto";
  const std::string marker = dir_.path() + "/filler-ran";
  EngineJob main = job("main",
                       "t() { date +%s.%N; }; p() { echo \"$1\" >> \"$COLO_PROGRESS_FILE\"; }; "
                       "for e in 1 2; do sleep 0.2; p \"{\\\"event\\\":\\\"epoch_end\\\","
                       "\\\"epoch\\\":$e,\\\"samples\\\":100,\\\"time\\\":$(t)}\"; done; "
                       "while [ ! -e " +
                           marker + " ]; do sleep 0.05; done");
  main.spec.qos = QosClass::kProtected;
  EngineJob filler = job("filler", "touch " + marker);
  filler.spec.qos = QosClass::kOpportunistic;
  JobProfile known;  // main: its memory and SM activity, no rate
  known.peak_memory_bytes = kGiB;
  known.sm_active_pct = 10;
  JobProfile with_rate = known;
  with_rate.samples_per_s = 1000;
  options_.profiles_elsewhere = {learned_of(main, known), learned_of(filler, with_rate)};
  auto engine = make_engine();
  const size_t protected_key = engine->submit(main);
  const size_t opportunistic = engine->submit(filler);
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->idle(); })) << out_.str();
  engine->finish();
  EXPECT_EQ(engine->view(protected_key).state, JobState::kOk) << out_.str();
  EXPECT_EQ(engine->view(opportunistic).state, JobState::kOk) << out_.str();
  const std::string out = out_.str();
  const size_t measured = out.find("auto: measured main alone for its floor");
  const size_t joined = out.find("filler started");
  ASSERT_NE(measured, std::string::npos) << out;
  ASSERT_NE(joined, std::string::npos) << out;
  EXPECT_LT(measured, joined) << out;
  EXPECT_THAT(out, HasSubstr("has its solo rate")) << out;
  // Its second epoch was its solo rate, so it never was below its floor.
  EXPECT_EQ(engine->view(protected_key).below_floor_share, 0.0);
}

// Alone below its floor, a protected job has no neighbour to stop: said once.
TEST_F(RunEngineTest, AProtectedJobBelowItsFloorAloneIsToldOnce) {
  options_.floor.window_ms = 100;
  options_.floor.reports = 1;
  EngineJob main = job("alone",
                       "t() { date +%s.%N; }; p() { echo \"$1\" >> \"$COLO_PROGRESS_FILE\"; }; "
                       "for e in 1 2 3 4; do sleep 0.15; p \"{\\\"event\\\":\\\"epoch_end\\\","
                       "\\\"epoch\\\":$e,\\\"samples\\\":10,\\\"time\\\":$(t)}\"; done");
  main.spec.qos = QosClass::kProtected;
  JobProfile solo;
  solo.samples_per_s = 1000;
  options_.profiles_elsewhere = {learned_of(main, solo)};
  auto engine = make_engine();
  const size_t key = engine->submit(main);
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->idle(); })) << out_.str();
  engine->finish();
  const std::string log = read_text(engine->view(key).log_path);
  const std::string note = "no opportunistic job left beside it to stop";
  ASSERT_THAT(log, HasSubstr(note));
  EXPECT_EQ(log.find(note), log.rfind(note));
  EXPECT_EQ(engine->view(key).below_floor_share, 1.0);
  EXPECT_EQ(engine->view(key).below_floor_ms, engine->view(key).steady_ms);
  ASSERT_TRUE(engine->view(key).speed_of_solo);
  EXPECT_LT(*engine->view(key).speed_of_solo, 0.9);
}

// The service stops: running jobs end interrupted with its reason, queued
// ones are handed back unrecorded.
TEST_F(RunEngineTest, TheServicesShutdownInterruptsRunningJobsAndReleasesQueuedOnes) {
  options_.max_jobs_per_gpu = 1;
  auto engine = make_engine();
  std::vector<size_t> keys;
  for (const char* name : {"a", "b", "c"})
    keys.push_back(engine->submit(job(name, "exec sleep 30")));
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->running() == 2; })) << out_.str();
  engine->stop_all(RunEngine::StopKind::kShutdown, 300, "colo serve stopped");
  EXPECT_TRUE(engine->stopping());
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->running() == 0; })) << out_.str();
  engine->finish();
  int interrupted = 0;
  for (size_t key : keys) {
    const EngineJobView v = engine->view(key);
    if (v.state == JobState::kInterrupted) {
      ++interrupted;
      EXPECT_EQ(v.note, "colo serve stopped");
    } else {
      EXPECT_EQ(v.state, JobState::kQueued);  // released, not recorded
      EXPECT_TRUE(changes_of(key, JobChange::Kind::kEnded).empty());
    }
  }
  EXPECT_EQ(interrupted, 2);
}

// `colo run` stopped (Ctrl-C): queued jobs end cancelled before they started.
TEST_F(RunEngineTest, ColoRunsStopCancelsQueuedJobs) {
  options_.max_jobs_per_gpu = 1;
  auto engine = make_engine();
  std::vector<size_t> keys;
  for (const char* name : {"a", "b", "c"})
    keys.push_back(engine->submit(job(name, "exec sleep 30")));
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->running() == 2; })) << out_.str();
  engine->stop_all(RunEngine::StopKind::kCancel, 300, "stopped by Ctrl-C");
  ASSERT_TRUE(tick_until(*engine, [&] { return engine->idle(); })) << out_.str();
  engine->finish();
  int never_started = 0;
  for (size_t key : keys) {
    const EngineJobView v = engine->view(key);
    EXPECT_TRUE(is_final(v.state)) << v.name;
    if (v.note == "cancelled before it started") ++never_started;
  }
  EXPECT_EQ(never_started, 1);
  EXPECT_EQ(engine->count(true), 0);
}

}  // namespace
}  // namespace colo
