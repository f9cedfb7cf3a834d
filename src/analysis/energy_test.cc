#include "analysis/energy.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

DeviceSample at(UnixMillis t, std::optional<uint64_t> energy_mj, std::optional<double> power_w) {
  DeviceSample s;
  s.time_ms = t;
  s.energy_mj = energy_mj;
  s.power_w = power_w;
  return s;
}

TEST(Energy, CounterWherePairsHaveItElsePowerElseNothing) {
  struct Case {
    const char* name;
    std::vector<DeviceSample> samples;
    std::optional<double> joules;
  } cases[] = {
      {"no samples", {}, std::nullopt},
      {"one sample", {at(0, 1000, 100)}, std::nullopt},
      {"counter wins over power", {at(0, 1000, 1), at(1000, 51000, 1)}, 50.0},
      {"power trapezoid", {at(0, {}, 100), at(2000, {}, 200)}, 300.0},
      {"counter reset counts nothing",
       {at(0, 9000, {}), at(1000, 1000, {}), at(2000, 3000, {})},
       2.0},
      {"a pair with neither", {at(0, {}, {}), at(1000, {}, 100)}, std::nullopt},
      {"mixed pairs", {at(0, 0, 100), at(1000, 10000, 100), at(2000, {}, 100)}, 110.0},
      {"out of order pair skipped", {at(1000, 0, {}), at(1000, 5000, {})}, std::nullopt},
  };
  for (const Case& c : cases) {
    std::optional<double> j = energy_j(c.samples);
    ASSERT_EQ(j.has_value(), c.joules.has_value()) << c.name;
    if (j) {
      EXPECT_DOUBLE_EQ(*j, *c.joules) << c.name;
    }
  }
}

TEST(Energy, WithinIntervalsCountsTheCoveredShareOfEachPair) {
  // 100 W for 10 s, sampled every 2 s.
  std::vector<DeviceSample> samples;
  for (int k = 0; k <= 5; ++k) samples.push_back(at(2000 * k, {}, 100));
  struct Case {
    std::vector<Interval> within;
    std::optional<double> joules;
  } cases[] = {
      {{{0, 10000}}, 1000.0},
      {{{1000, 3000}}, 200.0},
      {{{0, 1000}, {9000, 20000}}, 200.0},
      {{{20000, 30000}}, std::nullopt},
      {{}, std::nullopt},
  };
  for (const Case& c : cases) {
    std::optional<double> j = energy_within_j(samples, union_of(c.within));
    ASSERT_EQ(j.has_value(), c.joules.has_value());
    if (j) {
      EXPECT_NEAR(*j, *c.joules, 1e-9);
    }
  }
}

TEST(Energy, WeightSharesEachPair) {
  std::vector<DeviceSample> samples = {at(0, 0, {}), at(1000, 4000, {}), at(2000, 8000, {})};
  // The first second shared by two, the second alone.
  std::optional<double> j =
      integrate_energy_j(samples, [](UnixMillis a, UnixMillis) { return a < 1000 ? 0.5 : 1.0; });
  ASSERT_TRUE(j);
  EXPECT_DOUBLE_EQ(*j, 6.0);
}

}  // namespace
}  // namespace colo
