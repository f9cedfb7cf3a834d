#include "analysis/job_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "analysis/training_metrics.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

JobSummary job(const std::string& name, const std::string& lr, std::optional<double> loss,
               JobState state = JobState::kOk) {
  JobSummary j;
  j.name = name;
  j.state = state;
  j.params["lr"] = lr;
  j.params["opt"] = lr == "0.1" ? "sgd" : "adam";
  if (loss) {
    std::vector<ProgressEvent> events(2);
    events[0].kind = events[1].kind = "epoch_end";
    events[0].time_ms = 1;
    events[0].metrics["loss"] = *loss + 1;
    events[1].time_ms = 2;
    events[1].metrics["loss"] = *loss;
    events[1].metrics["acc"] = 1 - *loss;
    j.metrics = training_metrics(events, std::nullopt);
  }
  return j;
}

RunSummary grid() {
  RunSummary s;
  s.run.id = 7;
  s.jobs = {job("a", "0.1", 0.5), job("b", "0.01", 0.2), job("c", "1e-3", std::nullopt),
            job("d", "0.001", 0.9, JobState::kFailed)};
  return s;
}

std::string names(const RunSummary& s) {
  std::string out;
  for (const JobSummary& j : s.jobs) out += j.name;
  return out;
}

TEST(JobSelection, ParsesFiltersAndSaysWhatItExpects) {
  Result<JobFilter> f = parse_job_filter("loss <= 0.5");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->name, "loss");
  EXPECT_EQ(f->op, JobFilter::Op::kLe);
  EXPECT_EQ(f->number, 0.5);
  EXPECT_EQ(parse_job_filter("state!=ok")->op, JobFilter::Op::kNe);
  EXPECT_EQ(parse_job_filter("lr>1e-3")->op, JobFilter::Op::kGt);
  for (const char* bad : {"loss", "=0.1", "lr=", "loss<abc"}) {
    Result<JobFilter> r = parse_job_filter(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.error().message(), HasSubstr("--filter")) << bad;
  }
  EXPECT_THAT(parse_job_filter("loss<abc").error().message(), HasSubstr("compares numbers"));
}

// By a metric: best first, jobs without it after, and a failed job (d)
// after all of them whichever way (issue 33: a crashed job ranked first).
TEST(JobSelection, SortsByAMetricBestFirstWithJobsWithoutItAndFailedOnesLast) {
  RunSummary s = grid();
  ASSERT_TRUE(select_jobs(s, {}, "loss").ok());
  EXPECT_EQ(names(s), "bacd");
  ASSERT_TRUE(select_jobs(s, {}, "acc").ok());  // higher is better: highest first
  EXPECT_EQ(names(s), "bacd");
  ASSERT_TRUE(select_jobs(s, {}, "-loss").ok());
  EXPECT_EQ(names(s), "abcd");
  ASSERT_TRUE(select_jobs(s, {}, "loss_last").ok()) << "the CSV's column names sort too";
  EXPECT_EQ(names(s), "bacd");
}

// A diverged job (a NaN loss) ranks with the failed ones, and a job file's
// declared objective is the default order (colo show without --sort).
TEST(JobSelection, ADivergedJobRanksLastAndTheDeclaredObjectiveIsFound) {
  RunSummary s = grid();
  s.jobs[1].diverged = true;  // b, the best loss
  ASSERT_TRUE(select_jobs(s, {}, "loss").ok());
  EXPECT_EQ(names(s), "acbd");
  EXPECT_EQ(declared_objective(s), "");
  for (JobSummary& j : s.jobs) j.objective = "loss";
  EXPECT_EQ(declared_objective(s), "loss");
  s.jobs[0].objective = "acc";
  EXPECT_EQ(declared_objective(s), "") << "the jobs disagree";
}

// colo show and the table colo run ends with order a run's jobs one way
// (issue 58, item 13): the sort key given, else the declared objective, else
// the run's order.
TEST(JobSelection, JobsAreShownInOneOrder) {
  struct Case {
    std::string what;
    std::string objective;  // every job's
    std::string sort_key;
    std::string order;
  };
  const std::vector<Case> cases = {
      {"nothing declared or asked: the run's order", "", "", "abcd"},
      {"the declared objective, best first", "loss", "", "bacd"},
      {"the declared objective, higher is better", "acc", "", "bacd"},
      {"a sort key over the objective", "loss", "lr", "cdba"},
  };
  for (const Case& c : cases) {
    RunSummary s = grid();
    for (JobSummary& j : s.jobs) j.objective = c.objective;
    ASSERT_TRUE(order_as_shown(s, {}, c.sort_key).ok()) << c.what;
    EXPECT_EQ(names(s), c.order) << c.what;
  }
}

TEST(JobSelection, SortsParametersAsNumbersWhenAllAreNumbers) {
  RunSummary s = grid();
  ASSERT_TRUE(select_jobs(s, {}, "lr").ok());
  EXPECT_EQ(names(s), "cdba");  // 1e-3 = 0.001 < 0.01 < 0.1, stable
  ASSERT_TRUE(select_jobs(s, {}, "opt").ok());
  EXPECT_EQ(names(s), "cdba");  // adam adam adam sgd
}

TEST(JobSelection, FiltersByParameterMetricAndField) {
  RunSummary s = grid();
  ASSERT_TRUE(select_jobs(s, {*parse_job_filter("lr=0.001")}, "").ok());
  EXPECT_EQ(names(s), "cd") << "1e-3 equals 0.001 as numbers";
  s = grid();
  ASSERT_TRUE(
      select_jobs(s, {*parse_job_filter("loss<0.6"), *parse_job_filter("state=ok")}, "").ok());
  EXPECT_EQ(names(s), "ab") << "c never reported a loss";
  s = grid();
  ASSERT_TRUE(select_jobs(s, {*parse_job_filter("opt!=sgd")}, "").ok());
  EXPECT_EQ(names(s), "bcd");
}

TEST(JobSelection, AnUnknownNameIsAnErrorThatListsTheKnownOnes) {
  RunSummary s = grid();
  Status st = select_jobs(s, {*parse_job_filter("los<1")}, "");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().message(), HasSubstr("no job of run #7 has 'los'"));
  EXPECT_THAT(st.error().message(), HasSubstr("grid parameters: lr, opt; metrics: acc, loss"));
  EXPECT_EQ(s.jobs.size(), 4u) << "nothing removed on error";
  Status sorted = select_jobs(s, {}, "accuracy");
  ASSERT_FALSE(sorted.ok());
  EXPECT_THAT(sorted.error().message(), HasSubstr("--sort accuracy"));
}

}  // namespace
}  // namespace colo
