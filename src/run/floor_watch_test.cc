#include "run/floor_watch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

constexpr UnixMillis kFloorStart = 1'000'000;
constexpr double kFloorSolo = 1000.0;  // samples/s alone

// One epoch report: its length, its speed (rate over the solo rate), steady or not.
struct Epoch {
  int64_t epoch_ms = 0;
  double speed = 1.0;
  bool steady = true;
};

struct FloorCase {
  std::string name;
  std::optional<double> solo;  // known at the start
  std::vector<Epoch> epochs;
  // The index of the report that fires (one breach at most in these rows);
  // -1: none.
  int fires_at = -1;
  FloorBreach breach;
  std::optional<double> below_share;
};

const std::vector<FloorCase>& floor_cases() {
  static const std::vector<FloorCase> cases = {
      {"AboveTheFloorNeverFires",
       kFloorSolo,
       {{6'000, 0.95}, {6'000, 0.92}, {6'000, 1.0}},
       -1,
       {},
       0.0},
      // Two reports of 6 s below: 12 s >= 10 s, and two reports: it fires at the second.
      {"TwoLongReportsBelowFire",
       kFloorSolo,
       {{6'000, 0.84}, {6'000, 0.80}},
       1,
       {0.9, 0.80, 12'000, 2},
       1.0},
      // One report of 30 s below is past 10 s but not two reports.
      {"OneReportIsNotEnoughHoweverLong", kFloorSolo, {{30'000, 0.5}}, -1, {}, 1.0},
      // Reports of 2 s: two are not 10 s; the fifth makes 10 s.
      {"ShortReportsWaitForTenSeconds",
       kFloorSolo,
       {{2'000, 0.8}, {2'000, 0.8}, {2'000, 0.8}, {2'000, 0.8}, {2'000, 0.7}},
       4,
       {0.9, 0.7, 10'000, 5},
       1.0},
      // An epoch at the floor ends the run: 8 s below, 4 s at it, 8 s below again.
      {"AReportAtTheFloorEndsTheRun",
       kFloorSolo,
       {{4'000, 0.8}, {4'000, 0.8}, {4'000, 0.9}, {4'000, 0.8}, {4'000, 0.8}},
       -1,
       {},
       16.0 / 20.0},
      // Start-up, checkpoint and evaluation epochs neither count nor break the run.
      {"EpochsThatAreNotSteadyDoNotCount",
       kFloorSolo,
       {{5'000, 0.2, false}, {6'000, 0.8}, {20'000, 0.1, false}, {6'000, 0.8}},
       3,
       {0.9, 0.8, 12'000, 2},
       1.0},
      // Without a solo rate it measures nothing.
      {"WithoutASoloRateNothingIsMeasured",
       std::nullopt,
       {{6'000, 0.5}, {6'000, 0.5}, {6'000, 0.5}},
       -1,
       {},
       std::nullopt},
  };
  return cases;
}

class FloorWatchTable : public ::testing::TestWithParam<FloorCase> {};

TEST_P(FloorWatchTable, Fires) {
  const FloorCase& c = GetParam();
  FloorWatch w(0.9, c.solo);
  UnixMillis now = kFloorStart;
  for (size_t i = 0; i < c.epochs.size(); ++i) {
    const Epoch& e = c.epochs[i];
    now += e.epoch_ms;
    std::optional<FloorBreach> fired = w.report({now, e.epoch_ms, e.speed * kFloorSolo, e.steady});
    if (static_cast<int>(i) == c.fires_at) {
      ASSERT_TRUE(fired) << "report " << i;
      EXPECT_EQ(fired->reports, c.breach.reports);
      EXPECT_EQ(fired->below_ms, c.breach.below_ms);
      EXPECT_DOUBLE_EQ(fired->floor, c.breach.floor);
      EXPECT_NEAR(fired->speed, c.breach.speed, 1e-9);
    } else {
      EXPECT_FALSE(fired) << "report " << i;
    }
  }
  if (c.below_share) {
    ASSERT_TRUE(w.below_share());
    EXPECT_NEAR(*w.below_share(), *c.below_share, 1e-9);
  } else {
    EXPECT_FALSE(w.below_share());
  }
}

INSTANTIATE_TEST_SUITE_P(FloorWatch, FloorWatchTable, ::testing::ValuesIn(floor_cases()),
                         [](const ::testing::TestParamInfo<FloorCase>& info) {
                           return info.param.name;
                         });

// A solo rate learned later starts the measurement from then on: what came
// before is not judged.
TEST(FloorWatch, ASoloRateLearnedLaterStartsTheMeasurement) {
  FloorWatch w(0.9, std::nullopt);
  EXPECT_FALSE(w.report({kFloorStart + 6'000, 6'000, 500, true}));
  w.solo(kFloorSolo);
  EXPECT_FALSE(w.report({kFloorStart + 12'000, 6'000, 500, true}));
  EXPECT_TRUE(w.report({kFloorStart + 18'000, 6'000, 500, true}));
  EXPECT_EQ(w.steady_ms(), 12'000);
  EXPECT_NEAR(*w.latest_speed(), 0.5, 1e-9);
}

// After it fired, a whole new window must pass below the floor before it
// fires again: the stop it caused has time to take effect.
TEST(FloorWatch, AfterFiringANewWindowMustPass) {
  FloorWatch w(0.9, kFloorSolo);
  UnixMillis now = kFloorStart;
  auto below = [&] {
    now += 6'000;
    return w.report({now, 6'000, 700, true}).has_value();
  };
  EXPECT_FALSE(below());
  EXPECT_TRUE(below());
  EXPECT_FALSE(below());
  EXPECT_TRUE(below());
  EXPECT_EQ(w.below_ms(), 24'000);
}

TEST(FloorWatch, TheStopReasonNamesTheFloorAndTheSpeed) {
  EXPECT_EQ(floor_stop_reason("job 12", {0.9, 0.84, 12'000, 2}),
            "stopped for job 12's floor 0.90: it ran at 0.84 beside this job");
}

}  // namespace
}  // namespace colo
