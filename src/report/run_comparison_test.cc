#include "report/run_comparison.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stored.h"
#include "analysis/training_metrics.h"
#include "jobs/progress_event.h"
#include "report/text_report.h"
#include "store/run_store.h"
#include "store/testing/fake_runs.h"

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

// The store's counts of these jobs (all started), by the one rule.
JobCounts counted(const std::vector<JobSummary>& jobs) {
  JobCounts c;
  for (const JobSummary& j : jobs) c.add(j.state, true);
  return c;
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
  s.run.jobs = counted(s.jobs);
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
            "jobs                         3: 2 ok, 1 failed    3: 2 ok, 1 failed\n"
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
  a.submission->outcomes = counted(a.jobs);
  b.submission->outcomes = counted(b.jobs);
  const RunComparison c = compare_runs(a, b, "");
  EXPECT_EQ(c.title_a, "#3/2 mine");
  EXPECT_EQ(c.title_b, "#3/5");
  ASSERT_FALSE(c.facts.empty());
  EXPECT_EQ(c.facts[0], (std::vector<std::string>{"state", "running", "ok", ""}));
  EXPECT_EQ(c.facts[1], (std::vector<std::string>{"job file", "mine.toml", "-", ""}));
  b.jobs[0].state = JobState::kFailed;
  b.submission->outcomes = counted(b.jobs);
  EXPECT_EQ(compare_runs(a, b, "").facts[0][2], "failed");
  EXPECT_EQ(c.in_both, 2u);
  EXPECT_EQ(c.only_a, 1u);
  EXPECT_EQ(c.only_b, 0u);
}

// The jobs row of the facts of a comparison.
std::string jobs_fact(const RunComparison& c) {
  for (const std::vector<std::string>& f : c.facts) {
    if (f.front() == "jobs") return f.at(1);
  }
  return "(no jobs row)";
}

// Issue 58, item 12: one store, a service's run of five submitted jobs: one
// ok, one stopped early, one stopped early that diverged, one cancelled while
// it ran and one cancelled before it started (it has no `jobs` row). colo
// runs, colo show A B and colo usage count them by the one rule
// (jobs/job_outcome.h). Before, show counted the diverged trial not ok,
// runs left out the job cancelled before it started, and usage counted the
// cancelled jobs as ended.
TEST(JobCountsAgree, RunsShowAndUsageCountTheSameJobsByOneRule) {
  std::unique_ptr<RunStore> store = testing::open_memory_store();
  const UnixMillis t0 = 1'700'000'000'000;
  NewRun run;
  run.started_ms = t0;
  run.mechanism = "naive";
  run.backend = "sim";
  run.simulated = true;
  run.host = "h";
  run.colo_pid = getpid();
  Result<int64_t> run_id = store->begin_run(run);
  ASSERT_TRUE(run_id.ok()) << run_id.error().message();
  const std::vector<std::string> names = {"ok", "stopped", "diverged", "cancelled", "never"};
  std::vector<NewServiceJob> submitted;
  for (const std::string& name : names) {
    NewServiceJob j;
    j.submitted_ms = t0;
    j.owner_uid = 1000;
    j.owner_name = "alice";
    j.name = name;
    j.spec_json = R"({"name":")" + name + R"("})";
    submitted.push_back(j);
  }
  Result<std::vector<int64_t>> service_ids = store->add_service_jobs(submitted, *run_id);
  ASSERT_TRUE(service_ids.ok()) << service_ids.error().message();
  const std::vector<JobState> ends = {JobState::kOk, JobState::kStopped, JobState::kStopped,
                                      JobState::kCancelled};
  for (size_t i = 0; i < ends.size(); ++i) {
    JobSpec spec;
    spec.name = names[i];
    spec.command = {"x"};
    Result<std::vector<int64_t>> job = store->add_jobs(*run_id, {spec}, {"/l"}, t0);
    ASSERT_TRUE(job.ok()) << job.error().message();
    const int64_t id = job->front();
    ASSERT_TRUE(store->job_started(id, 100, 0, t0 + 10).ok());
    ASSERT_TRUE(store->service_job_started((*service_ids)[i], id, 0, t0 + 10, "/l").ok());
    std::vector<std::pair<int64_t, ProgressEvent>> events;
    for (int epoch = 1; epoch <= 2; ++epoch) {
      ProgressEvent e;
      e.kind = "epoch_end";
      e.time_ms = t0 + 1'000 * epoch;
      e.epoch = epoch;
      e.metrics["loss"] = names[i] == "diverged" && epoch == 2
                              ? std::numeric_limits<double>::quiet_NaN()
                              : 1.0 / epoch;
      events.emplace_back(id, e);
    }
    ASSERT_TRUE(store->add_job_events(events).ok());
    ASSERT_TRUE(
        store->job_finished(id, JobExit{ends[i], 0, std::nullopt, "", {}}, t0 + 3'000, 0).ok());
    ASSERT_TRUE(store->add_service_job_usage((*service_ids)[i], {3'000, 0, 3'000, 0}).ok());
    ASSERT_TRUE(store->service_job_ended((*service_ids)[i], ends[i], "", t0 + 3'000).ok());
  }
  ASSERT_TRUE(
      store->service_job_ended(service_ids->back(), JobState::kCancelled, "cancelled", t0 + 50)
          .ok());
  ASSERT_TRUE(store->end_run(*run_id, RunState::kCancelled, t0 + 4'000).ok());

  JobCounts expected;
  expected.ok = 1;
  expected.stopped_early = 2;
  expected.cancelled = 1;
  expected.cancelled_before_start = 1;

  // colo runs
  Result<std::vector<RunRow>> runs = store->list_runs(10);
  ASSERT_TRUE(runs.ok()) << runs.error().message();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().jobs, expected);
  EXPECT_EQ(runs->front().job_count, 5);
  EXPECT_EQ(runs->front().jobs_not_ok, 2);
  EXPECT_THAT(format_runs_table(*runs), HasSubstr("5 (2 not ok)"));
  EXPECT_EQ(to_json(runs->front())["outcomes"]["cancelled_before_start"], 1);

  // colo show A B
  Result<RunSummary> shown = analyse_run(*store, *run_id);
  ASSERT_TRUE(shown.ok()) << shown.error().message();
  EXPECT_EQ(shown->run.jobs, expected);
  EXPECT_EQ(jobs_fact(compare_runs(*shown, *shown, "")),
            "5: 1 ok, 2 stopped early, 1 cancelled, 1 cancelled before start (1 diverged)");

  // colo usage: the jobs that ended their work, the cancelled one apart,
  // the one cancelled before it started in neither.
  Result<std::vector<ServiceUsageReport>> usage = store->service_usage_since(0);
  ASSERT_TRUE(usage.ok()) << usage.error().message();
  ASSERT_EQ(usage->size(), 1u);
  EXPECT_EQ(usage->front().jobs, expected.ended_work());
  EXPECT_EQ(usage->front().failed, expected.failed);
  EXPECT_EQ(usage->front().cancelled, expected.cancelled);
  EXPECT_DOUBLE_EQ(usage->front().gpu_ms, 12'000);

  // A submission of it counts the same way.
  Result<std::optional<SubmissionRow>> sub = store->submission(1);
  ASSERT_TRUE(sub.ok() && sub->has_value());
  EXPECT_EQ((*sub)->outcomes, expected);
}

}  // namespace
}  // namespace colo
