#include "simulate/arrivals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/units.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// A job of block `block`; a grid point when `point` is not empty.
SimJob block_job(const std::string& block, const std::string& name, const std::string& point = "",
                 int64_t solo_ms = 60'000) {
  SimJob j;
  j.name = name;
  j.signature = block + point;
  j.label = block;
  if (!point.empty()) j.params = {{"seed", point}};
  j.truth.peak_memory_bytes = kGiB;
  j.truth.sm_active_pct = 30;
  j.truth.solo_ms = solo_ms;
  j.truth.samples_per_s = 1000;
  j.known = j.truth;
  return j;
}

std::vector<SimJob> singles(int n) {
  std::vector<SimJob> jobs;
  for (int i = 1; i <= n; ++i) jobs.push_back(block_job("one", "one#" + std::to_string(i)));
  return jobs;
}

// Writes `text` to a file of this test's and returns its path.
std::string trace_file(const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".csv";
  std::ofstream(path) << text;
  return path;
}

TEST(Arrivals, PoissonGapsAverageTheRateAndTheSameSeedGivesTheSameTimes) {
  Result<std::vector<SimJob>> a = with_arrivals(singles(4000), "poisson:120/h", 7);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(a->size(), 4000u);
  EXPECT_EQ(a->front().submit_ms, 0);
  for (size_t i = 1; i < a->size(); ++i) ASSERT_LE((*a)[i - 1].submit_ms, (*a)[i].submit_ms);
  // 3,999 gaps of 30 s on average: the mean is within 5% (its standard error is 1.6%).
  const double mean_gap = static_cast<double>(a->back().submit_ms) / 3999;
  EXPECT_NEAR(mean_gap, 30'000, 1'500);

  Result<std::vector<SimJob>> again = with_arrivals(singles(4000), "poisson:2/min", 7);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->back().submit_ms, a->back().submit_ms);
  Result<std::vector<SimJob>> other = with_arrivals(singles(4000), "poisson:120/h", 8);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->back().submit_ms, a->back().submit_ms);
}

TEST(Arrivals, ThePointsOfOneGridArriveTogether) {
  std::vector<SimJob> jobs = {block_job("single", "single#1"), block_job("sweep", "sweep[0]", "0"),
                              block_job("sweep", "sweep[1]", "1"),
                              block_job("sweep", "sweep[2]", "2"), block_job("single", "single#2")};
  Result<std::vector<SimJob>> a = with_arrivals(jobs, "poisson:60/h", 1);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 5u);
  EXPECT_EQ((*a)[1].submit_ms, (*a)[2].submit_ms);
  EXPECT_EQ((*a)[2].submit_ms, (*a)[3].submit_ms);
  EXPECT_LT((*a)[0].submit_ms, (*a)[1].submit_ms);
  EXPECT_LT((*a)[3].submit_ms, (*a)[4].submit_ms);
}

TEST(Arrivals, DiurnalArrivalsCrowdTheAfternoonAndThinTheNight) {
  Result<std::vector<SimJob>> a = with_arrivals(singles(20'000), "diurnal:400/h", 3);
  ASSERT_TRUE(a.ok());
  int afternoon = 0;  // 10:00 to 18:00
  int night = 0;      // 22:00 to 06:00
  for (const SimJob& j : *a) {
    const int64_t hour = j.submit_ms / 3'600'000 % 24;
    afternoon += hour >= 10 && hour < 18 ? 1 : 0;
    night += hour >= 22 || hour < 6 ? 1 : 0;
  }
  // The rate's mean over those hours is 1.49x and 0.51x of the average.
  EXPECT_GT(afternoon, 2 * night);
  // 20,000 arrivals at 400/h on average take about 50 hours.
  EXPECT_NEAR(static_cast<double>(a->back().submit_ms) / 3.6e6, 50, 5);
}

TEST(Arrivals, ATraceSubmitsItsBlocksJobsInOrderAndPastTheirEndAgainUnderNewNames) {
  std::vector<SimJob> jobs = {block_job("sweep", "sweep[0]", "0"),
                              block_job("sweep", "sweep[1]", "1"), block_job("big", "big")};
  const std::string path = trace_file(
      "time,job,count\n"
      "# the morning\n"
      "0,sweep,3\n"
      " 90s , big \n"
      "30,big,2\n");
  Result<std::vector<SimJob>> a = with_arrivals(jobs, path, 1);
  ASSERT_TRUE(a.ok()) << a.error().message();
  std::vector<std::string> names;
  std::vector<int64_t> times;
  for (const SimJob& j : *a) {
    names.push_back(j.name);
    times.push_back(j.submit_ms);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"sweep[0]", "sweep[1]", "sweep[0]~2", "big~2", "big~3",
                                             "big"}));
  EXPECT_EQ(times, (std::vector<int64_t>{0, 0, 0, 30'000, 30'000, 90'000}));
  EXPECT_EQ((*a)[2].signature, (*a)[0].signature);  // the same work again
}

TEST(Arrivals, ATracesErrorsNameTheFileAndLine) {
  std::vector<SimJob> jobs = {block_job("big", "big")};
  auto error_of = [&](const std::string& text) {
    Result<std::vector<SimJob>> a = with_arrivals(jobs, trace_file(text), 1);
    return a.ok() ? std::string("no error") : a.error().message();
  };
  EXPECT_THAT(error_of("0,big\n5,small\n"),
              HasSubstr(".csv:2: no [[job]] named 'small' in the job file"));
  EXPECT_THAT(error_of("0,big,0\n"), HasSubstr(".csv:1: count '0' is not a whole number"));
  EXPECT_THAT(error_of("soon,big\n"), HasSubstr(".csv:1: time:"));
  EXPECT_THAT(error_of("0\n"), HasSubstr(".csv:1: expected time,job[,count], got '0'"));
  EXPECT_THAT(error_of("# nothing\n"), HasSubstr("the trace submits no job"));
  EXPECT_THAT(error_of("0,big,3000000\n"), HasSubstr("more than 2000000 jobs"));
  Result<std::vector<SimJob>> missing = with_arrivals(jobs, "/nonexistent/trace.csv", 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message(), HasSubstr("/nonexistent/trace.csv: cannot read"));
  Result<std::vector<SimJob>> rate = with_arrivals(jobs, "poisson:fast", 1);
  ASSERT_FALSE(rate.ok());
  EXPECT_THAT(rate.error().message(), HasSubstr("'fast' is not a positive rate (e.g. 120/h)"));
  rate = with_arrivals(jobs, "poisson:3/week", 1);
  ASSERT_FALSE(rate.ok());
  EXPECT_THAT(rate.error().message(), HasSubstr("unknown rate unit 'week'"));
}

TEST(Arrivals, TheSimulatorQueuesEachJobWhenItIsSubmitted) {
  // One GPU, exclusive: a job submitted at 10 min waits for none; one
  // submitted while another runs waits for it.
  std::vector<SimJob> jobs = {block_job("a", "a", "", 60'000), block_job("b", "b", "", 60'000),
                              block_job("c", "c", "", 60'000)};
  jobs[1].submit_ms = 30'000;
  jobs[2].submit_ms = 600'000;
  SimOptions o;
  o.gpus = 1;
  o.gpu_memory_bytes = 80 * kGiB;
  Result<std::vector<PolicySpec>> p = parse_policies("exclusive");
  ASSERT_TRUE(p.ok());
  PolicyResult r = simulate_policy(jobs, p->front(), o);
  EXPECT_EQ(r.jobs_ok, 3);
  EXPECT_EQ(r.starts, (std::vector<std::string>{"a", "b", "c"}));
  // a: 0 to 60 s; b: submitted at 30 s, runs 60 s to 120 s; c: 600 s to 660 s.
  EXPECT_EQ(r.makespan_ms, 660'000);
  EXPECT_DOUBLE_EQ(r.mean_completion_ms, (60'000 + 90'000 + 60'000) / 3.0);
  EXPECT_DOUBLE_EQ(r.mean_wait_ms, 30'000 / 3.0);
}

}  // namespace
}  // namespace colo
