#include "analysis/together.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "analysis/intervals.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// Epoch ends of a job that starts at `start_ms`, warms up for `warmup_ms`
// (its first epoch) and then takes `epoch_ms` per epoch of `samples`.
std::vector<EpochEnd> steady_job(UnixMillis start_ms, int64_t warmup_ms, int64_t epoch_ms,
                                 int epochs, std::optional<int64_t> samples = 1000) {
  std::vector<EpochEnd> ends;
  for (int e = 1; e <= epochs; ++e) {
    ends.push_back({start_ms + warmup_ms + (e - 1) * epoch_ms, samples, e});
  }
  return ends;
}

SoloRate solo(double samples_per_s, double epoch_ms) { return {samples_per_s, epoch_ms, "test"}; }

struct Case {
  const char* name;
  std::vector<std::vector<EpochEnd>> ends;
  std::vector<std::optional<SoloRate>> solo;
  std::vector<int> devices;  // empty: all on GPU 0
  std::optional<double> speedup;
  const char* why_not;  // a part of it, when there is no speed-up
};

TEST(Together, SpeedUpIsTheSummedNormalizedRatePerGpu) {
  const SoloRate alone = solo(500, 2000);  // 1000 samples per 2 s epoch
  Case cases[] = {
      {"two as fast as alone",
       {steady_job(0, 5000, 2000, 5), steady_job(0, 5000, 2000, 5)},
       {alone, alone},
       {},
       2.0,
       ""},
      {"two at half speed",
       {steady_job(0, 5000, 4000, 5), steady_job(0, 5000, 4000, 5)},
       {alone, alone},
       {},
       1.0,
       ""},
      {"one job alone: its steady epochs, however few",
       {steady_job(0, 5000, 2000, 2)},
       {alone},
       {},
       1.0,
       ""},
      {"epochs without samples count in epochs",
       {steady_job(0, 5000, 2500, 5, std::nullopt), steady_job(0, 5000, 2500, 5, std::nullopt)},
       {alone, alone},
       {},
       1.6,
       ""},
      {"one job per GPU on two GPUs",
       {steady_job(0, 5000, 2000, 5), steady_job(0, 5000, 2000, 5)},
       {alone, alone},
       {0, 1},
       1.0,
       ""},
      {"a job with one epoch",
       {steady_job(0, 5000, 2000, 5), steady_job(0, 5000, 2000, 1)},
       {alone, alone},
       {},
       std::nullopt,
       "ended 1 epoch"},
      {"one after another",
       {steady_job(0, 5000, 2000, 3), steady_job(20000, 5000, 2000, 3)},
       {alone, alone},
       {},
       std::nullopt,
       "never"},
      {"together for less than two epochs of the slowest",
       {steady_job(0, 5000, 2000, 3), steady_job(1000, 5000, 2000, 3)},
       {alone, alone},
       {},
       std::nullopt,
       "did not run together long enough"},
      {"a job without a solo rate",
       {steady_job(0, 5000, 2000, 5), steady_job(0, 5000, 2000, 5)},
       {alone, std::nullopt},
       {},
       std::nullopt,
       "no solo rate for job1"},
  };
  for (const Case& c : cases) {
    std::vector<TogetherJob> jobs;
    for (size_t i = 0; i < c.ends.size(); ++i) {
      jobs.push_back(
          {"job" + std::to_string(i), &c.ends[i], c.devices.empty() ? 0 : c.devices[i], c.solo[i]});
    }
    Together t = measure_together(jobs);
    ASSERT_EQ(t.speedup.has_value(), c.speedup.has_value()) << c.name << ": " << t.why_not;
    if (c.speedup) {
      EXPECT_NEAR(*t.speedup, *c.speedup, 1e-9) << c.name;
      EXPECT_TRUE(t.why_not.empty()) << c.name;
      for (const JobInWindow& j : t.jobs) {
        EXPECT_NEAR(j.slowdown.value_or(-1) * j.normalized_rate.value_or(-1), 1.0, 1e-9) << c.name;
      }
    } else {
      EXPECT_THAT(t.why_not, HasSubstr(c.why_not)) << c.name;
    }
  }
}

TEST(Together, WindowRunsFromTheLastFirstEpochToTheFirstLastEpoch) {
  const std::vector<EpochEnd> a = steady_job(0, 5000, 2000, 6);     // 5 s .. 15 s
  const std::vector<EpochEnd> b = steady_job(3000, 5000, 2000, 6);  // 8 s .. 18 s
  std::optional<TogetherWindow> w = together_window({&a, &b});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->start_ms, 8000);
  EXPECT_EQ(w->end_ms, 15000);
  EXPECT_EQ(w->length_ms(), 7000);
  const std::vector<EpochEnd> one = steady_job(0, 5000, 2000, 1);
  EXPECT_FALSE(together_window({&a, &one}));
  EXPECT_FALSE(together_window({}));
}

// The done-when case of issue 10 on paper: four jobs that progress at
// min(k, 3.2) / k of their solo speed while k of them are in their epochs,
// with start-ups of 0.5, 1.5, 2.5 and 3.5 s, truly do 3.2x the work of one
// alone while all four run. The old figure (all steady samples over the
// union of the steady intervals) counts the seconds when some were still
// starting or already done.
TEST(Together, StaggeredStartUpsDoNotFoolIt) {
  const double startups_s[] = {0.5, 1.5, 2.5, 3.5};
  const double epoch_s = 1.0;  // solo
  const int epochs = 8;
  const int64_t samples = 1000;
  // Integrate the jobs' progress in steps of 1 ms.
  std::vector<std::vector<EpochEnd>> ends(4);
  std::vector<double> progress(4, 0);  // in epochs
  for (int64_t t = 0; t < 100'000; ++t) {
    const double now_s = static_cast<double>(t) / 1000.0;
    int k = 0;
    for (int j = 0; j < 4; ++j) k += now_s >= startups_s[j] && progress[j] < epochs ? 1 : 0;
    if (k == 0 && now_s > 4) break;
    const double speed = std::min<double>(k, 3.2) / k;
    for (int j = 0; j < 4; ++j) {
      if (now_s < startups_s[j] || progress[j] >= epochs) continue;
      const double before = progress[j];
      progress[j] += speed * 0.001 / epoch_s;
      if (std::floor(progress[j] + 1e-9) > std::floor(before + 1e-9)) {
        ends[j].push_back({t + 1, samples, static_cast<int64_t>(ends[j].size() + 1)});
      }
    }
  }
  std::vector<TogetherJob> jobs;
  for (size_t j = 0; j < 4; ++j) {
    ASSERT_EQ(ends[j].size(), static_cast<size_t>(epochs));
    jobs.push_back({"job" + std::to_string(j), &ends[j], 0, solo(1000, 1000)});
  }
  Together t = measure_together(jobs);
  ASSERT_TRUE(t.speedup) << t.why_not;
  EXPECT_NEAR(*t.speedup, 3.2, 0.02);
  for (const JobInWindow& j : t.jobs) EXPECT_NEAR(j.slowdown.value_or(-1), 1.25, 0.01);

  // The old figure on the same ends: clearly below.
  std::vector<Interval> steady;
  double steady_samples = 0;
  for (const auto& e : ends) {
    steady.emplace_back(e.front().time_ms, e.back().time_ms);
    steady_samples += static_cast<double>(samples) * static_cast<double>(e.size() - 1);
  }
  std::sort(steady.begin(), steady.end());
  const double union_s =
      static_cast<double>(
          std::max_element(steady.begin(), steady.end(),
                           [](const Interval& a, const Interval& b) { return a.second < b.second; })
              ->second -
          steady.front().first) /
      1000.0;
  EXPECT_LT(steady_samples / union_s / 1000.0, 2.9);
}

// Normalized throughput: every stretch in which two or more jobs ran their
// steady epochs on one GPU counts, whether or not all ran together.
TEST(NormalizedThroughputTest, CountsEveryOverlapOfSteadyEpochs) {
  // Alone 500 samples/s. A runs its steady epochs from 2 s to 12 s at 400/s
  // (0.8 of solo); B from 6 s to 14 s at 300/s (0.6). Overlap 6..12 s: 1.4.
  std::vector<EpochEnd> a = steady_job(0, 2000, 2500, 5, 1000);  // 1000 per 2.5 s = 400/s
  std::vector<EpochEnd> b = steady_job(0, 6000, 2000, 5, 600);   // 600 per 2 s = 300/s
  std::vector<TogetherJob> jobs = {{"a", &a, 0, solo(500, 2000)}, {"b", &b, 0, solo(500, 2000)}};
  NormalizedThroughput nt = normalized_throughput(jobs);
  ASSERT_TRUE(nt.value) << nt.why_not;
  EXPECT_NEAR(*nt.value, 1.4, 1e-9);
  EXPECT_EQ(nt.shared_ms, 6000);
  EXPECT_FALSE(nt.estimated);
}

TEST(NormalizedThroughputTest, JobsOnOtherGpusDoNotOverlapAndEstimatesAreSaid) {
  std::vector<EpochEnd> a = steady_job(0, 1000, 1000, 4, 400);
  std::vector<EpochEnd> b = steady_job(0, 1000, 1000, 4, 400);
  std::vector<EpochEnd> c = steady_job(0, 1000, 1000, 4, 400);
  SoloRate guessed = solo(500, 2000);
  guessed.estimated = true;
  NormalizedThroughput apart =
      normalized_throughput({{"a", &a, 0, solo(500, 2000)}, {"b", &b, 1, solo(500, 2000)}});
  EXPECT_FALSE(apart.value);
  EXPECT_THAT(apart.why_not, HasSubstr("no two jobs were in their steady epochs"));
  NormalizedThroughput two = normalized_throughput(
      {{"a", &a, 0, solo(500, 2000)}, {"b", &b, 1, solo(500, 2000)}, {"c", &c, 1, guessed}});
  ASSERT_TRUE(two.value);
  EXPECT_NEAR(*two.value, 1.6, 1e-9) << "gpu1: two jobs at 0.8 each";
  EXPECT_TRUE(two.estimated);
  NormalizedThroughput unknown =
      normalized_throughput({{"a", &a, 0, solo(500, 2000)}, {"b", &b, 0, std::nullopt}});
  EXPECT_FALSE(unknown.value);
  EXPECT_THAT(unknown.why_not, HasSubstr("no solo rate for b"));
}

}  // namespace
}  // namespace colo
