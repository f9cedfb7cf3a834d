#include "analysis/intervals.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

TEST(Intervals, UnionMergesOverlappingAndTouchingAndDropsEmpty) {
  struct Case {
    const char* name;
    std::vector<Interval> in;
    std::vector<Interval> merged;
    int64_t covered;
  } cases[] = {
      {"none", {}, {}, 0},
      {"one", {{0, 10}}, {{0, 10}}, 10},
      {"disjoint, unsorted", {{20, 30}, {0, 10}}, {{0, 10}, {20, 30}}, 20},
      {"overlapping", {{0, 10}, {5, 15}}, {{0, 15}}, 15},
      {"touching", {{0, 10}, {10, 12}}, {{0, 12}}, 12},
      {"nested", {{0, 100}, {10, 20}}, {{0, 100}}, 100},
      {"empty and reversed dropped", {{5, 5}, {9, 3}, {1, 2}}, {{1, 2}}, 1},
  };
  for (const Case& c : cases) {
    std::vector<Interval> merged = union_of(c.in);
    EXPECT_EQ(merged, c.merged) << c.name;
    EXPECT_EQ(covered_ms(merged), c.covered) << c.name;
  }
}

TEST(Intervals, OverlapAndInside) {
  const std::vector<Interval> merged = {{0, 10}, {20, 30}};
  struct Case {
    UnixMillis from, to;
    int64_t overlap;
  } cases[] = {{-5, 5, 5}, {5, 25, 10}, {10, 20, 0}, {-10, 40, 20}, {12, 18, 0}, {25, 25, 0}};
  for (const Case& c : cases) {
    EXPECT_EQ(overlap_ms(merged, c.from, c.to), c.overlap) << c.from << ".." << c.to;
  }
  EXPECT_TRUE(inside(merged, 0));
  EXPECT_TRUE(inside(merged, 10));
  EXPECT_FALSE(inside(merged, 15));
  EXPECT_TRUE(inside(merged, 30));
  EXPECT_FALSE(inside(merged, 31));
}

}  // namespace
}  // namespace colo
