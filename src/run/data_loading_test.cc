#include "run/data_loading.h"

#include <gtest/gtest.h>

#include "common/units.h"

namespace colo {
namespace {

TEST(DefaultRing, HalfAGibibytePerConsumerAtLeastOneAndAtMostHalfTheFreeSharedMemory) {
  EXPECT_EQ(default_ring_bytes(1, 64 * kGiB), kGiB);
  EXPECT_EQ(default_ring_bytes(3, 64 * kGiB), 3 * kGiB / 2);
  EXPECT_EQ(default_ring_bytes(7, 64 * kGiB), 7 * kGiB / 2);
  EXPECT_EQ(default_ring_bytes(7, 4 * kGiB), 2 * kGiB) << "half of what /dev/shm has free";
  EXPECT_EQ(default_ring_bytes(7, kGiB), kGiB) << "never below the old default";
  EXPECT_EQ(default_ring_bytes(0, 0), kGiB);
}

TEST(DefaultRing, ATableThatNamesItsRingKeepsIt) {
  DataSourceSpec spec;
  spec.name = "imagenet";
  spec.path = "/data/imagenet";
  spec.ring_bytes = 256ULL << 20;
  Result<LoaderOptions> o = loader_options_for(spec, 7);
  ASSERT_TRUE(o.ok()) << o.error().message();
  EXPECT_EQ(o->ring_bytes, 256ULL << 20);
  spec.ring_bytes.reset();
  o = loader_options_for(spec, 1);
  ASSERT_TRUE(o.ok());
  EXPECT_GE(o->ring_bytes, kGiB);
}

}  // namespace
}  // namespace colo
