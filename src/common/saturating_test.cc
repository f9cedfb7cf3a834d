#include "common/saturating.h"

#include <gtest/gtest.h>

#include <limits>

namespace colo {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(SaturatingAdd, AddsWhileTheSumFitsAndStopsAtTheLimits) {
  EXPECT_EQ(saturating_add(int64_t{2}, int64_t{3}), 5);
  EXPECT_EQ(saturating_add(int64_t{-2}, int64_t{3}), 1);
  EXPECT_EQ(saturating_add(kMax, int64_t{1}), kMax);
  EXPECT_EQ(saturating_add(kMax, kMax), kMax);
  EXPECT_EQ(saturating_add(kMin, int64_t{-1}), kMin);
  EXPECT_EQ(saturating_add(kMax, kMin), -1);
  EXPECT_EQ(saturating_add(uint64_t{1}, std::numeric_limits<uint64_t>::max()),
            std::numeric_limits<uint64_t>::max());
}

}  // namespace
}  // namespace colo
