#include "analysis/profiles.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "analysis/stored.h"
#include "store/run_store.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using testing::FakeRun;
using testing::kFakeGiB;
using testing::kFakeT0;

TEST(LearnedProfiles, SoloRunGivesTheProfileAndCollocatedRunsOnlyMemory) {
  auto store = testing::open_memory_store();
  FakeRun solo;
  solo.mechanism = "exclusive";
  solo.sm_active_pct = 19;
  solo.gpu_util_pct = 37;
  solo.job_memory_bytes = kFakeGiB;
  add_fake_run(*store, solo, kFakeT0);
  FakeRun together = solo;
  together.mechanism = "mps";
  together.degree = 4;
  together.job_memory_bytes = 3 * kFakeGiB / 2;
  add_fake_run(*store, together, kFakeT0 + 100'000);

  Result<std::vector<LearnedProfile>> profiles = learn_profiles(*store);
  ASSERT_TRUE(profiles.ok()) << profiles.error().message();
  ASSERT_EQ(profiles->size(), 1u);
  const LearnedProfile& p = profiles->front();
  EXPECT_EQ(p.gpu_name, "NVIDIA H200");
  EXPECT_EQ(p.group, "resnet26");
  EXPECT_EQ(p.runs, 5);  // jobs measured: one alone, four together
  EXPECT_NEAR(*p.profile.sm_active_pct, 19, 1e-9);
  EXPECT_NEAR(*p.profile.gpu_util_pct, 37, 1e-9);
  // Steady state: epochs 2-3, 80,000 samples each, 5 s apart.
  EXPECT_NEAR(*p.profile.samples_per_s, 16'000, 1e-6);
  EXPECT_NEAR(*p.profile.epoch_ms, 5'000, 1e-9);
  EXPECT_EQ(*p.profile.solo_ms, 20'000);
  // Memory: the largest seen, collocated runs included.
  EXPECT_EQ(*p.profile.peak_memory_bytes, 3 * kFakeGiB / 2);
  EXPECT_THAT(p.profile.source, ::testing::HasSubstr("run 1 job 1 (exclusive, alone, simulated)"));

  Result<std::vector<Collocation>> measured = measured_collocations(*store, *profiles);
  ASSERT_TRUE(measured.ok()) << measured.error().message();
  ASSERT_EQ(measured->size(), 1u);
  EXPECT_EQ(measured->front().mode, ShareMode::kSpatial);
  EXPECT_EQ(measured->front().jobs.size(), 4u);
  EXPECT_NEAR(measured->front().measured_total, 4.0, 1e-6);
}

// Jobs whose start-ups differ by up to 9 s but which, once past them, run as
// fast together as alone: calibrate() is told 4.0 solo jobs' worth (the rate
// while all four ran). The union of their steady epochs would say 2.94.
TEST(LearnedProfiles, CalibrationTakesTheRateWhileTheJobsRanTogether) {
  auto store = testing::open_memory_store();
  FakeRun solo;
  solo.mechanism = "exclusive";
  solo.epochs = 6;
  add_fake_run(*store, solo, kFakeT0);
  FakeRun together = solo;
  together.mechanism = "mps";
  together.degree = 4;
  together.stagger_ms = 3'000;
  const int64_t run = add_fake_run(*store, together, kFakeT0 + 100'000);

  Result<std::vector<LearnedProfile>> profiles = learn_profiles(*store);
  ASSERT_TRUE(profiles.ok()) << profiles.error().message();
  Result<std::vector<Collocation>> measured = measured_collocations(*store, *profiles);
  ASSERT_TRUE(measured.ok()) << measured.error().message();
  ASSERT_EQ(measured->size(), 1u);
  EXPECT_NEAR(measured->front().measured_total, 4.0, 1e-9);
  EXPECT_EQ(measured->front().source, fmt::format("run {} (mps, 4 jobs)", run));
  Result<InterferenceModel> model = calibrated_model(*store, InterferenceModel{}, *profiles);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->source, "calibrated from 1 measured collocations");
}

// A job idles the GPU while it starts up; its profile is its working load.
TEST(LearnedProfiles, SmActivityComesFromTheSteadyEpochsNotStartUp) {
  auto store = testing::open_memory_store();
  FakeRun solo;
  solo.mechanism = "exclusive";
  solo.sm_active_pct = 19;
  solo.gpu_util_pct = 37;
  solo.startup_idle_ms = 6'000;  // of the first epoch's 10 s
  add_fake_run(*store, solo, kFakeT0);
  Result<RunSummary> summary = analyse_run(*store, 1);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  ASSERT_TRUE(summary->jobs.front().mean_sm_active_pct.has_value());
  EXPECT_LT(*summary->jobs.front().mean_sm_active_pct, 15);  // start-up pulls the mean down

  Result<std::vector<LearnedProfile>> profiles = learn_profiles(*store);
  ASSERT_TRUE(profiles.ok()) << profiles.error().message();
  ASSERT_EQ(profiles->size(), 1u);
  EXPECT_NEAR(*profiles->front().profile.sm_active_pct, 19, 1e-9);
  EXPECT_NEAR(*profiles->front().profile.gpu_util_pct, 37, 1e-9);
}

TEST(LearnedProfiles, JobsThatNeverRanAloneHaveMemoryOnly) {
  auto store = testing::open_memory_store();
  FakeRun together;
  together.degree = 2;
  add_fake_run(*store, together, kFakeT0);
  Result<std::vector<LearnedProfile>> profiles = learn_profiles(*store);
  ASSERT_TRUE(profiles.ok());
  ASSERT_EQ(profiles->size(), 1u);
  EXPECT_FALSE(profiles->front().profile.sm_active_pct);
  EXPECT_FALSE(profiles->front().profile.admissible());
  EXPECT_EQ(profiles->front().profile.source, "store: 2 jobs, never alone");
}

}  // namespace
}  // namespace colo
