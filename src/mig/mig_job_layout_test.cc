#include "mig/mig_job_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/units.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// A job's MIG demand; unset fields absent.
MigJobDemand job(std::string name, std::optional<std::string> profile = std::nullopt,
                 std::optional<uint64_t> memory = std::nullopt,
                 std::optional<std::string> group = std::nullopt) {
  return {std::move(name), std::move(profile), memory, std::move(group)};
}

MigGeometry a100() { return *builtin_mig_geometry("A100-40GB"); }

// "profile@start:jobs/ci slices" per instance.
std::string describe(const std::vector<MigInstancePlan>& plans) {
  std::string out;
  for (const MigInstancePlan& p : plans) {
    if (!out.empty()) out += " ";
    out += p.placement.profile + "@" + std::to_string(p.placement.start) + ":";
    for (size_t i = 0; i < p.jobs.size(); ++i) out += (i ? "," : "") + p.jobs[i];
    out += "/" + std::to_string(p.compute_slices_per_job);
  }
  return out;
}

TEST(MigJobLayout, JobsWithoutHintsShareTheGpuEvenly) {
  auto two = plan_mig_for_jobs(a100(), {job("a"), job("b")});
  ASSERT_TRUE(two.ok()) << two.error().message();
  EXPECT_EQ(describe(*two), "3g.20gb@0:a/3 3g.20gb@4:b/3");
  auto seven = plan_mig_for_jobs(
      a100(), {job("a"), job("b"), job("c"), job("d"), job("e"), job("f"), job("g")});
  ASSERT_TRUE(seven.ok()) << seven.error().message();
  EXPECT_EQ(seven->size(), 7u);
  EXPECT_EQ(seven->front().placement.profile, "1g.5gb");
  auto one = plan_mig_for_jobs(a100(), {job("a")});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(describe(*one), "7g.40gb@0:a/7");
}

TEST(MigJobLayout, ProfilesAndMemoryHintsAreHonoured) {
  auto plan = plan_mig_for_jobs(
      a100(), {job("big", "4g.20gb"), job("small", std::nullopt, 4 * kGiB), job("rest")});
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(describe(*plan), "4g.20gb@0:big/4 1g.5gb@6:small/1 2g.10gb@4:rest/2");
}

TEST(MigJobLayout, AGroupSharesOneGpuInstance) {
  // The paper's recommender + vision case: two jobs, one instance's memory.
  auto plan =
      plan_mig_for_jobs(a100(), {job("dlrm", "4g.20gb", std::nullopt, "pair"),
                                 job("resnet", std::nullopt, std::nullopt, "pair"), job("other")});
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(describe(*plan), "4g.20gb@0:dlrm,resnet/2 3g.20gb@4:other/3");
}

TEST(MigJobLayout, RefusalsNameTheJobOrGroup) {
  auto unknown = plan_mig_for_jobs(a100(), {job("a", "3g.30gb")});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message(), HasSubstr("job 'a': unknown mig_profile '3g.30gb'"));

  auto conflict = plan_mig_for_jobs(
      a100(), {job("a", "3g.20gb", std::nullopt, "g"), job("b", "4g.20gb", std::nullopt, "g")});
  ASSERT_FALSE(conflict.ok());
  EXPECT_THAT(conflict.error().message(), HasSubstr("mig_group 'g'"));

  auto crowded = plan_mig_for_jobs(
      a100(), {job("a", "2g.10gb", std::nullopt, "g"), job("b", std::nullopt, std::nullopt, "g"),
               job("c", std::nullopt, std::nullopt, "g")});
  ASSERT_FALSE(crowded.ok());
  EXPECT_THAT(crowded.error().message(), HasSubstr("has 3 jobs but its profile 2g.10gb"));

  std::vector<MigJobDemand> eight;
  for (int i = 0; i < 8; ++i) eight.push_back(job("j" + std::to_string(i)));
  auto too_many = plan_mig_for_jobs(a100(), eight);
  ASSERT_FALSE(too_many.ok());
  EXPECT_THAT(too_many.error().message(), HasSubstr("8 job(s) do not fit on one A100-40GB"));

  auto huge = plan_mig_for_jobs(a100(), {job("a", std::nullopt, 50 * kGiB)});
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.error().message(), HasSubstr("job 'a': no MIG profile of A100-40GB holds"));
}

TEST(MigJobLayout, InstancesAlreadyOnTheGpuAreWorkedAround) {
  MigPlacement foreign{"3g.20gb", 9, 4, 4, 3, 0, std::nullopt};
  auto plan = plan_mig_for_jobs(a100(), {job("a"), job("b")}, {foreign});
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  for (const MigInstancePlan& p : *plan) EXPECT_LT(p.placement.start, 4);
  auto full = plan_mig_for_jobs(a100(), {job("a", "7g.40gb")}, {foreign});
  ASSERT_FALSE(full.ok());
  EXPECT_THAT(full.error().message(), HasSubstr("already holds 3g.20gb at 4"));
}

}  // namespace
}  // namespace colo
