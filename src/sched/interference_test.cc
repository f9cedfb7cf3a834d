#include "sched/interference.h"

#include <gtest/gtest.h>

#include <vector>

namespace colo {
namespace {

std::vector<SoloLoad> copies(int n, double sm, double busy) {
  return std::vector<SoloLoad>(static_cast<size_t>(n), SoloLoad{sm, busy});
}

// The defaults against the H200 measurements they were calibrated from
// (docs/results/2026-11-22-h200-paper-suites): steady throughput over one job.
struct Point {
  const char* what;
  ShareMode mode;
  int jobs;
  double sm, busy;
  double measured;
};

TEST(InterferenceModel, DefaultsAreWithinFifteenPercentOfTheH200Measurements) {
  InterferenceModel m;
  for (const Point& p : {Point{"resnet26 mps x7", ShareMode::kSpatial, 7, 19, 37, 4.18},
                         Point{"resnet26 mps x3", ShareMode::kSpatial, 3, 19, 37, 2.95},
                         Point{"cait mps x2", ShareMode::kSpatial, 2, 81, 100, 1.13},
                         Point{"cait mps x3", ShareMode::kSpatial, 3, 81, 100, 1.13},
                         Point{"resnet26 naive x2", ShareMode::kTimeSliced, 2, 19, 37, 1.72},
                         Point{"resnet26 naive x7", ShareMode::kTimeSliced, 7, 19, 37, 2.14},
                         Point{"cait naive x2", ShareMode::kTimeSliced, 2, 81, 100, 0.85}}) {
    double predicted = m.total(p.mode, copies(p.jobs, p.sm, p.busy));
    EXPECT_NEAR(predicted / p.measured, 1.0, 0.15) << p.what << ": predicted " << predicted;
  }
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

TEST(Calibrate, RecoversTheOverheadThatProducedTheMeasurements) {
  InterferenceModel truth;
  truth.spatial_overhead = 0.11;
  truth.sliced_overhead = 0.04;
  std::vector<Collocation> data;
  for (int n : {2, 3, 5, 7}) {
    for (ShareMode mode : {ShareMode::kSpatial, ShareMode::kTimeSliced}) {
      auto jobs = copies(n, 15, 30);
      data.push_back({mode, jobs, truth.total(mode, jobs)});
    }
  }
  InterferenceModel fitted = calibrate(InterferenceModel{}, data);
  EXPECT_NEAR(fitted.spatial_overhead, 0.11, 0.002);
  EXPECT_NEAR(fitted.sliced_overhead, 0.04, 0.002);
  EXPECT_EQ(fitted.source, "calibrated from 8 measured collocations");
}

TEST(Calibrate, WithoutMeasurementsKeepsTheBase) {
  InterferenceModel base;
  InterferenceModel fitted = calibrate(base, {});
  EXPECT_EQ(fitted.spatial_overhead, base.spatial_overhead);
  EXPECT_EQ(fitted.source, base.source);
}

}  // namespace
}  // namespace colo
