#include "analysis/stored.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "store/run_store.h"
#include "store/testing/lifecycle_runs.h"

// Summaries of runs written into a real store and read back through it (the
// RunReader colo uses), with numbers worked out by hand.
namespace colo {
namespace {

using ::testing::HasSubstr;

// ------------------------------------------------------------- lifecycle

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

// What an ended run's samples give is derived once and kept: a later analysis
// reads the kept figures (shown by figures no sample gives), with the same
// numbers; figures of another version, or not figures, are derived again.
TEST_F(LifecycleTest, AnEndedRunsSampleFiguresAreKeptAndReadInsteadOfItsSamples) {
  auto store = open_memory();
  Ids ids = record_collocated_run(*store, "mps", kT0);
  auto kept = [&](int version) {
    Result<std::optional<std::string>> body = store->derived(ids.run, kSampleFiguresKind, version);
    EXPECT_TRUE(body.ok());
    return body.ok() && *body ? parse_sample_figures(**body) : std::nullopt;
  };
  EXPECT_FALSE(kept(kSampleFiguresVersion).has_value());
  auto first = analyse_run(*store, ids.run);
  ASSERT_TRUE(first.ok()) << first.error().message();
  std::optional<SampleFigures> figures = kept(kSampleFiguresVersion);
  ASSERT_TRUE(figures.has_value());
  EXPECT_EQ(*figures, sample_figures(*first));
  EXPECT_EQ(figures->device_samples, 26);
  EXPECT_DOUBLE_EQ(figures->energy_j.value_or(-1), 18.0);

  auto again = analyse_run(*store, 0);  // the latest: the same run
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(sample_figures(*again), *figures);
  EXPECT_DOUBLE_EQ(again->jobs[0].energy_j.value_or(-1), 7.0);
  EXPECT_DOUBLE_EQ(again->jobs[0].mean_sm_active_pct.value_or(-1), 23.0);
  EXPECT_EQ(again->jobs[1].peak_memory_bytes, 2 * kGiB);

  SampleFigures marked = *figures;
  marked.energy_j = 42;
  marked.jobs[0].mean_sm_active_pct = 77;
  ASSERT_TRUE(store
                  ->keep_derived(ids.run, kSampleFiguresKind, kSampleFiguresVersion,
                                 sample_figures_json(marked))
                  .ok());
  auto from_kept = analyse_run(*store, ids.run);
  ASSERT_TRUE(from_kept.ok());
  EXPECT_DOUBLE_EQ(from_kept->energy_j.value_or(-1), 42.0);
  EXPECT_DOUBLE_EQ(from_kept->jobs[0].mean_sm_active_pct.value_or(-1), 77.0);

  for (auto [version, body] : {std::pair{kSampleFiguresVersion + 1, sample_figures_json(marked)},
                               std::pair{kSampleFiguresVersion, std::string("[1, 2]")}}) {
    ASSERT_TRUE(store->keep_derived(ids.run, kSampleFiguresKind, version, body).ok());
    auto derived = analyse_run(*store, ids.run);
    ASSERT_TRUE(derived.ok());
    EXPECT_DOUBLE_EQ(derived->energy_j.value_or(-1), 18.0) << body;
    EXPECT_EQ(kept(kSampleFiguresVersion), figures) << "derived again and kept";
  }
}

// A run still running changes: nothing of it is kept.
TEST_F(LifecycleTest, NothingIsKeptOfARunStillRunning) {
  auto store = open_memory();
  auto run = store->begin_run(make_run("mps", kT0));
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(store->add_jobs(*run, sweep_jobs(), {"a.log", "b.log", "c.log"}, kT0).ok());
  ASSERT_TRUE(analyse_run(*store, *run).ok());
  ASSERT_TRUE(run_facts(*store, *run).ok());
  for (auto [kind, version] :
       {std::pair{kSampleFiguresKind, kSampleFiguresVersion}, {kRunFactsKind, kRunFactsVersion}}) {
    Result<std::optional<std::string>> body = store->derived(*run, kind, version);
    ASSERT_TRUE(body.ok());
    EXPECT_FALSE(body->has_value()) << kind;
  }
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
