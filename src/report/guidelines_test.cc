#include "report/guidelines.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// A case that ran, with only the numbers the guidelines read: `degree`
// jobs together at `throughput` samples/s in all, each ending four epochs
// of 1000 samples.
CaseMetrics ran(const std::string& workload, const std::string& mechanism, int degree,
                double throughput, double sm_pct, double memory_gib,
                std::optional<double> pcie = std::nullopt,
                std::optional<double> energy = std::nullopt) {
  CaseMetrics c;
  c.row.name = workload + "/" + mechanism + "/" + std::to_string(degree);
  c.row.workload = workload;
  c.row.models = workload == "small" ? "resnet26" : "cait";
  c.row.mechanism = mechanism;
  c.row.degree = degree;
  c.row.status = "ok";
  c.row.run_id = 1;
  RunMetrics r;
  r.steady_throughput_per_s = throughput;
  const double epoch_ms = 1000.0 * degree / throughput * 1000.0;
  for (int k = 1; k <= degree; ++k) {
    JobMetrics j;
    j.name = c.row.models + "#" + std::to_string(k);
    j.model = c.row.models;
    j.start_s = 0;
    j.device = 0;
    for (int e = 1; e <= 4; ++e) {
      j.epoch_ends.push_back({static_cast<UnixMillis>(5000 + (e - 1) * epoch_ms), 1000, e});
    }
    r.jobs.push_back(j);
  }
  r.mean_sm_active_pct = sm_pct;
  r.peak_memory_bytes = static_cast<uint64_t>(memory_gib * testing::kFakeGiB);
  r.mean_pcie_rx_mib_per_s = pcie;
  r.energy_per_epoch_j = energy;
  c.run = r;
  return c;
}

CaseMetrics not_run(const std::string& workload, const std::string& mechanism, int degree,
                    const std::string& status, const std::string& reason) {
  CaseMetrics c;
  c.row.workload = workload;
  c.row.models = workload == "small" ? "resnet26" : "cait";
  c.row.mechanism = mechanism;
  c.row.degree = degree;
  c.row.status = status;
  c.row.reason = reason;
  return c;
}

std::vector<GuidelineFinding> evaluate(std::vector<CaseMetrics> cases) {
  return evaluate_guidelines(experiment_metrics_from(ExperimentRow{}, std::move(cases)));
}

TEST(Guidelines, PaperLikeDataSupportsTheFirstFour) {
  const auto findings = evaluate({
      ran("small", "naive", 1, 1000, 30, 2),
      ran("small", "naive", 2, 1600, 55, 4, 200, 90),
      ran("small", "mps", 2, 1900, 60, 4.2, 300, 80),
      ran("small", "mps", 7, 4000, 90, 14, 900, 60),
      ran("large", "naive", 1, 500, 95, 30),
      ran("large", "naive", 2, 480, 97, 60, 100, 500),
      ran("large", "mps", 2, 560, 98, 61, 150, 450),
      not_run("large", "mps", 7, "does_not_fit", "7 x 30 GiB > 141 GiB"),
      not_run("small", "mig", 7, "not_run", "MIG mode is disabled"),
  });
  ASSERT_EQ(findings.size(), 5u);
  EXPECT_EQ(findings[0].verdict, Verdict::kSupported);
  EXPECT_EQ(findings[1].verdict, Verdict::kSupported);
  EXPECT_EQ(findings[2].verdict, Verdict::kSupported);
  EXPECT_EQ(findings[3].verdict, Verdict::kSupported);
  EXPECT_EQ(findings[4].verdict, Verdict::kNotEnoughData);
  const std::string text = format_guidelines(findings);
  EXPECT_THAT(text, HasSubstr("4.00x"));  // small mps x7
  EXPECT_THAT(text, HasSubstr("1.12x"));  // large mps x2
  EXPECT_THAT(text, HasSubstr("does not fit"));
  EXPECT_THAT(text, HasSubstr("MIG mode is disabled"));
  EXPECT_THAT(text, HasSubstr("on this GPU: supported"));
}

TEST(Guidelines, NoCollocationGainAndMpsLosingAreNotSupported) {
  const auto findings = evaluate({
      ran("small", "naive", 1, 1000, 30, 2),
      ran("small", "naive", 2, 1050, 40, 9, 200),
      ran("small", "mps", 2, 800, 40, 9, 100),
  });
  EXPECT_EQ(findings[0].verdict, Verdict::kNotSupported);   // 1.05x
  EXPECT_EQ(findings[1].verdict, Verdict::kNotEnoughData);  // nothing saturates alone
  EXPECT_EQ(findings[2].verdict, Verdict::kNotSupported);   // 9 GiB against 2 x 2 GiB
  EXPECT_EQ(findings[3].verdict, Verdict::kNotSupported);   // MPS 0.76x naive
}

TEST(Guidelines, SaturatingWorkloadThatStillGainsIsNotSupported) {
  const auto findings = evaluate({
      ran("large", "naive", 1, 500, 95, 30),
      ran("large", "mps", 2, 900, 99, 60),
  });
  EXPECT_EQ(findings[1].verdict, Verdict::kNotSupported);  // 1.8x at 95% SM activity
}

TEST(Guidelines, MigSlowerThanMpsAndLowestEnergyIsSupported) {
  const auto findings = evaluate({
      ran("small", "naive", 1, 1000, 30, 2),
      ran("small", "mps", 3, 2500, 80, 6, std::nullopt, 100),
      ran("small", "mig", 3, 2200, 70, 6, std::nullopt, 90),
  });
  EXPECT_EQ(findings[4].verdict, Verdict::kSupported);
}

TEST(Guidelines, EmptyExperimentHasNotEnoughDataEverywhere) {
  for (const GuidelineFinding& f : evaluate({})) {
    EXPECT_EQ(f.verdict, Verdict::kNotEnoughData) << f.guideline;
    EXPECT_FALSE(f.evidence.empty());
  }
}

TEST(Guidelines, FromAStoreExperiment) {
  auto store = testing::open_memory_store();
  const int64_t id = testing::add_fake_experiment(*store);
  Result<ExperimentMetrics> m = compute_experiment_metrics(*store, id);
  ASSERT_TRUE(m.ok()) << m.error().message();
  const auto findings = evaluate_guidelines(*m);
  EXPECT_EQ(findings[0].verdict, Verdict::kSupported);  // small mps x4: 4/2.4 = 1.67x
  EXPECT_EQ(findings[1].verdict, Verdict::kSupported);  // cait mps x2: 16/15 = 1.07x
}

}  // namespace
}  // namespace colo
