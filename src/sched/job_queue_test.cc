#include "sched/job_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

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

// The device kept for the head (Reservation in job_queue.h): the one where
// the fewest running jobs must end, taken oldest placement first, the first
// such device on a tie. Each device keeps its running jobs in placement
// order (Device::oldest_first); these cases would fail if that order were
// lost (newest first, a job left there after it ended, an occupant missed).
struct KeptStep {
  std::string what;
  std::vector<size_t> finish;                  // jobs (or occupant keys) ending first
  std::vector<std::optional<uint64_t>> jobs;   // enqueued next, indices going on
  std::vector<std::pair<size_t, int>> occupy;  // (key, device): a gang's 30 GiB rank
  std::vector<Assignment> expect;              // what schedule() places
  size_t head = 0;                             // the head it leaves
  std::optional<int> device;                   // the device kept for it (nullopt: none)
  int jobs_to_end = 0;
};

struct KeptCase {
  std::string name;
  std::vector<DeviceSlots> devices;
  std::vector<KeptStep> steps;
};

class JobQueueKept : public testing::TestWithParam<KeptCase> {};

TEST_P(JobQueueKept, KeepsTheDeviceWhereFewestOldestJobsEnd) {
  const KeptCase& c = GetParam();
  JobQueue q(c.devices);
  size_t next = 0;
  for (const KeptStep& step : c.steps) {
    for (size_t j : step.finish) q.finished(j);
    for (const std::optional<uint64_t>& hint : step.jobs) q.enqueue(next++, hint);
    for (const auto& [key, device] : step.occupy) q.occupy(key, device, 30 * kGiB);
    EXPECT_EQ(q.schedule(), step.expect) << step.what;
    const std::optional<WaitingReason> why = q.waiting_reason(step.head);
    if (!step.device) {
      EXPECT_EQ(why, std::nullopt) << step.what;
      continue;
    }
    ASSERT_TRUE(why.has_value()) << step.what;
    EXPECT_EQ(why->kind, WaitingReason::Kind::kReserved) << step.what;
    EXPECT_EQ(why->device, *step.device) << step.what;
    EXPECT_EQ(why->jobs_to_end, step.jobs_to_end) << step.what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, JobQueueKept,
    testing::Values(
        // 50, 10, 10 on one GPU; a 40 needs only the 50 (the oldest) to end.
        // Newest first it would need all three.
        KeptCase{"the_oldest_job_ends_first",
                 {{0, 80 * kGiB, 4}},
                 {{"50, 10, 10 start; the 40 waits for the 50",
                   {},
                   {50 * kGiB, 10 * kGiB, 10 * kGiB, 40 * kGiB},
                   {},
                   {{0, 0}, {1, 0}, {2, 0}},
                   3,
                   0,
                   1}}},
        // A job placed after others is the newest even where its index is
        // smaller (a backfill overtook it): placement order, not job order.
        KeptCase{"placement_order_not_job_order",
                 {{0, 80 * kGiB, 3}},
                 {{"50 starts; the 60 waits for it; the 10 backfills beside",
                   {},
                   {50 * kGiB, 60 * kGiB, 10 * kGiB},
                   {},
                   {{0, 0}, {2, 0}},
                   1,
                   0,
                   1},
                  {"the 50 ends: the 60 starts; a 70 needs the 10 (older) and the 60 to end",
                   {0},
                   {70 * kGiB},
                   {},
                   {{1, 0}},
                   3,
                   0,
                   2}}},
        // A job that ended is no longer among those that must end.
        KeptCase{
            "an_ended_job_is_gone",
            {{0, 80 * kGiB, 1}, {1, 80 * kGiB, 1}},
            {{"two start; two wait", {}, {kGiB, kGiB, kGiB, kGiB}, {}, {{0, 0}, {1, 1}}, 2, 0, 1},
             {"gpu0's ends: the next there; the head is kept gpu0 (a tie)",
              {0},
              {},
              {},
              {{2, 0}},
              3,
              0,
              1}}},
        // A gang's rank counts as a job on its GPU, the oldest there.
        KeptCase{"an_occupant_counts",
                 {{0, 80 * kGiB, 3}},
                 {{"a 30 GiB rank, then a 40; a 60 needs both to end",
                   {},
                   {40 * kGiB, 60 * kGiB},
                   {{7, 0}},
                   {{0, 0}},
                   1,
                   0,
                   2},
                  {"the rank ends: the 40 alone", {7 | kOccupantKey}, {}, {}, {}, 1, 0, 1}}},
        // Fewest to end wins over device order; a tie goes to the first.
        KeptCase{"fewest_to_end_then_first_device",
                 {{0, 80 * kGiB, 4}, {1, 80 * kGiB, 4}, {2, 80 * kGiB, 4}},
                 {{"gpu0: 30, 30; gpu1: 30, 10; gpu2: 30, 10; a 70 needs two, one, one",
                   {},
                   {30 * kGiB, 30 * kGiB, 30 * kGiB, 30 * kGiB, 10 * kGiB, 10 * kGiB, 70 * kGiB},
                   {},
                   {{0, 0}, {1, 1}, {2, 2}, {3, 0}, {4, 1}, {5, 2}},
                   6,
                   1,
                   1}}},
        // A GPU smaller than the head is never kept for it; once the head
        // starts and the queue is empty, nothing is kept.
        KeptCase{"a_gpu_too_small_is_not_kept",
                 {{0, 40 * kGiB, 2}, {1, 80 * kGiB, 1}},
                 {{"a 60 waits for gpu1, not gpu0 (40 GiB)",
                   {},
                   {kGiB, kGiB, 60 * kGiB},
                   {},
                   {{0, 1}, {1, 0}},
                   2,
                   1,
                   1},
                  {"gpu1's job ends: the 60; the queue is empty",
                   {0},
                   {},
                   {},
                   {{2, 1}},
                   2,
                   std::nullopt,
                   0}}}),
    [](const testing::TestParamInfo<KeptCase>& info) { return info.param.name; });

// The device kept for the head, against the scan the index replaced: every
// running job of every device (occupants too), sorted by placement, taken
// oldest first. Seeded steps of enqueues, occupants and ends.
struct KeptAgainstScan {
  std::string name;
  std::vector<DeviceSlots> devices;
  std::vector<uint64_t> hints;  // drawn from, per job
  unsigned seed = 0;
};

class JobQueueKeptScan : public testing::TestWithParam<KeptAgainstScan> {};

TEST_P(JobQueueKeptScan, AgreesWithTheScan) {
  const KeptAgainstScan& c = GetParam();
  struct Running {
    size_t pos = 0;
    uint64_t order = 0;
    uint64_t bytes = 0;
  };
  JobQueue q(c.devices);
  std::mt19937 rng(c.seed);
  std::map<size_t, Running> running;  // by job (or occupant key)
  std::map<size_t, uint64_t> queued;  // by job: its hint
  uint64_t placements = 0;
  size_t next = 0;
  size_t next_key = 0;
  auto pos_of = [&](int device) {
    for (size_t p = 0; p < c.devices.size(); ++p) {
      if (c.devices[p].device == device) return p;
    }
    return c.devices.size();
  };
  // The scan: (pos, jobs to end) of the device kept for a head of `need`.
  auto scan = [&](uint64_t need, const std::map<size_t, Running>& state) {
    std::optional<std::pair<size_t, size_t>> best;
    for (size_t pos = 0; pos < c.devices.size(); ++pos) {
      const DeviceSlots& d = c.devices[pos];
      if (need > d.memory_total_bytes) continue;
      std::vector<std::pair<uint64_t, uint64_t>> oldest;  // (order, bytes)
      uint64_t claimed = 0;
      for (const auto& [job, r] : state) {
        if (r.pos != pos) continue;
        oldest.emplace_back(r.order, r.bytes);
        claimed += r.bytes;
      }
      std::sort(oldest.begin(), oldest.end());
      auto jobs = static_cast<int>(oldest.size());
      size_t ending = 0;
      for (const auto& [order, bytes] : oldest) {
        if (best && ending + 1 >= best->second) break;
        ++ending;
        --jobs;
        claimed -= bytes;
        if (jobs + 1 <= d.max_jobs && claimed + need <= d.memory_total_bytes) {
          best = {pos, ending};
          break;
        }
      }
    }
    return best;
  };
  std::uniform_int_distribution<size_t> hint(0, c.hints.size() - 1);
  for (int step = 0; step < 300; ++step) {
    for (size_t n = rng() % 4; n > 0; --n) {
      queued[next] = c.hints[hint(rng)];
      q.enqueue(next, queued[next]);
      ++next;
    }
    if (rng() % 5 == 0) {
      const size_t key = next_key++;
      const int device = c.devices[rng() % c.devices.size()].device;
      const uint64_t bytes = c.hints[hint(rng)];
      q.occupy(key, device, bytes);
      running[key | kOccupantKey] = {pos_of(device), placements++, bytes};
    }
    for (auto it = running.begin(); it != running.end();) {
      if (rng() % 3 == 0) {
        q.finished(it->first);
        it = running.erase(it);
      } else {
        ++it;
      }
    }
    const std::map<size_t, Running> before = running;
    const std::vector<Assignment> placed = q.schedule();
    for (const Assignment& a : placed) {
      running[a.job] = {pos_of(a.device), placements++, queued.at(a.job)};
      queued.erase(a.job);
    }
    if (queued.empty()) continue;
    // The head: the oldest queued job. What the scan sees is what ran when
    // it was found: the jobs placed this step ahead of it, not those after.
    const size_t head = queued.begin()->first;
    std::map<size_t, Running> seen = before;
    for (const Assignment& a : placed) {
      if (a.job < head) seen[a.job] = running[a.job];
    }
    const auto expected = scan(queued.begin()->second, seen);
    const std::optional<WaitingReason> why = q.waiting_reason(head);
    ASSERT_EQ(why.has_value(), expected.has_value()) << "step " << step;
    if (!expected) continue;
    EXPECT_EQ(why->device, c.devices[expected->first].device) << "step " << step;
    EXPECT_EQ(why->jobs_to_end, static_cast<int>(expected->second)) << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Seeds, JobQueueKeptScan,
    testing::Values(KeptAgainstScan{"exclusive",
                                    {{0, 80 * kGiB, 1}, {1, 80 * kGiB, 1}, {2, 80 * kGiB, 1}},
                                    {kGiB},
                                    1},
                    KeptAgainstScan{"four_a_gpu_by_memory",
                                    {{0, 80 * kGiB, 4}, {1, 80 * kGiB, 4}, {2, 40 * kGiB, 4}},
                                    {5 * kGiB, 20 * kGiB, 30 * kGiB, 50 * kGiB},
                                    2},
                    KeptAgainstScan{"uneven_gpus_and_ids",
                                    {{3, 24 * kGiB, 2}, {1, 80 * kGiB, 8}, {0, 48 * kGiB, 3}},
                                    {kGiB, 4 * kGiB, 12 * kGiB, 20 * kGiB},
                                    3}),
    [](const testing::TestParamInfo<KeptAgainstScan>& info) { return info.param.name; });

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

// Each waiting retry that must run alone keeps the device with the fewest
// jobs among those not kept yet; new jobs go around every kept one, and
// around the devices kept for a gang (reserve()).
TEST(JobQueue, WaitingRetriesAndGangsKeepDevicesFromNewJobs) {
  JobQueue q({{0, 80 * kGiB, 4}, {1, 80 * kGiB, 4}, {2, 80 * kGiB, 4}, {3, 80 * kGiB, 4}});
  for (size_t j = 0; j < 7; ++j) q.enqueue(j, std::nullopt);
  ASSERT_EQ(q.schedule().size(), 7u);  // gpu0-2: two jobs each, gpu3: one (job 3)
  q.enqueue_front(100, std::nullopt, 0);
  q.enqueue_front(101, std::nullopt, 0);
  q.enqueue(7, std::nullopt);
  q.enqueue(8, std::nullopt);
  // 101 keeps gpu3 (one job), 100 gpu0 (two, the first of three): the new
  // jobs take gpu1 and gpu2, not the emptiest.
  EXPECT_EQ(q.schedule(), (std::vector<Assignment>{{7, 1}, {8, 2}}));
  q.reserve({1, 2});  // a gang's
  q.enqueue(9, std::nullopt);
  EXPECT_EQ(q.schedule(), (std::vector<Assignment>{})) << "every device kept";
  // gpu3's one job ends: 101 starts there alone; 100 now keeps gpu3 (one
  // job), so the new job takes gpu0, the one device nothing keeps.
  q.finished(3);
  EXPECT_EQ(q.schedule(), (std::vector<Assignment>{{101, 3}, {9, 0}}));
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
