#include "sched/quota_scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/units.h"

namespace colo {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

constexpr uint32_t kAlice = 1001;
constexpr uint32_t kBob = 1002;

// `gpus` GPUs taking one job each, first come, first served.
std::unique_ptr<QuotaScheduler> make_quota(int gpus) {
  std::vector<DeviceSlots> slots;
  for (int i = 0; i < gpus; ++i) slots.push_back({i, 80 * kGiB, 1});
  return std::make_unique<QuotaScheduler>(std::make_unique<FixedScheduler>(slots, "fixed"));
}

SchedJob job_of(size_t job, uint32_t owner, int gpus = 1) {
  SchedJob j{job, "sig", std::nullopt};
  j.owner = owner;
  j.gpus = gpus;
  return j;
}

std::vector<size_t> jobs_of(const std::vector<Decision>& decisions) {
  std::vector<size_t> out;
  for (const Decision& d : decisions) out.push_back(d.job);
  return out;
}

TEST(QuotaScheduler, AnOwnerStartsNoMoreThanTheirQuotaAndOthersFillTheGpus) {
  auto q = make_quota(4);
  q->set_quota_left({{kAlice, 2.0}});
  for (size_t j = 0; j < 6; ++j) q->enqueue(job_of(j, kAlice));
  q->enqueue(job_of(6, kBob));
  q->enqueue(job_of(7, kBob));
  // Within one call: two of Alice's (her oldest), and Bob's behind them.
  EXPECT_THAT(jobs_of(q->schedule(0)), UnorderedElementsAre(0, 1, 6, 7));
  EXPECT_EQ(q->queued(), 4u);
  EXPECT_TRUE(q->held(2));
  (void)q->finished(6, JobEnd::kOk, 10);
  EXPECT_TRUE(q->schedule(10).empty()) << "a GPU is free, but Alice has none left";
  // Her job 0 ended: the caller says she has one GPU's worth left.
  (void)q->finished(0, JobEnd::kOk, 20);
  q->set_quota_left({{kAlice, 1.0}});
  EXPECT_THAT(jobs_of(q->schedule(20)), ElementsAre(2));
  EXPECT_TRUE(q->schedule(30).empty()) << "what started is taken from what is left";
}

TEST(QuotaScheduler, AQuotaThatShrinksTakesBackTheNewestShownJobs) {
  auto q = make_quota(1);
  q->enqueue(job_of(0, kBob));
  EXPECT_THAT(jobs_of(q->schedule(0)), ElementsAre(0)) << "Bob's job fills the GPU";
  q->set_quota_left({{kAlice, 3.0}});
  for (size_t j = 1; j <= 4; ++j) q->enqueue(job_of(j, kAlice));
  EXPECT_FALSE(q->held(3)) << "three shown to the policy";
  EXPECT_TRUE(q->held(4));
  q->set_quota_left({{kAlice, 1.0}});
  EXPECT_FALSE(q->held(1)) << "the oldest stays shown";
  EXPECT_TRUE(q->held(2));
  EXPECT_TRUE(q->held(3));
  EXPECT_EQ(q->queued(), 4u);
  (void)q->finished(0, JobEnd::kOk, 10);
  EXPECT_THAT(jobs_of(q->schedule(10)), ElementsAre(1));
  // Without a bound, the rest come in order.
  q->set_quota_left({});
  (void)q->finished(1, JobEnd::kOk, 20);
  EXPECT_THAT(jobs_of(q->schedule(20)), ElementsAre(2));
}

TEST(QuotaScheduler, HeldJobsCanBeCancelledAndDrainedAndAGangNeedsItsGpusLeft) {
  auto q = make_quota(2);
  q->set_quota_left({{kAlice, 1.0}});
  q->enqueue(job_of(0, kAlice, /*gpus=*/2));
  q->enqueue(job_of(1, kAlice));
  q->enqueue(job_of(2, kAlice));
  EXPECT_TRUE(q->held(0)) << "a gang of two does not fit one GPU's worth";
  EXPECT_TRUE(q->held(1)) << "the oldest waits first: order within an owner is kept";
  EXPECT_TRUE(q->remove_queued(1));
  EXPECT_FALSE(q->remove_queued(1));
  EXPECT_EQ(q->queued(), 2u);
  EXPECT_TRUE(q->schedule(0).empty());
  std::vector<size_t> drained = q->drain_queued();
  EXPECT_THAT(drained, UnorderedElementsAre(0, 2));
  EXPECT_EQ(q->queued(), 0u);
}

TEST(QuotaScheduler, OwnersWithoutAQuotaGoStraightToThePolicy) {
  auto q = make_quota(2);
  q->set_quota_left({{kAlice, 0.0}});
  q->enqueue(job_of(0, kAlice));
  q->enqueue(job_of(1, kBob));
  q->enqueue(job_of(2, kBob));
  EXPECT_FALSE(q->held(1));
  EXPECT_THAT(jobs_of(q->schedule(0)), ElementsAre(1, 2));
  EXPECT_EQ(q->queued(), 1u);
}

SchedJob protected_of(size_t job, uint32_t owner, int gpus = 1) {
  SchedJob j = job_of(job, owner, gpus);
  j.qos = QosClass::kProtected;
  return j;
}

// Issue 56 (5): a protected job past its owner's protected GPUs waits while
// their other jobs go around it, and another owner's protected job starts.
TEST(QuotaScheduler, AProtectedJobPastItsOwnersProtectedGpusWaitsAndOthersGoAroundIt) {
  struct Case {
    std::string what;
    std::map<uint32_t, double> gpus_left;       // set_quota_left
    std::map<uint32_t, double> protected_left;  // set_protected_left
    std::vector<SchedJob> jobs;                 // enqueued in order
    std::vector<size_t> started;                // by one schedule()
    std::vector<size_t> held;
  };
  const std::vector<Case> cases = {
      {"one protected GPU each: Alice's second waits, Bob's starts",
       {},
       {{kAlice, 1.0}, {kBob, 1.0}},
       {protected_of(0, kAlice), protected_of(1, kAlice), protected_of(2, kBob)},
       {0, 2},
       {1}},
      {"Alice's normal job behind her held protected one goes around it",
       {},
       {{kAlice, 1.0}},
       {protected_of(0, kAlice), protected_of(1, kAlice), job_of(2, kAlice)},
       {0, 2},
       {1}},
      {"none left: only her normal jobs start",
       {},
       {{kAlice, 0.0}},
       {protected_of(0, kAlice), job_of(1, kAlice)},
       {1},
       {0}},
      {"a protected gang of two needs two protected GPUs left",
       {},
       {{kAlice, 1.0}},
       {protected_of(0, kAlice, 2), protected_of(1, kAlice)},
       {1},
       {0}},
      {"no bound on protected GPUs for Bob",
       {},
       {{kAlice, 0.0}},
       {protected_of(0, kBob), protected_of(1, kBob)},
       {0, 1},
       {}},
      {"the bound on GPUs' worth keeps its order over a held protected job",
       {{kAlice, 1.0}},
       {{kAlice, 0.0}},
       {protected_of(0, kAlice), job_of(1, kAlice), job_of(2, kAlice)},
       {1},
       {0, 2}},
  };
  for (const Case& c : cases) {
    auto q = make_quota(4);
    q->set_quota_left(c.gpus_left);
    q->set_protected_left(c.protected_left);
    for (const SchedJob& j : c.jobs) q->enqueue(j);
    std::vector<size_t> started = jobs_of(q->schedule(0));
    std::sort(started.begin(), started.end());
    EXPECT_EQ(started, c.started) << c.what;
    for (size_t j : c.held) EXPECT_TRUE(q->held(j)) << c.what << ": job " << j;
    EXPECT_EQ(q->queued(), c.jobs.size() - started.size()) << c.what;
  }
}

TEST(QuotaScheduler, ProtectedGpusLeftAgainLetTheHeldProtectedJobStartAndFewerTakeItBack) {
  auto q = make_quota(4);
  q->set_protected_left({{kAlice, 1.0}});
  q->enqueue(protected_of(0, kAlice));
  q->enqueue(protected_of(1, kAlice));
  EXPECT_THAT(jobs_of(q->schedule(0)), ElementsAre(0));
  EXPECT_TRUE(q->schedule(10).empty()) << "what started is taken from what is left";
  // Job 0 ended: the caller says she has one protected GPU left again.
  (void)q->finished(0, JobEnd::kOk, 20);
  q->set_protected_left({{kAlice, 1.0}});
  EXPECT_THAT(jobs_of(q->schedule(20)), ElementsAre(1));
  // Shown, then the bound shrinks: the newest shown protected job is taken back.
  q->enqueue(protected_of(2, kAlice));
  q->enqueue(job_of(3, kAlice));
  q->set_protected_left({{kAlice, 1.0}});
  EXPECT_FALSE(q->held(2));
  q->set_protected_left({{kAlice, 0.0}});
  EXPECT_TRUE(q->held(2));
  EXPECT_FALSE(q->held(3)) << "not protected: still shown";
  EXPECT_THAT(jobs_of(q->schedule(30)), ElementsAre(3));
}

}  // namespace
}  // namespace colo
