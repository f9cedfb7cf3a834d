#include "report/case_metrics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using testing::add_fake_experiment;
using testing::add_fake_run;
using testing::FakeRun;
using testing::kFakeGiB;
using testing::kFakeT0;

TEST(Spread, MedianOfOddAndEvenCountsAndRange) {
  EXPECT_FALSE(spread_of({}).has_value());
  std::optional<Spread> odd = spread_of({3, 1, 2});
  ASSERT_TRUE(odd);
  EXPECT_DOUBLE_EQ(odd->median, 2);
  EXPECT_DOUBLE_EQ(odd->min, 1);
  EXPECT_DOUBLE_EQ(odd->max, 3);
  EXPECT_EQ(odd->count, 3);
  std::optional<Spread> even = spread_of({4, 1, 2, 10});
  ASSERT_TRUE(even);
  EXPECT_DOUBLE_EQ(even->median, 3);
}

TEST(RunMetrics, SecondEpochSteadyMeansMemoryAndEnergyOfOneRun) {
  auto store = testing::open_memory_store();
  FakeRun run;
  run.mechanism = "mps";
  run.degree = 2;
  run.epochs = 4;
  run.warmup_ms = 10'000;
  run.epoch_ms = 6'000;
  run.sm_active_pct = 70;
  run.gpu_util_pct = 99;
  run.power_w = 400;
  run.pcie_rx_mib_per_s = 250;
  run.job_memory_bytes = 3 * kFakeGiB;
  const int64_t id = add_fake_run(*store, run, kFakeT0);
  Result<RunMetrics> m = compute_run_metrics(*store, id);
  ASSERT_TRUE(m.ok()) << m.error().message();
  ASSERT_EQ(m->jobs.size(), 2u);
  EXPECT_EQ(m->jobs[0].model, "resnet26");
  ASSERT_TRUE(m->jobs[0].second_epoch_s);
  EXPECT_DOUBLE_EQ(*m->jobs[0].second_epoch_s, 6.0);
  EXPECT_DOUBLE_EQ(*m->mean_second_epoch_s, 6.0);
  // Steady: from 10 s to 28 s after the jobs start (run started 100 ms earlier).
  EXPECT_NEAR(*m->steady_start_s, 10.1, 1e-9);
  EXPECT_NEAR(*m->steady_end_s, 28.1, 1e-9);
  // Two jobs, each 3 steady epochs of 80000 samples in 18 s.
  EXPECT_NEAR(*m->steady_throughput_per_s, 2 * 3 * 80'000 / 18.0, 1e-6);
  EXPECT_DOUBLE_EQ(*m->mean_sm_active_pct, 70);
  EXPECT_DOUBLE_EQ(*m->mean_gpu_util_pct, 99);
  EXPECT_DOUBLE_EQ(*m->mean_power_w, 400);
  EXPECT_DOUBLE_EQ(*m->mean_pcie_rx_mib_per_s, 250);
  EXPECT_EQ(*m->peak_memory_bytes, 6 * kFakeGiB);
  EXPECT_EQ(*m->summed_job_peak_memory_bytes, 6 * kFakeGiB);
  // 400 W for 18 s over 6 job-epochs.
  EXPECT_EQ(m->steady_epochs, 6);
  EXPECT_NEAR(*m->steady_energy_j, 400 * 18.0, 1e-6);
  EXPECT_NEAR(*m->energy_per_epoch_j, 400 * 18.0 / 6, 1e-6);
  EXPECT_FALSE(m->series.empty());
}

TEST(RunMetrics, EnergyFromTheDriverCounterWhenEverySampleHasIt) {
  auto store = testing::open_memory_store();
  FakeRun run;
  run.power_w = 1.0;
  run.energy_counter_w = 50.0;
  const int64_t id = add_fake_run(*store, run, kFakeT0);
  Result<RunMetrics> m = compute_run_metrics(*store, id);
  ASSERT_TRUE(m.ok()) << m.error().message();
  // One job, steady 10 s (2 epochs of 5 s): the counter's 50 W, not power's 1 W.
  EXPECT_NEAR(*m->steady_energy_j, 500.0, 1e-6);
  EXPECT_NEAR(*m->energy_per_epoch_j, 250.0, 1e-6);
}

TEST(RunMetrics, StaggeredJobsSecondEpochIsPerJobAndSteadyIsTheUnion) {
  auto store = testing::open_memory_store();
  FakeRun run;
  run.degree = 2;
  run.stagger_ms = 4'000;
  const int64_t id = add_fake_run(*store, run, kFakeT0);
  Result<RunMetrics> m = compute_run_metrics(*store, id);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_DOUBLE_EQ(*m->jobs[1].second_epoch_s, 5.0);
  EXPECT_NEAR(*m->steady_start_s, 10.1, 1e-9);
  EXPECT_NEAR(*m->steady_end_s, 24.1, 1e-9);
  EXPECT_EQ(m->steady_epochs, 4);
}

TEST(RunMetrics, JobWithOneEpochHasNoSecondEpochTime) {
  auto store = testing::open_memory_store();
  FakeRun run;
  run.epochs = 1;
  const int64_t id = add_fake_run(*store, run, kFakeT0);
  Result<RunMetrics> m = compute_run_metrics(*store, id);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_FALSE(m->jobs[0].second_epoch_s);
  EXPECT_FALSE(m->mean_second_epoch_s);
  EXPECT_FALSE(m->energy_per_epoch_j);
}

const CaseGroup& group(const ExperimentMetrics& m, const std::string& workload,
                       const std::string& mechanism, int degree) {
  for (const CaseGroup& g : m.groups) {
    if (g.workload == workload && g.mechanism == mechanism && g.degree == degree) return g;
  }
  ADD_FAILURE() << "no group " << workload << " " << mechanism << " " << degree;
  static CaseGroup none;
  return none;
}

TEST(ExperimentMetrics, MediansSpreadsAndSpeedupOverOneJobAlone) {
  auto store = testing::open_memory_store();
  const int64_t id = add_fake_experiment(*store);
  Result<ExperimentMetrics> m = compute_experiment_metrics(*store, id);
  ASSERT_TRUE(m.ok()) << m.error().message();

  // Order: small before large before mixed; exclusive, naive, mps, mig; degree.
  EXPECT_EQ(m->groups.front().workload, "small");
  EXPECT_EQ(m->groups.front().mechanism, "exclusive");
  EXPECT_EQ(m->groups.back().workload, "mixed");

  // Two repetitions: 5.0 s and 5.4 s for one job alone.
  const CaseGroup& alone = group(*m, "small", "exclusive", 1);
  EXPECT_EQ(alone.ok_repetitions, 2);
  EXPECT_DOUBLE_EQ(alone.second_epoch_s->median, 5.2);
  EXPECT_DOUBLE_EQ(alone.second_epoch_s->min, 5.0);
  EXPECT_DOUBLE_EQ(alone.second_epoch_s->max, 5.4);

  // mps x4: epoch 0.6 * 4 * 5 s = 12 s (+0.4 s in repetition 2); steady
  // throughput 4 * 80000 / epoch over the baseline's median throughput.
  const CaseGroup& mps4 = group(*m, "small", "mps", 4);
  ASSERT_TRUE(mps4.baseline);
  EXPECT_EQ(&m->groups[*mps4.baseline], &alone);
  const double base = (80'000 / 5.0 + 80'000 / 5.4) / 2;
  ASSERT_TRUE(mps4.speedup);
  EXPECT_NEAR(mps4.speedup->max, 4 * 80'000 / 12.0 / base, 1e-9);
  EXPECT_NEAR(mps4.speedup->min, 4 * 80'000 / 12.4 / base, 1e-9);
  EXPECT_NEAR(mps4.speedup->median, (mps4.speedup->min + mps4.speedup->max) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(mps4.peak_memory_bytes->median, 8.0 * kFakeGiB);

  // Cases that did not run keep their status and reason.
  const CaseGroup& too_big = group(*m, "large", "mps", 4);
  EXPECT_EQ(too_big.status, "does_not_fit");
  EXPECT_EQ(too_big.reason, "4 x 40 GiB > 141 GiB");
  EXPECT_FALSE(too_big.second_epoch_s);
  EXPECT_EQ(group(*m, "large", "mig", 2).status, "not_run");
  // The large workload has no exclusive case: naive x1 is its baseline.
  const CaseGroup& large_mps2 = group(*m, "large", "mps", 2);
  ASSERT_TRUE(large_mps2.baseline);
  EXPECT_EQ(m->groups[*large_mps2.baseline].mechanism, "naive");
  EXPECT_NEAR(large_mps2.speedup->median, (2 * 80'000 / 15.0) / (80'000 / 8.0), 1e-9);
}

// Two sessions on machines of different speed, and one without a solo case: a
// case's speed-up is against its own experiment's solo rate where it has one.
TEST(ExperimentMetrics, SpeedupAgainstTheSoloRateOfTheSameExperiment) {
  auto store = testing::open_memory_store();
  UnixMillis t = kFakeT0;
  auto experiment = [&](int64_t epoch_ms, bool with_solo) {
    NewExperiment e;
    e.suite = "paper-uniform";
    e.started_ms = t;
    Result<int64_t> id = store->begin_experiment(e);
    EXPECT_TRUE(id.ok());
    for (int degree : {1, 2}) {
      if (degree == 1 && !with_solo) continue;
      FakeRun run;
      run.mechanism = degree == 1 ? "exclusive" : "mps";
      run.degree = degree;
      run.epoch_ms = epoch_ms;  // each of two jobs as fast as one alone: 2x
      CaseRow c;
      c.name = fmt::format("small/resnet26/{}/x{}/r1", run.mechanism, degree);
      c.workload = "small";
      c.models = "resnet26";
      c.mechanism = run.mechanism;
      c.degree = degree;
      Result<int64_t> case_id = store->add_case(*id, c);
      EXPECT_TRUE(case_id.ok());
      const int64_t run_id = add_fake_run(*store, run, t);
      t = testing::fake_run_end_ms(run, t) + 1'000;
      EXPECT_TRUE(store->update_case(*case_id, run_id, "ok", "").ok());
    }
    return *id;
  };
  const int64_t fast = experiment(5'000, true);
  const int64_t slow = experiment(10'000, true);
  const int64_t no_solo = experiment(5'000, false);
  Result<ExperimentMetrics> m = compute_experiments_metrics(*store, {fast, slow, no_solo});
  ASSERT_TRUE(m.ok()) << m.error().message();
  ASSERT_EQ(m->cases.size(), 5U);
  for (const CaseMetrics& c : m->cases) {
    ASSERT_TRUE(c.speedup) << c.row.name << ": " << c.speedup_note;
    if (c.row.experiment_id == no_solo) {
      // Against the median of both sessions' solo rates: 16k and 8k samples/s.
      EXPECT_NEAR(*c.speedup, 2 * 16'000 / 12'000.0, 1e-6);
    } else {
      EXPECT_NEAR(*c.speedup, c.row.degree == 1 ? 1.0 : 2.0, 1e-6) << c.row.experiment_id;
    }
  }
}

}  // namespace
}  // namespace colo
