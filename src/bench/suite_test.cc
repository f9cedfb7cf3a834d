#include "bench/suite.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace colo {
namespace {

int count_if(const std::vector<BenchCase>& cases, const std::string& mechanism,
             const std::string& status) {
  return static_cast<int>(std::count_if(cases.begin(), cases.end(), [&](const BenchCase& c) {
    return (mechanism.empty() || c.mechanism == mechanism) &&
           (status.empty() || c.status == status);
  }));
}

struct ExpansionRow {
  std::string suite;
  std::vector<std::string> globs;
  int repetitions;
  size_t cases;
  int exclusive;
  int mig_not_run;
  std::string first;
  std::string last;
};

class SuiteExpansion : public testing::TestWithParam<ExpansionRow> {};

TEST_P(SuiteExpansion, CountsAndNames) {
  const ExpansionRow& row = GetParam();
  ExpandOptions options;
  options.repetitions = row.repetitions;
  options.case_globs = row.globs;
  options.mig_reason = "MIG mode is disabled on gpu0 (colo never changes it)";
  Result<std::vector<BenchCase>> cases = expand_suite(row.suite, options);
  ASSERT_TRUE(cases.ok()) << cases.error().message();
  EXPECT_EQ(cases->size(), row.cases);
  EXPECT_EQ(count_if(*cases, "exclusive", ""), row.exclusive);
  EXPECT_EQ(count_if(*cases, "mig", "not_run"), row.mig_not_run);
  EXPECT_EQ(count_if(*cases, "mig", ""), row.mig_not_run);  // every mig case is not run
  ASSERT_FALSE(cases->empty());
  EXPECT_EQ(cases->front().name, row.first);
  EXPECT_EQ(cases->back().name, row.last);
  std::set<std::string> names;
  for (const BenchCase& c : *cases) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate " << c.name;
    EXPECT_EQ(static_cast<size_t>(c.degree), c.jobs.size()) << c.name;
    if (c.mechanism == "mig") {
      EXPECT_EQ(c.reason, "MIG mode is disabled on gpu0 (colo never changes it)");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, SuiteExpansion,
    testing::Values(
        // 5 workloads x (1 exclusive + 4 degrees x 3 mechanisms).
        ExpansionRow{"paper-uniform",
                     {},
                     1,
                     65,
                     5,
                     20,
                     "small/resnet26/exclusive/x1/r1",
                     "large/cait_xxs24_224/mig/x7/r1"},
        ExpansionRow{"paper-uniform",
                     {"small/*"},
                     1,
                     13,
                     1,
                     4,
                     "small/resnet26/exclusive/x1/r1",
                     "small/resnet26/mig/x7/r1"},
        ExpansionRow{"paper-uniform",
                     {"small/*"},
                     2,
                     26,
                     2,
                     8,
                     "small/resnet26/exclusive/x1/r1",
                     "small/resnet26/mig/x7/r2"},
        ExpansionRow{"paper-uniform",
                     {"*/mps/x7*", "*/exclusive/*"},
                     1,
                     10,
                     5,
                     0,
                     "small/resnet26/exclusive/x1/r1",
                     "large/cait_xxs24_224/mps/x7/r1"},
        ExpansionRow{"paper-uniform",
                     {"large/*/naive/x7/r2"},
                     2,
                     2,
                     0,
                     0,
                     "large/resnet152/naive/x7/r2",
                     "large/cait_xxs24_224/naive/x7/r2"},
        // 3 mixes x (serial, naive, mps, mig).
        ExpansionRow{
            "paper-mixed", {}, 1, 12, 3, 3, "mixed/S+M+M/serial/x3/r1", "mixed/S+M+M+M/mig/x4/r1"},
        ExpansionRow{"paper-recsys",
                     {},
                     1,
                     5,
                     2,
                     1,
                     "recsys/dlrm/exclusive/x1/r1",
                     "recsys/dlrm+resnet152/mig/x2/r1"}));

TEST(Suite, WorkloadsAreThePapers) {
  Result<std::vector<BenchCase>> mixed = expand_suite("paper-mixed", {});
  ASSERT_TRUE(mixed.ok());
  const BenchCase& ssmm = (*mixed)[4];
  EXPECT_EQ(ssmm.models, "S+S+M+M");
  ASSERT_EQ(ssmm.jobs.size(), 4u);
  EXPECT_EQ(ssmm.jobs[0].label(), "resnet26/cifar10/b128");
  EXPECT_EQ(ssmm.jobs[3].label(), "resnet50/imagenet64/b128");
  EXPECT_TRUE((*mixed)[0].serial);
  EXPECT_EQ((*mixed)[0].mechanism, "exclusive");
  EXPECT_FALSE((*mixed)[1].serial);

  Result<std::vector<BenchCase>> uniform = expand_suite("paper-uniform", {});
  ASSERT_TRUE(uniform.ok());
  std::set<std::string> labels;
  for (const BenchCase& c : *uniform) labels.insert(c.jobs[0].label());
  EXPECT_EQ(labels,
            (std::set<std::string>{"resnet26/cifar10/b128", "resnet50/imagenet64/b128",
                                   "efficientnetv2_s/imagenet64/b32", "resnet152/imagenet/b32",
                                   "cait_xxs24_224/imagenet/b128"}));
  for (const BenchCase& c : *uniform) {
    if (c.mechanism == "exclusive") {
      EXPECT_EQ(c.degree, 1) << c.name;
    }
  }

  Result<std::vector<BenchCase>> recsys = expand_suite("paper-recsys", {});
  ASSERT_TRUE(recsys.ok());
  EXPECT_EQ((*recsys)[2].models, "dlrm+resnet152");
  EXPECT_EQ((*recsys)[2].jobs[0].label(), "dlrm/criteo/b2048");
  EXPECT_EQ((*recsys)[2].jobs[1].label(), "resnet152/imagenet/b32");
}

TEST(Suite, MpsCasesAreNotRunWhenMpsIsUnavailable) {
  ExpandOptions options;
  options.mps_reason = "the MPS control program nvidia-cuda-mps-control is not on PATH";
  options.case_globs = {"small/*"};
  Result<std::vector<BenchCase>> cases = expand_suite("paper-uniform", options);
  ASSERT_TRUE(cases.ok());
  EXPECT_EQ(count_if(*cases, "mps", "not_run"), 4);
  EXPECT_EQ(count_if(*cases, "naive", "planned"), 4);
}

TEST(Suite, ErrorsSayWhatExists) {
  Result<std::vector<BenchCase>> unknown = expand_suite("paper-nope", {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("paper-uniform"), std::string::npos);
  ExpandOptions none;
  none.case_globs = {"tiny/*"};
  Result<std::vector<BenchCase>> nothing = expand_suite("paper-uniform", none);
  ASSERT_FALSE(nothing.ok());
  EXPECT_NE(nothing.error().message().find("--list"), std::string::npos);
  ExpandOptions zero;
  zero.repetitions = 0;
  EXPECT_FALSE(expand_suite("paper-uniform", zero).ok());
}

TEST(Suite, MigReasonComesFromTheDevice) {
  DeviceInfo no_mig;
  EXPECT_EQ(mig_not_run_reason(no_mig), "this GPU has no MIG");
  DeviceInfo off;
  off.index = 0;
  off.mig_enabled = false;
  off.mig_profiles.push_back(MigProfile{});
  EXPECT_EQ(mig_not_run_reason(off), "MIG mode is disabled on gpu0 (colo never changes it)");
  DeviceInfo on = off;
  on.mig_enabled = true;
  EXPECT_EQ(mig_not_run_reason(on), "");  // MIG cases run
}

TEST(Suite, SplitGlobs) {
  EXPECT_EQ(split_globs("a/*,,b"), (std::vector<std::string>{"a/*", "b"}));
  EXPECT_TRUE(split_globs("").empty());
}

}  // namespace
}  // namespace colo
