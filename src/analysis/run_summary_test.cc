#include "analysis/run_summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>

#include "analysis/energy.h"
#include "store/testing/lifecycle_runs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// A record of jobs on GPU 0 with the given starts, ends and epoch ends.
struct JobPlan {
  UnixMillis start, end;
  std::vector<UnixMillis> epoch_ends;
  std::optional<int64_t> samples = 1000;
  std::string signature = "sig";
  int device = 0;
};

RunRecord record_of(const std::string& mechanism, const std::vector<JobPlan>& plans) {
  RunRecord r;
  r.run.id = 7;
  r.run.mechanism = mechanism;
  r.run.state = RunState::kOk;
  r.devices = {DeviceInfo{0, "NVIDIA H100 80GB HBM3"}};
  for (size_t i = 0; i < plans.size(); ++i) {
    const JobPlan& p = plans[i];
    JobRow job;
    job.id = static_cast<int64_t>(i + 1);
    job.name = "job" + std::to_string(i + 1);
    job.signature = p.signature;
    job.state = JobState::kOk;
    job.device = p.device;
    job.started_ms = p.start;
    job.ended_ms = p.end;
    r.jobs.push_back(job);
    std::vector<ProgressEvent> events;
    for (size_t e = 0; e < p.epoch_ends.size(); ++e)
      events.push_back(epoch_end(p.epoch_ends[e], static_cast<int64_t>(e + 1), p.samples));
    r.events.push_back(events);
  }
  return r;
}

TEST(RunSummary, SteadyThroughputIsTheRateTogetherOrOneAfterAnother) {
  struct Case {
    const char* name;
    std::vector<JobPlan> jobs;
    std::optional<double> steady_per_s;
    bool window;
    const char* note;
  } cases[] = {
      {"together",
       {{0, 9000, {3000, 5000, 7000, 9000}}, {0, 9000, {3000, 5000, 7000, 9000}}},
       1000.0,
       true,
       ""},
      {"one after another",
       {{0, 7000, {3000, 5000, 7000}}, {7000, 15000, {11000, 13000, 15000}}},
       500.0,
       false,
       "one after another"},
      {"overlapping too briefly",
       {{0, 7000, {3000, 5000, 7000}}, {1000, 8000, {4000, 6000, 8000}}},
       std::nullopt,
       true,
       "did not run together long enough"},
      {"no epochs reported", {{0, 9000, {}}, {0, 9000, {}}}, std::nullopt, false, "ended 0 epochs"},
      {"one job alone", {{0, 5000, {3000, 5000}}}, 500.0, true, ""},
  };
  for (const Case& c : cases) {
    RunSummary s = summarize(record_of("mps", c.jobs));
    ASSERT_EQ(s.steady_throughput_per_s.has_value(), c.steady_per_s.has_value()) << c.name;
    if (c.steady_per_s) {
      EXPECT_DOUBLE_EQ(*s.steady_throughput_per_s, *c.steady_per_s) << c.name;
    }
    EXPECT_EQ(s.together.has_value(), c.window) << c.name;
    EXPECT_THAT(s.steady_note, HasSubstr(c.note)) << c.name;
    EXPECT_FALSE(s.steady_speedup_vs_exclusive) << c.name;  // no solo rates yet
  }
}

// Issue 33 (5): one submission's part of a service's run: its jobs, their
// makespan and throughput, and no figure of the GPUs the others shared.
TEST(RunSummary, ASubmissionKeepsItsJobsAndTheirTotalsOnly) {
  RunSummary s = summarize(record_of("naive", {{0, 10'000, {4'000, 10'000}},
                                               {2'000, 6'000, {4'000, 6'000}},
                                               {5'000, 9'000, {7'000, 9'000}}}));
  ASSERT_EQ(s.makespan_ms, 10'000);
  SubmissionRow sub;
  sub.id = 3;
  sub.label.name = "lr-b";
  restrict_to_submission(s, sub, {2, 3});
  ASSERT_EQ(s.jobs.size(), 2u);
  EXPECT_EQ(s.jobs[0].name, "job2");
  EXPECT_EQ(s.makespan_ms, 7'000);  // 2 s to 9 s
  EXPECT_EQ(s.total_samples, 4'000);
  ASSERT_TRUE(s.throughput_per_s);
  EXPECT_NEAR(*s.throughput_per_s, 4'000 / 7.0, 1e-9);
  EXPECT_FALSE(s.together);
  EXPECT_FALSE(s.energy_j);
  EXPECT_FALSE(s.steady_throughput_per_s);
  EXPECT_THAT(s.steady_note, HasSubstr("shared the GPUs with other submissions"));
  ASSERT_TRUE(s.submission);
  EXPECT_EQ(s.submission->label.name, "lr-b");
}

// Issue 58, item 14: a service run's report listed two submissions' jobs
// of one name (`sw[lr=0.2]` twice). With two submissions or more, each job
// is named by its submission first.
TEST(RunSummary, JobsOfTwoSubmissionsAreNamedByTheirSubmission) {
  SubmissionRow a;
  a.id = 1;
  a.run_id = 7;
  SubmissionRow b;
  b.id = 2;
  b.run_id = 7;
  b.label.name = "lr-b";
  SubmissionRow earlier;  // made to an earlier service process's run
  earlier.id = 5;
  earlier.run_id = 4;
  struct Case {
    const char* name;
    std::map<int64_t, SubmissionRow> submission_of;
    std::vector<std::string> names;
  };
  for (const Case& c : {
           Case{"two submissions, one unnamed",
                {{1, a}, {2, b}, {3, b}},
                {"#7/1: job1", "#7/2 lr-b: job2", "#7/2 lr-b: job3"}},
           Case{"a job of no submission keeps its name",
                {{1, a}, {3, b}},
                {"#7/1: job1", "job2", "#7/2 lr-b: job3"}},
           Case{"a submission to an earlier run is titled by that run",
                {{1, earlier}, {2, b}, {3, b}},
                {"#4/5: job1", "#7/2 lr-b: job2", "#7/2 lr-b: job3"}},
           Case{"one submission: unchanged", {{1, b}, {2, b}, {3, b}}, {"job1", "job2", "job3"}},
           Case{"none: unchanged", {}, {"job1", "job2", "job3"}},
       }) {
    SCOPED_TRACE(c.name);
    RunRecord record = record_of(
        "naive",
        {{0, 4'000, {2'000, 4'000}}, {0, 4'000, {2'000, 4'000}}, {0, 4'000, {2'000, 4'000}}});
    name_jobs_by_submission(record, c.submission_of);
    const RunSummary s = summarize(record);
    std::vector<std::string> names;
    for (const JobSummary& j : s.jobs) names.push_back(j.name);
    EXPECT_EQ(names, c.names);
  }
}

TEST(RunSummary, SoloRatesGiveTheSpeedUpAndEachJobsSlowdown) {
  // Alone: 1000 samples per 2 s epoch. Together: job1 at 2 s, job2 at 4 s.
  RunSummary alone =
      summarize(record_of("exclusive", {{0, 7000, {3000, 5000, 7000}, 1000, "a"},
                                        {7000, 14000, {10000, 12000, 14000}, 1000, "b"}}));
  std::map<std::string, SoloRate> rates = solo_rates_of(alone, "exclusive run #7");
  ASSERT_EQ(rates.size(), 2U);
  EXPECT_DOUBLE_EQ(rates["a"].samples_per_s.value_or(-1), 500.0);
  EXPECT_DOUBLE_EQ(rates["a"].epoch_ms.value_or(-1), 2000.0);

  RunSummary together =
      summarize(record_of("mps", {{0, 11000, {3000, 5000, 7000, 9000, 11000}, 1000, "a"},
                                  {0, 19000, {3000, 7000, 11000, 15000, 19000}, 1000, "b"}}));
  apply_solo_rates(together, {rates["a"], rates["b"]});
  ASSERT_TRUE(together.steady_speedup_vs_exclusive) << together.steady_note;
  // W = [3 s, 11 s]: job1 at 1.0, job2 at 0.5 of its solo rate.
  EXPECT_DOUBLE_EQ(*together.steady_speedup_vs_exclusive, 1.5);
  EXPECT_DOUBLE_EQ(together.jobs[0].slowdown.value_or(-1), 1.0);
  EXPECT_DOUBLE_EQ(together.jobs[1].slowdown.value_or(-1), 2.0);
  EXPECT_DOUBLE_EQ(together.steady_throughput_per_s.value_or(-1), 750.0);
  EXPECT_EQ(together.solo_source, "exclusive run #7");

  // Without a rate for one job: no figure, and why.
  apply_solo_rates(together, {rates["a"], std::nullopt});
  EXPECT_FALSE(together.steady_speedup_vs_exclusive);
  EXPECT_THAT(together.steady_note, HasSubstr("no solo rate for job2"));
}

// Issue 33 (17): three jobs on one GPU, two together and the third after
// them, so no window holds every job: the two that shared still get their
// slowdown (over the stretches they shared), the one alone none.
TEST(RunSummary, EachJobThatSharedHasASlowdownWithoutAWindowOfAllJobs) {
  const SoloRate solo{500.0, 2000.0, "exclusive run #1", false};  // 1000 samples per 2 s epoch
  RunSummary s = summarize(
      record_of("naive", {{0, 10000, {2000, 4000, 6000, 8000, 10000}, 1000},       // at 2 s: 1.0
                          {0, 16000, {4000, 8000, 12000, 16000}, 1000},            // at 4 s: 0.5
                          {16000, 26000, {18000, 20000, 22000, 24000, 26000}}}));  // alone
  apply_solo_rates(s, {solo, solo, solo});
  EXPECT_FALSE(s.steady_speedup_vs_exclusive);  // no window of all three
  EXPECT_DOUBLE_EQ(s.jobs[0].slowdown.value_or(-1), 1.0);
  EXPECT_DOUBLE_EQ(s.jobs[1].slowdown.value_or(-1), 2.0);
  EXPECT_FALSE(s.jobs[2].slowdown);
}

// A process sample of `bytes` of GPU memory at `t`, of job row `job` (none: a stranger's).
ProcessSampleRow process_row(UnixMillis t, uint32_t pid, std::optional<int64_t> job,
                             uint64_t bytes) {
  ProcessSampleRow row;
  row.sample.time_ms = t;
  row.sample.pid = pid;
  row.sample.used_memory_bytes = bytes;
  row.job_id = job;
  return row;
}

TEST(RunSummary, PeakMemoryIsTheJobsProcessesSummedPerInstant) {
  RunRecord r = record_of("naive", {{0, 5000, {3000, 5000}}});
  r.process_samples = {process_row(1000, 1, 1, 300), process_row(1000, 2, 1, 200),
                       process_row(2000, 1, 1, 400), process_row(2000, 9, std::nullopt, 9000)};
  RunSummary s = summarize(r);
  EXPECT_EQ(s.jobs[0].peak_memory_bytes, 500U);
}

TEST(RunSummary, PeakGpuMemoryIsNeverBelowWhatTheProcessesHeld) {
  RunRecord r = record_of("naive", {{0, 5000, {3000, 5000}}, {0, 5000, {3000, 5000}}});
  DeviceSample between;  // taken before the jobs held anything
  between.time_ms = 500;
  between.memory_used_bytes = 0;
  r.device_samples = {between};
  r.process_samples = {process_row(1000, 1, 1, 2000), process_row(1000, 2, 2, 500),
                       process_row(2000, 1, 1, 2500)};
  RunSummary s = summarize(r);
  EXPECT_EQ(s.peak_memory_used_bytes, 2500U);
  r.device_samples[0].memory_used_bytes = 4000;  // a device reading above the processes wins
  EXPECT_EQ(summarize(r).peak_memory_used_bytes, 4000U);
}

TEST(RunSummary, AttemptsCountRequeuesAndEpochsComeFromTheLastAttempt) {
  RunRecord r = record_of("naive", {{5000, 12000, {8000, 10000, 12000}}});
  ProgressEvent requeued;
  requeued.kind = "requeued";
  requeued.time_ms = 4000;
  r.events[0].insert(r.events[0].begin(), {epoch_end(2000, 1, 1000), requeued});
  RunSummary s = summarize(r);
  EXPECT_EQ(s.jobs[0].attempts, 2);
  EXPECT_EQ(s.jobs[0].epochs, 3);
  EXPECT_EQ(s.jobs[0].samples, 3000);
}

// A failed attempt's last line read at its exit, in the same millisecond as
// its requeue and the next attempt's start (seen under load: a retried job
// summed 3 epochs for 2), belongs to the attempt before the requeue.
TEST(RunSummary, AnEpochOfTheAttemptBeforeARequeueAtTheNextStartIsNotTheLastAttempts) {
  RunRecord r = record_of("naive", {{5000, 12000, {8000, 10000, 12000}}});
  ProgressEvent requeued;
  requeued.kind = "requeued";
  requeued.time_ms = 5000;
  r.events[0].insert(r.events[0].begin(), {epoch_end(5000, 1, 500), requeued});
  RunSummary s = summarize(r);
  EXPECT_EQ(s.jobs[0].attempts, 2);
  EXPECT_EQ(s.jobs[0].epochs, 3);
  EXPECT_EQ(s.jobs[0].samples, 3000);
}

// What colo held back of a job's progress reaches `colo show` through the
// job's events: the last "throttled" event (its counts are cumulative).
TEST(RunSummary, ThrottledCountsComeFromTheLastThrottledEvent) {
  RunRecord r = record_of("naive", {{0, 5000, {3000, 5000}}, {0, 5000, {3000, 5000}}});
  ThrottleCounts first;
  first.dropped_events = 10;
  ThrottleCounts last;
  last.dropped_events = 25;
  last.skipped_bytes = 4096;
  last.refused_files = 1;
  r.events[0].push_back(first.to_event(4000));
  r.events[0].push_back(last.to_event(5000));
  RunSummary s = summarize(r);
  ASSERT_TRUE(s.jobs[0].progress_throttled);
  EXPECT_EQ(s.jobs[0].progress_throttled->dropped_events, 25);
  EXPECT_EQ(s.jobs[0].progress_throttled->skipped_bytes, 4096);
  EXPECT_EQ(s.jobs[0].progress_throttled->refused_files, 1);
  EXPECT_FALSE(s.jobs[1].progress_throttled);
}

// Issue 15: sums of samples wrapped into negative throughputs. Rows hold
// whatever a store holds; the sums stop at INT64_MAX.
TEST(RunSummary, SampleSumsSaturate) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  RunSummary s = summarize(record_of("naive", {{0, 7000, {3000, 5000, 7000}, kMax / 2 + 1},
                                               {7000, 14000, {10000, 12000, 14000}, 1000}}));
  EXPECT_EQ(s.jobs[0].samples, kMax);
  EXPECT_EQ(s.jobs[0].steady_samples, kMax);
  EXPECT_EQ(s.total_samples, kMax);
  ASSERT_TRUE(s.jobs[0].throughput_per_s);
  EXPECT_GT(*s.jobs[0].throughput_per_s, 0);
  ASSERT_TRUE(s.steady_throughput_per_s) << s.steady_note;  // one after another
  EXPECT_GT(*s.steady_throughput_per_s, 0);
}

// The one-pass sample figures against their definitions (SampleFigureBuilder),
// computed here the slow way, on random runs: jobs on three devices, some
// still running, readings with gaps and repeated instants, processes of
// known and unknown jobs, samples handed over out of order.
TEST(RunSummary, SampleFiguresInOnePassMatchTheirDefinitions) {
  std::mt19937 random(5);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<JobPlan> plans;
    const int jobs = 1 + pick(8);
    for (int j = 0; j < jobs; ++j) {
      const UnixMillis start = pick(20) * 500;
      const UnixMillis end = start + 500 + pick(20) * 500;
      std::vector<UnixMillis> ends;
      for (UnixMillis t = start + 700; t <= end; t += 700 + pick(3) * 300) ends.push_back(t);
      plans.push_back({start, end, ends, 100, "sig", pick(3)});
    }
    RunRecord r = record_of("naive", plans);
    const bool running = pick(4) == 0;
    if (running) {
      r.run.state = RunState::kRunning;
      r.jobs[0].ended_ms.reset();
    } else {
      r.run.ended_ms = 21000;
    }
    for (UnixMillis t = 0; t < 21000; t += 250 * (1 + pick(3))) {
      for (int device = 0; device < 3; ++device) {
        if (pick(5) == 0) continue;
        DeviceSample s;
        s.time_ms = pick(10) == 0 && t > 0 ? t - 250 : t;  // now and then an instant again
        s.device = device;
        if (pick(6) != 0) s.sm_active_pct = pick(100);
        if (pick(6) != 0) s.gpu_util_pct = pick(100);
        if (pick(3) != 0) s.memory_used_bytes = static_cast<uint64_t>(pick(1000));
        if (pick(2) == 0) {
          s.power_w = 100 + pick(300);
        } else if (pick(4) != 0) {
          s.energy_mj = static_cast<uint64_t>(t) * 300 + static_cast<uint64_t>(pick(50));
        }
        r.device_samples.push_back(s);
      }
      for (int k = pick(4); k > 0; --k) {
        std::optional<int64_t> job = 1 + pick(jobs + 1);  // jobs + 1: no such job
        if (pick(8) == 0) job.reset();
        r.process_samples.push_back(
            process_row(t, static_cast<uint32_t>(k), job, static_cast<uint64_t>(pick(800))));
        r.process_samples.back().sample.device = pick(3);
      }
    }
    std::shuffle(r.device_samples.begin(), r.device_samples.end(), random);
    std::shuffle(r.process_samples.begin(), r.process_samples.end(), random);
    const RunSummary got = summarize(r);
    SCOPED_TRACE("trial " + std::to_string(trial));

    // The definitions, each over the samples in time order.
    std::vector<DeviceSample> samples = r.device_samples;
    std::stable_sort(
        samples.begin(), samples.end(),
        [](const DeviceSample& a, const DeviceSample& b) { return a.time_ms < b.time_ms; });
    const UnixMillis open_end = r.run.ended_ms.value_or(std::numeric_limits<UnixMillis>::max());
    auto end_of = [&](const JobSummary& job) { return job.ended_ms.value_or(open_end); };
    auto mean = [&](int device, UnixMillis from, UnixMillis to,
                    std::optional<double> DeviceSample::*field) -> std::optional<double> {
      double sum = 0;
      int count = 0;
      for (const DeviceSample& s : samples) {
        if (s.device != device || s.time_ms < from || s.time_ms > to || !(s.*field)) continue;
        sum += *(s.*field);
        ++count;
      }
      if (count == 0) return std::nullopt;
      return sum / count;
    };
    auto near = [](std::optional<double> a, std::optional<double> b) {
      return a.has_value() == b.has_value() &&
             (!a || std::abs(*a - *b) <= 1e-9 * (1 + std::abs(*b)));
    };
    std::vector<std::optional<double>> energy(got.jobs.size());
    std::optional<double> run_energy;
    for (int device = 0; device < 3; ++device) {
      std::vector<DeviceSample> on;
      for (const DeviceSample& s : samples)
        if (s.device == device) on.push_back(s);
      for (size_t i = 1; i < on.size(); ++i) {
        std::optional<double> pair = pair_energy_j(on[i - 1], on[i]);
        if (!pair) continue;
        run_energy = run_energy.value_or(0) + *pair;
        const UnixMillis a = on[i - 1].time_ms;
        const UnixMillis b = on[i].time_ms;
        const UnixMillis mid = a + (b - a) / 2;
        std::vector<size_t> at_mid;
        for (size_t j = 0; j < got.jobs.size(); ++j) {
          const JobSummary& job = got.jobs[j];
          if (job.device == device && *job.started_ms <= mid && end_of(job) >= mid)
            at_mid.push_back(j);
        }
        for (size_t j : at_mid) {
          if (a < *got.jobs[j].started_ms || b > end_of(got.jobs[j])) continue;
          energy[j] = energy[j].value_or(0) + *pair / static_cast<double>(at_mid.size());
        }
      }
    }
    std::map<std::pair<int64_t, UnixMillis>, uint64_t> job_at;
    std::map<std::pair<int, UnixMillis>, uint64_t> device_at;
    for (const ProcessSampleRow& row : r.process_samples) {
      if (!row.job_id) continue;
      job_at[{*row.job_id, row.sample.time_ms}] += *row.sample.used_memory_bytes;
      device_at[{row.sample.device, row.sample.time_ms}] += *row.sample.used_memory_bytes;
    }
    for (size_t j = 0; j < got.jobs.size(); ++j) {
      const JobSummary& job = got.jobs[j];
      SCOPED_TRACE("job " + std::to_string(job.id));
      const int device = *job.device;
      EXPECT_TRUE(near(job.mean_sm_active_pct,
                       mean(device, *job.started_ms, end_of(job), &DeviceSample::sm_active_pct)));
      EXPECT_TRUE(near(job.mean_gpu_util_pct,
                       mean(device, *job.started_ms, end_of(job), &DeviceSample::gpu_util_pct)));
      if (job.steady_start_ms) {
        EXPECT_TRUE(near(
            job.steady_sm_active_pct,
            mean(device, *job.steady_start_ms, *job.steady_end_ms, &DeviceSample::sm_active_pct)));
        EXPECT_TRUE(near(
            job.steady_gpu_util_pct,
            mean(device, *job.steady_start_ms, *job.steady_end_ms, &DeviceSample::gpu_util_pct)));
      } else {
        EXPECT_FALSE(job.steady_sm_active_pct);
      }
      EXPECT_TRUE(near(job.energy_j, energy[j]));
      std::optional<uint64_t> peak;
      for (const auto& [key, bytes] : job_at)
        if (key.first == job.id) peak = std::max(peak.value_or(0), bytes);
      EXPECT_EQ(job.peak_memory_bytes, peak);
    }
    EXPECT_EQ(got.device_samples, static_cast<int64_t>(samples.size()));
    double sm_sum = 0;
    int sm_count = 0;
    std::optional<uint64_t> peak_used;
    for (const DeviceSample& s : samples) {
      if (s.sm_active_pct) {
        sm_sum += *s.sm_active_pct;
        ++sm_count;
      }
      if (s.memory_used_bytes) peak_used = std::max(peak_used.value_or(0), *s.memory_used_bytes);
    }
    for (const auto& [key, bytes] : device_at) peak_used = std::max(peak_used.value_or(0), bytes);
    EXPECT_TRUE(near(got.mean_sm_active_pct,
                     sm_count ? std::optional<double>(sm_sum / sm_count) : std::nullopt));
    EXPECT_EQ(got.peak_memory_used_bytes, peak_used);
    EXPECT_TRUE(near(got.energy_j, run_energy));
  }
}

}  // namespace
}  // namespace colo
