#include "run/early_stop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace colo {
namespace {

using ::testing::HasSubstr;

EarlyStopSpec median_rule(int min_trials = 3, int min_epochs = 1) {
  EarlyStopSpec s;
  s.rule = EarlyStopRule::kMedian;
  s.min_trials = min_trials;
  s.min_epochs = min_epochs;
  return s;
}

EarlyStopSpec asha(int reduction = 3, int min_epochs = 1, std::optional<int> max_epochs = {}) {
  EarlyStopSpec s;
  s.rule = EarlyStopRule::kAsha;
  s.reduction = reduction;
  s.min_epochs = min_epochs;
  s.max_epochs = max_epochs;
  return s;
}

TrialReport loss(int64_t epoch, double value) { return {"loss", true, epoch, value}; }

// A report at an epoch, and the trial at work past it (its next step).
std::optional<std::string> goes_on(EarlyStopper& stop, const std::string& sweep, int64_t trial,
                                   const EarlyStopSpec& spec, const TrialReport& r) {
  std::optional<std::string> why = stop.report(sweep, trial, spec, r);
  return why ? why : stop.went_past(sweep, trial, r.epoch);
}

TEST(EarlyStopper, TheMedianRuleStopsATrialWhoseBestIsWorseThanTheOthersMedian) {
  EarlyStopper stop;
  const EarlyStopSpec spec = median_rule();
  for (int t = 1; t <= 3; ++t) {
    EXPECT_FALSE(stop.report("s", t, spec, loss(1, 4.0)));
    EXPECT_FALSE(stop.report("s", t, spec, loss(2, t)));  // 1, 2, 3 by epoch 2: the median 2
  }
  // 3 others by epoch 1: 4, 4, 4; worse than 4 stops it.
  EXPECT_TRUE(stop.report("s", 4, spec, loss(1, 9.0)));
  // A stopped trial counts among the others (4 others: 4, 4, 4, 9; median 4).
  std::optional<std::string> why = stop.report("s", 5, spec, loss(1, 9.0));
  ASSERT_TRUE(why);
  EXPECT_THAT(*why, HasSubstr("median rule at epoch 1"));
  EXPECT_THAT(*why, HasSubstr("its best loss so far, 9, is worse than 4"));
  EXPECT_THAT(*why, HasSubstr("the 4 other trials"));
  // At epoch 2 (that trials 4 and 5 never reached) the median of 1, 2, 3 is
  // 2: 1.5 goes on; then the median of 1, 1.5, 2, 3 is 1.75: 2.5 stops.
  EXPECT_FALSE(stop.report("s", 6, spec, loss(2, 1.5)));
  why = stop.report("s", 7, spec, loss(2, 2.5));
  ASSERT_TRUE(why);
  EXPECT_THAT(*why, HasSubstr("2.5, is worse than 1.75"));
}

TEST(EarlyStopper, TheMedianRuleJudgesTheBestSoFarAndWaitsForEnoughOthersAndEpochs) {
  EarlyStopper stop;
  const EarlyStopSpec spec = median_rule(/*min_trials=*/2, /*min_epochs=*/2);
  EXPECT_FALSE(stop.report("s", 1, spec, loss(2, 1.0)));
  EXPECT_FALSE(stop.report("s", 2, spec, loss(2, 1.0)));
  // Before min_epochs nothing is judged, however bad.
  EXPECT_FALSE(stop.report("s", 3, spec, loss(1, 0.5)));
  // Its best so far (0.5 at epoch 1) is what is judged, not its last value.
  EXPECT_FALSE(stop.report("s", 3, spec, loss(2, 100.0)));
  // Another sweep's trials are not its others.
  EXPECT_FALSE(stop.report("other", 1, spec, loss(2, 100.0)));
  // Only one other trial reached epoch 3: not enough.
  EXPECT_FALSE(stop.report("s", 1, spec, loss(3, 1.0)));
  EXPECT_FALSE(stop.report("s", 2, spec, loss(3, 50.0)));
}

// A retried attempt reports its epochs again: a better value at an earlier
// epoch is the trial's best by every later epoch too.
TEST(EarlyStopper, ARetriedAttemptsBetterEarlyValueCountsForLaterEpochs) {
  EarlyStopper stop;
  const EarlyStopSpec spec = median_rule(1);
  EXPECT_FALSE(stop.report("s", 1, spec, loss(1, 5.0)));
  EXPECT_FALSE(stop.report("s", 1, spec, loss(2, 5.0)));
  EXPECT_FALSE(stop.report("s", 1, spec, loss(1, 0.1)));  // its second attempt
  std::optional<std::string> why = stop.report("s", 2, spec, loss(2, 1.0));
  ASSERT_TRUE(why);
  EXPECT_THAT(*why, HasSubstr("1, is worse than 0.1"));
}

TEST(EarlyStopper, AGoalOfMaxStopsTheLowValues) {
  EarlyStopper stop;
  const EarlyStopSpec spec = median_rule(2);
  EXPECT_FALSE(stop.report("s", 1, spec, {"acc", false, 1, 0.8}));
  EXPECT_FALSE(stop.report("s", 2, spec, {"acc", false, 1, 0.9}));
  EXPECT_FALSE(stop.report("s", 3, spec, {"acc", false, 1, 0.95}));
  std::optional<std::string> why = stop.report("s", 4, spec, {"acc", false, 1, 0.5});
  ASSERT_TRUE(why);
  EXPECT_THAT(*why, HasSubstr("its best acc so far, 0.5, is worse than 0.9"));
}

TEST(EarlyStopper, ADivergedTrialIsTheWorst) {
  EarlyStopper stop;
  const EarlyStopSpec spec = median_rule(1);
  EXPECT_FALSE(stop.report("s", 1, spec, loss(1, 1e6)));
  std::optional<std::string> why = stop.report("s", 2, spec, loss(1, std::nan("")));
  ASSERT_TRUE(why);
  EXPECT_THAT(*why, HasSubstr("NaN or infinite, is worse than 1e+06"));
  EXPECT_FALSE(stop.report("inf", 1, spec, loss(1, 1.0)));
  EXPECT_TRUE(stop.report("inf", 2, spec, loss(1, INFINITY)));
}

TEST(EarlyStopper, AshaKeepsTheBestFractionAtEachRungJudgingEachTrialOnceThere) {
  EarlyStopper stop;
  const EarlyStopSpec spec = asha(/*reduction=*/2);  // rungs at epochs 1, 2, 4, 8, ...
  // The first at a rung goes on; after it, a value outside the best half of
  // those judged there before stops.
  EXPECT_FALSE(goes_on(stop, "s", 1, spec, loss(1, 1.0)));
  EXPECT_FALSE(goes_on(stop, "s", 2, spec, loss(1, 0.5)));  // better than 1: goes on
  // Before it: 1 and 0.5, the cut at their best half (numpy's percentile 50: 0.75).
  std::optional<std::string> why = goes_on(stop, "s", 3, spec, loss(1, 0.8));
  ASSERT_TRUE(why);
  EXPECT_THAT(*why, HasSubstr("ASHA at its rung of epoch 1: its loss there, 0.8, is worse than "
                              "0.75, the cut of the best 1/2 among the 2 trials judged there "
                              "before it"));
  // Judged once per rung: trial 1 is not judged again at epoch 1, nor at
  // epoch 3 (its highest rung is 2, where it is the first).
  EXPECT_FALSE(goes_on(stop, "s", 1, spec, loss(1, 5.0)));
  EXPECT_FALSE(goes_on(stop, "s", 1, spec, loss(2, 5.0)));
  EXPECT_FALSE(goes_on(stop, "s", 1, spec, loss(3, 5.0)));
  // Trial 2 skips from epoch 1 to epoch 4: judged at rung 4 only, first there.
  EXPECT_FALSE(goes_on(stop, "s", 2, spec, loss(4, 9.0)));
  // At rung 2, behind trial 1's 5: 6 stops, 4 goes on.
  EXPECT_TRUE(goes_on(stop, "s", 4, spec, loss(2, 6.0)));
  EXPECT_FALSE(goes_on(stop, "s", 5, spec, loss(2, 4.0)));
}

TEST(EarlyStopper, AshaHasNoRungBeforeMinEpochsNorAtOrPastMaxEpochs) {
  EarlyStopper stop;
  const EarlyStopSpec spec = asha(/*reduction=*/3, /*min_epochs=*/2, /*max_epochs=*/6);
  // Rungs: 2 (and 6 is max_epochs, so none there).
  EXPECT_FALSE(stop.report("s", 1, spec, loss(1, 1.0)));
  EXPECT_FALSE(stop.report("s", 2, spec, loss(1, 9.0)));  // epoch 1: before the first rung
  EXPECT_FALSE(stop.report("s", 1, spec, loss(2, 1.0)));
  EXPECT_TRUE(stop.report("s", 2, spec, loss(2, 9.0)));
  EXPECT_FALSE(stop.report("s", 1, spec, loss(6, 1.0)));
  // Epoch 5 is judged at rung 2, behind 1 and 9 (the cut at their best third: 3.67).
  std::optional<std::string> why = stop.report("s", 3, spec, loss(5, 9.0));
  ASSERT_TRUE(why);
  EXPECT_THAT(*why, HasSubstr("rung of epoch 2"));
  EXPECT_THAT(*why, HasSubstr("is worse than 3.667"));
  EXPECT_FALSE(stop.report("s", 3, spec, loss(5, 9.0)));  // judged there already
  // Epoch 6, max_epochs, is the trials' last (Ray Tune's max_t): a trial that
  // first reports there ran all its epochs and is not stopped early.
  EXPECT_FALSE(stop.report("s", 4, spec, loss(6, 9.0)));
  stop.ended("s", 4, 6, /*ran_to_its_end=*/true);
  EXPECT_FALSE(stop.went_past("s", 4, 6));
}

TEST(EarlyStopper, AshaWithoutMaxEpochsNeverStopsATrialThatRanAllItsEpochs) {
  // Ray Tune's max_t: no rung at or past a trial's last epoch. Without
  // max_epochs colo does not know it: a verdict is held until the trial shows
  // it goes on, and a trial that ran to its end teaches the sweep's last epoch.
  struct Case {
    const char* name;
    std::optional<int64_t> went_past;  // after its epoch-2 report, a step past this epoch
    bool stopped;
  };
  for (const Case& c :
       {Case{"ran all its epochs", std::nullopt, false},
        Case{"a late step of its epoch 2", 1, false}, Case{"a step of its epoch 3", 2, true}}) {
    SCOPED_TRACE(c.name);
    EarlyStopper stop;
    const EarlyStopSpec spec = asha(/*reduction=*/2);  // rungs at epochs 1, 2, 4, ...
    EXPECT_FALSE(goes_on(stop, "s", 1, spec, loss(1, 1.0)));
    EXPECT_FALSE(goes_on(stop, "s", 1, spec, loss(2, 0.5)));
    EXPECT_FALSE(goes_on(stop, "s", 2, spec, loss(1, 0.9)));
    // Trial 2's epoch 2 (of 2, or of more) is far behind trial 1's there.
    EXPECT_FALSE(stop.report("s", 2, spec, loss(2, 9.0))) << "held";
    std::optional<std::string> why;
    if (c.went_past) why = stop.went_past("s", 2, *c.went_past);
    EXPECT_EQ(why.has_value(), c.stopped);
    if (why) EXPECT_THAT(*why, HasSubstr("at its rung of epoch 2: its loss there, 9"));
    stop.ended("s", 2, 2, /*ran_to_its_end=*/!c.stopped);
    EXPECT_FALSE(stop.went_past("s", 2, 5)) << "dropped at its end";
  }
  // Trial 1 ran its 2 epochs to its end: the sweep's last epoch is 2, so no
  // rung there, and a verdict at rung 1 comes at once.
  EarlyStopper stop;
  const EarlyStopSpec spec = asha(/*reduction=*/2);
  EXPECT_FALSE(goes_on(stop, "s", 1, spec, loss(1, 1.0)));
  EXPECT_FALSE(goes_on(stop, "s", 1, spec, loss(2, 0.5)));
  stop.ended("s", 1, 2, /*ran_to_its_end=*/true);
  EXPECT_FALSE(stop.report("s", 2, spec, loss(1, 0.9)));
  EXPECT_FALSE(stop.report("s", 2, spec, loss(2, 9.0))) << "no rung at its last epoch";
  std::optional<std::string> why = stop.report("s", 3, spec, loss(1, 5.0));
  ASSERT_TRUE(why) << "epoch 1 is before the last: not held";
  EXPECT_THAT(*why, HasSubstr("at its rung of epoch 1"));
  // A verdict held before the last epoch was known comes at the next report.
  EarlyStopper later;
  EXPECT_FALSE(goes_on(later, "s", 1, spec, loss(1, 1.0)));
  EXPECT_FALSE(later.report("s", 2, spec, loss(1, 9.0))) << "held";
  EXPECT_FALSE(later.report("s", 2, spec, loss(2, 9.0))) << "held: maybe its last";
  later.ended("s", 3, 4, /*ran_to_its_end=*/true);
  EXPECT_FALSE(later.report("s", 3, spec, loss(1, 1.0)));
  std::optional<std::string> held = later.report("s", 2, spec, loss(3, 9.0));
  ASSERT_TRUE(held);
  EXPECT_THAT(*held, HasSubstr("at its rung of epoch 1"));
}

}  // namespace
}  // namespace colo
