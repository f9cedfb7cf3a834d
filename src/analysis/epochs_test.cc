#include "analysis/epochs.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

ProgressEvent event(UnixMillis t, const char* kind, std::optional<int64_t> samples = {}) {
  ProgressEvent e;
  e.time_ms = t;
  e.kind = kind;
  e.samples = samples;
  return e;
}

TEST(Epochs, EndsOfTheLastAttemptOnlyOldestFirst) {
  std::vector<ProgressEvent> events = {event(500, "epoch_end", 10), event(900, "requeued"),
                                       event(3000, "epoch_end", 30), event(1500, "step", 5),
                                       event(2000, "epoch_end", 20)};
  std::vector<EpochEnd> ends = epoch_ends(events, 1000);
  ASSERT_EQ(ends.size(), 2U);
  EXPECT_EQ(ends[0].time_ms, 2000);
  EXPECT_EQ(ends[1].samples, 30);
  EXPECT_EQ(epoch_ends(events, std::nullopt).size(), 3U);
}

TEST(Epochs, SteadyEpochsAreTwoToN) {
  struct Case {
    const char* name;
    std::vector<EpochEnd> ends;
    bool steady;
    int64_t epochs;
    double epoch_ms;
    std::optional<double> samples_per_s;
  } cases[] = {
      {"none", {}, false, 0, 0, {}},
      {"one", {{1000, 10}}, false, 0, 0, {}},
      {"two", {{1000, 10}, {3000, 100}}, true, 1, 2000, 50.0},
      {"three, first epoch's samples ignored",
       {{1000, 999}, {2000, 100}, {4000, 200}},
       true,
       2,
       1500,
       100.0},
      {"a steady epoch without samples", {{1000, 10}, {2000, {}}, {3000, 10}}, true, 2, 1000, {}},
      {"no time passed", {{1000, 10}, {1000, 10}}, false, 0, 0, {}},
  };
  for (const Case& c : cases) {
    std::optional<SteadyEpochs> s = steady_epochs(c.ends);
    ASSERT_EQ(s.has_value(), c.steady) << c.name;
    if (!s) continue;
    EXPECT_EQ(s->epochs, c.epochs) << c.name;
    EXPECT_DOUBLE_EQ(s->epoch_ms, c.epoch_ms) << c.name;
    ASSERT_EQ(s->samples_per_s.has_value(), c.samples_per_s.has_value()) << c.name;
    if (c.samples_per_s) {
      EXPECT_DOUBLE_EQ(*s->samples_per_s, *c.samples_per_s) << c.name;
    }
  }
}

TEST(Epochs, ProgressIsLinearWithinEachEpoch) {
  // Epoch 1 (warm-up) ends at 1 s; epoch 2 takes 1 s with 100 samples,
  // epoch 3 takes 2 s with 400.
  const std::vector<EpochEnd> ends = {{1000, 7}, {2000, 100}, {4000, 400}};
  struct Case {
    UnixMillis from, to;
    double samples, epochs;
  } cases[] = {
      {1000, 4000, 500, 2},   {1500, 2000, 50, 0.5}, {1500, 3000, 250, 1.0}, {0, 1000, 0, 0},
      {3000, 9000, 200, 0.5}, {2500, 2500, 0, 0},    {3000, 2000, 0, 0},     {0, 9000, 500, 2},
  };
  for (const Case& c : cases) {
    EXPECT_DOUBLE_EQ(progress_between(ends, c.from, c.to, true), c.samples)
        << c.from << ".." << c.to;
    EXPECT_DOUBLE_EQ(progress_between(ends, c.from, c.to, false), c.epochs)
        << c.from << ".." << c.to;
  }
  EXPECT_TRUE(counts_samples(ends));
  EXPECT_FALSE(counts_samples({{1000, 7}, {2000, {}}}));
  EXPECT_FALSE(counts_samples({{1000, 7}}));
}

}  // namespace
}  // namespace colo
