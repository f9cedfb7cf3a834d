#include "sched/on_change_scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "common/units.h"
#include "sched/auto_scheduler.h"
#include "sched/gang_scheduler.h"

namespace colo {
namespace {

using testing::HasSubstr;

JobProfile known(double memory_gib, double sm_pct, double samples_per_s) {
  JobProfile p;
  p.peak_memory_bytes = static_cast<uint64_t>(memory_gib * static_cast<double>(kGiB));
  p.sm_active_pct = sm_pct;
  p.samples_per_s = samples_per_s;
  p.source = "test";
  return p;
}

// The auto policy under the gang scheduler, as the engine builds it.
struct Policy {
  AutoScheduler* automatic = nullptr;
  std::unique_ptr<OnChangeScheduler> scheduler;
};
Policy make_policy(int gpus, int64_t settle_ms) {
  AutoOptions options;
  options.settle_ms = settle_ms;
  std::vector<GpuSlot> slots;
  for (int i = 0; i < gpus; ++i) slots.push_back({i, 80 * kGiB});
  auto automatic = std::make_unique<AutoScheduler>(slots, options, InterferenceModel{});
  Policy p{automatic.get(), nullptr};
  p.scheduler =
      std::make_unique<OnChangeScheduler>(std::make_unique<GangScheduler>(std::move(automatic)));
  return p;
}

TEST(OnChangeScheduler, IsDueAfterAChangeOrAPlacementAndNotWhileNothingChanged) {
  Policy p = make_policy(1, 10'000);
  p.automatic->set_profile("a", known(40, 19, 1000));
  EXPECT_TRUE(p.scheduler->due(0)) << "never called yet";
  EXPECT_TRUE(p.scheduler->schedule(0).empty());
  EXPECT_FALSE(p.scheduler->due(100)) << "nothing queued, nothing changed";
  for (size_t j = 0; j < 3; ++j) p.scheduler->enqueue({j, "a", std::nullopt});
  EXPECT_TRUE(p.scheduler->due(200));
  EXPECT_EQ(p.scheduler->schedule(200).size(), 1u) << "40 GiB: one fits an 80 GiB GPU";
  EXPECT_TRUE(p.scheduler->due(400)) << "it placed a job: another may follow";
  EXPECT_TRUE(p.scheduler->schedule(400).empty());
  EXPECT_FALSE(p.scheduler->due(600));
  EXPECT_FALSE(p.scheduler->due(5'000));
  (void)p.scheduler->finished(0, JobEnd::kOk, 6'000);
  EXPECT_TRUE(p.scheduler->due(6'000));
  EXPECT_EQ(p.scheduler->schedule(6'000).size(), 1u);
}

TEST(OnChangeScheduler, IsDueWhenACombinationIsToBeJudgedThoughNothingChanged) {
  Policy p = make_policy(1, 10'000);
  p.automatic->set_label("a", "job");
  p.automatic->set_profile("a", known(1, 19, 1000));
  for (size_t j = 0; j < 20; ++j) p.scheduler->enqueue({j, "a", std::nullopt});
  ASSERT_EQ(p.scheduler->schedule(0).size(), 15u);
  // Each runs at 5% of its solo speed: worse than one alone.
  for (size_t j = 0; j < 15; ++j) p.scheduler->observe_rate(j, 50, 8'000);
  EXPECT_TRUE(p.scheduler->schedule(8'000).empty());
  EXPECT_FALSE(p.scheduler->due(9'999));
  EXPECT_TRUE(p.scheduler->due(10'000)) << "settle_ms after the change";
  EXPECT_TRUE(p.scheduler->schedule(10'000).empty());
  EXPECT_THAT(p.scheduler->take_notes(),
              testing::ElementsAre(HasSubstr("0.75x the work of its heaviest job alone")));
  EXPECT_FALSE(p.scheduler->due(1'000'000)) << "judged: nothing is due until something changes";
}

TEST(OnChangeScheduler, IsDueWhenAnEarlyStartBecomesPossible) {
  Policy p = make_policy(1, 10'000);
  JobProfile filling = known(1, 100, 1000);  // two at once would lose work
  filling.solo_ms = 100'000;
  filling.startup_ms = 20'000;
  p.automatic->set_profile("a", filling);
  for (size_t j = 0; j < 2; ++j) p.scheduler->enqueue({j, "a", std::nullopt});
  ASSERT_EQ(p.scheduler->schedule(0).size(), 1u);
  EXPECT_TRUE(p.scheduler->schedule(1).empty());
  // The running job is expected to end at 100 s; the next may start within
  // its 20 s start-up of that.
  EXPECT_FALSE(p.scheduler->due(79'999));
  EXPECT_TRUE(p.scheduler->due(80'000));
  EXPECT_EQ(p.scheduler->schedule(80'000).size(), 1u);
}

}  // namespace
}  // namespace colo
