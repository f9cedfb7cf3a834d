#include "analysis/training_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace colo {
namespace {

ProgressEvent event(UnixMillis t, const std::string& kind, std::map<std::string, double> metrics,
                    std::optional<int64_t> step = {}, std::optional<int64_t> epoch = {}) {
  ProgressEvent e;
  e.time_ms = t;
  e.kind = kind;
  e.step = step;
  e.epoch = epoch;
  e.metrics = std::move(metrics);
  return e;
}

TEST(TrainingMetrics, LossAndErrorNamesAreLowerIsBetterOthersHigher) {
  EXPECT_TRUE(lower_is_better("loss"));
  EXPECT_TRUE(lower_is_better("val_loss"));
  EXPECT_TRUE(lower_is_better("Train/Loss"));
  EXPECT_TRUE(lower_is_better("top1_err"));
  EXPECT_TRUE(lower_is_better("eval-perplexity"));
  EXPECT_TRUE(lower_is_better("rmse"));
  EXPECT_FALSE(lower_is_better("acc"));
  EXPECT_FALSE(lower_is_better("val_accuracy"));
  EXPECT_FALSE(lower_is_better("glossary"));  // a word part, not a substring
  EXPECT_FALSE(lower_is_better("f1"));
}

TEST(TrainingMetrics, ColoFiguresAreNotTrainingMetrics) {
  EXPECT_FALSE(is_training_metric("img_per_s"));
  EXPECT_FALSE(is_training_metric("epoch_time_s"));
  EXPECT_FALSE(is_training_metric("max_memory_reserved_mib"));
  EXPECT_FALSE(is_training_metric("simulated_gpu_memory_mib"));
  // bench/train.py's end-of-run memory figures, and any rate: units, not learning.
  EXPECT_FALSE(is_training_metric("device_used_mib"));
  EXPECT_FALSE(is_training_metric("memory_reserved_mib"));
  EXPECT_FALSE(is_training_metric("tokens_per_s"));
  EXPECT_FALSE(is_training_metric("Peak_GB"));
  EXPECT_TRUE(is_training_metric("loss"));
  EXPECT_TRUE(is_training_metric("val_acc"));
  EXPECT_TRUE(is_training_metric("lr"));
}

TEST(TrainingMetrics, OneSeriesPerNameFromEveryKindOfEventWithLastAndBest) {
  std::vector<ProgressEvent> events = {
      event(1'000, "step", {{"loss", 2.0}}, 10, 1),
      event(3'000, "epoch_end", {{"loss", 1.5}, {"val_acc", 0.4}, {"img_per_s", 900.0}}, {}, 1),
      event(2'000, "step", {{"loss", 1.2}}, 20, 1),  // out of order: sorted by time
      event(4'000, "metric", {{"val_acc", 0.7}}),
      event(5'000, "epoch_end", {{"loss", 1.3}, {"val_acc", 0.6}}, {}, 2),
      event(6'000, "probe", {{"peak_memory_bytes", 1e9}, {"startup_ms", 900.0}}),  // colo's own
  };
  std::vector<MetricSeries> m = training_metrics(events, std::nullopt);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].name, "loss");
  EXPECT_TRUE(m[0].lower_is_better);
  ASSERT_EQ(m[0].points.size(), 4u);
  EXPECT_EQ(m[0].points[1].time_ms, 2'000);
  EXPECT_EQ(m[0].points[1].step, 20);
  EXPECT_DOUBLE_EQ(m[0].last, 1.3);
  EXPECT_DOUBLE_EQ(m[0].best, 1.2);
  EXPECT_EQ(m[1].name, "val_acc");
  EXPECT_FALSE(m[1].lower_is_better);
  EXPECT_DOUBLE_EQ(m[1].last, 0.6);
  EXPECT_DOUBLE_EQ(m[1].best, 0.7);
  EXPECT_EQ(find_metric(m, "val_acc"), &m[1]);
  EXPECT_EQ(find_metric(m, "img_per_s"), nullptr);
}

// Issue 33: a job file's declared goal beats the name rule (fid is "higher
// is better" by name), and a value that is not finite is kept, marks the
// series diverged and is never its best.
TEST(TrainingMetrics, ADeclaredGoalWinsAndANanMarksTheSeriesDiverged) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<ProgressEvent> events = {
      event(1'000, "epoch_end", {{"fid", 30.0}, {"loss", 0.4}}, {}, 1),
      event(2'000, "epoch_end", {{"fid", 12.0}, {"loss", 0.1}}, {}, 2),
      event(3'000, "epoch_end", {{"fid", 20.0}, {"loss", nan}}, {}, 3),
      event(4'000, "epoch_end", {{"loss", nan}}, {}, 4),
  };
  std::vector<MetricSeries> m = training_metrics(events, std::nullopt, {{"fid", true}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_TRUE(m[0].lower_is_better);
  EXPECT_TRUE(m[0].declared);
  EXPECT_DOUBLE_EQ(m[0].best, 12.0);
  EXPECT_FALSE(m[0].diverged);
  ASSERT_EQ(m[1].points.size(), 4u) << "the NaNs are kept";
  EXPECT_TRUE(m[1].diverged);
  EXPECT_TRUE(std::isnan(m[1].last));
  EXPECT_DOUBLE_EQ(m[1].best, 0.1);
  EXPECT_FALSE(training_metrics(events, std::nullopt)[0].lower_is_better) << "fid by its name";
  std::vector<MetricSeries> only_nan =
      training_metrics({event(1'000, "metric", {{"loss", nan}})}, std::nullopt);
  EXPECT_TRUE(std::isnan(only_nan[0].best)) << "no finite value: no best";
}

TEST(TrainingMetrics, AnEarlierAttemptsPointsAreLeftOut) {
  std::vector<ProgressEvent> events = {
      event(1'000, "epoch_end", {{"loss", 0.1}}, {}, 1),  // attempt 1, before the retry
      event(9'000, "epoch_end", {{"loss", 0.9}}, {}, 1),
  };
  std::vector<MetricSeries> m = training_metrics(events, UnixMillis{5'000});
  ASSERT_EQ(m.size(), 1u);
  ASSERT_EQ(m[0].points.size(), 1u);
  EXPECT_DOUBLE_EQ(m[0].best, 0.9);
  EXPECT_TRUE(training_metrics({}, std::nullopt).empty());
}

TEST(TrainingMetrics, AStoppedTrialsResultsFreezeAtItsStop) {
  // Ray Tune ignores a trial's results after STOP: what it reports while it
  // stops (in its grace) counts neither for its best nor for its last.
  struct Case {
    const char* name;
    std::optional<UnixMillis> since_ms;
    double best;
    double last;
  };
  const std::vector<ProgressEvent> events = {
      event(1'000, "epoch_end", {{"loss", 0.6}}, {}, 1),
      event(2'000, "epoch_end", {{"loss", 0.4441}}, {}, 2),
      event(2'000, kEarlyStoppedEvent, {}),
      event(2'500, "step", {{"loss", 0.1509}}, 30),  // in its grace
      event(3'000, "epoch_end", {{"loss", 0.2}}, {}, 3),
  };
  for (const Case& c : {Case{"stopped", std::nullopt, 0.4441, 0.4441},
                        Case{"a later attempt, after the stop", UnixMillis{2'100}, 0.1509, 0.2}}) {
    SCOPED_TRACE(c.name);
    std::vector<MetricSeries> m = training_metrics(events, c.since_ms);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_DOUBLE_EQ(m[0].best, c.best);
    EXPECT_DOUBLE_EQ(m[0].last, c.last);
  }
  EXPECT_EQ(results_frozen_at(events, std::nullopt), UnixMillis{2'000});
  EXPECT_FALSE(results_frozen_at(events, UnixMillis{2'100}));
}

// Issue 58, item 14: a loss from 25 to 0.013 was a flat line on a linear
// axis. Two orders of magnitude or more of positive values: a log axis (as
// the report drew it since issue 33).
TEST(TrainingMetrics, PositiveValuesSpanningTwoOrdersOfMagnitudeWantALogAxis) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* name;
    std::vector<double> values;
    bool log;
  };
  for (const Case& c : {
           Case{"a loss from 25 to 0.013", {25, 3.1, 0.4, 0.013}, true},
           Case{"two orders of magnitude", {10, 0.1}, true},
           Case{"just under", {9.9, 0.1}, false},
           Case{"an accuracy from 0.1 to 0.98", {0.1, 0.5, 0.98}, false},
           Case{"a zero", {0, 25, 0.013}, false},
           Case{"a negative value", {-1, 25, 0.013}, false},
           Case{"one value", {25}, false},
           Case{"none", {}, false},
           Case{"a diverged value is left out", {25, inf, 0.013}, true},
           Case{"NaNs are left out", {std::nan(""), 5, 0.001}, true},
       }) {
    SCOPED_TRACE(c.name);
    std::vector<MetricPoint> points;
    for (double v : c.values) points.push_back(MetricPoint{1'000, std::nullopt, std::nullopt, v});
    EXPECT_EQ(wants_log_axis(points), c.log);
  }
}

}  // namespace
}  // namespace colo
