#include "sched/gang_scheduler.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "common/units.h"
#include "sched/auto_scheduler.h"

namespace colo {
namespace {

using testing::ElementsAre;
using testing::HasSubstr;

std::unique_ptr<Scheduler> fixed(int gpus, int per_gpu) {
  std::vector<DeviceSlots> slots;
  for (int i = 0; i < gpus; ++i) slots.push_back({i, 80 * kGiB, per_gpu});
  return std::make_unique<FixedScheduler>(slots, "fixed");
}

std::unique_ptr<Scheduler> automatic(int gpus) {
  std::vector<GpuSlot> slots;
  for (int i = 0; i < gpus; ++i) slots.push_back({i, 80 * kGiB});
  return std::make_unique<AutoScheduler>(slots, AutoOptions{}, InterferenceModel{});
}

SchedJob gang(size_t job, int gpus, std::optional<uint64_t> memory = 10 * kGiB) {
  SchedJob j{job, "ddp", memory, gpus};
  j.sm_active_pct = 40;
  return j;
}

// The jobs placed, and the GPUs of each gang among them.
struct Placed {
  std::vector<size_t> jobs;
  std::map<size_t, std::vector<int>> gangs;
};
Placed placed(const std::vector<Decision>& decisions) {
  Placed p;
  for (const Decision& d : decisions) {
    p.jobs.push_back(d.job);
    if (!d.gang_devices.empty()) p.gangs[d.job] = d.gang_devices;
  }
  return p;
}

// Issue 34's case: a gang `ddp` whose prior is 10 GiB and 10% SM per GPU
// (and `known`, when the store has something), then four one-GPU jobs of
// `single_gib` and 10% SM, measured alone. Enqueues the gang (job 0) and the
// four (jobs 1-4).
void gang_beside_singles(GangScheduler& s, std::optional<JobProfile> known, double single_gib,
                         int ddp_gpus = 0, int single_gpus = 0) {
  JobProfile prior;
  prior.peak_memory_bytes = 10 * kGiB;
  prior.sm_active_pct = 10;
  prior.source = "prior: test";
  JobProfile single;
  single.peak_memory_bytes = static_cast<uint64_t>(single_gib * static_cast<double>(kGiB));
  single.sm_active_pct = 10;
  single.samples_per_s = 100;
  single.solo_ms = 100'000;
  SignatureFacts ddp{"ddp", std::move(known)};
  ddp.prior = prior;
  ddp.gpus = ddp_gpus;
  s.introduce("ddp", ddp);
  SignatureFacts singles{"single", single};
  singles.gpus = single_gpus;
  s.introduce("single", singles);
  SchedJob g = gang(0, 2, std::nullopt);
  g.sm_active_pct.reset();
  s.enqueue(g);
  for (size_t j = 1; j < 5; ++j) s.enqueue({j, "single", std::nullopt});
}

TEST(GangScheduler, AGangStartsOnAllItsGpusBesideOneGpuJobsAndNeverOnFewer) {
  GangScheduler s(fixed(2, 2));
  s.enqueue({0, "single", std::nullopt});
  s.enqueue(gang(1, 2));
  for (size_t j = 2; j < 8; ++j) s.enqueue({j, "single", std::nullopt});
  Placed first = placed(s.schedule(0));
  // The gang takes a slot on each GPU; singles fill the other slot of each.
  EXPECT_THAT(first.gangs[1], ElementsAre(0, 1));
  EXPECT_EQ(first.jobs.size(), 3u);
  // A single ends: one slot frees; the next single takes it.
  (void)s.finished(0, JobEnd::kOk, 10);
  Placed second = placed(s.schedule(10));
  EXPECT_EQ(second.jobs.size(), 1u);
  EXPECT_TRUE(second.gangs.empty());
}

TEST(GangScheduler, AGangThatCannotStartKeepsItsGpusAndStartsWhenTheyEmpty) {
  GangScheduler s(fixed(2, 1));
  s.enqueue({0, "single", std::nullopt});
  s.enqueue({1, "single", std::nullopt});
  EXPECT_THAT(placed(s.schedule(0)).jobs, ElementsAre(0, 1));
  s.enqueue(gang(2, 2));
  for (size_t j = 3; j < 20; ++j) s.enqueue({j, "single", std::nullopt});
  EXPECT_TRUE(placed(s.schedule(1)).jobs.empty());
  EXPECT_THAT(s.reserved(), ElementsAre(0, 1));
  std::vector<std::string> notes = s.take_notes();
  ASSERT_FALSE(notes.empty());
  EXPECT_THAT(notes.front(), HasSubstr("gpu0, gpu1 kept for it"));
  // The stream of singles behind it does not take the freed GPU.
  (void)s.finished(0, JobEnd::kOk, 5);
  EXPECT_TRUE(placed(s.schedule(5)).jobs.empty());
  (void)s.finished(1, JobEnd::kOk, 9);
  Placed p = placed(s.schedule(9));
  EXPECT_THAT(p.gangs[2], ElementsAre(0, 1));
  EXPECT_THAT(p.jobs, ElementsAre(2));
  EXPECT_TRUE(s.reserved().empty());
  (void)s.finished(2, JobEnd::kOk, 20);
  EXPECT_EQ(placed(s.schedule(20)).jobs.size(), 2u) << "singles again";
}

// A job on the kept GPUs that never ends must not hold the machine: after
// kReservationBoundMs the reservation expires, saying why, the GPUs take
// other jobs again, and the gang keeps none for another bound, yet starts
// when its GPUs are free.
TEST(GangScheduler, AReservationExpiresAfterItsBoundAndTheGpusOpenAgain) {
  constexpr int64_t kBound = GangScheduler::kReservationBoundMs;
  GangScheduler s(fixed(2, 1));
  s.enqueue({0, "single", std::nullopt});
  s.enqueue({1, "single", std::nullopt});
  EXPECT_THAT(placed(s.schedule(0)).jobs, ElementsAre(0, 1));
  s.enqueue(gang(2, 2));
  for (size_t j = 3; j < 6; ++j) s.enqueue({j, "single", std::nullopt});
  EXPECT_TRUE(placed(s.schedule(1)).jobs.empty());
  EXPECT_THAT(s.reserved(), ElementsAre(0, 1));
  (void)s.take_notes();
  EXPECT_TRUE(placed(s.schedule(1 + kBound)).jobs.empty());
  EXPECT_THAT(s.reserved(), ElementsAre(0, 1)) << "not before its bound";
  EXPECT_TRUE(placed(s.schedule(2 + kBound)).jobs.empty());
  EXPECT_TRUE(s.reserved().empty());
  std::vector<std::string> notes = s.take_notes();
  ASSERT_FALSE(notes.empty());
  EXPECT_THAT(notes.front(), HasSubstr("could not start in 30m00s of keeping gpu0, gpu1; they are "
                                       "open to every job again"));
  // A GPU that frees now takes a single: nothing is kept.
  (void)s.finished(0, JobEnd::kOk, 3 + kBound);
  EXPECT_THAT(placed(s.schedule(3 + kBound)).jobs, ElementsAre(3));
  EXPECT_TRUE(s.reserved().empty());
  // After another bound it keeps GPUs again, and starts once they empty.
  (void)s.schedule(3 + 2 * kBound);
  EXPECT_THAT(s.reserved(), ElementsAre(0, 1));
  (void)s.finished(1, JobEnd::kOk, 4 + 2 * kBound);
  (void)s.finished(3, JobEnd::kOk, 4 + 2 * kBound);
  EXPECT_THAT(placed(s.schedule(4 + 2 * kBound)).gangs[2], ElementsAre(0, 1));
}

TEST(GangScheduler, NeverMeasuredGangHasItsGpusToItself) {
  GangScheduler s(fixed(2, 4));
  s.enqueue(gang(0, 2, std::nullopt));
  for (size_t j = 1; j < 4; ++j) s.enqueue({j, "single", std::nullopt});
  Placed p = placed(s.schedule(0));
  EXPECT_THAT(p.jobs, ElementsAre(0));
  std::vector<std::string> notes = s.take_notes();
  ASSERT_FALSE(notes.empty());
  EXPECT_THAT(notes.front(), HasSubstr("has to itself until it is measured"));
  // Measured (12 GiB over two GPUs: 6 per GPU), the next one shares.
  JobProfile seen;
  seen.peak_memory_bytes = 12 * kGiB;
  s.measured(0, seen);
  (void)s.finished(0, JobEnd::kOk, 10);
  s.enqueue(gang(4, 2, std::nullopt));
  Placed next = placed(s.schedule(10));
  EXPECT_EQ(next.gangs.size(), 1u);
  EXPECT_EQ(next.jobs.size(), 4u) << "the gang and the three singles at once";
}

// Issue 34: under memory limits, a gang never measured with a prior starts
// at once beside one-GPU jobs, each rank under its prior's claim, and the
// one-GPU jobs fill the room beside it; an overrun requeues it with twice
// that, and without limits it still has its GPUs to itself.
TEST(GangScheduler, ANewcomerGangWithAPriorStartsBesideOneGpuJobsUnderItsLimit) {
  for (bool limits : {true, false}) {
    SCOPED_TRACE(limits ? "memory limits" : "no limits");
    GangScheduler s(automatic(2), 2, limits);
    gang_beside_singles(s, std::nullopt, 8);
    const uint64_t half = s.rooms(0)[0].memory_free_bytes / 2;
    std::vector<Decision> d = s.schedule(0);
    Placed p = placed(d);
    EXPECT_THAT(p.gangs[0], ElementsAre(0, 1));
    if (!limits) {
      EXPECT_THAT(p.jobs, ElementsAre(0)) << "its GPUs to itself";
      continue;
    }
    EXPECT_EQ(p.jobs.size(), 5u) << "the gang and the four one-GPU jobs at once";
    EXPECT_EQ(d[0].memory_limit_bytes, half) << "half of what a GPU spares: more than the prior";
    ASSERT_TRUE(d[0].estimate.has_value());
    EXPECT_THAT(s.take_notes(),
                testing::Contains(HasSubstr(fmt::format(
                    "ddp: a gang never measured; prior: test; starting it on gpu0, gpu1, memory "
                    "limit {} per GPU",
                    format_bytes(half)))));
    EndVerdict v = s.finished(0, JobEnd::kOutOfMemory, 10);
    EXPECT_TRUE(v.requeued);
    EXPECT_THAT(v.note, HasSubstr("whole gang is requeued"));
  }
}

// SignatureFacts::gpus: the facts of a signature whose jobs need one GPU go
// to the policy alone (the GangScheduler reads facts only for gangs); the
// same decisions and notes whichever signatures say how many GPUs they need.
TEST(GangScheduler, FactsOfOneGpuSignaturesReachThePolicyAlone) {
  struct Case {
    const char* name;
    std::optional<JobProfile> ddp_known;
    int ddp_gpus;
    int single_gpus;
  };
  JobProfile memory_only;
  memory_only.peak_memory_bytes = 2 * kGiB;
  memory_only.source = "store";
  const std::vector<Case> cases = {
      {"newcomer gang, one-GPU facts known as such", std::nullopt, 0, 1},
      {"newcomer gang, both counted", std::nullopt, 2, 1},
      {"known gang, one-GPU facts known as such", memory_only, 0, 1},
      {"known gang, both counted", memory_only, 2, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    GangScheduler unknown(automatic(2), 2, true);
    gang_beside_singles(unknown, c.ddp_known, 8);
    GangScheduler told(automatic(2), 2, true);
    gang_beside_singles(told, c.ddp_known, 8, c.ddp_gpus, c.single_gpus);
    std::vector<Decision> want = unknown.schedule(0);
    std::vector<Decision> got = told.schedule(0);
    EXPECT_EQ(got, want);
    EXPECT_EQ(placed(got).jobs.size(), 5u) << "the gang and the four one-GPU jobs at once";
    EXPECT_EQ(told.take_notes(), unknown.take_notes());
    EXPECT_EQ(told.finished(0, JobEnd::kOutOfMemory, 10).note,
              unknown.finished(0, JobEnd::kOutOfMemory, 10).note);
    EXPECT_EQ(told.schedule(20), unknown.schedule(20));
  }
}

// The store knows a gang's memory from an earlier run but not its SM
// activity (it never ran alone): it takes its prior's, not "as busy as a GPU
// gets", or the warm run on an H200 x2 kept four one-GPU jobs behind it.
TEST(GangScheduler, AGangKnownByItsMemoryAloneTakesItsPriorsSmActivity) {
  JobProfile memory_only;
  memory_only.peak_memory_bytes = 2 * kGiB;
  memory_only.source = "store";
  GangScheduler s(automatic(2), 2, true);
  gang_beside_singles(s, memory_only, 1);
  Placed p = placed(s.schedule(0));
  EXPECT_THAT(p.gangs[0], ElementsAre(0, 1));
  EXPECT_EQ(p.jobs.size(), 5u) << "the four one-GPU jobs start beside it";
}

TEST(GangScheduler, AGangNeedingMoreGpusThanThereAreIsUnplaceable) {
  GangScheduler s(fixed(2, 2));
  s.enqueue(gang(0, 4));
  EXPECT_TRUE(s.schedule(0).empty());
  std::vector<Unplaceable> u = s.take_unplaceable();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_THAT(u[0].reason, HasSubstr("needs 4 GPUs at once"));
  EXPECT_EQ(s.queued(), 0u);
}

// A gang whose memory per GPU no GPU of the machine holds once waited
// forever with its GPUs kept for it, and another user's one-GPU job waited
// behind it on an idle machine: it fails at once, under either policy.
TEST(GangScheduler, AGangNoGpuOfTheMachineCanHoldFailsAtOnceAndHoldsNothing) {
  for (bool auto_policy : {false, true}) {
    SCOPED_TRACE(auto_policy ? "auto" : "fixed");
    GangScheduler s(auto_policy ? automatic(2) : fixed(2, 2));
    s.enqueue(gang(0, 2, 200 * kGiB));
    s.enqueue({1, "single", 2 * kGiB});
    Placed first = placed(s.schedule(0));
    std::vector<Unplaceable> u = s.take_unplaceable();
    ASSERT_EQ(u.size(), 1u);
    EXPECT_EQ(u[0].job, 0u);
    EXPECT_THAT(u[0].reason, HasSubstr("needs 2 GPUs of 200 GiB each at once"));
    EXPECT_THAT(u[0].reason, HasSubstr("this machine has 0 such GPUs"));
    EXPECT_THAT(first.jobs, ElementsAre(1u)) << "the one-GPU job starts on the idle machine";
  }
}

TEST(GangScheduler, OutOfMemoryRequeuesTheWholeGangWithMoreMemory) {
  GangScheduler s(fixed(2, 2));
  s.enqueue(gang(0, 2));
  ASSERT_EQ(s.schedule(0).size(), 1u);
  EndVerdict v = s.finished(0, JobEnd::kOutOfMemory, 5);
  EXPECT_TRUE(v.requeued);
  EXPECT_THAT(v.note, HasSubstr("whole gang is requeued with 24.0 GiB per GPU"));
  std::vector<Decision> again = s.schedule(6);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].gang_devices.size(), 2u);
  EXPECT_EQ(again[0].memory_limit_bytes, static_cast<uint64_t>(24 * kGiB * 1.2) + 0);
  v = s.finished(0, JobEnd::kOutOfMemory, 7);
  EXPECT_TRUE(v.requeued);
  EXPECT_THAT(v.note, HasSubstr("to have its GPUs to itself"));
  ASSERT_EQ(s.schedule(8).size(), 1u);
  v = s.finished(0, JobEnd::kOutOfMemory, 9);
  EXPECT_FALSE(v.requeued);
}

TEST(GangScheduler, UnderAutoSinglesBackfillAKeptGpuOnlyIfTheyEndFirst) {
  GangScheduler s(automatic(2));
  JobProfile long_job;
  long_job.peak_memory_bytes = 30 * kGiB;
  long_job.sm_active_pct = 20;
  long_job.samples_per_s = 100;
  long_job.solo_ms = 100'000;
  JobProfile short_job = long_job;
  short_job.solo_ms = 10'000;
  s.introduce("long", SignatureFacts{"long", long_job});
  s.introduce("short", SignatureFacts{"short", short_job});
  s.enqueue({0, "long", std::nullopt});
  s.enqueue({1, "long", std::nullopt});
  EXPECT_THAT(placed(s.schedule(0)).jobs, ElementsAre(0, 1));
  s.enqueue(gang(2, 2, 60 * kGiB));
  s.enqueue({3, "short", std::nullopt});
  s.enqueue({4, "long", std::nullopt});
  Placed p = placed(s.schedule(0));
  // The gang waits for both GPUs (expected free at 100 s); the short job
  // (10 s, at most 20 s shared by two) backfills; the third long one, which
  // would fit as well, does not.
  EXPECT_THAT(p.jobs, ElementsAre(3));
  EXPECT_THAT(s.reserved(), ElementsAre(0, 1));
  (void)s.finished(0, JobEnd::kOk, 100'000);
  (void)s.finished(1, JobEnd::kOk, 100'000);
  (void)s.finished(3, JobEnd::kOk, 20'000);
  Placed q = placed(s.schedule(100'000));
  EXPECT_EQ(q.gangs.size(), 1u);
  EXPECT_THAT(q.gangs[2], ElementsAre(0, 1));
}

TEST(GangScheduler, CancellingAWaitingGangReleasesItsGpus) {
  GangScheduler s(fixed(2, 1));
  s.enqueue({0, "single", std::nullopt});
  EXPECT_THAT(placed(s.schedule(0)).jobs, ElementsAre(0));
  s.enqueue(gang(1, 2));
  s.enqueue({2, "single", std::nullopt});
  EXPECT_TRUE(placed(s.schedule(0)).jobs.empty());
  EXPECT_TRUE(s.remove_queued(1));
  EXPECT_THAT(placed(s.schedule(1)).jobs, ElementsAre(2));
}

}  // namespace
}  // namespace colo
