#include "jobs/output_patterns.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

OutputPattern compiled(PatternKind kind, const std::string& pattern) {
  Result<OutputPattern> p = OutputPattern::compile(kind, pattern);
  EXPECT_TRUE(p.ok()) << pattern << ": " << (p.ok() ? "" : p.error().message());
  return std::move(p).value();
}

PatternMatch matched(const OutputPattern& p, const std::string& line) {
  Result<std::optional<PatternMatch>> m = p.match(line);
  EXPECT_TRUE(m.ok()) << line << ": " << (m.ok() ? "" : m.error().message());
  EXPECT_TRUE(m.ok() && m->has_value()) << "no match: " << line;
  return m.ok() && *m ? **m : PatternMatch{};
}

struct BadPattern {
  PatternKind kind;
  const char* pattern;
  const char* expected;
};

class BadPatterns : public ::testing::TestWithParam<BadPattern> {};

TEST_P(BadPatterns, AreErrorsSayingWhy) {
  Result<OutputPattern> p = OutputPattern::compile(GetParam().kind, GetParam().pattern);
  ASSERT_FALSE(p.ok()) << GetParam().pattern;
  EXPECT_THAT(p.error().message(), HasSubstr(GetParam().expected));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadPatterns,
    ::testing::Values(
        BadPattern{PatternKind::kEpoch, "Epoch (\\d+", "not a valid regular expression (RE2"},
        BadPattern{PatternKind::kEpoch, "(a)\\1", "not a valid regular expression"},
        BadPattern{PatternKind::kEpoch, "a{1000}{1000}", "not a valid regular expression"},
        BadPattern{PatternKind::kEpoch, "(?P<step>\\d+)", "only step_regex understands"},
        BadPattern{PatternKind::kStep, "(?P<step>\\d+) (?P<samples>\\d+)", "epoch_samples"},
        BadPattern{PatternKind::kStep, "loss (?P<loss>[0-9.]+)", "needs a group named 'step'"},
        BadPattern{PatternKind::kStep, "(?P<epoch>\\d+) of (?P<steps>\\d+)", "none named 'step'"}));

// Issue 15: std::regex took exponential time on this pattern and a 4 KB line
// (colo hung); RE2 takes time linear in the line.
TEST(OutputPattern, ACatastrophicPatternStaysLinear) {
  OutputPattern p = compiled(PatternKind::kEpoch, "(?:a|a)*b");
  for (int i = 0; i < 100; ++i) {
    Result<std::optional<PatternMatch>> m = p.match(std::string(4096, 'a'));
    ASSERT_TRUE(m.ok());
    EXPECT_FALSE(m->has_value());
  }
  EXPECT_TRUE(matched(p, std::string(4096, 'a') + "b").metrics.empty());
}

TEST(OutputPattern, WithoutNamedGroupsTheFirstGroupIsTheEpochAsBefore) {
  OutputPattern p = compiled(PatternKind::kEpoch, "Epoch (\\w+) done");
  EXPECT_EQ(matched(p, "Epoch 4 done, loss 1.2").first_group, "4");
  EXPECT_EQ(matched(p, "Epoch five done").first_group, "five");
  EXPECT_FALSE(matched(compiled(PatternKind::kEpoch, "end of epoch"), "end of epoch").first_group);
  Result<std::optional<PatternMatch>> none = p.match("Epoch x");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(OutputPattern, NamedGroupsGiveEpochSamplesAndMetrics) {
  // bench/train.py's own line: "epoch 3/4: 2.2s, 8539 img/s, loss 2.31".
  OutputPattern p =
      compiled(PatternKind::kEpoch,
               R"(epoch (?P<epoch>\d+)/\d+: (?P<epoch_s>[0-9.]+)s, \d+ img/s, loss (?P<loss>\S+))");
  PatternMatch m = matched(p, "epoch 3/4: 2.2s, 8539 img/s, loss 2.31");
  EXPECT_EQ(m.epoch, 3);
  EXPECT_FALSE(m.samples);
  EXPECT_FALSE(m.first_group);
  EXPECT_THAT(m.metrics, ElementsAre(Pair("epoch_s", 2.2), Pair("loss", 2.31)));
  // A metric that is not a number ("nan" from a diverged loss) is left out.
  EXPECT_THAT(matched(p, "epoch 3/4: 2.2s, 8539 img/s, loss nan").metrics,
              ElementsAre(Pair("epoch_s", 2.2)));

  OutputPattern with_samples =
      compiled(PatternKind::kEpoch, R"(Epoch (?P<epoch>\d+) done: (?P<samples>\d+) samples)");
  PatternMatch s = matched(with_samples, "Epoch 7 done: 50000 samples in 12.3s");
  EXPECT_EQ(s.epoch, 7);
  EXPECT_EQ(s.samples, 50000);
}

TEST(OutputPattern, ImplausibleNumbersMakeTheLineMalformed) {
  OutputPattern p =
      compiled(PatternKind::kEpoch, R"(Epoch (?P<epoch>-?\d+) done: (?P<samples>-?\d+) samples)");
  for (const char* line : {"Epoch 1 done: -5 samples", "Epoch 1 done: 9223372036854775807 samples",
                           "Epoch 1 done: 99999999999999999999999 samples",
                           "Epoch -1 done: 5 samples", "Epoch 1000000001 done: 5 samples"}) {
    Result<std::optional<PatternMatch>> m = p.match(line);
    ASSERT_FALSE(m.ok()) << line;
    EXPECT_THAT(m.error().message(), HasSubstr("is not a whole number from 0 to")) << line;
  }
}

// The formats docs/job-file.md shows, each as the script prints it.
TEST(OutputPattern, TimmTrainLine) {
  // timm train.py: f'Train: {epoch} [{update_idx:>4d}/{updates_per_epoch} ({pct:>3.0f}%)]  '
  // f'Loss: {now:#.3g} ({avg:#.3g})  Time: ...  LR: {lr:.3e}  Data: ...'
  OutputPattern p = compiled(
      PatternKind::kStep,
      R"(Train: (?P<epoch>\d+) \[\s*(?P<step>\d+)/(?P<steps>\d+) .*Loss: (?P<loss>[0-9.]+))");
  PatternMatch m =
      matched(p,
              "Train: 3 [ 200/390 ( 52%)]  Loss: 2.35 (2.46)  Time: 0.123s, 1040.65/s  "
              "(0.125s, 1024.00/s)  LR: 1.000e-01  Data: 0.010 (0.012)");
  EXPECT_EQ(m.epoch, 3);
  EXPECT_EQ(m.step, 200);
  EXPECT_EQ(m.steps, 390);
  EXPECT_THAT(m.metrics, ElementsAre(Pair("loss", 2.35)));
}

TEST(OutputPattern, LightningProgressBar) {
  // Lightning's TQDMProgressBar: description "Epoch {current_epoch}", then tqdm's
  // "{percentage}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]".
  OutputPattern p = compiled(
      PatternKind::kStep,
      R"(Epoch (?P<epoch>\d+):.*\| (?P<step>\d+)/(?P<steps>\d+) \[.*train_loss=(?P<loss>[0-9.]+))");
  PatternMatch m = matched(p,
                           "Epoch 3:  51%|█████▏    | 200/390 [00:10<00:09, 19.80it/s, v_num=0, "
                           "train_loss=2.340]");
  EXPECT_EQ(m.epoch, 3);
  EXPECT_EQ(m.step, 200);
  EXPECT_EQ(m.steps, 390);
  EXPECT_THAT(m.metrics, ElementsAre(Pair("loss", 2.34)));
}

TEST(OutputPattern, HuggingFaceTrainerLogLine) {
  // transformers' Trainer prints each log dict with Python's str(): the epoch
  // is fractional (epochs done so far).
  OutputPattern p =
      compiled(PatternKind::kStep, R"('loss': (?P<loss>[0-9.e-]+).*'epoch': (?P<epoch>[0-9.]+))");
  PatternMatch m =
      matched(p, "{'loss': 0.6931, 'grad_norm': 1.5234, 'learning_rate': 4.8e-05, 'epoch': 0.27}");
  EXPECT_EQ(m.epochs_done, 0.27);
  EXPECT_FALSE(m.epoch);
  EXPECT_THAT(m.metrics, ElementsAre(Pair("loss", 0.6931)));
}

TEST(OutputPattern, PytorchMnistExampleLines) {
  // pytorch/examples mnist: 'Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}' counts
  // samples, and 'Test set: Average loss: ...' follows every epoch.
  OutputPattern steps =
      compiled(PatternKind::kStep, R"(Train Epoch: (?P<epoch>\d+) \[(?P<step>\d+)/(?P<steps>\d+))");
  PatternMatch m = matched(steps, "Train Epoch: 1 [12800/60000 (21%)]\tLoss: 0.352110");
  EXPECT_EQ(m.epoch, 1);
  EXPECT_EQ(m.step, 12800);
  EXPECT_EQ(m.steps, 60000);
  OutputPattern epochs =
      compiled(PatternKind::kEpoch, R"(^Test set: Average loss: (?P<loss>\S+),)");
  EXPECT_THAT(matched(epochs, "Test set: Average loss: 0.0335, Accuracy: 9889/10000 (99%)").metrics,
              ElementsAre(Pair("loss", 0.0335)));
}

// StepTracker: what a sequence of step lines becomes.
struct Line {
  UnixMillis time_ms;
  PatternMatch match;
};

PatternMatch at(std::optional<int64_t> epoch, std::optional<int64_t> step,
                std::optional<int64_t> steps) {
  PatternMatch m;
  m.epoch = epoch;
  m.step = step;
  m.steps = steps;
  return m;
}

PatternMatch done(double epochs) {
  PatternMatch m;
  m.epochs_done = epochs;
  return m;
}

// "step e3 s200 n25000@1000" / "epoch_end e3 n50000@1000".
std::vector<std::string> track(StepTracker tracker, const std::vector<Line>& lines) {
  std::vector<ProgressEvent> events;
  for (const Line& l : lines) tracker.add(l.match, l.time_ms, events);
  std::vector<std::string> out;
  for (const ProgressEvent& e : events) {
    std::string s = e.kind;
    if (e.epoch) s += " e" + std::to_string(*e.epoch);
    if (e.step) s += " s" + std::to_string(*e.step);
    if (e.samples) s += " n" + std::to_string(*e.samples);
    out.push_back(s + "@" + std::to_string(e.time_ms));
  }
  return out;
}

TEST(StepTracker, TimmCountsFromZeroAndEndsAtTheLastStep) {
  StepTracker t(50000, /*derive_epochs=*/true);
  EXPECT_THAT(
      track(t, {{100, at(0, 0, 100)},
                {200, at(0, 50, 100)},
                {300, at(0, 99, 100)},  // the last step: the epoch ends here
                {400, at(1, 0, 100)},
                {500, at(1, 50, 100)}}),
      ElementsAre("step e0 s0 n0@100", "step e0 s50 n25000@200", "step e0 s99 n24500@300",
                  "epoch_end e0 n50000@300", "step e1 s0 n500@400", "step e1 s50 n25000@500"));
}

TEST(StepTracker, LightningCountsFromOneAndRepeatsItsLastLine) {
  StepTracker t(std::nullopt, /*derive_epochs=*/true);
  EXPECT_THAT(track(t, {{100, at(0, 200, 390)},
                        {200, at(0, 389, 390)},  // one step early: close enough
                        {300, at(0, 390, 390)},
                        {400, at(1, 1, 390)}}),
              ElementsAre("step e0 s200@100", "step e0 s389@200", "epoch_end e0@200",
                          "step e0 s390@300", "step e1 s1@400"));
}

TEST(StepTracker, AnEpochWhoseLastStepWasNotPrintedEndsAtTheNextOne) {
  StepTracker t(1000, /*derive_epochs=*/true);
  EXPECT_THAT(track(t, {{100, at(1, 10, 100)}, {200, at(1, 90, 100)}, {300, at(2, 10, 100)}}),
              ElementsAre("step e1 s10 n100@100", "step e1 s90 n800@200", "epoch_end e1 n1000@300",
                          "step e2 s10 n200@300"));
}

TEST(StepTracker, WithoutAnEpochGroupAStepGoingBackStartsTheNextEpoch) {
  StepTracker t(std::nullopt, /*derive_epochs=*/true);
  EXPECT_THAT(track(t, {{100, at(std::nullopt, 100, std::nullopt)},
                        {200, at(std::nullopt, 300, std::nullopt)},
                        {300, at(std::nullopt, 50, std::nullopt)},
                        {400, at(std::nullopt, 20, std::nullopt)}}),
              ElementsAre("step e1 s100@100", "step e1 s300@200", "epoch_end e1@300",
                          "step e2 s50@300", "epoch_end e2@400", "step e3 s20@400"));
}

TEST(StepTracker, AFractionalEpochEndsWhenItsWholePartGrows) {
  StepTracker t(10000, /*derive_epochs=*/true);
  EXPECT_THAT(track(t, {{100, done(0.25)}, {200, done(0.9)}, {300, done(1.15)}, {400, done(2.0)}}),
              ElementsAre("step e0 n2500@100", "step e0 n6500@200", "epoch_end e1 n10000@300",
                          "step e1 n2500@300", "epoch_end e2 n10000@400", "step e2 n8500@400"));
}

TEST(StepTracker, WithAnEpochRegexOnlyStepsAreProduced) {
  StepTracker t(1000, /*derive_epochs=*/false);
  EXPECT_THAT(track(t, {{100, at(1, 99, 100)}, {200, at(2, 0, 100)}}),
              ElementsAre("step e1 s99 n990@100", "step e2 s0 n10@200"));
}

}  // namespace
}  // namespace colo
