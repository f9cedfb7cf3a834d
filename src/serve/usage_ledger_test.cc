#include "serve/usage_ledger.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "analysis/energy.h"

namespace colo {
namespace {

// Issue 53 (7): a job alone is charged the whole GPU whatever it reports; a
// shared GPU is split by what colo measured, else by the jobs' reports, else
// equally; no report takes a job below half of an equal split.
TEST(FairShare, AJobIsChargedTheShareOfItsGpuColoMeasured) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::string what;
    std::vector<JobOnGpu> jobs;
    std::vector<double> shares;
  };
  const std::vector<Case> cases = {
      {"alone, reporting a tiny rate", {{{}, {}, 0.01}}, {1.0}},
      {"alone, measured idle", {{0.0, {}, {}}}, {1.0}},
      {"two, nothing known: equal", {{}, {}}, {0.5, 0.5}},
      {"two, measured 60/20", {{60.0, {}, 0.1}, {20.0, {}, 0.9}}, {0.75, 0.25}},
      {"two, one unmeasured: by reports", {{60.0, {}, 0.6}, {{}, {}, 0.2}}, {0.75, 0.25}},
      {"two, measured, a report claims nothing", {{50.0, {}, 0.0}, {50.0, {}, 1.0}}, {0.5, 0.5}},
      {"two, unmeasured, MPS shares 30/10", {{{}, 30.0, 0.1}, {{}, 10.0, 0.9}}, {0.75, 0.25}},
      {"two, one reports a tiny rate: at least half of equal",
       {{{}, {}, 0.001}, {{}, {}, 1.0}},
       {0.25, 1.0 / 1.001}},
      {"four, a NaN report: equal",
       {{{}, {}, nan}, {{}, {}, 1.0}, {{}, {}, 1.0}, {{}, {}, 1.0}},
       {0.25, 0.25, 0.25, 0.25}},
      {"three, measured 90/5/5: floors at half of a third",
       {{90.0, {}, {}}, {5.0, {}, {}}, {5.0, {}, {}}},
       {0.9, 1.0 / 6, 1.0 / 6}},
  };
  for (const Case& c : cases) {
    const std::vector<double> got = charged_shares(c.jobs);
    ASSERT_EQ(got.size(), c.shares.size()) << c.what;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], c.shares[i], 1e-9) << c.what;
  }
  EXPECT_TRUE(charged_shares({}).empty());
}

// Issue 56 (5): a GPU a protected job keeps with only opportunistic
// neighbours is charged whole: each neighbour its harvest (measured, else
// reported, else its cap, else equal; within half its placed share and its
// cap), the protected job the rest. Any other GPU is split as before.
TEST(FairShare, AProtectedJobPaysTheGpuTimeItKeepsFromOthers) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto job = [](QosClass qos, std::optional<double> sm = {},
                      std::optional<double> progress = {}, std::optional<double> cap = {}) {
    JobOnGpu j{sm, {}, progress};
    j.qos = qos;
    j.thread_cap_pct = cap;
    return j;
  };
  const QosClass p = QosClass::kProtected;
  const QosClass o = QosClass::kOpportunistic;
  const QosClass n = QosClass::kNormal;
  struct Case {
    std::string what;
    std::vector<JobOnGpu> jobs;
    std::vector<double> shares;
  };
  const std::vector<Case> cases = {
      {"protected alone: the whole GPU", {job(p, 5.0, 0.2)}, {1.0}},
      {"one uncapped neighbour, nothing known: equal (naive sharing)",
       {job(p), job(o)},
       {0.5, 0.5}},
      {"three neighbours capped at 10%, nothing known: their caps",
       {job(p), job(o, {}, {}, 10.0), job(o, {}, {}, 10.0), job(o, {}, {}, 10.0)},
       {0.7, 0.1, 0.1, 0.1}},
      {"three capped at 25%, reporting 0.20/0.20/0.16: their harvest",
       {job(p, {}, 0.72), job(o, {}, 0.20, 25.0), job(o, {}, 0.20, 25.0), job(o, {}, 0.16, 25.0)},
       {0.44, 0.20, 0.20, 0.16}},
      {"a neighbour claiming more than its cap: its cap",
       {job(p), job(o, {}, 0.5, 25.0)},
       {0.75, 0.25}},
      {"a neighbour claiming almost nothing: half its cap",
       {job(p), job(o, {}, 0.01, 10.0)},
       {0.95, 0.05}},
      {"measured 80/10/10, capped at 10%: the measured split",
       {job(p, 80.0, 0.9), job(o, 10.0, 0.02, 10.0), job(o, 10.0, 0.5, 10.0)},
       {0.8, 0.1, 0.1}},
      {"measured, a neighbour unmeasured: by reports",
       {job(p, 80.0), job(o, 10.0, 0.3, 40.0), job(o, {}, 0.2, 40.0)},
       {0.5, 0.3, 0.2}},
      {"a NaN report: its cap", {job(p), job(o, {}, nan, 30.0)}, {0.7, 0.3}},
      {"harvests past the GPU: scaled to leave it half an equal split",
       {job(p), job(o, {}, 0.5), job(o, {}, 0.5), job(o, {}, 0.5)},
       {0.125, 0.875 / 3, 0.875 / 3, 0.875 / 3}},
      {"beside a normal job (MIG): as before", {job(p), job(n)}, {0.5, 0.5}},
      {"two protected: as before", {job(p, 60.0), job(p, 20.0)}, {0.75, 0.25}},
      {"opportunistic jobs without a protected one: as before",
       {job(o, 60.0), job(o, 20.0)},
       {0.75, 0.25}},
      {"a protected job, a normal and an opportunistic one: as before",
       {job(p), job(n), job(o, {}, {}, 10.0)},
       {1.0 / 3, 1.0 / 3, 1.0 / 3}},
  };
  for (const Case& c : cases) {
    const std::vector<double> got = charged_shares(c.jobs);
    ASSERT_EQ(got.size(), c.shares.size()) << c.what;
    double sum = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], c.shares[i], 1e-9) << c.what << ", job " << i;
      sum += got[i];
    }
    if (c.jobs.size() > 1 && c.jobs[0].qos == p && c.jobs[1].qos == o) {
      EXPECT_NEAR(sum, 1.0, 1e-9) << c.what << ": a protected job's GPU is charged whole";
    }
  }
}

// A span's figures, as colo usage shows them per job (colo_serve_test: a job
// alone holds its GPU its whole span; its solo-equivalent time is at most its
// GPU time).
TEST(FairShare, ASpanCountsTheGpuTimeHeldTheSoloEquivalentAndTheCharge) {
  struct Case {
    std::string what;
    double span_ms;
    size_t gpus;
    double charged;
    std::optional<double> rate;
    std::optional<double> solo_rate;
    ServiceJobUsage usage;
  };
  // Where no solo rate is known there is no solo-equivalent time, and the
  // span is not rated (colo usage shows no speed-up for it: issue 58, item 12).
  const std::vector<Case> cases = {
      {"alone, no rates: no solo-equivalent", 1000, 1, 1.0, {}, {}, {1000, 0, 1000, 0}},
      {"shared, half its solo rate", 1000, 1, 0.5, 50.0, 100.0, {1000, 500, 500, 0, 1000, 500}},
      {"shared, claims more than solo: at most the GPU",
       1000,
       1,
       0.5,
       300.0,
       100.0,
       {1000, 1000, 500, 0, 1000, 500}},
      {"a solo rate of 0: unknown", 1000, 1, 0.25, 50.0, 0.0, {1000, 0, 250, 0}},
      {"only its rate known: unknown", 1000, 1, 0.25, 50.0, {}, {1000, 0, 250, 0}},
      {"a gang of 2 at full rate", 500, 2, 2.0, 100.0, 100.0, {1000, 1000, 1000, 0, 1000, 1000}},
      {"no GPU named counts as one", 1000, 0, 0.0, {}, {}, {1000, 0, 0, 0}},
  };
  for (const Case& c : cases) {
    const ServiceJobUsage u = span_usage(c.span_ms, c.gpus, c.charged, c.rate, c.solo_rate);
    EXPECT_DOUBLE_EQ(u.gpu_ms, c.usage.gpu_ms) << c.what;
    EXPECT_DOUBLE_EQ(u.solo_ms, c.usage.solo_ms) << c.what;
    EXPECT_DOUBLE_EQ(u.share_ms, c.usage.share_ms) << c.what;
    EXPECT_DOUBLE_EQ(u.rated_gpu_ms, c.usage.rated_gpu_ms) << c.what;
    EXPECT_DOUBLE_EQ(u.rated_share_ms, c.usage.rated_share_ms) << c.what;
    EXPECT_EQ(u.energy_j, 0) << c.what;
  }
}

TEST(FairShare, AGpusEnergyIsSplitEvenlyAmongTheJobsOnIt) {
  struct Case {
    std::string what;
    std::vector<int> gpus;
    std::map<int, double> joules;
    std::map<int, int> on_gpu;
    double energy_j;
  };
  const std::vector<Case> cases = {
      {"alone", {0}, {{0, 90}}, {{0, 1}}, 90},
      {"one of three", {0}, {{0, 90}}, {{0, 3}}, 30},
      {"a gang: each GPU's share", {0, 1}, {{0, 90}, {1, 40}}, {{0, 3}, {1, 2}}, 50},
      {"no count for its GPU: all of it", {1}, {{1, 40}}, {{0, 3}}, 40},
      {"no energy on its GPU", {2}, {{0, 90}}, {{2, 1}}, 0},
  };
  for (const Case& c : cases) {
    ServiceJobUsage u{.energy_j = 1};
    add_energy_share(u, c.gpus, c.joules, c.on_gpu);
    EXPECT_DOUBLE_EQ(u.energy_j, 1 + c.energy_j) << c.what;
  }
}

DeviceSample power_sample(int device, UnixMillis t, double watts) {
  DeviceSample s;
  s.device = device;
  s.time_ms = t;
  s.power_w = watts;
  return s;
}

TEST(UsageLedger, EachPairOfAGpusSamplesIsCountedOnce) {
  const UsageLedgerOptions options;
  UsageLedger ledger(options, {});
  std::map<int, std::deque<DeviceSample>> recent;
  recent[0] = {power_sample(0, 1000, 100), power_sample(0, 2000, 100)};
  recent[1] = {};
  std::map<int, double> first = ledger.new_energy_j(recent);
  EXPECT_EQ(first, (std::map<int, double>{{0, 100.0}}));
  EXPECT_TRUE(ledger.new_energy_j(recent).empty()) << "nothing new";
  recent[0].push_back(power_sample(0, 3000, 300));
  recent[0].pop_front();  // the history is bounded: the last counted may go
  recent[1] = {power_sample(1, 2500, 50)};
  EXPECT_EQ(ledger.new_energy_j(recent), (std::map<int, double>{{0, 200.0}}));
}

// colo_serve_test's UsageOutlivesARestart...: usage decays with the
// half-life, the total does not, and both outlive a restart (rows, load).
TEST(UsageLedger, UsageDecaysWithItsHalfLifeAndTheTotalDoesNot) {
  struct Step {
    int64_t at_ms;    // monotonic
    double add_ms;    // charged to uid 1 after decaying to at_ms
    double usage_ms;  // then
    double total_ms;
  };
  const std::vector<Step> steps = {
      {0, 1000, 1000, 1000},    // the first call only starts the clock
      {1000, 0, 500, 1000},     // one half-life
      {1000, 500, 1000, 1500},  // no time: no decay
      {3000, 0, 250, 1500},     // two more
      {2000, 0, 250, 1500},     // a clock that went back: no decay
  };
  const UsageLedgerOptions options{.half_life_ms = 1000};
  UsageLedger ledger(options, {});
  for (const Step& s : steps) {
    ledger.decay_to(s.at_ms);
    if (s.add_ms > 0) ledger.add(1, s.add_ms);
    EXPECT_DOUBLE_EQ(ledger.usage().at(1), s.usage_ms) << s.at_ms;
    EXPECT_DOUBLE_EQ(ledger.total().at(1), s.total_ms) << s.at_ms;
  }
  EXPECT_DOUBLE_EQ(decayed(800, 0, 0), 800);
  EXPECT_DOUBLE_EQ(decayed(800, 2, 0), 200) << "a half-life of 0 counts as 1 ms";
}

TEST(UsageLedger, AWeightIsTheOwnersOwnElseTheLargestOfTheirGroupsElseOne) {
  struct Case {
    uid_t owner;
    double weight;
  };
  // uid 1 has its own; uid 2 is in groups 100 (2) and 101 (4); uid 3 in 100.
  const UsageLedgerOptions options{.user_weights = {{1, 3.0}},
                                   .group_weights = {{100, 2.0}, {101, 4.0}}};
  UsageLedger ledger(options, [](uid_t uid, gid_t gid) {
    return (uid == 2 && (gid == 100 || gid == 101)) || (uid == 3 && gid == 100) ||
           (uid == 1 && gid == 101);
  });
  const std::vector<Case> cases = {{1, 3.0}, {2, 4.0}, {3, 2.0}, {4, 1.0}};
  for (const Case& c : cases) {
    ledger.add(c.owner, 1200);
    EXPECT_DOUBLE_EQ(ledger.weight_of(c.owner), c.weight) << c.owner;
    EXPECT_DOUBLE_EQ(ledger.share(c.owner), 1200 / c.weight) << c.owner;
  }
  EXPECT_EQ(ledger.weighted(),
            (std::map<uint32_t, double>{{1, 400.0}, {2, 300.0}, {3, 600.0}, {4, 1200.0}}));
  EXPECT_DOUBLE_EQ(ledger.share(9), 0) << "no usage";
  const UsageLedgerOptions none;
  UsageLedger unweighted(none, {});
  EXPECT_DOUBLE_EQ(unweighted.weight_of(1), 1.0);
}

TEST(UsageLedger, WhatOneServiceKeptTheNextLoadsDecayedOverTheTimeBetween) {
  const UsageLedgerOptions options{.half_life_ms = 1000};
  UsageLedger before(options, {});
  before.set_name(1, "alice");
  before.decay_to(0);
  before.add(1, 800);
  before.add(2, 100);  // a name never given: its uid
  const std::vector<ServiceUsageRow> rows = before.rows(5000);
  EXPECT_EQ(rows,
            (std::vector<ServiceUsageRow>{{1, "alice", 800, 800, 5000}, {2, "2", 100, 100, 5000}}));
  UsageLedger after(options, {});
  after.set_name(1, "alice2");  // a job admitted before: its name stays
  after.load({{1, "alice", 800, 900, 5000}, {3, "carol", 400, 400, 9000}}, 7000);
  EXPECT_DOUBLE_EQ(after.usage().at(1), 200) << "two half-lives later";
  EXPECT_DOUBLE_EQ(after.total().at(1), 900);
  EXPECT_DOUBLE_EQ(after.usage().at(3), 400) << "kept in the future: not decayed";
  EXPECT_EQ(after.names(), (std::map<uid_t, std::string>{{1, "alice2"}, {3, "carol"}}));
}

TEST(UsageLedger, ItIsKeptAtMostEverySoOften) {
  struct Step {
    int64_t at_ms;
    bool due;
  };
  const std::vector<Step> steps = {{100, true},    {5000, false},   {10'099, false},
                                   {10'100, true}, {10'200, false}, {30'000, true}};
  const UsageLedgerOptions options;
  UsageLedger ledger(options, {});
  for (const Step& s : steps) EXPECT_EQ(ledger.keep_due(s.at_ms, 10'000), s.due) << s.at_ms;
}

}  // namespace
}  // namespace colo
