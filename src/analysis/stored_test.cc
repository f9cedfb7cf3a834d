#include "analysis/stored.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "store/run_store.h"
#include "store/testing/forwarding_reader.h"
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

// ------------------------------------------------------- kept as jobs end

// A RunReader over a store that counts the passes over a whole run's samples.
class CountingSampleReader : public testing::ForwardingReader {
 public:
  using ForwardingReader::ForwardingReader;
  using RunReader::run_record;
  Result<RunRecord> run_record(int64_t run_id, MetricSteps steps, Samples samples) override {
    if (samples == Samples::kRead) ++whole_passes;
    ++whole_records;
    return ForwardingReader::run_record(run_id, steps, samples);
  }
  Status for_each_sample(int64_t run_id, SampleSink& sink) override {
    ++whole_passes;
    return ForwardingReader::for_each_sample(run_id, sink);
  }
  int whole_passes = 0;
  int whole_records = 0;  // every read of the whole run's rows, samples or not
};

// One job of a service-like run: its GPU, lifetime (ms after kT0) and command
// (its signature). No start: it could not start.
struct Planned {
  std::string name;
  std::vector<std::string> command;
  int device = 0;
  std::optional<int64_t> start;
  int64_t end = 0;
};

// Jobs on two GPUs: some shared their GPU (S2 with S1 on gpu0, S1 with the
// long S3 on gpu1), some ran alone, one never started; the long one (the
// fifth) holds back the jobs after it until it ends.
std::vector<Planned> service_like_jobs() {
  const std::vector<std::string> s1 = {"python", "s1.py"};
  const std::vector<std::string> s2 = {"python", "s2.py"};
  const std::vector<std::string> s3 = {"python", "s3.py"};
  return {{"a", s1, 0, 1000, 9000},   {"b", s2, 0, 2000, 5000},   {"c", s1, 0, 10000, 20000},
          {"d", s2, 0, 21000, 30000}, {"e", s3, 1, 1000, 40000},  {"f", s1, 1, 2000, 6000},
          {"g", s2, 1, 7000, 12000},  {"h", s1, 0, 31000, 39000}, {"i", s1, 0, std::nullopt, 500}};
}

// Writes the run's rows (every start, epoch end and sample; no end), then
// ends each job in the order of its end, calling `after_end` with its end,
// and the run in `end_state`. `gpus` 1: every job on gpu0.
int64_t record_service_like_run(RunStore& store,
                                const std::function<void(UnixMillis ended)>& after_end,
                                int gpus = 2, const std::string& mechanism = "mps",
                                RunState end_state = RunState::kOk) {
  std::vector<Planned> planned = service_like_jobs();
  for (Planned& p : planned) p.device %= gpus;
  auto run = store.begin_run(make_run(mechanism, kT0));
  EXPECT_TRUE(run.ok());
  std::vector<JobSpec> specs;
  for (const Planned& p : planned) specs.push_back(make_job(p.name, p.command));
  auto ids = store.add_jobs(*run, specs, {}, kT0);
  EXPECT_TRUE(ids.ok());
  std::vector<std::pair<int64_t, ProgressEvent>> events;
  std::vector<ProcessSampleRow> processes;
  for (size_t i = 0; i < planned.size(); ++i) {
    const Planned& p = planned[i];
    if (!p.start) continue;
    EXPECT_TRUE(
        store.job_started((*ids)[i], 100 + static_cast<pid_t>(i), p.device, kT0 + *p.start).ok());
    int64_t epoch = 1;
    for (int64_t t = *p.start + 1500; t <= p.end; t += 1500 + 100 * static_cast<int64_t>(i))
      events.push_back(
          {(*ids)[i], epoch_end(kT0 + t, epoch++, 100 + 10 * static_cast<int64_t>(i))});
    for (int64_t t = *p.start; t <= p.end; t += 1000) {
      ProcessSampleRow row = process(kT0 + t, 100 + static_cast<uint32_t>(i), (*ids)[i],
                                     kGiB + static_cast<uint64_t>(t % 7000) * 1000);
      row.sample.device = p.device;
      processes.push_back(row);
    }
  }
  std::sort(processes.begin(), processes.end(),
            [](const auto& x, const auto& y) { return x.sample.time_ms < y.sample.time_ms; });
  std::vector<DeviceSample> devices;
  for (int64_t t = 0; t <= 41000; t += 500) {
    for (int g = 0; g < gpus; ++g) {
      DeviceSample d;
      d.time_ms = kT0 + t;
      d.device = g;
      d.sm_active_pct = static_cast<double>((t / 500 * (g + 3)) % 97);
      d.gpu_util_pct = static_cast<double>((t / 500 * (g + 5)) % 89);
      d.memory_used_bytes = static_cast<uint64_t>(t % 9000) * kGiB / 1000;
      d.energy_mj = 1000 * static_cast<uint64_t>(t) / (g + 1);
      d.power_w = 100;
      devices.push_back(d);
    }
  }
  EXPECT_TRUE(store.add_samples(*run, devices, processes).ok());
  EXPECT_TRUE(store.add_job_events(events).ok());
  std::vector<size_t> by_end(planned.size());
  for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = i;
  std::stable_sort(by_end.begin(), by_end.end(),
                   [&](size_t x, size_t y) { return planned[x].end < planned[y].end; });
  for (size_t i : by_end) {
    const Planned& p = planned[i];
    const JobExit exit = p.start ? exit_with(JobState::kOk, 0)
                                 : exit_with(JobState::kFailed, std::nullopt, "not found");
    EXPECT_TRUE(store.job_finished((*ids)[i], exit, kT0 + p.end, 0).ok());
    after_end(kT0 + p.end);
  }
  EXPECT_TRUE(store.end_run(*run, end_state, kT0 + 41000).ok());
  return *run;
}

std::vector<LearnedProfile> learned_from(const std::vector<ProfileContribution>& contributions) {
  ProfileLearner learner;
  for (const ProfileContribution& c : contributions) learner.add(c);
  return learner.profiles();
}

// The facts of a run derived from all of its rows and samples at once.
RunFacts facts_from_rows(RunStore& store, int64_t run) {
  Result<RunRecord> record = store.run_record(run, MetricSteps::kSkip, Samples::kRead);
  EXPECT_TRUE(record.ok());
  const RunSummary summary = summarize(*record);
  return RunFacts{fold_contributions(profile_contributions(summary)), may_be_collocation(summary)};
}

// As each job ends, what it teaches is derived from its own rows and kept;
// the first read after the run needs no pass over the run's samples, and
// learns what deriving the whole run from its rows would teach.
TEST(RunFactsKeeperTest, KeptAsJobsEndTheFirstReadAfterTheRunDerivesNothingOfIt) {
  auto store = open_memory();
  std::unique_ptr<RunFactsKeeper> keeper;
  std::vector<RunFactsKeeper::Part> parts;
  int64_t run_id = 0;
  const int64_t run = record_service_like_run(*store, [&](UnixMillis ended) {
    if (!keeper) {
      Result<RunRow> latest = store->run(0);
      ASSERT_TRUE(latest.ok());
      run_id = latest->id;
      keeper = std::make_unique<RunFactsKeeper>(*store, run_id);
    }
    ASSERT_TRUE(keeper->update(ended + 1).ok());
    parts.push_back(keeper->part());
  });
  ASSERT_EQ(run, run_id);
  const std::vector<Planned> planned = service_like_jobs();
  Result<RunRecord> rows = store->run_record(run, MetricSteps::kSkip, Samples::kSkip);
  ASSERT_TRUE(rows.ok());
  auto id_of = [&](const std::string& name) {
    for (const JobRow& j : rows->jobs) {
      if (j.name == name) return j.id;
    }
    return int64_t{-1};
  };
  // After "i" (never started) and "b" ended, with "a" still running: nothing
  // before them all ended, so each is kept apart; "b" taught its signature.
  ASSERT_GE(parts.size(), 2u);
  EXPECT_EQ(parts[1].through_id, 0);
  ASSERT_EQ(parts[1].rest.size(), 2u);
  EXPECT_EQ(parts[1].rest[0].first_id, id_of("b"));
  EXPECT_EQ(parts[1].rest[0].contributions.size(), 1u);
  EXPECT_EQ(parts[1].rest[1].first_id, id_of("i"));
  EXPECT_TRUE(parts[1].rest[1].contributions.empty());
  // Kept in the store as it went.
  Result<std::optional<std::string>> kept_part =
      store->derived(run, kRunFactsPartKind, kRunFactsPartVersion);
  ASSERT_TRUE(kept_part.ok());
  ASSERT_TRUE(kept_part->has_value());
  EXPECT_EQ(parse_run_facts_part(**kept_part), parts.back());
  // Every job ended: all folded into the head.
  EXPECT_EQ(parts.back().through_id, id_of("i"));
  EXPECT_TRUE(parts.back().rest.empty());
  EXPECT_EQ(parts.back().devices.size(), 2u);

  const RunFacts expected = facts_from_rows(*store, run);
  ASSERT_FALSE(expected.contributions.empty());
  CountingSampleReader reader(*store);
  Result<RunFacts> facts = run_facts(reader, run);
  ASSERT_TRUE(facts.ok()) << facts.error().message();
  EXPECT_EQ(reader.whole_passes, 0) << "no pass over the run's samples";
  EXPECT_EQ(learned_from(facts->contributions), learned_from(expected.contributions));
  EXPECT_EQ(facts->may_be_collocation, expected.may_be_collocation);
  // ...and kept as the run's facts.
  Result<std::optional<std::string>> kept = store->derived(run, kRunFactsKind, kRunFactsVersion);
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(kept->has_value());
  EXPECT_EQ(parse_run_facts(**kept), *facts);
}

// A run that stopped keeping before its end (colo killed): the jobs that
// ended after the last keep are derived from their own rows at the first
// read, the others read back; the same profiles as from all of its rows.
TEST(RunFactsKeeperTest, ARunKilledMidwayIsCompletedFromWhatItKept) {
  for (size_t keeps : {size_t{0}, size_t{1}, size_t{3}, size_t{5}, size_t{8}}) {
    auto store = open_memory();
    std::unique_ptr<RunFactsKeeper> keeper;
    size_t ends = 0;
    const int64_t run = record_service_like_run(*store, [&](UnixMillis ended) {
      if (!keeper) keeper = std::make_unique<RunFactsKeeper>(*store, store->run(0)->id);
      // Before `keeps` ends, and only what ended a second before.
      if (ends++ < keeps) ASSERT_TRUE(keeper->update(ended - 1000).ok());
    });
    const RunFacts expected = facts_from_rows(*store, run);
    Result<std::optional<std::string>> part =
        store->derived(run, kRunFactsPartKind, kRunFactsPartVersion);
    ASSERT_TRUE(part.ok());
    EXPECT_EQ(part->has_value(), keeps >= 2) << keeps;  // the first keep found nothing ended
    CountingSampleReader reader(*store);
    Result<RunFacts> facts = run_facts(reader, run);
    ASSERT_TRUE(facts.ok()) << facts.error().message();
    EXPECT_EQ(reader.whole_passes, part->has_value() ? 0 : 1) << keeps;
    EXPECT_EQ(learned_from(facts->contributions), learned_from(expected.contributions)) << keeps;
    EXPECT_EQ(facts->may_be_collocation, expected.may_be_collocation) << keeps;
  }
}

// A run whose jobs all ran on one GPU: its kept part cannot say whether it
// was a measured collocation, its row can unless it ended ok under mps or
// naive; only then are its rows read whole (a service killed after 100,000
// jobs on one GPU is not), and the facts are those of all its rows.
TEST(RunFactsKeeperTest, ARunOnOneGpuIsReadWholeOnlyWhenItsRowCannotSay) {
  struct Case {
    std::string mechanism;
    RunState state;
    int whole_records;
  };
  const std::vector<Case> cases = {
      {"mps", RunState::kInterrupted, 0}, {"naive", RunState::kFailed, 0},
      {"exclusive", RunState::kOk, 0},    {"mps", RunState::kOk, 1},
      {"naive", RunState::kOk, 1},
  };
  for (const Case& c : cases) {
    const std::string label = fmt::format("{} {}", c.mechanism, to_string(c.state));
    auto store = open_memory();
    std::unique_ptr<RunFactsKeeper> keeper;
    const int64_t run = record_service_like_run(
        *store,
        [&](UnixMillis ended) {
          if (!keeper) keeper = std::make_unique<RunFactsKeeper>(*store, store->run(0)->id);
          ASSERT_TRUE(keeper->update(ended + 1).ok());
        },
        /*gpus=*/1, c.mechanism, c.state);
    ASSERT_EQ(keeper->part().devices.size(), 1u) << label;
    const RunFacts expected = facts_from_rows(*store, run);
    CountingSampleReader reader(*store);
    Result<RunFacts> facts = run_facts(reader, run);
    ASSERT_TRUE(facts.ok()) << facts.error().message();
    EXPECT_EQ(reader.whole_records, c.whole_records) << label;
    EXPECT_EQ(reader.whole_passes, 0) << label;
    EXPECT_EQ(learned_from(facts->contributions), learned_from(expected.contributions)) << label;
    EXPECT_EQ(facts->may_be_collocation, expected.may_be_collocation) << label;
  }
}

TEST(RunFactsKeeperTest, PartBodiesRoundTripAndOthersAreNone) {
  ProfileContribution c;
  c.signature = "sig";
  c.gpu_name = "Simulated H100";
  c.job_name = "a";
  c.solo = ProfileContribution::Solo::kAlone;
  c.measured.samples_per_s = 12.5;
  c.jobs = 3;
  const std::vector<RunFactsKeeper::Part> parts = {
      {},
      {7, {c}, {}, {0}},
      {7, {c}, {{9, 12, {c, c}}, {14, 14, {}}}, {0, -1}},
  };
  for (const RunFactsKeeper::Part& part : parts)
    EXPECT_EQ(parse_run_facts_part(run_facts_part_json(part)), part);
  for (const char* body : {"", "[1]", "{}", R"({"through_id": 1, "head": [], "rest": []})"})
    EXPECT_FALSE(parse_run_facts_part(body).has_value()) << body;
}

}  // namespace
}  // namespace colo
