#include "sched/interference.h"

#include <gtest/gtest.h>

#include <vector>

namespace colo {
namespace {

std::vector<SoloLoad> copies(int n, double sm, double busy) {
  return std::vector<SoloLoad>(static_cast<size_t>(n), SoloLoad{sm, busy});
}

// The defaults against the H100 measurements they were fitted to
// (docs/results/2026-11-23-h100-study, profiles.txt): the collocated speed-up
// with each workload's solo SM activity and utilization.
struct Point {
  const char* what;
  ShareMode mode;
  int jobs;
  double sm, busy;
  double measured;
};

TEST(InterferenceModel, DefaultsAreWithinFifteenPercentOfTheH100Measurements) {
  InterferenceModel m;
  for (const Point& p : {Point{"resnet26 mps x2", ShareMode::kSpatial, 2, 11, 25, 1.89},
                         Point{"resnet26 mps x3", ShareMode::kSpatial, 3, 11, 25, 3.45},
                         Point{"resnet26 mps x7", ShareMode::kSpatial, 7, 11, 25, 7.88},
                         Point{"resnet50 mps x2", ShareMode::kSpatial, 2, 22, 36, 1.80},
                         Point{"resnet50 mps x3", ShareMode::kSpatial, 3, 22, 36, 3.01},
                         Point{"resnet50 mps x7", ShareMode::kSpatial, 7, 22, 36, 4.30},
                         Point{"cait mps x2", ShareMode::kSpatial, 2, 82, 100, 1.14},
                         Point{"cait mps x3", ShareMode::kSpatial, 3, 82, 100, 1.19},
                         Point{"cait naive x2", ShareMode::kTimeSliced, 2, 82, 100, 0.89},
                         Point{"cait naive x3", ShareMode::kTimeSliced, 3, 82, 100, 0.90}}) {
    double predicted = m.total(p.mode, copies(p.jobs, p.sm, p.busy));
    EXPECT_NEAR(predicted / p.measured, 1.0, 0.15) << p.what << ": predicted " << predicted;
  }
}

// Under MPS the measured throughput levels off and stays level past the
// point where the summed SM activity fills the GPU.
TEST(InterferenceModel, SpatialWorkPeaksWhereTheGpuFillsAndStaysNearlyFlatAfter) {
  InterferenceModel m;
  const double peak = m.peak_work(ShareMode::kSpatial, copies(14, 19, 37));
  EXPECT_NEAR(peak, m.work(ShareMode::kSpatial, copies(5, 19, 37)), 1e-9);  // 95% > 93%
  EXPECT_NEAR(peak, 0.93 / 1.02, 1e-9);
  EXPECT_GT(m.work(ShareMode::kSpatial, copies(14, 19, 37)), 0.95 * peak);
  EXPECT_EQ(m.peak_work(ShareMode::kSpatial, {}), 0.0);
  // Time slicing loses at once with busy jobs: the peak is one job alone.
  EXPECT_NEAR(m.peak_work(ShareMode::kTimeSliced, copies(4, 81, 100)), 1.0, 1e-9);
}

// A heavy job joining a full GPU lowers the summed normalized progress (the
// light jobs slow down for it) but not the work the GPU does.
TEST(InterferenceModel, WorkCountsAHeavyJobForItsShareOfTheGpu) {
  InterferenceModel m;
  std::vector<SoloLoad> light = copies(5, 19, 37);
  std::vector<SoloLoad> with_heavy = light;
  with_heavy.push_back({57, 77});
  EXPECT_LT(m.total(ShareMode::kSpatial, with_heavy), 0.9 * m.total(ShareMode::kSpatial, light));
  EXPECT_GT(m.work(ShareMode::kSpatial, with_heavy), 0.99 * m.work(ShareMode::kSpatial, light));
}

TEST(InterferenceModel, OneJobRunsAtSoloSpeedAndNoneAtAll) {
  InterferenceModel m;
  EXPECT_EQ(m.rates(ShareMode::kSpatial, copies(1, 90, 100)), std::vector<double>{1.0});
  EXPECT_TRUE(m.rates(ShareMode::kTimeSliced, {}).empty());
}

TEST(InterferenceModel, SaturatedJobsGainNothingFromSharing) {
  InterferenceModel m;
  EXPECT_LT(m.total(ShareMode::kSpatial, copies(4, 100, 100)), 1.0);
  EXPECT_LT(m.total(ShareMode::kTimeSliced, copies(4, 100, 100)), 1.0);
  EXPECT_GT(m.total(ShareMode::kSpatial, copies(4, 20, 40)), 3.0);
}

TEST(Calibrate, RecoversTheCapacityAndOverheadsThatProducedTheMeasurements) {
  InterferenceModel truth;
  truth.spatial_capacity_pct = 110;
  truth.spatial_overhead = 0.011;
  truth.sliced_overhead = 0.04;
  std::vector<Collocation> data;
  for (int n : {2, 3, 5, 7, 9, 12}) {  // 15% each: MPS fills the GPU beyond 7
    for (ShareMode mode : {ShareMode::kSpatial, ShareMode::kTimeSliced}) {
      auto jobs = copies(n, 15, 30);
      data.push_back({mode, jobs, truth.total(mode, jobs)});
    }
  }
  InterferenceModel fitted = calibrate(InterferenceModel{}, data);
  EXPECT_NEAR(fitted.spatial_capacity_pct, 110, 0.5);
  EXPECT_NEAR(fitted.spatial_overhead, 0.011, 0.0005);
  EXPECT_NEAR(fitted.sliced_overhead, 0.04, 0.0005);
  EXPECT_EQ(fitted.source, "calibrated from 12 measured collocations");
}

// Jobs that never fill the GPU tell the overhead but not the capacity.
TEST(Calibrate, UnfilledGpuKeepsTheBaseCapacity) {
  InterferenceModel truth;
  truth.spatial_overhead = 0.02;
  std::vector<Collocation> data;
  for (int n : {2, 3}) {
    auto jobs = copies(n, 19, 37);
    data.push_back({ShareMode::kSpatial, jobs, truth.total(ShareMode::kSpatial, jobs)});
  }
  InterferenceModel fitted = calibrate(InterferenceModel{}, data);
  EXPECT_EQ(fitted.spatial_capacity_pct, InterferenceModel{}.spatial_capacity_pct);
  EXPECT_NEAR(fitted.spatial_overhead, 0.02, 0.0005);
}

TEST(Calibrate, WithoutMeasurementsKeepsTheBase) {
  InterferenceModel base;
  InterferenceModel fitted = calibrate(base, {});
  EXPECT_EQ(fitted.spatial_overhead, base.spatial_overhead);
  EXPECT_EQ(fitted.source, base.source);
}

}  // namespace
}  // namespace colo
