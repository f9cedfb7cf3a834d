#include "data/sample_order.h"

#include <gtest/gtest.h>

#include <set>

namespace colo {
namespace {

std::vector<uint32_t> epoch_of(const SampleOrder& order, int64_t epoch) {
  std::vector<uint32_t> out;
  const uint64_t n = order.dataset_size();
  for (uint64_t i = 0; i < n; ++i)
    out.push_back(order.sample_at(static_cast<uint64_t>(epoch) * n + i));
  return out;
}

bool is_permutation_of_all(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != i) return false;
  return true;
}

TEST(SampleOrderTest, EachEpochIsAShuffledPermutation) {
  SampleOrder order(1000, 42);
  std::vector<uint32_t> e0 = epoch_of(order, 0);
  EXPECT_TRUE(is_permutation_of_all(e0));
  order.advance({});
  std::vector<uint32_t> e1 = epoch_of(order, 1);
  EXPECT_TRUE(is_permutation_of_all(e1));
  EXPECT_NE(e0, e1);
  EXPECT_EQ(epoch_of(order, 0), e0) << "the previous epoch stays readable";
}

TEST(SampleOrderTest, AWindowStartingAtACutOffsetHoldsEverySampleOnce) {
  const uint64_t n = 100;
  SampleOrder order(n, 7);
  const std::vector<uint64_t> offsets = {30, 70, 30, 0};
  for (int epoch = 0; epoch < 5; ++epoch) {
    std::vector<uint32_t> before = epoch_of(order, epoch);
    order.advance(offsets);
    std::vector<uint32_t> after = epoch_of(order, epoch + 1);
    for (uint64_t start : {uint64_t{0}, uint64_t{30}, uint64_t{70}}) {
      std::vector<uint32_t> window(before.begin() + static_cast<long>(start), before.end());
      window.insert(window.end(), after.begin(), after.begin() + static_cast<long>(start));
      EXPECT_TRUE(is_permutation_of_all(window)) << "window at " << start << ", epoch " << epoch;
    }
    // Still shuffled inside the segments.
    EXPECT_NE(std::vector<uint32_t>(before.begin(), before.begin() + 30),
              std::vector<uint32_t>(after.begin(), after.begin() + 30));
  }
}

TEST(SampleOrderTest, TheSameSeedGivesTheSameStream) {
  SampleOrder a(50, 3);
  SampleOrder b(50, 3);
  a.advance({10});
  b.advance({10});
  EXPECT_EQ(epoch_of(a, 1), epoch_of(b, 1));
  SampleOrder c(50, 4);
  EXPECT_NE(epoch_of(a, 0), epoch_of(c, 0));
}

}  // namespace
}  // namespace colo
