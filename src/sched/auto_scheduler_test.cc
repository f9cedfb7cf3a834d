#include "sched/auto_scheduler.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "common/units.h"

namespace colo {
namespace {

using testing::HasSubstr;

JobProfile profile(double memory_gib, double sm_pct, double samples_per_s = 1000) {
  JobProfile p;
  p.peak_memory_bytes = static_cast<uint64_t>(memory_gib * static_cast<double>(kGiB));
  p.sm_active_pct = sm_pct;
  p.samples_per_s = samples_per_s;
  p.source = "test";
  return p;
}

std::vector<int> devices_of(const std::vector<Decision>& decisions) {
  std::vector<int> out;
  for (const Decision& d : decisions) out.push_back(d.device);
  return out;
}

AutoScheduler make(int gpus, double memory_gib = 80, AutoOptions options = {}) {
  std::vector<GpuSlot> slots;
  for (int i = 0; i < gpus; ++i)
    slots.push_back({i, static_cast<uint64_t>(memory_gib * static_cast<double>(kGiB))});
  return AutoScheduler(slots, options, InterferenceModel{});
}

// Siblings wait for their family's newcomer's measurement: no speculative
// starts (for the tests of what the measurement then decides).
AutoOptions waiting_siblings() {
  AutoOptions options;
  options.speculative_floor_bytes = 1000 * kGiB;
  return options;
}

void enqueue(AutoScheduler& s, const std::string& sig, int count, size_t first = 0) {
  for (int i = 0; i < count; ++i) s.enqueue({first + static_cast<size_t>(i), sig, std::nullopt});
}

// Admission, one table row per situation: what one schedule() call places.
struct AdmissionCase {
  std::string name;
  int gpus;
  double gpu_memory_gib;
  JobProfile profile;
  int jobs;
  std::vector<int> expect_devices;
  ShareMode mode = ShareMode::kSpatial;
};

class Admission : public testing::TestWithParam<AdmissionCase> {};

TEST_P(Admission, PlacesWhatFits) {
  const AdmissionCase& c = GetParam();
  std::vector<GpuSlot> slots;
  for (int i = 0; i < c.gpus; ++i)
    slots.push_back({i, static_cast<uint64_t>(c.gpu_memory_gib * static_cast<double>(kGiB))});
  AutoOptions options;
  options.mode = c.mode;
  AutoScheduler s(slots, options, InterferenceModel{});
  s.set_profile("sig", c.profile);
  enqueue(s, "sig", c.jobs);
  EXPECT_EQ(devices_of(s.schedule(0)), c.expect_devices);
}

INSTANTIATE_TEST_SUITE_P(
    Table, Admission,
    testing::Values(
        // 19% SM each: the model's peak is at five (95% of the GPU's 92%);
        // under MPS progress then stays level (4.55 solo jobs at 14, 4% below
        // the peak), so all 14 start and their start-ups overlap.
        AdmissionCase{"small_jobs_all_while_progress_stays_near_the_peak", 1, 141, profile(1.1, 19),
                      14, std::vector<int>(14, 0)},
        // ... but not without end: the 16th would cost more than 5% of the peak.
        AdmissionCase{"small_jobs_until_the_predicted_loss_exceeds_the_tolerance", 1, 141,
                      profile(1.1, 19), 30, std::vector<int>(15, 0)},
        // 81% each: full with two; four stay within 1% of the peak under MPS.
        AdmissionCase{"saturating_jobs_share_under_mps", 1, 141, profile(10.6, 81), 4,
                      std::vector<int>(4, 0)},
        // Time slicing loses 15% at once: saturating jobs run one at a time.
        AdmissionCase{"saturating_jobs_alone_under_naive_sharing",
                      1,
                      141,
                      profile(10.6, 81),
                      4,
                      {0},
                      ShareMode::kTimeSliced},
        // 30 GiB claims 36.5 GiB with the margin: two fit 79 GiB usable, three do not.
        AdmissionCase{"memory_bound", 1, 80, profile(30, 5), 4, {0, 0}},
        // Spread first (an empty GPU gains most), then pack the least loaded.
        AdmissionCase{"spread_over_gpus", 2, 80, profile(1, 19), 4, {0, 1, 0, 1}},
        // A job alone may use the whole GPU even beyond the reserve and margin.
        AdmissionCase{"big_job_alone", 1, 80, profile(78, 10), 2, {0}}),
    [](const testing::TestParamInfo<AdmissionCase>& info) { return info.param.name; });

TEST(AutoScheduler, SmCapStopsAdmissionWhereTheModelWouldStillAdd) {
  AutoOptions options;
  options.sm_cap_pct = 60;
  AutoScheduler s({{0, 80 * kGiB}}, options, InterferenceModel{});
  s.set_profile("a", profile(1, 19));
  enqueue(s, "a", 5);
  EXPECT_EQ(s.schedule(0).size(), 3u);
}

TEST(AutoScheduler, MemoryLimitIsTheClaim) {
  AutoScheduler s = make(1);
  s.set_profile("a", profile(2, 10));
  enqueue(s, "a", 1);
  std::vector<Decision> d = s.schedule(0);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_TRUE(d[0].memory_limit_bytes);
  EXPECT_EQ(*d[0].memory_limit_bytes, static_cast<uint64_t>(2.4 * kGiB) + (512ull << 20));
}

TEST(AutoScheduler, UnknownProfileIsMeasuredOnAnIdleGpuWhileItsSiblingsStartBesideIt) {
  AutoScheduler s = make(1);
  s.set_label("a", "resnet26");
  enqueue(s, "a", 5);
  std::vector<Decision> all = s.schedule(0);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_TRUE(all[0].probe);
  // The others share what is left, their start-ups overlapping its measurement.
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_FALSE(all[i].probe);
    // The last takes half of what is left: other jobs may come.
    EXPECT_EQ(all[i].memory_limit_bytes, 79 * kGiB / 2 / 4 / (i == 4 ? 2 : 1)) << i;
  }
  EXPECT_THAT(s.take_notes(),
              testing::Contains(HasSubstr("resnet26 and 2 more instances: starting beside its "
                                          "family's newcomer while that is measured")));
  s.learned("a", profile(1, 19), 1000);
  EXPECT_EQ(s.queued(), 0u);
}

TEST(AutoScheduler, UnknownProfileIsMeasuredOnAnIdleGpuThenTheRestFill) {
  AutoScheduler s = make(1, 80, waiting_siblings());
  s.set_label("a", "resnet26");
  enqueue(s, "a", 5);
  std::vector<Decision> first = s.schedule(0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(first[0].probe);
  // Half of all but the reserve: others wait.
  EXPECT_EQ(first[0].memory_limit_bytes, 79 * kGiB / 2);
  EXPECT_THAT(s.take_notes(),
              testing::ElementsAre(HasSubstr("resnet26: never measured; prior: nothing measured on "
                                             "this GPU model yet: a quarter of its memory, half "
                                             "its SMs; starting it on idle gpu0, memory limit "
                                             "39.5 GiB, measured there")));
  EXPECT_TRUE(s.schedule(1000).empty()) << "nothing joins a newcomer while it is measured";
  s.learned("a", profile(1, 19), 0);
  std::vector<Decision> rest = s.schedule(2000);
  EXPECT_EQ(rest.size(), 4u);
  EXPECT_EQ(s.queued(), 0u);
}

TEST(AutoScheduler, OtherSignaturesUseOtherGpusWhileANewcomerIsMeasured) {
  AutoScheduler s = make(2, 80, waiting_siblings());
  s.set_profile("known", profile(1, 19));
  enqueue(s, "known", 2);
  enqueue(s, "unknown", 2, 2);
  std::vector<Decision> d = s.schedule(0);
  // The known jobs start, one per GPU; the newcomer beside one of them; its
  // sibling waits for its measurement.
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(devices_of({d[0], d[1]}), (std::vector<int>{0, 1}));
  EXPECT_EQ(d[2].job, 2u);
  EXPECT_TRUE(d[2].probe);
  EXPECT_EQ(s.queued(), 1u);
}

TEST(AutoScheduler, CombinationThatLowersProgressIsHeldAndNeverFormedAgain) {
  AutoOptions options;
  options.settle_ms = 10'000;
  AutoScheduler s({{0, 80 * kGiB}}, options, InterferenceModel{});
  s.set_label("a", "job");
  s.set_profile("a", profile(1, 19, /*samples_per_s=*/1000));
  enqueue(s, "a", 20);
  ASSERT_EQ(s.schedule(0).size(), 15u);
  // Measured: each runs at 5% of its solo speed: 0.75 solo jobs in all, worse than one alone.
  for (size_t j = 0; j < 15; ++j) s.observe_rate(j, 50, 8000);
  EXPECT_TRUE(s.schedule(9000).empty());
  EXPECT_TRUE(s.take_notes().empty()) << "not judged before settle_ms";
  EXPECT_TRUE(s.schedule(10'000).empty());
  EXPECT_THAT(s.take_notes(),
              testing::ElementsAre(HasSubstr("0.75x the work of its heaviest job alone")));
  EXPECT_THAT(s.bad_combinations(), testing::ElementsAre("job x15"));
  // A job ends: the GPU takes jobs again, but never fifteen at once.
  s.finished(0, JobEnd::kOk, 11'000);
  EXPECT_TRUE(s.schedule(11'000).empty());
  s.finished(1, JobEnd::kOk, 12'000);
  EXPECT_EQ(s.schedule(12'000).size(), 1u);
}

TEST(AutoScheduler, GoodCombinationIsRefilledWithoutWaiting) {
  AutoOptions options;
  options.settle_ms = 10'000;
  AutoScheduler s({{0, 80 * kGiB}}, options, InterferenceModel{});
  s.set_profile("a", profile(1, 19, 1000));
  enqueue(s, "a", 18);
  ASSERT_EQ(s.schedule(0).size(), 15u);
  for (size_t j = 0; j < 15; ++j) s.observe_rate(j, 300, 9000);  // 4.5 solo jobs' worth
  EXPECT_TRUE(s.schedule(10'000).empty());
  EXPECT_TRUE(s.take_notes().empty());
  s.finished(3, JobEnd::kOk, 10'500);
  EXPECT_EQ(s.schedule(10'500).size(), 1u);
  s.finished(4, JobEnd::kOk, 10'600);
  EXPECT_EQ(s.schedule(10'600).size(), 1u) << "the combination is known good";
}

TEST(AutoScheduler, OutOfMemoryIsRetriedWithMoreRoomThenAloneThenGivenUp) {
  AutoScheduler s = make(1);
  s.set_profile("a", profile(4, 10));
  enqueue(s, "a", 3);
  ASSERT_EQ(s.schedule(0).size(), 3u);
  EndVerdict v1 = s.finished(1, JobEnd::kOutOfMemory, 100);
  EXPECT_TRUE(v1.requeued);
  EXPECT_THAT(v1.note, HasSubstr("requeued with 8.0 GiB (attempt 2 of 3)"));
  std::vector<Decision> again = s.schedule(200);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].job, 1u);
  EXPECT_GT(*again[0].memory_limit_bytes, 9 * kGiB);
  EndVerdict v2 = s.finished(1, JobEnd::kOutOfMemory, 300);
  EXPECT_THAT(v2.note, HasSubstr("to run alone"));
  EXPECT_TRUE(s.schedule(400).empty()) << "waits for an empty GPU";
  s.finished(0, JobEnd::kOk, 500);
  s.finished(2, JobEnd::kOk, 500);
  ASSERT_EQ(s.schedule(600).size(), 1u);
  EndVerdict v3 = s.finished(1, JobEnd::kOutOfMemory, 700);
  EXPECT_FALSE(v3.requeued);
  EXPECT_THAT(v3.note, HasSubstr("giving up"));
  EXPECT_EQ(s.queued(), 0u);
}

TEST(AutoScheduler, JobLargerThanEveryGpuIsUnplaceable) {
  AutoScheduler s = make(2, 80);
  s.set_profile("big", profile(100, 50));
  enqueue(s, "big", 1);
  EXPECT_TRUE(s.schedule(0).empty());
  auto bad = s.take_unplaceable();
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_THAT(bad[0].reason, HasSubstr("the largest GPU has 80.0 GiB"));
}

TEST(AutoScheduler, ProbeThatMeasuresTooMuchMemoryMakesItsSiblingsUnplaceable) {
  AutoScheduler s = make(1, 80, waiting_siblings());
  enqueue(s, "a", 3);
  ASSERT_EQ(s.schedule(0).size(), 1u);
  s.learned("a", profile(90, 50), 0);
  EXPECT_EQ(s.take_unplaceable().size(), 2u);
  EXPECT_EQ(s.queued(), 0u);
}

TEST(AutoScheduler, SignatureWhoseQueueEmptiedTakesMeasurementsAndNewJobs) {
  AutoScheduler s = make(1, 80);
  s.set_profile("a", profile(1, 100));
  enqueue(s, "a", 1);
  ASSERT_EQ(s.schedule(0).size(), 1u);  // "a"'s queue is empty now, and kept
  s.finished(0, JobEnd::kOk, 1000);
  enqueue(s, "a", 1, 1);
  EXPECT_EQ(devices_of(s.schedule(1000)), std::vector<int>{0});
  s.learned("a", profile(90, 100), 0);  // too large now, with nothing of "a" queued
  EXPECT_TRUE(s.take_unplaceable().empty());
  enqueue(s, "a", 1, 2);
  ASSERT_EQ(s.take_unplaceable().size(), 1u);
  EXPECT_EQ(s.queued(), 0u);
}

// A job that fills the GPU: 10 s of start-up, then 50 s of work alone.
JobProfile filling_job() {
  JobProfile p = profile(1, 100);
  p.solo_ms = 60'000;
  p.startup_ms = 10'000;
  return p;
}

TEST(AutoScheduler, NextJobStartsWithinItsStartUpOfTheExpectedEnd) {
  AutoScheduler s = make(1);
  s.set_profile("a", filling_job());
  enqueue(s, "a", 2);
  ASSERT_EQ(s.schedule(0).size(), 1u);  // two would lose work: one at a time
  s.observe_rate(0, 1000, 10'000);      // at the solo rate from 10 s: ends at 60 s
  EXPECT_TRUE(s.schedule(49'000).empty());
  std::vector<Decision> d = s.schedule(50'000);  // 60 s is within 10 s of start-up
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 1u);
}

TEST(AutoScheduler, RateSeenAtTheSameInstantMovesTheExpectedEnd) {
  AutoScheduler s = make(1);
  s.set_profile("a", filling_job());
  enqueue(s, "a", 2);
  ASSERT_EQ(s.schedule(0).size(), 1u);
  s.observe_rate(0, 1000, 5'000);
  s.observe_rate(0, 100, 46'000);           // 41 s of work done; a tenth of the rate now
  EXPECT_TRUE(s.schedule(46'000).empty());  // 9 s left at 0.1x: ends at 136 s
  s.observe_rate(0, 1000, 46'000);          // back at the solo rate: ends at 55 s
  EXPECT_EQ(s.schedule(46'000).size(), 1u);
}

TEST(AutoScheduler, DrainReturnsQueuedJobsInArrivalOrder) {
  AutoScheduler s = make(1);
  s.set_profile("a", profile(1, 100));  // one fills the GPU: two lose 8.5%
  s.set_profile("b", profile(1, 100));
  s.enqueue({0, "a", std::nullopt});
  s.enqueue({1, "b", std::nullopt});
  s.enqueue({2, "a", std::nullopt});
  s.enqueue({3, "b", std::nullopt});
  ASSERT_EQ(s.schedule(0).size(), 1u);
  EXPECT_EQ(s.drain_queued(), (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(s.queued(), 0u);
}

TEST(AutoScheduler, BackfillsAroundAJobThatDoesNotFitYet) {
  AutoScheduler s = make(1, 80);
  s.set_profile("big", profile(40, 10));
  s.set_profile("small", profile(1, 10));
  s.enqueue({0, "big", std::nullopt});
  s.enqueue({1, "big", std::nullopt});
  s.enqueue({2, "small", std::nullopt});
  std::vector<Decision> d = s.schedule(0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].job, 0u);
  EXPECT_EQ(d[1].job, 2u);
}

// A queue longer than queue_depth + backfill_depth: each event tries the
// first classes in order, then a window of the rest that moves on, so that a
// job that fits far back in the queue starts within a bounded count of events.
// With `prioritised`, through the ordered walk (priority, fair share).
void ExpectTheBackfillWindowMovesOn(bool prioritised) {
  AutoOptions options;
  options.queue_depth = 2;
  options.backfill_depth = 1;
  AutoScheduler s = make(1, 80, options);
  s.set_profile("running", profile(50, 10));
  s.enqueue({0, "running", std::nullopt});
  ASSERT_EQ(s.schedule(0).size(), 1u);
  for (size_t i = 1; i <= 4; ++i) {
    const std::string sig = fmt::format("big{}", i);
    s.set_profile(sig, profile(50, 10));
    SchedJob job{i, sig, std::nullopt};
    if (prioritised) job.priority = 1;
    s.enqueue(job);
  }
  s.set_profile("small", profile(1, 10));
  s.enqueue({5, "small", std::nullopt});
  // big1 and big2 at every event, then one of big3, big4, small in turn.
  EXPECT_TRUE(s.schedule(1).empty());
  EXPECT_TRUE(s.schedule(2).empty());
  std::vector<Decision> d = s.schedule(3);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 5u);
}

TEST(AutoScheduler, TriesTheQueueDepthThenABackfillWindowThatMovesOnAtEachEvent) {
  ExpectTheBackfillWindowMovesOn(false);
}

TEST(AutoScheduler, TheBackfillWindowMovesOnInAPrioritisedQueueToo) {
  ExpectTheBackfillWindowMovesOn(true);
}

// The longest queued start-up (what next_wakeup_ms() reads) as kept from
// event to event (the walk's listing, each class's start-up found with its
// likeness) against one computed afresh, after every step. Queue depth 2,
// backfill window 2 on one 80 GiB GPU; job 0 ("big", 50 GiB) starts first,
// then nothing of 20 GiB fits beside it: classes s0..s5 (one job each,
// start-ups 10 s x index) and members f0..f3 of family "fam" with no
// profile of their own (estimated from its measured instance, start-up
// 30 s). Steps: "schedule T", "finish JOB T", "set SIG SECONDS" (its own
// profile's start-up), "learn SIG SECONDS T" (a measurement of it),
// "measure SECONDS" (another instance of "fam" measured), "enqueue SIG".
struct StartupCase {
  std::string name;
  std::vector<std::string> steps;
};

class KeptStartups : public testing::TestWithParam<StartupCase> {};

JobProfile with_startup(JobProfile p, int64_t seconds) {
  p.startup_ms = seconds * 1000;
  p.solo_ms = 3'600'000;
  return p;
}

TEST_P(KeptStartups, AreThoseFoundAfresh) {
  AutoOptions options;
  options.queue_depth = 2;
  options.backfill_depth = 2;
  AutoScheduler s = make(1, 80, options);
  s.set_profile("big", with_startup(profile(50, 10), 5));
  s.enqueue({0, "big", std::nullopt});
  size_t job = 1;
  for (int i = 0; i < 6; ++i) {
    const std::string sig = fmt::format("s{}", i);
    s.set_profile(sig, with_startup(profile(20, 10), int64_t{10} * i));
    s.enqueue({job++, sig, std::nullopt});
  }
  s.add_family_instance("fam", {"toy[lr=9]", {{"lr", "9"}}, with_startup(profile(20, 10), 30)});
  for (int i = 0; i < 4; ++i) {
    const std::string sig = fmt::format("f{}", i);
    s.set_family(
        sig, FamilyMember{
                 "fam", fmt::format("toy[lr={}]", i), {{"lr", std::to_string(i)}}, std::nullopt});
    s.enqueue({job++, sig, std::nullopt});
  }
  ASSERT_EQ(s.longest_queued_startup(), s.longest_queued_startup_afresh()) << "before any event";
  int measured = 0;
  for (size_t i = 0; i < GetParam().steps.size(); ++i) {
    std::istringstream in(GetParam().steps[i]);
    std::string verb;
    in >> verb;
    if (verb == "schedule") {
      int64_t t = 0;
      in >> t;
      (void)s.schedule(t);
    } else if (verb == "finish") {
      size_t j = 0;
      int64_t t = 0;
      in >> j >> t;
      (void)s.finished(j, JobEnd::kOk, t);
    } else if (verb == "set") {
      std::string sig;
      int64_t seconds = 0;
      in >> sig >> seconds;
      s.set_profile(sig, with_startup(profile(20, 10), seconds));
    } else if (verb == "learn") {
      std::string sig;
      int64_t seconds = 0;
      int64_t t = 0;
      in >> sig >> seconds >> t;
      s.learned(sig, with_startup(profile(20, 10), seconds), t);
    } else if (verb == "measure") {
      int64_t seconds = 0;
      in >> seconds;
      const std::string lr = std::to_string(100 + measured++);
      s.add_family_instance(
          "fam", {"toy[lr=" + lr + "]", {{"lr", lr}}, with_startup(profile(20, 10), seconds)});
    } else if (verb == "enqueue") {
      std::string sig;
      in >> sig;
      s.enqueue({job++, sig, std::nullopt});
    } else {
      FAIL() << "unknown step " << GetParam().steps[i];
    }
    EXPECT_EQ(s.longest_queued_startup(), s.longest_queued_startup_afresh())
        << "after step " << i << ": " << GetParam().steps[i];
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, KeptStartups,
    testing::Values(StartupCase{"the_window_moves_on",
                                {"schedule 0", "schedule 1", "schedule 2", "schedule 3",
                                 "schedule 4", "schedule 5"}},
                    StartupCase{"a_walked_class_gets_a_longer_start_up",
                                {"schedule 0", "schedule 1", "set s0 500", "schedule 2", "set s1 1",
                                 "schedule 3", "set s0 1", "schedule 4"}},
                    StartupCase{"a_walked_class_gets_a_shorter_start_up_before_any_event",
                                {"schedule 0", "set s1 0", "set s0 0", "schedule 1", "schedule 2"}},
                    StartupCase{"measured_while_queued",
                                {"schedule 0", "schedule 1", "learn s1 700 2", "schedule 3",
                                 "learn s0 1 4", "schedule 5"}},
                    StartupCase{"a_family_estimate_moves",
                                {"schedule 0", "schedule 1", "schedule 2", "schedule 3",
                                 "measure 900", "schedule 4", "schedule 5", "measure 2",
                                 "schedule 6", "learn f1 1 7", "schedule 8"}},
                    StartupCase{"jobs_end_and_start",
                                {"schedule 0", "schedule 1", "finish 0 2", "schedule 2",
                                 "schedule 3", "enqueue s0", "enqueue big", "schedule 4",
                                 "finish 1 5", "schedule 5", "schedule 6"}}),
    [](const auto& info) { return info.param.name; });

TEST(AutoSchedulerSharedData, JobsWhoseDatasetIsBeingReadGoFirst) {
  AutoOptions options;
  options.max_jobs_per_gpu = 2;
  AutoScheduler s({{0, 80 * kGiB}}, options, InterferenceModel{});
  for (const char* sig : {"a", "b", "c"}) s.set_profile(sig, profile(10, 30));
  s.set_host_cost("a", {"imagenet", 4, 1 * kGiB});
  s.set_host_cost("c", {"imagenet", 4, 1 * kGiB});
  enqueue(s, "a", 1, 0);
  ASSERT_EQ(s.schedule(0).size(), 1u);
  enqueue(s, "b", 1, 1);  // queued before c, but reads its own data
  enqueue(s, "c", 1, 2);
  std::vector<Decision> d = s.schedule(1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 2u) << "c shares the running job's loader";
}

TEST(AutoSchedulerSharedData, HostLimitsCountEachLoaderOnce) {
  AutoOptions options;
  options.host_cpus = 6;
  options.host_memory_bytes = 64 * kGiB;
  AutoScheduler s({{0, 80 * kGiB}, {1, 80 * kGiB}}, options, InterferenceModel{});
  for (const char* sig : {"x", "y"}) s.set_profile(sig, profile(10, 30));
  s.set_host_cost("x", {"imagenet", 4, 1 * kGiB});
  s.set_host_cost("y", {"cifar", 4, 1 * kGiB});
  enqueue(s, "x", 3, 0);
  enqueue(s, "y", 1, 3);
  std::vector<Decision> d = s.schedule(0);
  ASSERT_EQ(d.size(), 3u) << "three readers of one dataset cost its loader once";
  for (const Decision& x : d) EXPECT_LT(x.job, 3u);
  EXPECT_TRUE(s.schedule(1).empty()) << "a second loader's 4 threads do not fit 6 CPUs";
  for (size_t j = 0; j < 3; ++j) (void)s.finished(j, JobEnd::kOk, 2);
  d = s.schedule(3);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 3u);
}

TEST(AutoSchedulerSharedData, AJobOnAnIdleHostIsAdmittedWhateverItsLoaderCosts) {
  AutoOptions options;
  options.host_cpus = 2;
  options.host_memory_bytes = 1 * kGiB;
  AutoScheduler s({{0, 80 * kGiB}}, options, InterferenceModel{});
  s.set_profile("big", profile(10, 30));
  s.set_host_cost("big", {"imagenet", 16, 8 * kGiB});
  enqueue(s, "big", 1);
  EXPECT_EQ(s.schedule(0).size(), 1u);
}

TEST(AutoScheduler, RemovesOneQueuedJobWhereverItWaits) {
  AutoScheduler s = make(1);
  s.set_profile("a", profile(1, 100));
  s.set_profile("b", profile(1, 100));
  s.enqueue({0, "a", std::nullopt});
  s.enqueue({1, "b", std::nullopt});
  s.enqueue({2, "a", std::nullopt});
  s.enqueue({3, "b", std::nullopt});
  ASSERT_EQ(s.schedule(0).size(), 1u);
  EXPECT_FALSE(s.remove_queued(0)) << "job 0 runs";
  EXPECT_TRUE(s.remove_queued(1)) << "the head of class b";
  EXPECT_TRUE(s.remove_queued(2));
  EXPECT_FALSE(s.remove_queued(2));
  EXPECT_EQ(s.queued(), 1u);
  (void)s.finished(0, JobEnd::kOk, 1'000);
  std::vector<Decision> d = s.schedule(1'000);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 3u);
}

TEST(AutoScheduler, ExpectedEndOfARunningJobFromItsSoloTime) {
  AutoScheduler s = make(1);
  s.set_profile("a", filling_job());
  enqueue(s, "a", 2);
  ASSERT_EQ(s.schedule(0).size(), 1u);
  EXPECT_EQ(s.expected_end_ms(0, 0), 60'000);
  EXPECT_FALSE(s.expected_end_ms(1, 0)) << "queued";
}

// A job whose solo rate is known (its slowdown too) but not its solo time
// once had no expected end at all. The work of a job like it that ended ok
// (its own signature's, else its family's) gives one, at its own solo rate.
TEST(AutoScheduler, ExpectedEndOfAJobWithASoloRateFromTheWorkOfOneLikeItThatEnded) {
  AutoScheduler s = make(1);
  s.set_family("a", FamilyMember{"fam", "toy[lr=1]", {{"lr", "1"}}, std::nullopt});
  s.set_family("b", FamilyMember{"fam", "toy[lr=2]", {{"lr", "2"}}, std::nullopt});
  s.set_profile("a", profile(10, 20, 100));  // 100 samples/s alone, no solo time
  s.set_profile("b", profile(10, 20, 200));
  s.enqueue({0, "a", std::nullopt});
  s.enqueue({1, "a", std::nullopt});
  s.enqueue({2, "b", std::nullopt});
  ASSERT_EQ(s.schedule(0).size(), 3u);
  EXPECT_FALSE(s.expected_end_ms(0, 0)) << "no solo time, and nothing like it ended";
  // Job 0: 10 s at its solo rate after its first observed rate, then it ends.
  s.observe_rate(0, 100, 1'000);
  s.observe_rate(0, 100, 11'000);
  (void)s.finished(0, JobEnd::kOk, 11'000);  // 1000 samples
  // Job 1, same signature, at half its solo rate: 500 samples done in 10 s,
  // 500 to go at 50 samples/s.
  s.observe_rate(1, 50, 2'000);
  s.observe_rate(1, 50, 12'000);
  EXPECT_EQ(s.expected_end_ms(1, 12'000), 22'000);
  // Job 2, a sibling twice as fast alone, at its solo rate: 1000 samples at 200/s.
  s.observe_rate(2, 200, 2'000);
  EXPECT_EQ(s.expected_end_ms(2, 2'000), 7'000);
  // A job that failed teaches nothing.
  AutoScheduler t = make(1);
  t.set_profile("a", profile(10, 20, 100));
  enqueue(t, "a", 2);
  ASSERT_EQ(t.schedule(0).size(), 2u);
  t.observe_rate(0, 100, 1'000);
  (void)t.finished(0, JobEnd::kFailed, 5'000);
  t.observe_rate(1, 100, 1'000);
  EXPECT_FALSE(t.expected_end_ms(1, 2'000));
}

TEST(FixedScheduler, OutOfMemoryRetriesWithHalfTheNeighboursThenAloneThenGivesUp) {
  FixedScheduler s({{0, 80 * kGiB, 4}}, "fixed");
  for (size_t i = 0; i < 6; ++i) s.enqueue({i, "x", std::nullopt});
  ASSERT_EQ(s.schedule(0).size(), 4u);
  EndVerdict v = s.finished(0, JobEnd::kOutOfMemory, 0);
  EXPECT_TRUE(v.requeued);
  EXPECT_THAT(v.note, HasSubstr("3 other jobs there"));
  EXPECT_THAT(v.note, HasSubstr("at most 1 other jobs (attempt 2 of 3)"));
  // The retry goes first and waits until at most one other job runs
  // there; the GPU drains for it instead of taking the jobs behind it.
  EXPECT_TRUE(s.schedule(0).empty()) << "three others run";
  (void)s.finished(1, JobEnd::kOk, 0);
  EXPECT_TRUE(s.schedule(0).empty()) << "two others run";
  (void)s.finished(2, JobEnd::kOk, 0);
  std::vector<Decision> d = s.schedule(0);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 0u);
  EXPECT_TRUE(s.schedule(0).empty()) << "its device takes no third job while it runs";
  v = s.finished(0, JobEnd::kOutOfMemory, 0);
  EXPECT_TRUE(v.requeued);
  EXPECT_THAT(v.note, HasSubstr("at most 0 other jobs (attempt 3 of 3)"));
  (void)s.finished(3, JobEnd::kOk, 0);
  d = s.schedule(0);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 0u);
  EXPECT_TRUE(s.schedule(0).empty()) << "alone: jobs 4 and 5 wait";
  v = s.finished(0, JobEnd::kOutOfMemory, 0);
  EXPECT_FALSE(v.requeued);
  EXPECT_THAT(v.note, HasSubstr("alone on gpu0"));
}

TEST(FixedScheduler, RemovesOneQueuedJob) {
  FixedScheduler s({{0, 80 * kGiB, 1}}, "fixed");
  for (size_t i = 0; i < 3; ++i) s.enqueue({i, "x", std::nullopt});
  ASSERT_EQ(s.schedule(0).size(), 1u);
  EXPECT_TRUE(s.remove_queued(1));
  EXPECT_FALSE(s.remove_queued(0));
  (void)s.finished(0, JobEnd::kOk, 0);
  std::vector<Decision> d = s.schedule(0);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 2u);
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// A family of signatures "f<i>" with one parameter each, as a grid makes them.
void add_family(AutoScheduler& s, const std::string& param, const std::vector<std::string>& values,
                const std::optional<std::vector<std::string>>& stated = std::nullopt) {
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string sig = "f" + std::to_string(i);
    s.set_family(
        sig,
        FamilyMember{"fam", "toy[" + param + "=" + values[i] + "]", {{param, values[i]}}, stated});
    s.set_label(sig, "toy");
  }
}

size_t probes(const std::vector<Decision>& decisions) {
  return static_cast<size_t>(
      std::count_if(decisions.begin(), decisions.end(), [](const Decision& d) { return d.probe; }));
}

TEST(AutoSchedulerFamilies, OneProbeForTheFamilyThenSiblingsPackFromIt) {
  AutoScheduler s = make(2, 80, waiting_siblings());
  const std::vector<std::string> lrs = {"0.1", "0.05", "0.01", "0.005", "0.001", "0.0005"};
  add_family(s, "lr", lrs);
  for (size_t i = 0; i < lrs.size(); ++i) enqueue(s, "f" + std::to_string(i), 2, 2 * i);
  // Two idle GPUs, six unknown signatures: one newcomer measured, and a
  // second on the GPU that would otherwise idle.
  std::vector<Decision> first = s.schedule(0);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(probes(first), 2u);
  EXPECT_EQ(first[0].job, 0u);
  EXPECT_EQ(devices_of(first), (std::vector<int>{0, 1}));
  EXPECT_THAT(s.take_notes(),
              testing::Contains(HasSubstr("starting it on idle gpu0, memory limit 39.5 GiB, "
                                          "measured there for its family (5 other kinds of job, "
                                          "placed by its measurement)")));
  EXPECT_TRUE(s.schedule(1000).empty());
  s.learned("f0", profile(1.2, 19, 16000), 1000);
  std::vector<Decision> rest = s.schedule(2000);
  EXPECT_EQ(rest.size(), 10u);
  EXPECT_EQ(probes(rest), 0u);
  for (const Decision& d : rest) {
    ASSERT_TRUE(d.estimate.has_value()) << d.job;
    EXPECT_EQ(d.estimate->source, "from sibling toy[lr=0.1]");
    // The sibling's measurement, as its own would be: no widening.
    EXPECT_NEAR(static_cast<double>(*d.memory_limit_bytes), 1.2 * kGiB * 1.2 + (512ull << 20), 2);
  }
  EXPECT_THAT(
      s.take_notes(),
      testing::Contains(HasSubstr(
          "toy[lr=0.05] and 4 more instances: profile from sibling toy[lr=0.1]: 1.2 GiB peak")));
}

TEST(AutoSchedulerFamilies, ASecondProbeTakesTheFarthestValueThenTheRestAreFitted) {
  AutoScheduler s = make(1, 80, waiting_siblings());
  const std::vector<std::string> batches = {"32", "64", "128", "256", "512"};
  add_family(s, "batch_size", batches);
  for (size_t i = 0; i < batches.size(); ++i) enqueue(s, "f" + std::to_string(i), 1, i);
  std::vector<Decision> first = s.schedule(0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].job, 0u);
  // Memory 1 GiB + 16 MiB per sample; SM activity 20% + 0.1 per sample.
  auto truth = [](double batch) {
    return profile(1.0 + batch / 64, 20 + 0.1 * batch, 100 * batch);
  };
  s.learned("f0", truth(32), 1000);
  // batch_size presumed to matter and measured once: nothing to fit yet; the
  // instance that teaches most starts beside the first, measured there.
  EXPECT_EQ(s.usable_profile("f1"), nullptr);
  std::vector<Decision> second = s.schedule(1000);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].job, 4u) << "the farthest value, 512, teaches most";
  EXPECT_TRUE(second[0].probe);
  // Half what the GPU can spare beside the first's claim (1.5 GiB x 1.2 + 512 MiB).
  EXPECT_EQ(*second[0].memory_limit_bytes,
            (79 * kGiB - (static_cast<uint64_t>(1.5 * 1.2 * kGiB) + (512ull << 20))) / 2);
  EXPECT_THAT(s.take_notes(),
              testing::Contains(HasSubstr("toy[batch_size=512]: its family's measurements do not "
                                          "cover it (peak memory: one measured value of "
                                          "batch_size (32): a fit needs two)")));
  s.learned("f4", truth(512), 2000);
  s.measured(0, truth(32));
  s.finished(0, JobEnd::kOk, 2500);
  std::vector<Decision> rest = s.schedule(3000);
  ASSERT_EQ(rest.size(), 3u);
  for (const Decision& d : rest) {
    ASSERT_TRUE(d.estimate.has_value());
    const double batch = std::stod(batches[d.job]);
    const double expected = (1.0 + batch / 64) * kGiB;
    EXPECT_NEAR(static_cast<double>(*d.estimate->peak_memory_bytes), expected, 1e-6 * expected);
    EXPECT_DOUBLE_EQ(d.estimate->memory_uncertainty, 0.05);
    // The claim is widened by the fit's uncertainty.
    EXPECT_EQ(*d.memory_limit_bytes,
              static_cast<uint64_t>(static_cast<double>(*d.estimate->peak_memory_bytes) * 1.25) +
                  (512ull << 20));
    EXPECT_THAT(d.estimate->source, HasSubstr("a fit over batch_size"));
  }
}

TEST(AutoSchedulerFamilies, StatedNeutralParametersNeedNoSecondProbe) {
  AutoScheduler s = make(1, 80, waiting_siblings());
  add_family(s, "batch_size", {"32", "512"}, std::vector<std::string>{});
  enqueue(s, "f0", 1, 0);
  enqueue(s, "f1", 1, 1);
  ASSERT_EQ(s.schedule(0).size(), 1u);
  s.learned("f0", profile(1, 20), 0);
  std::vector<Decision> next = s.schedule(1000);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_FALSE(next[0].probe);
}

TEST(AutoSchedulerFamilies, StoreInstancesSpeakForTheRunAndEndedJobsCorrectThem) {
  AutoScheduler s = make(1);
  add_family(s, "lr", {"0.1", "0.01"});
  FamilyInstance earlier{"toy[lr=0.5]", {{"lr", "0.5"}}, profile(1, 20)};
  s.add_family_instance("fam", earlier);
  enqueue(s, "f0", 1, 0);
  enqueue(s, "f1", 1, 1);
  std::vector<Decision> d = s.schedule(0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(probes(d), 0u);
  EXPECT_EQ(d[0].estimate->source, "from sibling toy[lr=0.5]");
  // f0 really needed 3 GiB: measured at its end, it is f0's own from now on,
  // and lr is seen to matter for memory, so f1's estimate is no longer the
  // sibling's 1 GiB but the line through lr=0.5 (1 GiB) and lr=0.1 (3 GiB):
  // 3.45 GiB at lr=0.01, outside the measured values by 0.09 of their 0.4.
  JobProfile seen;
  seen.peak_memory_bytes = 3 * kGiB;
  s.measured(0, seen);
  s.finished(0, JobEnd::kOk, 1000);
  EXPECT_EQ(*s.usable_profile("f0")->peak_memory_bytes, 3 * kGiB);
  const JobProfile* f1 = s.usable_profile("f1");
  ASSERT_NE(f1, nullptr);
  EXPECT_NEAR(static_cast<double>(*f1->peak_memory_bytes), 3.45 * kGiB, 1e-6 * kGiB);
  EXPECT_NEAR(f1->memory_uncertainty, 0.05 * (1 + 0.09 / 0.4), 1e-9);
  EXPECT_THAT(f1->source, HasSubstr("memory from a fit over lr"));
}

// ------------------------------------------------------------- cold start

JobProfile prior(double memory_gib, double sm_pct) {
  JobProfile p = profile(memory_gib, sm_pct);
  p.samples_per_s.reset();
  p.memory_uncertainty = p.sm_uncertainty = 0.5;
  p.source = "prior: test";
  return p;
}

// A GPU of 80 GiB running two known jobs of 10 GiB (claims 12.5 GiB each).
AutoScheduler two_running(AutoOptions options = {}) {
  AutoScheduler s({{0, 80 * kGiB}}, options, InterferenceModel{});
  s.set_profile("known", profile(10, 20));
  s.set_label("new", "newcomer");
  s.set_prior("new", prior(8, 30));
  enqueue(s, "known", 2);
  EXPECT_EQ(s.schedule(0).size(), 2u);
  return s;
}

TEST(AutoSchedulerColdStart, ANewcomerStartsBesideRunningWorkWithWhatTheGpuCanSpare) {
  AutoScheduler s = two_running();
  enqueue(s, "new", 2, 10);
  enqueue(s, "known", 1, 20);
  std::vector<Decision> d = s.schedule(1000);
  ASSERT_EQ(d.size(), 3u) << "its sibling starts beside it, and a known job fits too";
  EXPECT_EQ(d[0].job, 10u);
  EXPECT_TRUE(d[0].probe);
  const uint64_t claims = 2 * (static_cast<uint64_t>(10 * 1.2 * kGiB) + (512ull << 20));
  const uint64_t spare = 79 * kGiB - claims;
  EXPECT_EQ(*d[0].memory_limit_bytes, spare / 2) << "half: others wait";
  EXPECT_EQ(d[1].job, 11u);
  EXPECT_FALSE(d[1].probe);
  EXPECT_EQ(*d[1].memory_limit_bytes, (spare - spare / 2) / 2) << "half of what is left";
  EXPECT_EQ(d[2].job, 20u);
  EXPECT_FALSE(d[2].probe);
  ASSERT_TRUE(d[0].estimate.has_value());
  EXPECT_EQ(d[0].estimate->source, "prior: test") << "recorded beside what it then measures";
  EXPECT_THAT(s.take_notes(), testing::Contains(HasSubstr("on gpu0 beside 2 running jobs")));
  s.learned("new", profile(6, 30), 2000);
  EXPECT_EQ(s.queued(), 0u);
}

TEST(AutoSchedulerColdStart, AnOverrunFailsTheNewcomerAloneWhichIsRetriedWithWhatItTook) {
  AutoScheduler s = two_running();
  enqueue(s, "new", 1, 10);
  std::vector<Decision> d = s.schedule(1000);
  ASSERT_EQ(d.size(), 1u);
  const uint64_t limit = *d[0].memory_limit_bytes;
  EndVerdict v = s.finished(10, JobEnd::kOutOfMemory, 5000);
  EXPECT_TRUE(v.requeued);
  EXPECT_THAT(v.note, HasSubstr(fmt::format("requeued with {}", format_bytes(limit))));
  EXPECT_TRUE(s.schedule(6000).empty()) << "what it took does not fit beside the known jobs";
  s.finished(0, JobEnd::kOk, 7000);
  s.finished(1, JobEnd::kOk, 7000);
  std::vector<Decision> again = s.schedule(8000);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].job, 10u);
  EXPECT_GE(*again[0].memory_limit_bytes, limit);
}

// Issue 34: speculative siblings start under equal shares of what the GPU
// can spare; once the newcomer holds more than a sibling's limit, that
// sibling cannot fit: the policy asks for it to be stopped, and it waits for
// the measurement, not counted as an attempt. One started later gets at least
// what the newcomer holds.
TEST(AutoSchedulerColdStart, ASiblingTheNewcomerOutgrewIsStoppedAndWaitsForTheMeasurement) {
  AutoScheduler s = make(1);
  s.set_label("a", "cait");
  s.set_prior("a", prior(4, 30));
  enqueue(s, "a", 8);
  std::vector<Decision> d = s.schedule(0);
  ASSERT_EQ(d.size(), 8u) << "7 siblings beside the newcomer";
  EXPECT_TRUE(d[0].probe);
  std::set<size_t> small;
  for (size_t i = 1; i < d.size(); ++i) {
    if (*d[i].memory_limit_bytes < 6 * kGiB) small.insert(d[i].job);
  }
  ASSERT_FALSE(small.empty());
  s.observe_memory(0, 2 * kGiB, 500);
  EXPECT_TRUE(s.take_stops().empty()) << "2 GiB is in every limit";
  s.observe_memory(0, 6 * kGiB, 1000);
  std::vector<Unplaceable> stops = s.take_stops();
  std::set<size_t> stopped;
  for (const Unplaceable& u : stops) {
    stopped.insert(u.job);
    EXPECT_THAT(u.reason, HasSubstr("holds 6.0 GiB of GPU memory already, more than this "
                                    "speculative start's limit"));
  }
  EXPECT_EQ(stopped, small);
  s.observe_memory(0, 6 * kGiB, 1100);
  EXPECT_TRUE(s.take_stops().empty()) << "asked once";
  const size_t first = *stopped.begin();
  EndVerdict v = s.finished(first, JobEnd::kStopped, 2000);
  EXPECT_TRUE(v.requeued);
  EXPECT_THAT(v.note, HasSubstr("not counted as an attempt"));
  EXPECT_TRUE(s.schedule(2000).empty()) << "it waits for the measurement";
  s.learned("a", profile(6, 30), 3000);
  std::vector<Decision> again = s.schedule(3000);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].job, first);
  EXPECT_FALSE(again[0].record) << "placed by the measurement";
}

// A gpu_memory hint without an SM activity one leaves a job a newcomer; its
// hint, not its prior (a quarter of the GPU), is what it claims, and no
// sibling starts under a limit below it (on a simulated H200 under the
// service, a third 60 GiB job started beside two and ran out of memory).
TEST(AutoSchedulerColdStart, ANewcomersMemoryHintOutweighsItsPrior) {
  for (bool limits : {true, false}) {
    SCOPED_TRACE(limits ? "MPS" : "naive");
    AutoOptions options;
    options.memory_limits = limits;
    AutoScheduler s = make(1, 140, options);
    s.set_label("big", "big");
    JobProfile hint;
    hint.peak_memory_bytes = 60 * kGiB;
    hint.source = "hint: jobs.toml:1";
    s.set_profile("big", hint);
    enqueue(s, "big", 3);
    std::vector<Decision> d = s.schedule(0);
    ASSERT_EQ(d.size(), 1u) << "a second would need 72.5 GiB beside its 72.5";
    EXPECT_TRUE(d[0].probe);
    if (limits) EXPECT_GE(*d[0].memory_limit_bytes, 60 * kGiB);
  }
}

TEST(AutoSchedulerColdStart, ASpeculativeStartGetsAtLeastWhatTheNewcomerHoldsSoFar) {
  AutoScheduler s = make(1);
  s.set_label("a", "cait");
  s.set_prior("a", prior(1, 30));
  // Waits (so the newcomer takes half of the GPU), ranked after the siblings:
  // as the queue's head, kept the GPU, it would hold them back.
  s.set_profile("big", profile(60, 30));
  enqueue(s, "a", 1);
  s.enqueue({100, "big", std::nullopt, 1, {}, {}, 0, /*priority=*/-1});
  ASSERT_EQ(s.schedule(0).size(), 1u);
  s.observe_memory(0, 30 * kGiB, 1000);
  enqueue(s, "a", 3, 1);
  std::vector<Decision> d = s.schedule(1000);
  ASSERT_EQ(d.size(), 1u) << "one sibling with room for what the newcomer holds; no more fit";
  EXPECT_GT(*d[0].memory_limit_bytes, 30 * kGiB);
  EXPECT_TRUE(s.take_stops().empty());
}

TEST(AutoSchedulerColdStart, NeighboursSlowedMoreThanPredictedHoldTheGpu) {
  AutoOptions options;
  options.settle_ms = 10'000;
  AutoScheduler s = two_running(options);
  s.observe_rate(0, 1000, 500);
  s.observe_rate(1, 1000, 500);
  enqueue(s, "new", 1, 10);
  ASSERT_EQ(s.schedule(1000).size(), 1u);
  enqueue(s, "known", 3, 20);
  // Measured at 20% SM: the model predicts no slowdown (60% in all) ...
  s.learned("new", profile(4, 20), 2000);
  // ... but the jobs already there fell to half their rates.
  s.observe_rate(0, 500, 3000);
  s.observe_rate(1, 500, 3000);
  s.take_notes();
  EXPECT_TRUE(s.schedule(3000).empty());
  EXPECT_THAT(s.take_notes(),
              testing::Contains(HasSubstr("newcomer slowed the jobs already there to 0.50x of "
                                          "their rates before it (the interference model "
                                          "predicted 1.00x)")));
  EXPECT_EQ(s.bad_combinations().size(), 1u);
  s.finished(0, JobEnd::kOk, 4000);
  EXPECT_TRUE(s.schedule(4000).empty()) << "no longer held, but never the same combination again";
}

// A pair the engine found bad (a protected job below its floor beside an
// opportunistic one: run/floor_watch.h) is never formed again; other
// neighbours still are.
TEST(AutoSchedulerAvoid, APairToAvoidIsNeverFormedAgain) {
  for (const bool avoid : {false, true}) {
    AutoScheduler s = make(1);
    s.set_profile("main", profile(4, 10));
    s.set_profile("filler", profile(4, 10));
    s.set_profile("other", profile(4, 10));
    if (avoid) s.avoid_together({"main", "filler"});
    enqueue(s, "main", 1, 0);
    ASSERT_EQ(s.schedule(0).size(), 1u);
    enqueue(s, "filler", 1, 1);
    EXPECT_EQ(s.schedule(1000).size(), avoid ? 0u : 1u) << "avoid " << avoid;
    enqueue(s, "other", 1, 2);
    EXPECT_EQ(s.schedule(2000).size(), 1u) << "avoid " << avoid;
    EXPECT_EQ(s.bad_combinations().size(), avoid ? 1u : 0u);
  }
}

TEST(AutoSchedulerColdStart, NeighboursAsFastAsPredictedKeepTheGpuOpen) {
  AutoScheduler s = two_running();
  s.observe_rate(0, 1000, 500);
  s.observe_rate(1, 1000, 500);
  enqueue(s, "new", 1, 10);
  ASSERT_EQ(s.schedule(1000).size(), 1u);
  enqueue(s, "known", 2, 20);
  s.learned("new", profile(4, 20), 2000);
  s.observe_rate(0, 980, 3000);
  s.observe_rate(1, 990, 3000);
  EXPECT_EQ(s.schedule(3000).size(), 2u);
  EXPECT_TRUE(s.bad_combinations().empty());
}

TEST(AutoSchedulerColdStart, UnderNaiveSharingANewcomerMustLeaveHeadroom) {
  AutoOptions options;
  options.mode = ShareMode::kTimeSliced;
  options.memory_limits = false;
  AutoScheduler s({{0, 80 * kGiB}}, options, InterferenceModel{});
  s.set_profile("known", profile(45, 10));  // claims 54.5 GiB
  s.set_prior("big", prior(14, 10));        // 14 x 1.2 + 0.5 = 17.3 GiB, + 8 GiB headroom
  s.set_prior("small", prior(3, 10));       // 4.1 GiB + 8 GiB headroom: within the 24.5 spare
  enqueue(s, "known", 1);
  ASSERT_EQ(s.schedule(0).size(), 1u);
  enqueue(s, "big", 1, 1);
  enqueue(s, "small", 1, 2);
  std::vector<Decision> d = s.schedule(1000);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 2u);
  EXPECT_FALSE(d[0].memory_limit_bytes) << "naive sharing has no limits";
}

// Fair share and priorities order the queue; a job that fits is placed
// whatever its rank (nothing idles for fairness).
TEST(AutoSchedulerFairShare, TheOwnerWhoUsedLeastGoesFirstThenArrivalOrder) {
  AutoScheduler s = make(1);
  s.set_profile("a", profile(30, 19));  // two fit 80 GiB with their margins
  s.set_profile("b", profile(30, 19));
  for (size_t j = 0; j < 6; ++j) s.enqueue({j, "a", std::nullopt, 1, {}, {}, /*owner=*/1000});
  ASSERT_EQ(s.schedule(0).size(), 2u);  // alice's first two
  s.enqueue({6, "b", std::nullopt, 1, {}, {}, /*owner=*/2000});
  s.set_usage({{1000, 60'000.0}});  // alice has used a minute; bob nothing
  (void)s.finished(0, JobEnd::kOk, 10'000);
  std::vector<Decision> d = s.schedule(10'000);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 6u) << "bob's job, though alice's came first";
  (void)s.finished(1, JobEnd::kOk, 20'000);
  d = s.schedule(20'000);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 2u) << "then alice's, in the order they came";
}

TEST(AutoSchedulerFairShare, AHigherPriorityGoesFirstWhateverItsOwnerUsed) {
  AutoScheduler s = make(1);
  s.set_profile("a", profile(30, 19));
  s.set_profile("b", profile(30, 19));
  for (size_t j = 0; j < 3; ++j) s.enqueue({j, "a", std::nullopt, 1, {}, {}, 1000});
  s.enqueue({3, "b", std::nullopt, 1, {}, {}, 1000, /*priority=*/10});
  s.set_usage({{1000, 60'000.0}, {2000, 0.0}});
  std::vector<Decision> d = s.schedule(0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].job, 3u) << "the priority-10 job first";
  EXPECT_EQ(d[1].job, 0u);
}

// The head of the queue gets a place (issue 53): the first job in the
// policy's order that cannot start is kept the GPU where it is expected to
// fit first, and later jobs start there only where they do not delay it.
struct ReservationStep {
  std::string what;
  int64_t at_ms = 0;
  std::vector<size_t> finish;                  // jobs that end before this step
  std::vector<SchedJob> enqueue;               // then jobs queued
  std::vector<std::pair<size_t, int>> expect;  // what schedule() places: (job, device)
  // Then queued jobs' reasons (waiting_reason(), worded).
  std::vector<std::pair<size_t, std::string>> reasons = {};
};

struct ReservationCase {
  std::string name;
  int gpus = 1;
  std::map<std::string, JobProfile> profiles;
  std::map<uint32_t, double> usage;
  std::vector<ReservationStep> steps;
};

class Reservation : public testing::TestWithParam<ReservationCase> {};

TEST_P(Reservation, KeepsTheHeadsGpu) {
  const ReservationCase& c = GetParam();
  AutoScheduler s = make(c.gpus);
  for (const auto& [sig, p] : c.profiles) s.set_profile(sig, p);
  if (!c.usage.empty()) s.set_usage(c.usage);
  for (const ReservationStep& step : c.steps) {
    for (size_t j : step.finish) (void)s.finished(j, JobEnd::kOk, step.at_ms);
    for (const SchedJob& j : step.enqueue) s.enqueue(j);
    std::vector<std::pair<size_t, int>> placed;
    for (const Decision& d : s.schedule(step.at_ms)) placed.emplace_back(d.job, d.device);
    EXPECT_EQ(placed, step.expect) << step.what;
    for (const auto& [job, expect] : step.reasons) {
      std::optional<WaitingReason> why = s.waiting_reason(job);
      EXPECT_EQ(why ? describe_waiting(*why, step.at_ms,
                                       [](size_t j) { return fmt::format("job {}", j); })
                    : std::string("none"),
                expect)
          << step.what << ": job " << job;
    }
  }
}

JobProfile timed(double memory_gib, int64_t solo_ms) {
  JobProfile p = profile(memory_gib, 19);
  p.solo_ms = solo_ms;
  return p;
}

SchedJob of(size_t job, const std::string& sig, uint32_t owner = 0) {
  SchedJob j{job, sig, std::nullopt};
  j.owner = owner;
  return j;
}

// 30 GiB claims 36.5 GiB with its margins and 50 GiB 60.5: on 80 GiB (79
// usable), two of 30 fit together, and 50 fits beside none of them.
INSTANTIATE_TEST_SUITE_P(
    Table, Reservation,
    testing::Values(
        // The finding: a newcomer's job that fits only an emptier GPU waited
        // while each place that freed went to the next job of a sweep.
        ReservationCase{"fair_share_head_is_not_overtaken_by_the_sweep_refilling_its_gpu",
                        1,
                        {{"a", profile(30, 19)}, {"b", profile(50, 19)}},
                        {{1000, 60'000.0}},
                        {{"alice's sweep fills the GPU",
                          0,
                          {},
                          {of(0, "a", 1000), of(1, "a", 1000), of(2, "a", 1000), of(3, "a", 1000)},
                          {{0, 0}, {1, 0}}},
                         {"bob's job fits beside none of them",
                          1,
                          {},
                          {of(4, "b", 2000)},
                          {},
                          {{4, "reserved: next on gpu0, when 2 of the jobs there end"},
                           {2, "backfill: may start only where it does not delay job 4"}}},
                         {"a place frees: the sweep does not take it", 10, {0}, {}, {}},
                         {"the GPU empties: bob's job", 20, {1}, {}, {{4, 0}}},
                         {"then the sweep", 30, {4}, {}, {{2, 0}, {3, 0}}}}},
        // Expected ends: a job that ends before the head's expected start
        // backfills; one that would not, waits.
        ReservationCase{"a_job_that_ends_before_the_heads_start_backfills",
                        1,
                        {{"long", timed(30, 100'000)},
                         {"big", profile(50, 19)},
                         {"slow", timed(30, 200'000)},
                         {"short", timed(30, 10'000)}},
                        {},
                        {{"long, then short around big; slow would delay big",
                          0,
                          {},
                          {of(0, "long"), of(1, "big"), of(2, "slow"), of(3, "short")},
                          {{0, 0}, {3, 0}},
                          {{1, "reserved: starts when gpu0's job 0 ends (expected in 1m40s)"},
                           {2, "backfill: may start only where it does not delay job 1"}}},
                         {"long ends: big", 100'000, {0, 3}, {}, {{1, 0}}}}},
        // Two GPUs: the head keeps the one whose job is expected to end
        // first; later jobs go to the other.
        ReservationCase{
            "the_head_keeps_the_gpu_where_it_fits_first",
            2,
            {{"x100", timed(30, 100'000)},
             {"x50", timed(30, 50'000)},
             {"big", profile(50, 19)},
             {"c", timed(30, 1'000'000)}},
            {},
            {{"one job on each GPU", 0, {}, {of(0, "x100"), of(1, "x50")}, {{0, 0}, {1, 1}}},
             {"big waits for gpu1; c goes to gpu0, the next c waits",
              1,
              {},
              {of(2, "big"), of(3, "c"), of(4, "c")},
              {{3, 0}},
              {{2, "reserved: starts when gpu1's job 1 ends (expected in 50.0s)"}}},
             {"gpu1's job ends: big", 50'000, {1}, {}, {{2, 1}}}}},
        // A job that leaves room for the head beside it backfills whatever
        // the ends; a head that fits starts at once.
        ReservationCase{"a_job_that_leaves_the_head_room_backfills",
                        1,
                        {{"big", profile(40, 10)}, {"small", profile(1, 10)}},
                        {},
                        {{"big, then small around the second big",
                          0,
                          {},
                          {of(0, "big"), of(1, "big"), of(2, "small")},
                          {{0, 0}, {2, 0}}},
                         {"the first big ends: the second", 10, {0}, {}, {{1, 0}}}}}),
    [](const testing::TestParamInfo<ReservationCase>& info) { return info.param.name; });

// A head that waits for its family's measurement, not for room, is kept
// nothing: the GPU stays open to the jobs behind it.
TEST(AutoSchedulerReservation, NoGpuIsKeptForAJobWaitingForItsFamilysMeasurement) {
  AutoScheduler s = make(1, 80, waiting_siblings());
  enqueue(s, "new", 3);
  s.set_profile("small", profile(1, 10));
  s.enqueue({3, "small", std::nullopt});
  std::vector<Decision> d = s.schedule(0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(d[0].probe);
  EXPECT_EQ(d[1].job, 3u);
  EXPECT_EQ(s.waiting_reason(1), std::nullopt);
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// Owners taking turns (issue 57): with a daemon per user, MPS servers of
// different users time-slice a GPU, so the policy models a GPU whose jobs
// have two or more owners as naive sharing (owners_time_slice); with one
// multi-user server, owners do not matter. Each row: jobs (signature,
// owner) enqueued in order, where one schedule() places them in either mode.
struct OwnersCase {
  std::string name;
  int gpus;
  std::vector<std::pair<std::string, uint32_t>> jobs;
  std::vector<int> shared;    // devices placed, owners sharing one server
  std::vector<int> separate;  // the same, owners taking turns
};

class OwnersTakingTurns : public testing::TestWithParam<OwnersCase> {};

TEST_P(OwnersTakingTurns, PlacesAsTheOwnersShareTheGpu) {
  const OwnersCase& c = GetParam();
  for (bool separate : {false, true}) {
    AutoOptions options;
    options.owners_time_slice = separate;
    AutoScheduler s = make(c.gpus, 80, options);
    s.set_profile("busy", profile(4, 81));     // 100% busy alone
    s.set_profile("mid", profile(4, 40));      // 80% busy
    s.set_profile("mid2", profile(4, 40));     // the same, queued as a class of its own
    s.set_profile("light", profile(4, 19));    // 38% busy
    s.set_profile("lighter", profile(8, 20));  // 40% busy, more memory
    for (size_t j = 0; j < c.jobs.size(); ++j) {
      SchedJob job{j, c.jobs[j].first, std::nullopt};
      job.owner = c.jobs[j].second;
      s.enqueue(job);
    }
    EXPECT_EQ(devices_of(s.schedule(0)), separate ? c.separate : c.shared)
        << (separate ? "separate" : "shared");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, OwnersTakingTurns,
    testing::Values(
        // One server: two busy jobs share a GPU under MPS whoever owns them.
        // Separate servers time-slice: the second user's waits (as under
        // naive sharing), rather than make both slower than one alone.
        OwnersCase{"busy_jobs_of_two_users", 1, {{"busy", 1}, {"busy", 2}}, {0, 0}, {0}},
        // The same user's busy jobs share under MPS in either mode.
        OwnersCase{"busy_jobs_of_one_user", 1, {{"busy", 1}, {"busy", 1}}, {0, 0}, {0, 0}},
        // Light jobs gain even time-sliced: they share in either mode.
        OwnersCase{"light_jobs_of_two_users", 1, {{"light", 1}, {"light", 2}}, {0, 0}, {0, 0}},
        // A user's second job joins the GPU of their own first one where
        // owners take turns; with one server, where it fits tightest (the
        // other user's GPU: both gain alike under MPS).
        OwnersCase{"a_users_job_joins_its_own_users_gpu",
                   2,
                   {{"mid", 1}, {"lighter", 2}, {"mid2", 1}},
                   {0, 1, 1},
                   {0, 1, 0}},
        // Two mid jobs of one user share a GPU under MPS (0.8 of its
        // work). Where owners take turns, another user's would make all
        // three take turns, less work than the two do now: it waits. With
        // one server it joins them.
        OwnersCase{"a_third_job_of_another_user_waits_rather_than_slice_two_sharing_ones",
                   1,
                   {{"mid", 1}, {"mid", 1}, {"mid2", 2}},
                   {0, 0, 0},
                   {0, 0}},
        // Two users, two GPUs, two busy jobs each arriving user by user:
        // one server mixes them on both GPUs; separate servers keep each
        // GPU one user's, and the second user's jobs wait.
        OwnersCase{"users_kept_apart",
                   2,
                   {{"busy", 1}, {"busy", 1}, {"busy", 2}, {"busy", 2}},
                   {0, 1, 0, 1},
                   {0, 1}}),
    [](const testing::TestParamInfo<OwnersCase>& info) { return info.param.name; });

// A sibling of a newcomer that starts speculatively (unjudged by the model)
// never joins another owner's jobs where owners take turns: it waits for the
// newcomer's measurement instead.
TEST(AutoSchedulerOwners, ASpeculativeStartNeverJoinsAnotherOwnersJobs) {
  for (bool separate : {false, true}) {
    AutoOptions options;
    options.owners_time_slice = separate;
    AutoScheduler s = make(1, 80, options);
    s.set_profile("known", profile(1, 19));
    s.enqueue(of(0, "known", 2));
    for (size_t j = 1; j <= 3; ++j) s.enqueue(of(j, "new", 1));
    std::vector<size_t> placed;
    for (const Decision& d : s.schedule(0)) placed.push_back(d.job);
    const std::vector<size_t> expected =
        separate ? std::vector<size_t>{0, 1} : std::vector<size_t>{0, 1, 2, 3};
    EXPECT_EQ(placed, expected) << (separate ? "separate" : "shared");
  }
}

}  // namespace
}  // namespace colo
