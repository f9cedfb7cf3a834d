#include "run/in_place_measurement.h"

#include <gtest/gtest.h>

#include "common/units.h"

namespace colo {
namespace {

DeviceSample device(UnixMillis t, double sm) {
  DeviceSample d;
  d.time_ms = t;
  d.sm_active_pct = sm;
  d.gpu_util_pct = 2 * sm;
  return d;
}

TEST(InPlaceMeasurementTest, AloneItPlateausOnceItsMemoryHoldsAfterItsFirstProgress) {
  InPlaceMeasurement m(1000, std::nullopt);
  m.memory(1 * kGiB, 3000);  // start-up: the CUDA context and the model
  m.first_progress(5000);
  m.memory(3 * kGiB, 5500);  // the first step's activations
  m.device(device(5600, 40));
  EXPECT_FALSE(m.plateaued());
  m.memory(3 * kGiB, 6000);
  EXPECT_FALSE(m.plateaued()) << "held for 500 ms only";
  m.memory(static_cast<uint64_t>(3.05 * kGiB), 6600);  // within 2%
  EXPECT_TRUE(m.plateaued());
  m.rate(1200);
  JobProfile p = m.profile("probe: a");
  EXPECT_EQ(p.peak_memory_bytes, static_cast<uint64_t>(3.05 * kGiB));
  EXPECT_EQ(p.sm_active_pct, 40);
  EXPECT_EQ(p.sm_uncertainty, 0);
  EXPECT_EQ(p.samples_per_s, 1200);
  EXPECT_EQ(p.rate_uncertainty, 0) << "alone: its rate is its solo rate";
  EXPECT_EQ(p.startup_ms, 4000);
  EXPECT_EQ(p.source, "probe: a");
}

TEST(InPlaceMeasurementTest, BesideOthersItsShareIsWhatTheGpuDidMoreThanBefore) {
  InPlaceMeasurement m(1000, GpuBaseline{35, 70});
  m.first_progress(3000);
  m.device(device(2500, 35));  // before its first progress: not counted
  m.device(device(3500, 60));
  m.device(device(4000, 60));
  m.device(device(4500, 95), 2);  // another job started beside it since: not counted
  m.memory(2 * kGiB, 3200);
  m.memory(2 * kGiB, 4300);
  EXPECT_TRUE(m.plateaued());
  m.first_epoch(6000, 3000);
  JobProfile p = m.profile("probe: b");
  EXPECT_DOUBLE_EQ(*p.sm_active_pct, 25);
  EXPECT_DOUBLE_EQ(*p.gpu_util_pct, 50);
  EXPECT_DOUBLE_EQ(p.sm_uncertainty, 0.3);
  EXPECT_DOUBLE_EQ(*p.samples_per_s, 1000) << "its first epoch from its first progress";
  EXPECT_DOUBLE_EQ(p.rate_uncertainty, 0.5) << "slowed by its neighbours: not a solo rate";
  EXPECT_TRUE(m.beside_others());
}

TEST(InPlaceMeasurementTest, JoinedBeforeItWorkedItTakesItsShareOfTheLoad) {
  InPlaceMeasurement m(0, std::nullopt);
  m.first_progress(2000);
  m.device(device(2500, 70), 2);  // it and one more began working together
  m.device(device(3000, 80), 2);
  m.memory(kGiB, 2100);
  m.memory(kGiB, 3200);
  EXPECT_TRUE(m.plateaued());
  m.rate(900);
  JobProfile p = m.profile("probe: c");
  EXPECT_DOUBLE_EQ(*p.sm_active_pct, 37.5);
  EXPECT_DOUBLE_EQ(p.sm_uncertainty, 0.5);
  EXPECT_DOUBLE_EQ(p.rate_uncertainty, 0.5);
}

TEST(InPlaceMeasurementTest, WhenItsLastNeighbourLeavesTheGpuIsItsOwn) {
  InPlaceMeasurement m(0, GpuBaseline{60, 100});
  m.first_progress(1000);
  m.device(device(1500, 90));  // 30 beyond its neighbour's 60
  m.neighbour_left(true);
  m.device(device(2500, 30));  // alone now: 30
  EXPECT_DOUBLE_EQ(*m.profile("x").sm_active_pct, 30) << "not 30 - 60";
  InPlaceMeasurement two(0, GpuBaseline{60, 100});
  two.first_progress(1000);
  two.device(device(1500, 90));
  two.neighbour_left(false);     // one of two neighbours left: their load is unknown now
  two.device(device(2500, 45));  // not counted beside the known baseline
  EXPECT_DOUBLE_EQ(*two.profile("x").sm_active_pct, 30);
}

TEST(InPlaceMeasurementTest, WithoutProgressItsMemoryMustHoldLonger) {
  MeasurementOptions options;
  options.without_progress_ms = 10'000;
  InPlaceMeasurement m(0, std::nullopt, options);
  m.memory(2 * kGiB, 1000);
  m.memory(2 * kGiB, 5000);
  EXPECT_FALSE(m.plateaued());
  m.memory(2 * kGiB, 11'000);
  EXPECT_TRUE(m.plateaued());
  EXPECT_FALSE(m.profile("x").sm_active_pct) << "no SM activity without progress to time it";
}

// A GPU's load before a newcomer started: the samples of the window before
// its start, averaged; none in it, zero.
TEST(BaselineBefore, AveragesTheWindowBeforeTheStart) {
  const auto sample = [](UnixMillis t, std::optional<double> sm, std::optional<double> util) {
    DeviceSample d;
    d.time_ms = t;
    d.sm_active_pct = sm;
    d.gpu_util_pct = util;
    return d;
  };
  const std::deque<DeviceSample> samples = {
      sample(1000, 90, 95),            // before the window
      sample(5000, 20, 40),            // in it
      sample(6000, 30, std::nullopt),  // in it: utilization taken as 60
      sample(7000, std::nullopt, 50),  // no SM activity: skipped
      sample(11'000, 80, 80),          // after the start
  };
  const GpuBaseline base = baseline_before(samples, 10'000, 5000);
  EXPECT_DOUBLE_EQ(base.sm_active_pct, 25);
  EXPECT_DOUBLE_EQ(base.gpu_util_pct, 50);
  const GpuBaseline none = baseline_before(samples, 100'000, 5000);
  EXPECT_DOUBLE_EQ(none.sm_active_pct, 0);
  EXPECT_DOUBLE_EQ(none.gpu_util_pct, 0);
}

}  // namespace
}  // namespace colo
