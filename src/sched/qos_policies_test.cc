// The quality-of-service classes (qos_placement.h) as the placing policies
// apply them, AutoScheduler and FixedScheduler (JobQueue): one table row per
// rule, what one schedule() places and why the others wait.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "common/units.h"
#include "sched/auto_scheduler.h"
#include "sched/qos_placement.h"
#include "sched/scheduler.h"

namespace colo {
namespace {

JobProfile profile(double sm_pct) {
  JobProfile p;
  p.peak_memory_bytes = 2 * kGiB;
  p.sm_active_pct = sm_pct;
  p.samples_per_s = 1000;
  p.source = "test";
  return p;
}

struct QueuedAs {
  std::string signature;  // "heavy" (84% SM), "light" (10%), "small" (5%)
  QosClass qos = QosClass::kNormal;
  double min_speed = kDefaultMinSpeed;
  uint32_t owner = 0;
};

struct Started {
  size_t job = 0;
  int device = 0;
  bool opportunistic = false;
  std::optional<int> thread_pct;
  bool operator==(const Started&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Started& s) {
  return os << "{job " << s.job << " on gpu" << s.device << (s.opportunistic ? ", opp" : "")
            << (s.thread_pct ? ", " + std::to_string(*s.thread_pct) + "%" : "") << "}";
}

struct QosCase {
  std::string name;
  int gpus = 1;
  ShareMode mode = ShareMode::kSpatial;
  QosShare share = QosShare::kPriority;
  std::vector<QueuedAs> jobs;  // job i is jobs[i], enqueued in order
  std::vector<Started> expect;
  std::optional<size_t> waiting;  // a job that waits ...
  std::string why;                // ... and why (describe_waiting)
  int max_jobs_per_gpu = 48;
  bool owners_time_slice = false;  // a daemon per user (--mps-users separate)
};

const int kHeavyPct =
    *qos_room({0, QosClass::kProtected, 0.9, 0.84, 100}, QosShare::kPriority).thread_pct;
const int kLightPct =
    *qos_room({0, QosClass::kProtected, 0.9, 0.10, 100}, QosShare::kPriority).thread_pct;
const QueuedAs kHeavyProtected{"heavy", QosClass::kProtected};
const QueuedAs kLightProtected{"light", QosClass::kProtected};
const QueuedAs kOpp{"small", QosClass::kOpportunistic};
const QueuedAs kNormal{"small", QosClass::kNormal};
const QueuedAs kOppOfAnother{"small", QosClass::kOpportunistic, kDefaultMinSpeed, 2};

class AutoQos : public testing::TestWithParam<QosCase> {};

TEST_P(AutoQos, PlacesByClass) {
  const QosCase& c = GetParam();
  std::vector<GpuSlot> slots;
  for (int i = 0; i < c.gpus; ++i) slots.push_back({i, 80 * kGiB});
  AutoOptions options;
  options.mode = c.mode;
  options.qos_share = c.share;
  options.max_jobs_per_gpu = c.max_jobs_per_gpu;
  options.owners_time_slice = c.owners_time_slice;
  AutoScheduler s(slots, options, InterferenceModel{});
  s.set_profile("heavy", profile(84));
  s.set_profile("light", profile(10));
  s.set_profile("small", profile(5));
  s.set_profile("small2", profile(5));
  for (size_t i = 0; i < c.jobs.size(); ++i) {
    SchedJob j{i, c.jobs[i].signature, std::nullopt};
    j.qos = c.jobs[i].qos;
    j.min_speed = c.jobs[i].min_speed;
    j.owner = c.jobs[i].owner;
    s.enqueue(j);
  }
  std::vector<Started> started;
  for (const Decision& d : s.schedule(0))
    started.push_back({d.job, d.device, d.opportunistic, d.opportunistic_thread_pct});
  EXPECT_EQ(started, c.expect);
  if (c.waiting) {
    std::optional<WaitingReason> why = s.waiting_reason(*c.waiting);
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(describe_waiting(*why, 0, [](size_t j) { return "job " + std::to_string(j); }),
              c.why);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, AutoQos,
    testing::Values(
        QosCase{"HeavyProtectedTakesOneCappedNeighbour",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kHeavyProtected, kOpp, kOpp, kOpp},
                {{0, 0, false, std::nullopt}, {1, 0, true, kHeavyPct}},
                2,
                "protected: gpu0 holds job 0, protected at 0.90, which takes at most 1 "
                "opportunistic neighbour at its floor, and has 1"},
        QosCase{"LightProtectedTakesThree",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kLightProtected, kOpp, kOpp, kOpp, kOpp},
                {{0, 0, false, std::nullopt},
                 {1, 0, true, kLightPct},
                 {2, 0, true, kLightPct},
                 {3, 0, true, kLightPct}},
                4,
                "protected: gpu0 holds job 0, protected at 0.90, which takes at most 3 "
                "opportunistic neighbours at its floor, and has 3"},
        // A daemon per user (issue 57's separate mode): another user's
        // opportunistic job lies outside the protected job's server, where
        // no lever reaches it: one neighbour at most, uncapped, as under
        // naive sharing.
        QosCase{"AnotherUsersNeighboursUnderSeparateServersAreAsUnderNaiveSharing",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kLightProtected, kOppOfAnother, kOppOfAnother, kOppOfAnother},
                {{0, 0, false, std::nullopt}, {1, 0, true, std::nullopt}},
                2,
                "protected: gpu0 holds job 0, protected at 0.90, which takes at most 1 "
                "opportunistic neighbour at its floor, and has 1",
                48,
                true},
        // The same with the protected job's own user's neighbours: one
        // server, its levers, three neighbours.
        QosCase{"OneUsersNeighboursUnderSeparateServersKeepTheLevers",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kLightProtected, kOpp, kOpp, kOpp, kOpp},
                {{0, 0, false, std::nullopt},
                 {1, 0, true, kLightPct},
                 {2, 0, true, kLightPct},
                 {3, 0, true, kLightPct}},
                4,
                "protected: gpu0 holds job 0, protected at 0.90, which takes at most 3 "
                "opportunistic neighbours at its floor, and has 3",
                48,
                true},
        QosCase{"NormalNeverJoinsAProtectedJob",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kLightProtected, kNormal},
                {{0, 0, false, std::nullopt}},
                1,
                "protected: gpu0 holds job 0, protected at 0.90, which takes only "
                "opportunistic neighbours"},
        QosCase{"ProtectedNeverJoinsANormalJob",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kNormal, kLightProtected},
                {{0, 0, false, std::nullopt}},
                1,
                "protected: gpu0 holds job 0, which is normal; a protected job shares a GPU "
                "only with opportunistic jobs"},
        QosCase{"TwoGpusKeepTheClassesApart",
                2,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kHeavyProtected, kNormal, kNormal},
                {{0, 0, false, std::nullopt},
                 {1, 1, false, std::nullopt},
                 {2, 1, false, std::nullopt}}},
        QosCase{"NaiveSharingOneNeighbourNoLever",
                1,
                ShareMode::kTimeSliced,
                QosShare::kNone,
                {kLightProtected, kOpp, kOpp},
                {{0, 0, false, std::nullopt}, {1, 0, true, std::nullopt}},
                2,
                "protected: gpu0 holds job 0, protected at 0.90, which takes at most 1 "
                "opportunistic neighbour at its floor, and has 1"},
        QosCase{"MigChangesNothing",
                1,
                ShareMode::kSpatial,
                QosShare::kInstance,
                {kLightProtected, kNormal, kOpp},
                {{0, 0, false, std::nullopt},
                 {1, 0, false, std::nullopt},
                 {2, 0, false, std::nullopt}}},
        QosCase{"OpportunisticGoesAfterNormalJobs",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kOpp, {"light", QosClass::kNormal}},
                {{1, 0, false, std::nullopt}},
                std::nullopt,
                "",
                1},
        QosCase{"OpportunisticFillsBesideNormalUncapped",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kOpp, {"light", QosClass::kNormal}},
                {{1, 0, false, std::nullopt}, {0, 0, true, std::nullopt}}},
        // One signature is one class, first in, first out whatever the classes.
        QosCase{"OneSignatureStaysInOrder",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kOpp, kNormal},
                {{0, 0, true, std::nullopt}, {1, 0, false, std::nullopt}}},
        // A normal job refused by the protected job's GPU: an opportunistic
        // one alike it in everything but its class still starts.
        QosCase{"AnOpportunisticJobAlikeARefusedNormalOneStarts",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {kHeavyProtected, {"small2", QosClass::kNormal}, kOpp},
                {{0, 0, false, std::nullopt}, {2, 0, true, kHeavyPct}},
                1,
                "protected: gpu0 holds job 0, protected at 0.90, which takes only "
                "opportunistic neighbours"},
        QosCase{"AFloorOfOneTakesNoNeighbour",
                1,
                ShareMode::kSpatial,
                QosShare::kPriority,
                {{"heavy", QosClass::kProtected, 1.0}, kOpp},
                {{0, 0, false, std::nullopt}},
                1,
                "protected: gpu0 holds job 0, protected at 1.00, which takes no neighbour at "
                "its floor, and has 0"}),
    [](const testing::TestParamInfo<QosCase>& info) { return info.param.name; });

// The fixed policy: the same rules over JobQueue, up to `degree` jobs per GPU.
struct FixedQosCase {
  std::string name;
  int gpus = 1;
  int degree = 4;
  QosShare share = QosShare::kPriority;
  std::vector<QueuedAs> jobs;  // SM activity by signature as above, given as each job's hint
  std::vector<Started> expect;
  std::optional<size_t> waiting;
  std::string why;
};

class FixedQos : public testing::TestWithParam<FixedQosCase> {};

TEST_P(FixedQos, PlacesByClass) {
  const FixedQosCase& c = GetParam();
  std::vector<DeviceSlots> slots;
  for (int i = 0; i < c.gpus; ++i) slots.push_back({i, 80 * kGiB, c.degree});
  FixedScheduler s(slots, "fixed", 2, c.share);
  for (size_t i = 0; i < c.jobs.size(); ++i) {
    SchedJob j{i, c.jobs[i].signature, std::nullopt};
    j.sm_active_pct = c.jobs[i].signature == "heavy" ? 84 : c.jobs[i].signature == "light" ? 10 : 5;
    j.qos = c.jobs[i].qos;
    j.min_speed = c.jobs[i].min_speed;
    s.enqueue(j);
  }
  std::vector<Started> started;
  for (const Decision& d : s.schedule(0))
    started.push_back({d.job, d.device, d.opportunistic, d.opportunistic_thread_pct});
  EXPECT_EQ(started, c.expect);
  if (c.waiting) {
    std::optional<WaitingReason> why = s.waiting_reason(*c.waiting);
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(describe_waiting(*why, 0, [](size_t j) { return "job " + std::to_string(j); }),
              c.why);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, FixedQos,
    testing::Values(
        FixedQosCase{"HeavyProtectedTakesOneCappedNeighbour",
                     1,
                     4,
                     QosShare::kPriority,
                     {kHeavyProtected, kOpp, kOpp, kOpp},
                     {{0, 0, false, std::nullopt}, {1, 0, true, kHeavyPct}},
                     2,
                     "protected: gpu0 holds job 0, protected at 0.90, which takes at most 1 "
                     "opportunistic neighbour at its floor, and has 1"},
        FixedQosCase{"LightProtectedTakesThree",
                     1,
                     8,
                     QosShare::kPriority,
                     {kLightProtected, kOpp, kOpp, kOpp, kOpp},
                     {{0, 0, false, std::nullopt},
                      {1, 0, true, kLightPct},
                      {2, 0, true, kLightPct},
                      {3, 0, true, kLightPct}}},
        FixedQosCase{"NormalNeverJoinsAProtectedJob",
                     1,
                     4,
                     QosShare::kPriority,
                     {kLightProtected, kNormal},
                     {{0, 0, false, std::nullopt}},
                     1,
                     "protected: gpu0 holds job 0, protected at 0.90, which takes only "
                     "opportunistic neighbours"},
        FixedQosCase{"ProtectedGoesFirst",
                     1,
                     4,
                     QosShare::kPriority,
                     {kNormal, kLightProtected, kNormal},
                     {{1, 0, false, std::nullopt}}},
        FixedQosCase{"ProtectedGoesFirstNormalJobsTakeTheOtherGpu",
                     2,
                     4,
                     QosShare::kPriority,
                     {kNormal, kHeavyProtected, kNormal},
                     {{1, 0, false, std::nullopt},
                      {0, 1, false, std::nullopt},
                      {2, 1, false, std::nullopt}}},
        FixedQosCase{"OpportunisticGoesLast",
                     1,
                     1,
                     QosShare::kPriority,
                     {kOpp, kNormal},
                     {{1, 0, false, std::nullopt}}},
        FixedQosCase{"OpportunisticFillsBesideNormalUncapped",
                     1,
                     4,
                     QosShare::kPriority,
                     {kOpp, kNormal},
                     {{1, 0, false, std::nullopt}, {0, 0, true, std::nullopt}}},
        FixedQosCase{"NaiveSharingOneNeighbourNoLever",
                     1,
                     4,
                     QosShare::kNone,
                     {kLightProtected, kOpp, kOpp},
                     {{0, 0, false, std::nullopt}, {1, 0, true, std::nullopt}}},
        FixedQosCase{"MigChangesNothing",
                     1,
                     4,
                     QosShare::kInstance,
                     {kLightProtected, kNormal, kOpp},
                     {{0, 0, false, std::nullopt},
                      {1, 0, false, std::nullopt},
                      {2, 0, false, std::nullopt}}}),
    [](const testing::TestParamInfo<FixedQosCase>& info) { return info.param.name; });

// A protected job that comes while a normal job runs waits, and its GPU
// takes no new normal job: it drains for it.
// A protected job whose solo rate colo does not know (measured only beside
// other jobs, or never) runs alone until it has one: opportunistic jobs wait
// for its GPU (or take another), and join once learned() gives it one.
struct SoloFirstCase {
  std::string name;
  int gpus = 1;
  std::optional<double> rate_uncertainty;  // of the protected job's rate; nullopt: no rate
  std::vector<Started> before;             // schedule() before its solo rate is known
  std::vector<Started> after;              // ... and after learned() gave it one
};

class SoloFirst : public testing::TestWithParam<SoloFirstCase> {};

TEST_P(SoloFirst, AProtectedJobWithoutASoloRateRunsAloneUntilItHasOne) {
  const SoloFirstCase& c = GetParam();
  std::vector<GpuSlot> slots;
  for (int i = 0; i < c.gpus; ++i) slots.push_back({i, 80 * kGiB});
  AutoScheduler s(slots, AutoOptions{}, InterferenceModel{});
  JobProfile fresh = profile(10);
  fresh.samples_per_s.reset();
  if (c.rate_uncertainty) {
    fresh.samples_per_s = 800;
    fresh.rate_uncertainty = *c.rate_uncertainty;
  }
  s.set_profile("fresh", fresh);
  s.set_profile("small", profile(5));
  SchedJob main{0, "fresh", std::nullopt};
  main.qos = QosClass::kProtected;
  s.enqueue(main);
  for (size_t i = 1; i <= 2; ++i) {
    SchedJob j{i, "small", std::nullopt};
    j.qos = QosClass::kOpportunistic;
    s.enqueue(j);
  }
  auto started = [](const std::vector<Decision>& ds) {
    std::vector<Started> out;
    for (const Decision& d : ds)
      out.push_back({d.job, d.device, d.opportunistic, d.opportunistic_thread_pct});
    return out;
  };
  EXPECT_EQ(started(s.schedule(0)), c.before);
  JobProfile alone;
  alone.samples_per_s = 1000;
  alone.source = "its first steady epoch alone";
  s.learned("fresh", alone, 1000);
  EXPECT_EQ(started(s.schedule(1000)), c.after);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, SoloFirst,
    testing::Values(
        SoloFirstCase{"NeverMeasuredAloneOneGpu",
                      1,
                      kNoSoloRateUncertainty,
                      {{0, 0}},
                      {{1, 0, true, kLightPct}, {2, 0, true, kLightPct}}},
        SoloFirstCase{"NoRateOneGpu",
                      1,
                      std::nullopt,
                      {{0, 0}},
                      {{1, 0, true, kLightPct}, {2, 0, true, kLightPct}}},
        // Another GPU takes the opportunistic jobs meanwhile (uncapped there).
        SoloFirstCase{"NoRateTwoGpus", 2, std::nullopt, {{0, 0}, {1, 1, true}, {2, 1, true}}, {}},
        // A solo rate known already: neighbours from the start.
        SoloFirstCase{
            "KnownAlone", 1, 0.0, {{0, 0}, {1, 0, true, kLightPct}, {2, 0, true, kLightPct}}, {}}),
    [](const auto& info) { return info.param.name; });

TEST(FixedQos, AProtectedJobWaitsForANormalJobAndItsGpuDrains) {
  FixedScheduler s({{0, 80 * kGiB, 4}}, "fixed", 2, QosShare::kPriority);
  s.enqueue({0, "small", std::nullopt});
  EXPECT_EQ(s.schedule(0).size(), 1u);
  SchedJob p{1, "light", std::nullopt};
  p.sm_active_pct = 10;
  p.qos = QosClass::kProtected;
  s.enqueue(p);
  s.enqueue({2, "small", std::nullopt});
  EXPECT_TRUE(s.schedule(1).empty());
  std::optional<WaitingReason> why = s.waiting_reason(1);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(describe_waiting(*why, 0, [](size_t j) { return "job " + std::to_string(j); }),
            "protected: gpu0 holds job 0, which is normal; a protected job shares a GPU only "
            "with opportunistic jobs");
  s.finished(0, JobEnd::kOk, 2);
  std::vector<Decision> next = s.schedule(3);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].job, 1u);
  EXPECT_EQ(s.queued(), 1u);  // job 2, normal, waits for the protected job
}

// A protected job's neighbour ends: the next opportunistic job takes its place.
TEST(FixedQos, AnEndedNeighbourIsReplaced) {
  FixedScheduler s({{0, 80 * kGiB, 4}}, "fixed", 2, QosShare::kPriority);
  for (size_t i = 0; i < 3; ++i) {
    SchedJob j{i, i == 0 ? "heavy" : "small", std::nullopt};
    j.sm_active_pct = i == 0 ? 84 : 5;
    j.qos = i == 0 ? QosClass::kProtected : QosClass::kOpportunistic;
    s.enqueue(j);
  }
  EXPECT_EQ(s.schedule(0).size(), 2u);
  s.finished(1, JobEnd::kOk, 1);
  std::vector<Decision> next = s.schedule(2);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].job, 2u);
  EXPECT_EQ(next[0].opportunistic_thread_pct, kHeavyPct);
  EXPECT_EQ(s.queued(), 0u);
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// Issue 56 on an H100, cold: a heavy protected job never measured starts
// alone as a newcomer; its first measurement has its memory only, the next
// its SM activity (78%) and solo rate. Never-measured opportunistic jobs
// (priors of half the SMs) then join it, one, capped, and not before: the
// running job's load is what the later measurement found, not the 100% put
// down while its SM activity was unknown.
TEST(SoloFirst, NewcomersJoinAColdHeavyProtectedJobOnceItsMeasurementHasItsLoad) {
  AutoScheduler s({{0, 80 * kGiB}}, AutoOptions{}, InterferenceModel{});
  JobProfile prior;
  prior.peak_memory_bytes = 20 * kGiB;
  prior.sm_active_pct = 50;
  prior.memory_uncertainty = prior.sm_uncertainty = 1.0;
  prior.source = "prior: nothing measured";
  for (const char* sig : {"main", "nb"}) s.set_prior(sig, prior);
  SchedJob main{0, "main", std::nullopt};
  main.qos = QosClass::kProtected;
  s.enqueue(main);
  for (size_t i = 1; i <= 3; ++i) {
    SchedJob j{i, "nb", std::nullopt};
    j.qos = QosClass::kOpportunistic;
    s.enqueue(j);
  }
  std::vector<Decision> d = s.schedule(0);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 0u);
  JobProfile memory;
  memory.peak_memory_bytes = 5 * kGiB;
  memory.source = "probe: memory plateaued";
  s.learned("main", memory, 10'000);
  EXPECT_TRUE(s.schedule(10'000).empty());  // alone: no solo rate yet
  JobProfile refined;
  refined.peak_memory_bytes = 6 * kGiB;
  refined.sm_active_pct = 78;
  refined.samples_per_s = 2078;
  refined.source = "probe: refined, alone";
  s.learned("main", refined, 50'000);
  d = s.schedule(50'000);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 1u);
  EXPECT_TRUE(d[0].opportunistic);
  EXPECT_EQ(d[0].opportunistic_thread_pct,
            qos_room({0, QosClass::kProtected, 0.9, 0.78, 100}, QosShare::kPriority).thread_pct);
}

}  // namespace
}  // namespace colo
