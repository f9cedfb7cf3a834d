#include "report/run_comparison.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "analysis/training_metrics.h"
#include "jobs/progress_event.h"

namespace colo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Each epoch's loss, as a job's epoch_end events report them.
std::vector<MetricSeries> losses(const std::vector<double>& by_epoch) {
  std::vector<ProgressEvent> events(by_epoch.size());
  for (size_t i = 0; i < by_epoch.size(); ++i) {
    events[i].kind = "epoch_end";
    events[i].time_ms = 1'000 * static_cast<int64_t>(i + 1);
    events[i].epoch = static_cast<int64_t>(i + 1);
    events[i].metrics["loss"] = by_epoch[i];
  }
  return training_metrics(events, std::nullopt);
}

// Run #3: two grid instances that reported a loss, one job that reported nothing.
RunSummary swept_run() {
  RunSummary s;
  s.run.id = 3;
  for (int i = 0; i < 2; ++i) {
    JobSummary j;
    j.id = i + 1;
    j.name = i == 0 ? "toy[lr=0.1]" : "toy[lr=0.01]";
    j.state = JobState::kOk;
    j.params["lr"] = i == 0 ? "0.1" : "0.01";
    j.metrics = losses(i == 0 ? std::vector{0.9, 1.2} : std::vector{0.5, 0.25});
    s.jobs.push_back(j);
  }
  JobSummary quiet;
  quiet.id = 3;
  quiet.name = "quiet";
  quiet.state = JobState::kFailed;
  quiet.reason = "exit code 1";
  s.jobs.push_back(quiet);
  return s;
}

TEST(RunComparison, ShowsBothRunsSideBySideAndEachJobsChangeByTheMetricsGoal) {
  RunSummary a = swept_run();
  a.run.label = {"lr-a", {{"model", "r26"}}, ""};
  a.makespan_ms = 10'000;
  RunSummary b = swept_run();
  b.run.id = 4;
  b.run.label.name = "lr-b";
  b.makespan_ms = 12'500;
  b.jobs.pop_back();                  // the quiet job only in A
  b.jobs[1].metrics = losses({0.2});  // better than A's 0.25, for a loss
  const std::string text = format_run_comparison(compare_runs(a, b, "loss"));
  EXPECT_THAT(text, HasSubstr("Run #3 lr-a against run #4 lr-b"));
  EXPECT_THAT(text, HasSubstr("model=r26"));
  EXPECT_THAT(text, HasSubstr("1.25x"));  // B's makespan over A's
  EXPECT_THAT(text, HasSubstr("best loss (lower is better)"));
  EXPECT_THAT(text, HasSubstr("0.25 (toy[lr=0.01])"));
  EXPECT_THAT(text, HasSubstr("0.2 (toy[lr=0.01])"));
  EXPECT_THAT(text, HasSubstr("-0.05 (better)"));
  EXPECT_THAT(text, HasSubstr("2 in both, 1 only in #3 lr-a, 0 only in #4 lr-b"));
  EXPECT_THAT(text, HasSubstr("(not in this run)"));
  // Without a metric: no metric columns.
  EXPECT_THAT(format_run_comparison(compare_runs(a, b, "")), Not(HasSubstr("CHANGE")));
}

TEST(RunComparison, TextLaysOutTheFactsThenTheJobsWithNumbersAlignedRight) {
  RunSummary a = swept_run();
  a.makespan_ms = 10'000;
  a.throughput_per_s = 300;
  RunSummary b = swept_run();
  b.run.id = 4;
  b.run.simulated = true;
  b.makespan_ms = 12'500;
  b.throughput_per_s = 240;
  b.jobs[0].metrics = losses({0.95});
  EXPECT_EQ(format_run_comparison(compare_runs(a, b, "loss")),
            "Run #3 against run #4\n"
            "SIMULATED: numbers of a run on colo's simulated GPU come from no measurement\n"
            "\n"
            "                             #3                   #4                   B OVER A\n"
            "state                        running              running\n"
            "job file                     -                    -\n"
            "mechanism\n"
            "jobs                         3: 2 ok, 1 not ok    3: 2 ok, 1 not ok\n"
            "makespan                     10.0s                12.5s                   1.25x\n"
            "throughput                   300.0 samples/s      240.0 samples/s         0.80x\n"
            "GPU energy                   -                    -                           -\n"
            "best loss (lower is better)  0.25 (toy[lr=0.01])  0.25 (toy[lr=0.01])\n"
            "\n"
            "Jobs by name: 3 in both, 0 only in #3, 0 only in #4; loss: each job's best\n"
            "JOB           PARAMS   STATE #3  STATE #4  loss #3  loss #4         CHANGE\n"
            "toy[lr=0.1]   lr=0.1   ok        ok            0.9     0.95  +0.05 (worse)\n"
            "toy[lr=0.01]  lr=0.01  ok        ok           0.25     0.25           same\n"
            "quiet         -        failed    failed          -        -              -\n");
}

TEST(RunComparison, ASubmissionIsTitledByItsRunAndRunsWhileAJobHasNotEnded) {
  RunSummary a = swept_run();
  a.submission = SubmissionRow{};
  a.submission->id = 2;
  a.submission->label.name = "mine";
  a.submission->job_file = "mine.toml";
  a.jobs[0].state = JobState::kRunning;
  RunSummary b = swept_run();
  b.submission = SubmissionRow{};
  b.submission->id = 5;
  b.jobs.pop_back();  // all ok
  const RunComparison c = compare_runs(a, b, "");
  EXPECT_EQ(c.title_a, "#3/2 mine");
  EXPECT_EQ(c.title_b, "#3/5");
  ASSERT_FALSE(c.facts.empty());
  EXPECT_EQ(c.facts[0], (std::vector<std::string>{"state", "running", "ok", ""}));
  EXPECT_EQ(c.facts[1], (std::vector<std::string>{"job file", "mine.toml", "-", ""}));
  b.jobs[0].state = JobState::kFailed;
  EXPECT_EQ(compare_runs(a, b, "").facts[0][2], "failed");
  EXPECT_EQ(c.in_both, 2u);
  EXPECT_EQ(c.only_a, 1u);
  EXPECT_EQ(c.only_b, 0u);
}

}  // namespace
}  // namespace colo
