#include "analysis/run_summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

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

}  // namespace
}  // namespace colo
