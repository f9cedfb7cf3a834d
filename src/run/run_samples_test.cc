#include "run/run_samples.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/testing/eventually.h"
#include "gpu/sim_backend.h"

namespace colo {
namespace {

using ::colo::testutil::eventually;

class RunSamplesXidTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto sim = SimBackend::create("H200", 2, clock_);
    ASSERT_TRUE(sim.ok()) << sim.error().message();
    sim_ = std::move(sim).value();
    auto devices = sim_->devices();
    ASSERT_TRUE(devices.ok());
    devices_ = *devices;
  }

  FakeClock clock_;
  std::unique_ptr<SimBackend> sim_;
  std::vector<DeviceInfo> devices_;
};

TEST_F(RunSamplesXidTest, CollectHandsOutXidEventsInArrivalOrderOnce) {
  RunSamples samples(*sim_, clock_, devices_, /*period_ms=*/100, /*recent_per_gpu=*/10);
  samples.start();
  // The first period ran (both GPUs sampled, Xid events polled) with none queued.
  ASSERT_TRUE(eventually([&] { return samples.stats().device_samples == 2; }));
  EXPECT_TRUE(samples.collect().xid_events.empty());

  sim_->inject_xid(1, 43);
  sim_->inject_xid(0, 13);
  clock_.advance_ms(100);
  ASSERT_TRUE(eventually([&] { return samples.stats().xid_events == 2; }));
  SampleBatch batch = samples.collect();
  ASSERT_EQ(batch.xid_events.size(), 2u);
  EXPECT_EQ(batch.xid_events[0].device, 1);
  EXPECT_EQ(batch.xid_events[0].xid, 43u);
  EXPECT_EQ(batch.xid_events[0].time_ms, clock_.now_ms() - 100);  // injected then
  EXPECT_EQ(batch.xid_events[1].device, 0);
  EXPECT_EQ(batch.xid_events[1].xid, 13u);
  EXPECT_EQ(batch.xid_events_dropped, 0);

  sim_->inject_xid(0, 79);
  clock_.advance_ms(100);
  ASSERT_TRUE(eventually([&] { return samples.stats().xid_events == 3; }));
  samples.stop();
  batch = samples.collect();
  ASSERT_EQ(batch.xid_events.size(), 1u);  // only what is new
  EXPECT_EQ(batch.xid_events[0].xid, 79u);
  EXPECT_TRUE(samples.collect().xid_events.empty());
}

TEST_F(RunSamplesXidTest, CountsXidEventsDroppedWhenCollectedLate) {
  RunSamples samples(*sim_, clock_, devices_, /*period_ms=*/100, /*recent_per_gpu=*/10);
  samples.start();
  ASSERT_TRUE(eventually([&] { return samples.stats().device_samples == 2; }));
  for (uint64_t i = 0; i < 1005; ++i) sim_->inject_xid(0, i);
  clock_.advance_ms(100);
  ASSERT_TRUE(eventually([&] { return samples.stats().xid_events == 1005; }));
  samples.stop();
  SampleBatch batch = samples.collect();
  ASSERT_EQ(batch.xid_events.size(), 1000u);
  EXPECT_EQ(batch.xid_events.front().xid, 0u);  // the first ones are kept
  EXPECT_EQ(batch.xid_events.back().xid, 999u);
  EXPECT_EQ(batch.xid_events_dropped, 5);
}

}  // namespace
}  // namespace colo
