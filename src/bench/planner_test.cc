#include "bench/planner.h"

#include <gtest/gtest.h>

#include "common/units.h"

namespace colo {
namespace {

std::vector<BenchCase> expand(const std::string& suite, std::vector<std::string> globs) {
  ExpandOptions options;
  options.case_globs = std::move(globs);
  options.mig_reason = "MIG mode is disabled on gpu0 (colo never changes it)";  // as on the H200
  Result<std::vector<BenchCase>> cases = expand_suite(suite, options);
  EXPECT_TRUE(cases.ok()) << cases.error().message();
  return cases.ok() ? *cases : std::vector<BenchCase>{};
}

TEST(Planner, WithoutABudgetASoloEpochTakesAboutFiveSeconds) {
  std::vector<BenchCase> cases = expand("paper-uniform", {"small/*"});
  Result<Plan> plan = make_plan(cases, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  const WorkloadPlan& wp = plan->workloads.at("resnet26/cifar10/b128");
  EXPECT_EQ(wp.epoch_samples % 128, 0);
  EXPECT_EQ(wp.epoch_samples, 621 * 128);  // floor(5 s x 15900/s / 128) batches
  EXPECT_EQ(plan->epochs, 4);
  // 9 cases run (exclusive, naive and mps at 4 degrees), with 1+2x(1+2+3+7) = 27 jobs.
  const double epoch_s = 621.0 * 128 / 15900;
  EXPECT_NEAR(plan->total_seconds, 9 * 15.0 + 4 * 27 * epoch_s, 1e-6);
  // MIG cases are not run: no time.
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].mechanism == "mig") {
      EXPECT_EQ(plan->case_seconds[i], 0) << cases[i].name;
    }
  }
}

struct BudgetRow {
  std::string suite;
  std::vector<std::string> globs;
  int64_t budget_ms;
  double startup_s;
  double min_epoch_s = 5.0;
};

class PlannerBudget : public testing::TestWithParam<BudgetRow> {};

TEST_P(PlannerBudget, FitsTheBudgetWithWholeBatchesAndEqualSoloEpochs) {
  const BudgetRow& row = GetParam();
  std::vector<BenchCase> cases = expand(row.suite, row.globs);
  PlanOptions options;
  options.budget_ms = row.budget_ms;
  options.startup_s = row.startup_s;
  options.min_epoch_s = row.min_epoch_s;
  Result<Plan> plan = make_plan(cases, options);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  const double budget_s = static_cast<double>(row.budget_ms) / 1000.0;
  EXPECT_LE(plan->total_seconds, budget_s);
  // Uses most of it: rounding down to whole batches loses less than one batch per epoch.
  double slack = 0;
  int job_runs = 0;
  for (const BenchCase& c : cases) {
    if (c.status == "planned") job_runs += static_cast<int>(c.jobs.size());
  }
  for (const auto& [label, wp] : plan->workloads) {
    EXPECT_EQ(wp.epoch_samples % wp.workload.batch_size, 0) << label;
    EXPECT_GE(wp.epoch_samples, 4 * wp.workload.batch_size) << label;
    slack = std::max(slack, wp.workload.batch_size / wp.samples_per_s);
    // Every workload's solo epoch aims at the same length.
    EXPECT_NEAR(wp.epoch_samples / wp.samples_per_s, plan->solo_epoch_seconds,
                wp.workload.batch_size / wp.samples_per_s + 1e-9)
        << label;
  }
  EXPECT_GE(plan->solo_epoch_seconds, row.min_epoch_s);
  EXPECT_GE(plan->total_seconds, budget_s - options.epochs * job_runs * slack - 1e-6);
}

INSTANTIATE_TEST_SUITE_P(
    Table, PlannerBudget,
    testing::Values(BudgetRow{"paper-uniform", {"small/*"}, 20 * 60 * 1000, 15},
                    BudgetRow{"paper-uniform", {"large/*"}, 30 * 60 * 1000, 15},
                    BudgetRow{"paper-uniform", {}, 90 * 60 * 1000, 15},
                    BudgetRow{"paper-mixed", {}, 20 * 60 * 1000, 15},
                    BudgetRow{"paper-recsys", {}, 8 * 60 * 1000, 15},
                    BudgetRow{"paper-uniform", {"small/*"}, 60 * 1000, 1, 0.2}));

TEST(Planner, SerialCasesPayStartUpPerJob) {
  std::vector<BenchCase> cases = expand("paper-mixed", {"mixed/S+M+M/serial/*"});
  Result<Plan> plan = make_plan(cases, PlanOptions{});
  ASSERT_TRUE(plan.ok());
  const double s = plan->workloads.at("resnet26/cifar10/b128").epoch_samples / 15900.0;
  const double m = plan->workloads.at("resnet50/imagenet64/b128").epoch_samples / 7900.0;
  EXPECT_NEAR(plan->total_seconds, 3 * 15.0 + 4 * (s + 2 * m), 1e-6);
}

TEST(Planner, ABudgetTooSmallSaysHowMuchIsNeeded) {
  std::vector<BenchCase> cases = expand("paper-uniform", {"small/*"});
  PlanOptions options;
  struct Case {
    int64_t budget_ms;
    const char* says;
  } cases_of_budget[] = {
      // 9 cases x 15 s of start-up alone exceed it; the least budget is 2m15s
      // of start-up and 27 jobs x 4 epochs x 5 s.
      {60 * 1000, "11m15s"},
      // Enough for start-up, but solo epochs of 3.2 s.
      {8 * 60 * 1000, "less than the 5.0s minimum"},
  };
  for (const Case& c : cases_of_budget) {
    options.budget_ms = c.budget_ms;
    Result<Plan> plan = make_plan(cases, options);
    ASSERT_FALSE(plan.ok()) << c.budget_ms;
    EXPECT_NE(plan.error().message().find("--budget"), std::string::npos);
    EXPECT_NE(plan.error().message().find(c.says), std::string::npos) << plan.error().message();
  }
}

TEST(Planner, MeasuredThroughputOverridesTheTable) {
  std::vector<BenchCase> cases = expand("paper-uniform", {"small/resnet26/exclusive/*"});
  PlanOptions options;
  options.measured_samples_per_s["resnet26/cifar10/b128"] = 1280;
  Result<Plan> plan = make_plan(cases, options);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->workloads.at("resnet26/cifar10/b128").epoch_samples, 50 * 128);
  EXPECT_EQ(plan->workloads.at("resnet26/cifar10/b128").rate_source, "measured");
}

TEST(Planner, DryRunTextListsEveryCaseAndTheTotalAsEstimates) {
  std::vector<BenchCase> cases = expand("paper-uniform", {"small/*"});
  Result<Plan> plan = make_plan(cases, PlanOptions{});
  ASSERT_TRUE(plan.ok());
  std::string text = format_plan("paper-uniform", cases, *plan);
  for (const BenchCase& c : cases) EXPECT_NE(text.find(c.name), std::string::npos) << c.name;
  EXPECT_NE(text.find("estimated total"), std::string::npos);
  EXPECT_NE(text.find("k solo runs one after another"), std::string::npos);
}

struct FitRow {
  std::string case_glob;
  uint64_t device_bytes;
  bool fits;
};

class FitCheck : public testing::TestWithParam<FitRow> {};

TEST_P(FitCheck, SumsCollocatedJobsAndTakesTheLargestOfSerialOnes) {
  const FitRow& row = GetParam();
  std::string suite = row.case_glob.starts_with("mixed")    ? "paper-mixed"
                      : row.case_glob.starts_with("recsys") ? "paper-recsys"
                                                            : "paper-uniform";
  std::vector<BenchCase> cases = expand(suite, {row.case_glob});
  ASSERT_EQ(cases.size(), 1u);
  FitDecision d = check_fit(cases[0], row.device_bytes, {}, 16);
  EXPECT_EQ(d.fits, row.fits) << d.reason;
  if (!d.fits) {
    EXPECT_NE(d.reason.find("default estimate"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("but the GPU has"), std::string::npos) << d.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, FitCheck,
                         testing::Values(
                             // cait b128: 11 GiB each.
                             FitRow{"large/cait_xxs24_224/naive/x3/r1", 40 * kGiB, true},
                             FitRow{"large/cait_xxs24_224/naive/x7/r1", 40 * kGiB, false},
                             FitRow{"large/cait_xxs24_224/mps/x7/r1", 80 * kGiB, true},
                             FitRow{"large/cait_xxs24_224/exclusive/x1/r1", 10 * kGiB, false},
                             FitRow{"small/resnet26/mps/x7/r1", 10 * kGiB, true},
                             // Serial runs one job at a time: the largest counts.
                             FitRow{"mixed/S+M+M+M/serial/x4/r1", 3 * kGiB, true},
                             FitRow{"mixed/S+M+M+M/naive/x4/r1", 3 * kGiB, false},
                             // dlrm with 16 GiB of tables (sparse gradients): 16 + 1.5 = 17.5 GiB,
                             // + 5 GiB for resnet152.
                             FitRow{"recsys/dlrm+resnet152/mps/x2/r1", 23 * kGiB, true},
                             FitRow{"recsys/dlrm+resnet152/mps/x2/r1", 22 * kGiB, false}));

TEST(Planner, MeasuredPeaksOverrideDefaultsAndAreNamed) {
  std::vector<BenchCase> cases = expand("paper-uniform", {"large/resnet152/naive/x7/r1"});
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_TRUE(check_fit(cases[0], 40 * kGiB, {}, 16).fits);  // 7 x 5 GiB
  std::map<std::string, MemoryFigure> measured = {
      {"resnet152/imagenet/b32", {6 * kGiB, "measured in large/resnet152/exclusive/x1/r1"}}};
  FitDecision d = check_fit(cases[0], 40 * kGiB, measured, 16);
  EXPECT_FALSE(d.fits);
  EXPECT_EQ(d.needed_bytes, 42 * kGiB);
  EXPECT_NE(d.reason.find("7 x 6.0 GiB"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("measured in large/resnet152/exclusive/x1/r1"), std::string::npos);
}

}  // namespace
}  // namespace colo
