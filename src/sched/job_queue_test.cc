#include "sched/job_queue.h"

#include <gtest/gtest.h>

#include "common/units.h"

namespace colo {

// gtest finds it by argument-dependent lookup; file-local (static) all the same.
static void PrintTo(const Assignment& a, std::ostream* os) {
  *os << "{job " << a.job << " -> gpu " << a.device << "}";
}

namespace {

struct Step {
  std::string what;
  std::vector<size_t> finish;      // jobs whose processes end before this step
  std::vector<Assignment> expect;  // what schedule() places
};

struct QueueCase {
  std::string name;
  std::vector<DeviceSlots> devices;
  std::vector<std::optional<uint64_t>> jobs;  // memory hint per job, enqueued in order
  std::vector<Step> steps;
};

class JobQueueTable : public testing::TestWithParam<QueueCase> {};

TEST_P(JobQueueTable, PlacesAsExpected) {
  const QueueCase& c = GetParam();
  JobQueue q(c.devices);
  for (size_t i = 0; i < c.jobs.size(); ++i) q.enqueue(i, c.jobs[i]);
  for (const Step& step : c.steps) {
    for (size_t j : step.finish) q.finished(j);
    EXPECT_EQ(q.schedule(), step.expect) << step.what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, JobQueueTable,
    testing::Values(QueueCase{"exclusive_one_at_a_time",
                              {{0, 80 * kGiB, 1}},
                              {std::nullopt, std::nullopt, std::nullopt},
                              {{"first only", {}, {{0, 0}}},
                               {"nothing frees, nothing starts", {}, {}},
                               {"slot frees", {0}, {{1, 0}}},
                               {"last", {1}, {{2, 0}}}}},
                    QueueCase{"all_at_once_up_to_limit",
                              {{0, 80 * kGiB, 3}},
                              {std::nullopt, std::nullopt, std::nullopt, std::nullopt},
                              {{"three fit", {}, {{0, 0}, {1, 0}, {2, 0}}},
                               {"fourth after one ends", {1}, {{3, 0}}}}},
                    QueueCase{"backfill_smaller_job_past_a_big_one",
                              {{0, 80 * kGiB, 4}},
                              {50 * kGiB, 40 * kGiB, 20 * kGiB, 10 * kGiB},
                              {{"50 then 20 then 10 fit; 40 waits", {}, {{0, 0}, {2, 0}, {3, 0}}},
                               {"40 fits once 50 ends", {0}, {{1, 0}}}}},
                    QueueCase{
                        "spread_across_gpus_fewest_jobs_first",
                        {{0, 80 * kGiB, 2}, {1, 80 * kGiB, 2}},
                        {std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt},
                        {{"alternate", {}, {{0, 0}, {1, 1}, {2, 0}, {3, 1}}},
                         {"refill gpu 1", {3}, {{4, 1}}}}},
                    QueueCase{"memory_picks_the_gpu_with_room",
                              {{0, 40 * kGiB, 4}, {1, 80 * kGiB, 4}},
                              {30 * kGiB, 60 * kGiB},
                              {{"30 to the emptier larger gpu, 60 nowhere yet", {}, {{0, 1}}},
                               {"60 after 30 leaves gpu 1", {0}, {{1, 1}}}}},
                    // Jobs of equal hints are kept together inside the queue: queue
                    // order across hints must still hold.
                    QueueCase{"queue_order_across_hints_and_none",
                              {{0, 12 * kGiB, 3}},
                              {10 * kGiB, std::nullopt, 10 * kGiB, 1 * kGiB, 1 * kGiB},
                              {{"10, none, then 1 (second 10 waits)", {}, {{0, 0}, {1, 0}, {3, 0}}},
                               {"a 1 ends: the other 1, not the 10", {3}, {{4, 0}}},
                               {"the first 10 ends: the second", {0}, {{2, 0}}}}},
                    // Reservation: the head (60) is kept the device; a later
                    // job that fits now (45) but not beside it once the 30
                    // ended would delay it, and waits; one that leaves it
                    // room (15) starts.
                    QueueCase{"the_head_is_not_overtaken_on_its_device",
                              {{0, 80 * kGiB, 4}},
                              {30 * kGiB, 60 * kGiB, 45 * kGiB, 15 * kGiB},
                              {{"30 and 15; 60 waits, 45 would delay it", {}, {{0, 0}, {3, 0}}},
                               {"the 30 ends: the 60", {0}, {{1, 0}}},
                               {"the others end: the 45", {1, 3}, {{2, 0}}}}},
                    // Two devices: the head is kept the one where fewer jobs
                    // must end; a later job that would delay it there takes
                    // the other.
                    QueueCase{"the_head_keeps_the_device_where_fewer_jobs_must_end",
                              {{0, 80 * kGiB, 4}, {1, 80 * kGiB, 4}},
                              {30 * kGiB, 30 * kGiB, 30 * kGiB, 70 * kGiB, 20 * kGiB},
                              {{"three 30s, two on gpu 0; the 70 keeps gpu 1; the 20 to gpu 0",
                                {},
                                {{0, 0}, {1, 1}, {2, 0}, {4, 0}}},
                               {"gpu 1 empties: the 70", {1}, {{3, 1}}}}}),
    [](const testing::TestParamInfo<QueueCase>& info) { return info.param.name; });

TEST(JobQueue, TheHeadIsReservedAndTheOthersGoAroundIt) {
  JobQueue q({{0, 80 * kGiB, 2}, {1, 80 * kGiB, 2}});
  q.enqueue(0, 50 * kGiB);
  q.enqueue(1, 50 * kGiB);
  q.enqueue(2, 60 * kGiB);
  q.enqueue(3, 30 * kGiB);
  q.enqueue(4, 30 * kGiB);
  EXPECT_EQ(q.schedule(), (std::vector<Assignment>{{0, 0}, {1, 1}, {3, 1}}));
  std::optional<WaitingReason> head = q.waiting_reason(2);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->kind, WaitingReason::Kind::kReserved);
  EXPECT_EQ(head->device, 0);
  EXPECT_EQ(head->jobs_to_end, 1);
  EXPECT_TRUE(head->ending.empty()) << "the fixed policy expects no end";
  std::optional<WaitingReason> other = q.waiting_reason(4);
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->kind, WaitingReason::Kind::kBackfill);
  EXPECT_EQ(other->head, 2u);
  q.finished(0);
  EXPECT_EQ(q.schedule(), (std::vector<Assignment>{{2, 0}}));
  ASSERT_TRUE(q.waiting_reason(4).has_value());
  EXPECT_EQ(q.waiting_reason(4)->kind, WaitingReason::Kind::kReserved) << "the head now";
  EXPECT_TRUE(q.remove(4));
  EXPECT_EQ(q.waiting_reason(4), std::nullopt) << "cancelled: nothing is kept for it";
}

TEST(JobQueue, JobLargerThanEveryGpuIsUnplaceableNotStuck) {
  JobQueue q({{0, 80 * kGiB, 4}});
  q.enqueue(0, 100 * kGiB);
  q.enqueue(1, 10 * kGiB);
  EXPECT_EQ(q.schedule(), (std::vector<Assignment>{{1, 0}}));
  auto bad = q.take_unplaceable();
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].job, 0u);
  EXPECT_NE(bad[0].reason.find("100 GiB"), std::string::npos) << bad[0].reason;
  EXPECT_EQ(q.queued(), 0u);
}

TEST(JobQueue, DrainReturnsQueuedInOrder) {
  JobQueue q({{0, 80 * kGiB, 1}});
  for (size_t i = 0; i < 4; ++i) q.enqueue(i, std::nullopt);
  ASSERT_EQ(q.schedule().size(), 1u);
  EXPECT_EQ(q.drain_queued(), (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(q.queued(), 0u);
  // Across memory hints too.
  q.enqueue(4, 5 * kGiB);
  q.enqueue(5, std::nullopt);
  q.enqueue(6, 5 * kGiB);
  q.enqueue(7, 2 * kGiB);
  EXPECT_EQ(q.drain_queued(), (std::vector<size_t>{4, 5, 6, 7}));
  EXPECT_EQ(q.queued(), 0u);
  EXPECT_EQ(q.running(), 1u);
}

}  // namespace
}  // namespace colo
