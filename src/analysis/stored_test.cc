#include "analysis/stored.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "store/run_store.h"

// Summaries of runs written into a real store and read back through it (the
// RunReader colo uses), with numbers worked out by hand.
namespace colo {
namespace {

using ::testing::HasSubstr;

constexpr UnixMillis kT0 = 1'700'000'000'000;
constexpr uint64_t kGiB = 1024ULL * 1024 * 1024;

std::unique_ptr<RunStore> open_memory() {
  auto store = RunStore::open(":memory:");
  EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message());
  return std::move(store).value();
}

JobSpec make_job(const std::string& name, std::vector<std::string> command,
                 std::map<std::string, std::string> env = {}) {
  JobSpec job;
  job.name = name;
  job.group = name;
  job.command = std::move(command);
  job.working_dir = "/data/sweep";
  job.env = std::move(env);
  return job;
}

NewRun make_run(const std::string& mechanism, UnixMillis started_ms, bool simulated = true) {
  NewRun run;
  run.started_ms = started_ms;
  run.mechanism = mechanism;
  run.backend = simulated ? "sim" : "nvml";
  run.simulated = simulated;
  run.job_file = "sweep.toml";
  run.command_line = "colo run sweep.toml";
  run.host = "test-host";
  run.colo_pid = 4242;
  return run;
}

ProgressEvent epoch_end(UnixMillis time_ms, int64_t epoch, std::optional<int64_t> samples) {
  ProgressEvent event;
  event.time_ms = time_ms;
  event.kind = "epoch_end";
  event.epoch = epoch;
  event.samples = samples;
  return event;
}

ProcessSampleRow process(UnixMillis time_ms, uint32_t pid, std::optional<int64_t> job_id,
                         uint64_t memory_bytes) {
  ProcessSampleRow row;
  row.sample.time_ms = time_ms;
  row.sample.device = 0;
  row.sample.pid = pid;
  row.sample.used_memory_bytes = memory_bytes;
  row.job_id = job_id;
  return row;
}

JobExit exit_with(JobState state, std::optional<int> code, std::string reason = "") {
  JobExit exit;
  exit.state = state;
  exit.exit_code = code;
  exit.reason = std::move(reason);
  return exit;
}

// ------------------------------------------------------------- lifecycle

// A run of three jobs under MPS on device 0, with numbers worked out by hand:
//   A: runs 1000..11000 (10 s), epoch ends at 4000, 7000, 11000 with 1000
//      samples each. Mean epoch over epochs 2..3 = (3000 + 4000) / 2 = 3500.
//      Throughput 3000 / 10 s = 300/s. Process memory: at 2000 two processes
//      1 GiB + 0.5 GiB = 1.5 GiB; at 5000 1.2 GiB + 0.2 GiB = 1.4 GiB. Peak
//      1.5 GiB (not the largest single process, not the sum of maxima).
//   B: runs 3000..9000 (6 s), one epoch end at 8000 with 600 samples: mean
//      epoch 5000 (from its start), throughput 100/s, peak 2 GiB.
//   C: failed to start (no start time).
// Device 0 samples every second k = 0..12: energy 100000 + 1000k mJ
// (1 J/s), SM active 0.5 k^2 %, memory k GiB. Device 1: energy
// 50000 + 500k mJ, SM 0 %, no memory reading.
//   A's energy: 10 intervals of 1 J inside 1000..11000; B runs during 6 of
//   them (midpoints 3500..8500), so A gets 4 * 1 + 6 * 0.5 = 7 J, B 3 J.
//   A's mean SM: mean of 0.5 k^2 for k = 1..11 = 23; B's (k = 3..9) = 20.
// Run: makespan 10 s, 3600 samples, 360/s, energy 12 J + 6 J = 18 J,
//   mean SM over both devices = (0.5 * 650 + 0) / 26 = 12.5, peak 12 GiB.
class LifecycleTest : public ::testing::Test {
 protected:
  struct Ids {
    int64_t run = 0;
    std::vector<int64_t> jobs;
  };

  static std::vector<JobSpec> sweep_jobs() {
    return {make_job("A", {"python", "a.py"}), make_job("B", {"python", "b.py"}),
            make_job("C", {"/no/such/binary"})};
  }

  Ids record_collocated_run(RunStore& store, const std::string& mechanism, UnixMillis t0) {
    Ids ids;
    auto run = store.begin_run(make_run(mechanism, t0));
    EXPECT_TRUE(run.ok()) << run.error().message();
    ids.run = *run;
    auto jobs = store.add_jobs(ids.run, sweep_jobs(), {"a.log", "b.log", "c.log"}, t0);
    EXPECT_TRUE(jobs.ok()) << jobs.error().message();
    ids.jobs = *jobs;
    const int64_t a = ids.jobs[0];
    const int64_t b = ids.jobs[1];
    const int64_t c = ids.jobs[2];

    EXPECT_TRUE(store
                    .job_finished(c,
                                  exit_with(JobState::kFailed, std::nullopt,
                                            "could not start: /no/such/binary not found"),
                                  t0 + 500, 0)
                    .ok());
    EXPECT_TRUE(store.job_started(a, 100, 0, t0 + 1000).ok());
    EXPECT_TRUE(store.job_started(b, 200, 0, t0 + 3000).ok());

    std::vector<DeviceSample> devices;
    for (int k = 0; k <= 12; ++k) {
      DeviceSample d0;
      d0.time_ms = t0 + 1000 * k;
      d0.device = 0;
      d0.sm_active_pct = 0.5 * k * k;
      d0.memory_used_bytes = static_cast<uint64_t>(k) * kGiB;
      d0.memory_total_bytes = 141 * kGiB;
      d0.energy_mj = 100000 + 1000 * static_cast<uint64_t>(k);
      d0.power_w = 100;
      devices.push_back(d0);
      DeviceSample d1;
      d1.time_ms = t0 + 1000 * k;
      d1.device = 1;
      d1.sm_active_pct = 0;
      d1.energy_mj = 50000 + 500 * static_cast<uint64_t>(k);
      devices.push_back(d1);
    }
    std::vector<ProcessSampleRow> processes = {
        process(t0 + 2000, 100, a, kGiB),
        process(t0 + 2000, 101, a, kGiB / 2),
        process(t0 + 5000, 100, a, kGiB * 12 / 10),
        process(t0 + 5000, 101, a, kGiB * 2 / 10),
        process(t0 + 5000, 200, b, 2 * kGiB),
        process(t0 + 5000, 999, std::nullopt, 30 * kGiB),  // not a job's process
    };
    EXPECT_TRUE(store.add_samples(ids.run, devices, processes).ok());

    ProgressEvent step;
    step.time_ms = t0 + 2500;
    step.kind = "step";
    step.step = 10;
    step.samples = 77;  // not an epoch end: does not count
    step.metrics = {{"loss", 0.5}};
    EXPECT_TRUE(store
                    .add_job_events({{a, epoch_end(t0 + 4000, 1, 1000)},
                                     {a, step},
                                     {a, epoch_end(t0 + 7000, 2, 1000)},
                                     {b, epoch_end(t0 + 8000, 1, 600)},
                                     {a, epoch_end(t0 + 11000, 3, 1000)}})
                    .ok());
    EXPECT_TRUE(store.job_finished(b, exit_with(JobState::kOk, 0), t0 + 9000, 0).ok());
    EXPECT_TRUE(store.job_finished(a, exit_with(JobState::kOk, 0), t0 + 11000, 2).ok());
    EXPECT_TRUE(store.end_run(ids.run, RunState::kOk, t0 + 12000).ok());
    return ids;
  }

  // The same jobs one at a time: A 0..15000, B 15000..24000 (C fails again),
  // 3600 samples in 24 s = 150/s. No GPU samples.
  int64_t record_exclusive_run(RunStore& store, UnixMillis t0, RunState end_state = RunState::kOk,
                               bool simulated = true, std::vector<JobSpec> jobs = sweep_jobs()) {
    auto run = store.begin_run(make_run("exclusive", t0, simulated));
    EXPECT_TRUE(run.ok());
    std::reverse(jobs.begin(), jobs.end());  // file order does not matter
    auto ids = store.add_jobs(*run, jobs, {}, t0);
    EXPECT_TRUE(ids.ok());
    for (size_t i = 0; i < ids->size(); ++i) {
      const std::string& name = jobs[i].name;
      const int64_t id = (*ids)[i];
      if (name == "A") {
        EXPECT_TRUE(store.job_started(id, 300, 0, t0).ok());
        EXPECT_TRUE(store
                        .add_job_events({{id, epoch_end(t0 + 5000, 1, 1000)},
                                         {id, epoch_end(t0 + 10000, 2, 1000)},
                                         {id, epoch_end(t0 + 15000, 3, 1000)}})
                        .ok());
        EXPECT_TRUE(store.job_finished(id, exit_with(JobState::kOk, 0), t0 + 15000, 0).ok());
      } else if (name == "B") {
        EXPECT_TRUE(store.job_started(id, 301, 0, t0 + 15000).ok());
        EXPECT_TRUE(store.add_job_events({{id, epoch_end(t0 + 24000, 1, 600)}}).ok());
        EXPECT_TRUE(store.job_finished(id, exit_with(JobState::kOk, 0), t0 + 24000, 0).ok());
      } else {
        EXPECT_TRUE(
            store.job_finished(id, exit_with(JobState::kFailed, std::nullopt, "not found"), t0, 0)
                .ok());
      }
    }
    EXPECT_TRUE(store.end_run(*run, end_state, t0 + 24000).ok());
    return *run;
  }
};

TEST_F(LifecycleTest, SummarizesJobsAndRunWithHandComputedNumbers) {
  auto store = open_memory();
  Ids ids = record_collocated_run(*store, "mps", kT0);

  auto summary = analyse_run(*store, ids.run);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  const RunSummary& s = *summary;
  EXPECT_EQ(s.run.id, ids.run);
  EXPECT_EQ(s.run.state, RunState::kOk);
  EXPECT_EQ(s.run.mechanism, "mps");
  EXPECT_TRUE(s.run.simulated);
  EXPECT_EQ(s.run.job_count, 3);
  ASSERT_EQ(s.jobs.size(), 3U);

  const JobSummary& a = s.jobs[0];
  EXPECT_EQ(a.name, "A");
  EXPECT_EQ(a.state, JobState::kOk);
  EXPECT_EQ(a.device, 0);
  EXPECT_EQ(a.duration_ms, 10000);
  EXPECT_EQ(a.epochs, 3);
  ASSERT_TRUE(a.mean_epoch_ms.has_value());
  EXPECT_DOUBLE_EQ(*a.mean_epoch_ms, 3500.0);
  EXPECT_EQ(a.samples, 3000);
  ASSERT_TRUE(a.throughput_per_s.has_value());
  EXPECT_DOUBLE_EQ(*a.throughput_per_s, 300.0);
  EXPECT_EQ(a.peak_memory_bytes, kGiB + kGiB / 2);
  ASSERT_TRUE(a.mean_sm_active_pct.has_value());
  EXPECT_DOUBLE_EQ(*a.mean_sm_active_pct, 23.0);
  ASSERT_TRUE(a.energy_j.has_value());
  EXPECT_DOUBLE_EQ(*a.energy_j, 7.0);
  EXPECT_EQ(a.log_path, "a.log");
  EXPECT_EQ(a.malformed_progress_lines, 2);

  const JobSummary& b = s.jobs[1];
  EXPECT_EQ(b.name, "B");
  EXPECT_EQ(b.epochs, 1);
  ASSERT_TRUE(b.mean_epoch_ms.has_value());
  EXPECT_DOUBLE_EQ(*b.mean_epoch_ms, 5000.0);
  EXPECT_EQ(b.samples, 600);
  EXPECT_DOUBLE_EQ(b.throughput_per_s.value_or(-1), 100.0);
  EXPECT_EQ(b.peak_memory_bytes, 2 * kGiB);
  EXPECT_DOUBLE_EQ(b.mean_sm_active_pct.value_or(-1), 20.0);
  EXPECT_DOUBLE_EQ(b.energy_j.value_or(-1), 3.0);

  const JobSummary& c = s.jobs[2];
  EXPECT_EQ(c.state, JobState::kFailed);
  EXPECT_EQ(c.reason, "could not start: /no/such/binary not found");
  EXPECT_FALSE(c.started_ms.has_value());
  EXPECT_FALSE(c.duration_ms.has_value());
  EXPECT_EQ(c.epochs, 0);
  EXPECT_FALSE(c.mean_epoch_ms.has_value());
  EXPECT_FALSE(c.samples.has_value());
  EXPECT_FALSE(c.throughput_per_s.has_value());
  EXPECT_FALSE(c.peak_memory_bytes.has_value());
  EXPECT_FALSE(c.mean_sm_active_pct.has_value());
  EXPECT_FALSE(c.energy_j.has_value());

  EXPECT_EQ(s.makespan_ms, 10000);
  EXPECT_EQ(s.total_samples, 3600);
  EXPECT_DOUBLE_EQ(s.throughput_per_s.value_or(-1), 360.0);
  EXPECT_DOUBLE_EQ(s.mean_sm_active_pct.value_or(-1), 12.5);
  EXPECT_EQ(s.peak_memory_used_bytes, 12 * kGiB);
  EXPECT_DOUBLE_EQ(s.energy_j.value_or(-1), 18.0);
  EXPECT_EQ(s.device_samples, 26);
  EXPECT_FALSE(s.baseline_run_id.has_value());  // no exclusive run in the store
  EXPECT_FALSE(s.speedup_vs_exclusive.has_value());

  // Run 0 is the most recent run.
  auto latest = analyse_run(*store, 0);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->run.id, ids.run);
}

TEST_F(LifecycleTest, SingleEpochMeanIsMeasuredFromStart) {
  auto store = open_memory();
  auto run = store->begin_run(make_run("naive", kT0));
  ASSERT_TRUE(run.ok());
  auto jobs = store->add_jobs(*run, {make_job("solo", {"x"})}, {}, kT0);
  ASSERT_TRUE(jobs.ok());
  ASSERT_TRUE(store->job_started((*jobs)[0], 1, 0, kT0 + 100).ok());
  // An epoch_end without a sample count: epochs count, samples stay absent.
  ASSERT_TRUE(store->add_job_events({{(*jobs)[0], epoch_end(kT0 + 2100, 1, std::nullopt)}}).ok());
  ASSERT_TRUE(store->job_finished((*jobs)[0], exit_with(JobState::kOk, 0), kT0 + 2500, 0).ok());
  auto summary = analyse_run(*store, *run);
  ASSERT_TRUE(summary.ok());
  const JobSummary& job = summary->jobs[0];
  EXPECT_EQ(job.epochs, 1);
  EXPECT_DOUBLE_EQ(job.mean_epoch_ms.value_or(-1), 2000.0);
  EXPECT_FALSE(job.samples.has_value());
  EXPECT_FALSE(job.throughput_per_s.has_value());
  EXPECT_FALSE(summary->total_samples.has_value());
  EXPECT_EQ(summary->makespan_ms, 2400);
  EXPECT_EQ(summary->device_samples, 0);
  EXPECT_FALSE(summary->energy_j.has_value());
  EXPECT_FALSE(summary->mean_sm_active_pct.has_value());
}

TEST_F(LifecycleTest, SpeedUpAgainstTheExclusiveRunOfTheSameJobs) {
  auto store = open_memory();
  const int64_t exclusive = record_exclusive_run(*store, kT0);
  // Neither a failed exclusive run, a measured (not simulated) one, nor one of
  // other jobs is a baseline, even though they are more recent.
  record_exclusive_run(*store, kT0 + 100'000, RunState::kFailed);
  record_exclusive_run(*store, kT0 + 200'000, RunState::kOk, /*simulated=*/false);
  std::vector<JobSpec> other_jobs = sweep_jobs();
  other_jobs[0].env["SEED"] = "2";
  record_exclusive_run(*store, kT0 + 300'000, RunState::kOk, true, other_jobs);

  Ids mps = record_collocated_run(*store, "mps", kT0 + 400'000);
  Ids naive = record_collocated_run(*store, "naive", kT0 + 500'000);

  auto summary = analyse_run(*store, mps.run);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->baseline_run_id, exclusive);
  // 360/s against 150/s.
  EXPECT_DOUBLE_EQ(summary->speedup_vs_exclusive.value_or(-1), 2.4);

  auto naive_summary = analyse_run(*store, naive.run);
  ASSERT_TRUE(naive_summary.ok());
  EXPECT_EQ(naive_summary->baseline_run_id, exclusive);

  // An exclusive run has no baseline of its own.
  auto exclusive_summary = analyse_run(*store, exclusive);
  ASSERT_TRUE(exclusive_summary.ok());
  EXPECT_FALSE(exclusive_summary->baseline_run_id.has_value());
  EXPECT_DOUBLE_EQ(exclusive_summary->throughput_per_s.value_or(-1), 150.0);
  EXPECT_EQ(exclusive_summary->makespan_ms, 24000);
}

TEST_F(LifecycleTest, SpeedUpFallsBackToMakespanWithoutSamples) {
  auto store = open_memory();
  auto record = [&](const std::string& mechanism, UnixMillis t0, int64_t duration_ms) {
    auto run = store->begin_run(make_run(mechanism, t0));
    EXPECT_TRUE(run.ok());
    auto jobs = store->add_jobs(*run, {make_job("j", {"sleep", "1"})}, {}, t0);
    EXPECT_TRUE(jobs.ok());
    EXPECT_TRUE(store->job_started((*jobs)[0], 1, 0, t0).ok());
    EXPECT_TRUE(
        store->job_finished((*jobs)[0], exit_with(JobState::kOk, 0), t0 + duration_ms, 0).ok());
    EXPECT_TRUE(store->end_run(*run, RunState::kOk, t0 + duration_ms).ok());
    return *run;
  };
  const int64_t exclusive = record("exclusive", kT0, 8000);
  const int64_t mps = record("mps", kT0 + 10'000, 2000);
  auto summary = analyse_run(*store, mps);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->baseline_run_id, exclusive);
  EXPECT_DOUBLE_EQ(summary->speedup_vs_exclusive.value_or(-1), 4.0);
}

// Two identical jobs, each: epoch 1 ends 10 s after its start (start-up),
// then two epochs of 1000 samples in 2 s each.
// One at a time: steady intervals [10,14] and [24,28] s: 4000 samples / 8 s = 500/s.
// Together: intervals [10,14] and [11,15]: union 5 s, 4000 samples: 800/s.
// Two identical jobs, each with five epochs: the first (warm-up) ends 10 s
// after its start, the others take 2 s with 1000 samples each.
int64_t record_pair(RunStore& store, const std::string& mechanism, UnixMillis t0,
                    UnixMillis second_start) {
  auto run = store.begin_run(make_run(mechanism, t0));
  EXPECT_TRUE(run.ok());
  auto ids = store.add_jobs(*run, {make_job("a", {"train"}), make_job("b", {"train"})}, {}, t0);
  EXPECT_TRUE(ids.ok());
  UnixMillis starts[2] = {t0, second_start};
  for (int i = 0; i < 2; ++i) {
    int64_t id = (*ids)[i];
    UnixMillis s = starts[i];
    EXPECT_TRUE(store.job_started(id, 100 + i, 0, s).ok());
    std::vector<std::pair<int64_t, ProgressEvent>> events;
    for (int e = 1; e <= 5; ++e) events.emplace_back(id, epoch_end(s + 8000 + 2000 * e, e, 1000));
    EXPECT_TRUE(store.add_job_events(events).ok());
    JobExit ok;
    ok.state = JobState::kOk;
    ok.exit_code = 0;
    EXPECT_TRUE(store.job_finished(id, ok, s + 18000, 0).ok());
  }
  EXPECT_TRUE(store.end_run(*run, RunState::kOk, second_start + 18000).ok());
  return *run;
}

TEST(SteadyStateTest, OneAfterAnotherTheSteadyRateIsEachJobsOwn) {
  auto store = open_memory();
  int64_t exclusive = record_pair(*store, "exclusive", kT0, kT0 + 18000);
  auto base = analyse_run(*store, exclusive);
  ASSERT_TRUE(base.ok()) << base.error().message();
  EXPECT_DOUBLE_EQ(base->steady_throughput_per_s.value_or(-1), 500.0);
  EXPECT_DOUBLE_EQ(base->jobs[0].steady_throughput_per_s.value_or(-1), 500.0);
  EXPECT_EQ(base->jobs[0].steady_samples, 4000);
  EXPECT_FALSE(base->together.has_value());
  EXPECT_FALSE(base->steady_speedup_vs_exclusive.has_value());
  EXPECT_THAT(base->steady_note, HasSubstr("one after another"));
}

// The second job starts 1 s after the first. While both are in their steady
// epochs, W = [11 s, 18 s] after the first start, each makes 500 samples/s,
// as fast as alone: 2.0x. The union of their steady epochs ([10 s, 19 s],
// 8000 samples) would say 889 samples/s, 1.78x.
TEST(SteadyStateTest, SpeedUpCountsOnlyTheWindowInWhichBothRan) {
  auto store = open_memory();
  int64_t exclusive = record_pair(*store, "exclusive", kT0, kT0 + 18000);
  int64_t mps = record_pair(*store, "mps", kT0 + 100'000, kT0 + 101'000);

  auto together = analyse_run(*store, mps);
  ASSERT_TRUE(together.ok()) << together.error().message();
  ASSERT_TRUE(together->together.has_value());
  EXPECT_EQ(together->together->start_ms, kT0 + 111'000);
  EXPECT_EQ(together->together->end_ms, kT0 + 118'000);
  EXPECT_DOUBLE_EQ(together->steady_throughput_per_s.value_or(-1), 1000.0);
  ASSERT_TRUE(together->steady_speedup_vs_exclusive.has_value()) << together->steady_note;
  EXPECT_DOUBLE_EQ(*together->steady_speedup_vs_exclusive, 2.0);
  EXPECT_EQ(together->baseline_run_id, exclusive);
  EXPECT_EQ(together->solo_source, fmt::format("exclusive run #{}", exclusive));
  for (const JobSummary& j : together->jobs) {
    EXPECT_DOUBLE_EQ(j.together_samples_per_s.value_or(-1), 500.0) << j.name;
    EXPECT_DOUBLE_EQ(j.slowdown.value_or(-1), 1.0) << j.name;
  }
  // End to end: 10000 samples in 19 s against 10000 in 36 s.
  EXPECT_NEAR(together->speedup_vs_exclusive.value_or(-1), 36.0 / 19.0, 1e-9);
}

TEST(SteadyStateTest, JobsThatOverlapTooShortlyGetNoFigureButTheReason) {
  auto store = open_memory();
  record_pair(*store, "exclusive", kT0, kT0 + 18000);
  // W = [15 s, 18 s]: 3 s, less than two steady epochs (4 s).
  int64_t mps = record_pair(*store, "mps", kT0 + 100'000, kT0 + 105'000);
  auto together = analyse_run(*store, mps);
  ASSERT_TRUE(together.ok()) << together.error().message();
  EXPECT_FALSE(together->steady_speedup_vs_exclusive.has_value());
  EXPECT_FALSE(together->steady_throughput_per_s.has_value());
  EXPECT_THAT(together->steady_note, HasSubstr("did not run together long enough"));
  EXPECT_THAT(together->steady_note, HasSubstr("3.0 s"));
  EXPECT_TRUE(together->speedup_vs_exclusive.has_value());  // end to end stays
}

TEST(RunStoreMig, IdleInstanceTimeFromJobStartsAndEnds) {
  auto store = open_memory();
  ASSERT_NE(store, nullptr);
  const UnixMillis t0 = 1'700'000'000'000;
  auto run = store->begin_run(make_run("mig", t0));
  ASSERT_TRUE(run.ok());
  JobSpec a = make_job("a", {"true"});
  JobSpec b = make_job("b", {"false"});
  auto ids = store->add_jobs(*run, {a, b}, {"a.log", "b.log"}, t0);
  ASSERT_TRUE(ids.ok());
  // a runs 10 s, b 4 s, on instances of their own: b's instance idles 6 s.
  ASSERT_TRUE(store->job_started((*ids)[0], 100, 0, t0).ok());
  ASSERT_TRUE(store->job_instance((*ids)[0], "3g.20gb gi1 ci0 MIG-aaaa").ok());
  ASSERT_TRUE(store->job_started((*ids)[1], 101, 0, t0).ok());
  ASSERT_TRUE(store->job_instance((*ids)[1], "3g.20gb gi2 ci0 MIG-bbbb").ok());
  ASSERT_TRUE(store->job_finished((*ids)[1], exit_with(JobState::kOk, 0), t0 + 4000, 0).ok());
  ASSERT_TRUE(store->job_finished((*ids)[0], exit_with(JobState::kOk, 0), t0 + 10000, 0).ok());

  auto summary = analyse_run(*store, *run);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->jobs[0].instance, "3g.20gb gi1 ci0 MIG-aaaa");
  ASSERT_EQ(summary->instances.size(), 2u);
  EXPECT_EQ(summary->instances[0].busy_ms, 10000);
  EXPECT_EQ(summary->instances[0].idle_ms, 0);
  EXPECT_EQ(summary->instances[1].busy_ms, 4000);
  EXPECT_EQ(summary->instances[1].idle_ms, 6000);
  EXPECT_EQ(summary->idle_instance_ms, 6000);
}

}  // namespace
}  // namespace colo
