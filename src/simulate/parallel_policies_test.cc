#include "simulate/parallel_policies.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/units.h"

namespace colo {
namespace {

// A mixed workload: known jobs, and a grid of unknown instances of one family
// (the auto policy measures one and estimates the rest), so that each policy
// decides differently and the auto policy's family state is exercised.
std::vector<SimJob> workload() {
  std::vector<SimJob> jobs;
  auto add = [&](const std::string& name, const std::string& sig, double gib, double sm,
                 int64_t solo_ms, bool known) {
    SimJob j;
    j.name = name;
    j.signature = sig;
    j.label = sig;
    j.truth.peak_memory_bytes = static_cast<uint64_t>(gib * static_cast<double>(kGiB));
    j.truth.sm_active_pct = sm;
    j.truth.solo_ms = solo_ms;
    j.truth.samples_per_s = 1000;
    if (known) j.known = j.truth;
    return &jobs.emplace_back(std::move(j));
  };
  for (int i = 0; i < 6; ++i)
    add("known" + std::to_string(i), "known" + std::to_string(i % 3), 3.0 + i, 20.0 + 5 * i,
        60'000 + 7'000 * i, true);
  for (int lr = 0; lr < 4; ++lr) {
    for (int seed = 0; seed < 5; ++seed) {
      const std::string name = fmt::format("sweep[lr={},seed={}]", lr, seed);
      SimJob* j = add(name, "sweep-" + name, 1.5 + 0.5 * lr, 25, 90'000, false);
      j->family = "sweep";
      j->instance = name;
      j->params = {{"lr", std::to_string(lr)}, {"seed", std::to_string(seed)}};
    }
  }
  return jobs;
}

SimOptions options(int gpus) {
  SimOptions o;
  o.gpus = gpus;
  o.gpu_memory_bytes = 80ull * kGiB;
  return o;
}

// What a policy's result says of its decisions (everything but the
// scheduler's own wall time, and the size of its slowest event by that time).
std::string decisions(const PolicyResult& r) {
  std::string out = fmt::format("{} {} {} {} {} {} {} {} {} {}", r.policy.name, r.makespan_ms,
                                r.mean_completion_ms, r.mean_wait_ms, r.jobs_ok, r.jobs_failed,
                                r.retries, r.stopped, r.floor_stops, r.events);
  for (const auto& list : {r.notes, r.failures, r.starts}) {
    for (const std::string& s : list) out += "\n" + s;
  }
  for (const auto& p : r.protected_speeds)
    out += fmt::format("\n{} {} {} {}", p.job, p.min_speed, p.speed, p.floor_stops);
  return out;
}

struct Case {
  const char* policies;
  int gpus;
  size_t threads;
};

class SimulatePolicies : public ::testing::TestWithParam<Case> {};

TEST_P(SimulatePolicies, MatchEachPolicySimulatedInTurn) {
  const Case c = GetParam();
  Result<std::vector<PolicySpec>> policies = parse_policies(c.policies);
  ASSERT_TRUE(policies.ok());
  const std::vector<SimJob> jobs = workload();
  std::vector<size_t> told;
  const std::vector<PolicyResult> parallel = simulate_policies(
      jobs, *policies, options(c.gpus), c.threads, [&](size_t finished, size_t total) {
        EXPECT_EQ(total, policies->size());
        told.push_back(finished);
      });
  ASSERT_EQ(parallel.size(), policies->size());
  for (size_t i = 0; i < policies->size(); ++i) {
    const PolicyResult alone = simulate_policy(jobs, (*policies)[i], options(c.gpus));
    EXPECT_EQ(decisions(parallel[i]), decisions(alone)) << (*policies)[i].name;
  }
  // Progress is told in order and ends with every policy.
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(told.back(), policies->size());
  EXPECT_TRUE(std::is_sorted(told.begin(), told.end()));
}

INSTANTIATE_TEST_SUITE_P(Threads, SimulatePolicies,
                         ::testing::Values(Case{"auto", 2, 0},  // one policy: on the calling thread
                                           Case{"exclusive,naive-all,mps-all,auto", 1, 1},
                                           Case{"exclusive,naive-all,mps-all,auto", 2, 2},
                                           Case{"exclusive,naive-all,mps-all,auto,auto-warm", 4, 4},
                                           Case{"auto,auto,auto,auto,auto,auto,auto,auto", 2, 8},
                                           Case{"exclusive,naive-all,mps-all,auto", 2, 0}));

// bench/policies/protected.toml's jobs as its hints give them: a heavy
// protected training (floor 0.9) beside three light opportunistic ones, all
// submitted together. On one GPU naive-all's closed loop stops neighbours
// for the floor; auto (cold) first measures the protected job's solo rate.
std::vector<SimJob> protected_example() {
  auto job = [](const std::string& name, double gib, double sm, double busy, int64_t solo_ms,
                int64_t startup_ms, QosClass qos) {
    SimJob j;
    j.name = name;
    j.signature = name;
    j.label = name;
    j.truth.peak_memory_bytes = static_cast<uint64_t>(gib * static_cast<double>(kGiB));
    j.truth.sm_active_pct = sm;
    j.truth.gpu_util_pct = busy;
    j.truth.solo_ms = solo_ms;
    j.truth.startup_ms = startup_ms;
    j.known = j.truth;
    j.qos = qos;
    if (qos == QosClass::kProtected) j.min_speed = 0.9;
    return j;
  };
  std::vector<SimJob> jobs = {job("main", 12, 84, 100, 60'000, 10'000, QosClass::kProtected)};
  for (int i = 0; i < 3; ++i)
    jobs.push_back(job("light", 3, 63, 90, 30'000, 8'000, QosClass::kOpportunistic));
  for (SimJob& j : jobs) j.truth.samples_per_s = 1000;
  jobs[1].signature = jobs[2].signature = jobs[3].signature = "light";
  return jobs;
}

// Every policy of the protected example, on threads racing each other (two,
// and one per policy; repeated), decides exactly as on the calling thread
// alone: the closed loop and the protected job's rates depend on nothing
// shared between policies or on the threads' timing.
TEST(SimulatePolicies, ProtectedExampleIsTheSameOnAnyThreads) {
  const std::vector<SimJob> jobs = protected_example();
  const std::vector<PolicySpec> policies = standard_policies(4);
  for (int gpus : {1, 4}) {
    SimOptions o = options(gpus);
    o.gpu_memory_bytes = 140ull * kGiB;
    const std::vector<PolicyResult> serial = simulate_policies(jobs, policies, o, 1);
    ASSERT_EQ(serial.size(), policies.size());
    std::vector<std::string> expected;
    for (const PolicyResult& r : serial) {
      expected.push_back(decisions(r));
      EXPECT_EQ(r.jobs_ok, 4) << r.policy.name;
      ASSERT_EQ(r.protected_speeds.size(), 1u) << r.policy.name;
      // The closed loop runs: naive sharing on one GPU stops neighbours.
      if (gpus == 1 && r.policy.kind == PolicyKind::kNaiveAll) EXPECT_GT(r.floor_stops, 0);
    }
    for (int round = 0; round < 20; ++round) {
      for (size_t threads : {size_t{2}, policies.size()}) {
        const std::vector<PolicyResult> parallel = simulate_policies(jobs, policies, o, threads);
        ASSERT_EQ(parallel.size(), policies.size());
        for (size_t i = 0; i < policies.size(); ++i) {
          ASSERT_EQ(decisions(parallel[i]), expected[i])
              << policies[i].name << " on " << gpus << " GPUs, " << threads << " threads, round "
              << round;
        }
      }
    }
  }
}

TEST(SimulatePolicies, UsableCoresIsAtLeastOne) { EXPECT_GE(usable_cores(), 1u); }

}  // namespace
}  // namespace colo
