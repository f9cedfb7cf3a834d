#include "analysis/floor_history.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace colo {
namespace {

ProgressEvent floor_event(UnixMillis t, const char* kind, std::optional<int64_t> samples = {},
                          std::map<std::string, double> metrics = {}) {
  ProgressEvent e;
  e.time_ms = t;
  e.kind = kind;
  e.samples = samples;
  e.metrics = std::move(metrics);
  return e;
}

// An epoch the job marks as a checkpoint's or an evaluation's is not steady;
// its other metrics say nothing of that.
TEST(FloorHistory, EpochsMarkedAsCheckpointOrEvaluationAreNotSteady) {
  const std::vector<std::pair<std::map<std::string, double>, bool>> rows = {
      {{}, true},
      {{{"loss", 0.3}, {"val_loss", 0.4}}, true},
      {{{"checkpoint", 1}}, false},
      {{{"checkpoint", 0}}, true},
      {{{"eval", 1}}, false},
      {{{"evaluation", 2}}, false},
  };
  for (const auto& [metrics, steady] : rows) EXPECT_EQ(steady_epoch_end(metrics), steady);
}

struct RatesCase {
  std::string name;
  std::vector<ProgressEvent> events;
  std::vector<EpochRate> rates;  // ended_ms, epoch_ms, samples_per_s, steady, attempt
};

const std::vector<RatesCase>& rates_cases() {
  static const std::vector<RatesCase> cases = {
      {"TheFirstEpochHasNoRate",
       {floor_event(1'000, "epoch_end", 500), floor_event(3'000, "epoch_end", 1'000),
        floor_event(4'000, "epoch_end", 2'000)},
       {{3'000, 2'000, 500, true, 1}, {4'000, 1'000, 2'000, true, 1}}},
      {"EpochsWithoutSamplesHaveNoRateButStartTheNext",
       {floor_event(1'000, "epoch_end"), floor_event(2'000, "epoch_end"),
        floor_event(3'000, "epoch_end", 100)},
       {{3'000, 1'000, 100, true, 1}}},
      {"ARequeuedEventStartsAnAttemptWhoseFirstEpochHasNoRate",
       {floor_event(1'000, "epoch_end", 10), floor_event(2'000, "epoch_end", 10),
        floor_event(2'500, "requeued"), floor_event(9'000, "epoch_end", 10),
        floor_event(10'000, "epoch_end", 20)},
       {{2'000, 1'000, 10, true, 1}, {10'000, 1'000, 20, true, 2}}},
      {"CheckpointEpochsAreRatedButNotSteady",
       {floor_event(1'000, "epoch_end", 10), floor_event(2'000, "step", 5),
        floor_event(3'000, "epoch_end", 10, {{"checkpoint", 1}})},
       {{3'000, 2'000, 5, false, 1}}},
      {"AnEpochEndNotAfterThePreviousHasNoRate",
       {floor_event(1'000, "epoch_end", 10), floor_event(1'000, "epoch_end", 10)},
       {}},
  };
  return cases;
}

class EpochRatesTable : public ::testing::TestWithParam<RatesCase> {};

TEST_P(EpochRatesTable, AreThoseTheEngineJudges) {
  const RatesCase& c = GetParam();
  const std::vector<EpochRate> got = epoch_rates(c.events);
  ASSERT_EQ(got.size(), c.rates.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].ended_ms, c.rates[i].ended_ms) << i;
    EXPECT_EQ(got[i].epoch_ms, c.rates[i].epoch_ms) << i;
    EXPECT_DOUBLE_EQ(got[i].samples_per_s, c.rates[i].samples_per_s) << i;
    EXPECT_EQ(got[i].steady, c.rates[i].steady) << i;
    EXPECT_EQ(got[i].attempt, c.rates[i].attempt) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(FloorHistory, EpochRatesTable, ::testing::ValuesIn(rates_cases()),
                         [](const ::testing::TestParamInfo<RatesCase>& info) {
                           return info.param.name;
                         });

struct HistoryCase {
  std::string name;
  std::vector<EpochRate> rates;
  double solo = 1000;
  bool judged = true;  // a history comes back
  std::vector<double> speeds;
  FloorTime time;
  std::optional<double> below_share;
  std::optional<double> median;
  std::optional<double> lowest;
};

const std::vector<HistoryCase>& history_cases() {
  static const std::vector<HistoryCase> cases = {
      {"AboveTheFloorThroughout",
       {{10'000, 5'000, 950}, {15'000, 5'000, 1000}},
       1000,
       true,
       {0.95, 1.0},
       {10'000, 0},
       0.0,
       0.95,
       0.95},
      // Weighted by time: 2 s below of 8 s.
      {"TheShareBelowIsWeightedByTime",
       {{10'000, 6'000, 950}, {12'000, 2'000, 840}},
       1000,
       true,
       {0.95, 0.84},
       {8'000, 2'000},
       0.25,
       0.84,
       0.84},
      {"AtTheFloorIsNotBelow",
       {{10'000, 4'000, 900}},
       1000,
       true,
       {0.9},
       {4'000, 0},
       0.0,
       0.9,
       0.9},
      {"EpochsThatAreNotSteadyAreLeftOut",
       {{10'000, 4'000, 100, false}, {14'000, 4'000, 800}, {18'000, 4'000, 1000, true, 2}},
       1000,
       true,
       {0.8, 1.0},
       {8'000, 4'000},
       0.5,
       0.8,
       0.8},
      {"NoSteadyEpochYet",
       {{10'000, 4'000, 100, false}},
       1000,
       true,
       {},
       {},
       std::nullopt,
       std::nullopt,
       std::nullopt},
      {"WithoutASoloRateNothingIsJudged",
       {{10'000, 4'000, 800}},
       0,
       false,
       {},
       {},
       std::nullopt,
       std::nullopt,
       std::nullopt},
  };
  return cases;
}

class FloorHistoryTable : public ::testing::TestWithParam<HistoryCase> {};

TEST_P(FloorHistoryTable, JudgesSteadyEpochsAgainstTheFloor) {
  const HistoryCase& c = GetParam();
  const std::optional<FloorHistory> h = floor_history(c.rates, 0.9, c.solo);
  ASSERT_EQ(h.has_value(), c.judged);
  if (!h) return;
  EXPECT_EQ(h->min_speed, 0.9);
  ASSERT_EQ(h->points.size(), c.speeds.size());
  for (size_t i = 0; i < c.speeds.size(); ++i) EXPECT_NEAR(h->points[i].speed, c.speeds[i], 1e-9);
  EXPECT_EQ(h->time, c.time);
  EXPECT_EQ(h->time.below_share(), c.below_share);
  if (c.median) {
    ASSERT_TRUE(h->median_speed());
    EXPECT_NEAR(*h->median_speed(), *c.median, 1e-9);
    EXPECT_NEAR(*h->lowest_speed(), *c.lowest, 1e-9);
    EXPECT_NEAR(*h->latest_speed(), c.speeds.back(), 1e-9);
  } else {
    EXPECT_FALSE(h->median_speed());
    EXPECT_FALSE(h->latest_speed());
  }
}

INSTANTIATE_TEST_SUITE_P(FloorHistory, FloorHistoryTable, ::testing::ValuesIn(history_cases()),
                         [](const ::testing::TestParamInfo<HistoryCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace colo
