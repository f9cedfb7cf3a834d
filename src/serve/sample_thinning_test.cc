#include "serve/sample_thinning.h"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "store/testing/lifecycle_runs.h"

namespace colo {
namespace {

constexpr int64_t kDayMs = 86'400'000;

// A run sampled every 500 ms for 10 minutes from the clock's start, and a
// thinning of it: nothing before the samples are `full_for` old, then each
// minute's first sample per GPU once 10 minutes have passed since the last.
class SampleThinningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = open_memory();
    ASSERT_TRUE(store_);
    auto run = store_->begin_run(make_run("naive", clock_.now_ms()));
    ASSERT_TRUE(run.ok());
    run_ = *run;
    std::vector<DeviceSample> samples;
    for (int k = 0; k < 1200; ++k) {
      DeviceSample s;
      s.time_ms = clock_.now_ms() + 500 * static_cast<int64_t>(k);
      samples.push_back(s);
    }
    ASSERT_TRUE(store_->add_samples(run_, samples, {}).ok());
  }
  size_t samples() {
    auto rows = store_->device_samples(run_);
    return rows.ok() ? rows->size() : 0;
  }

  FakeClock clock_{kT0};
  std::unique_ptr<RunStore> store_;
  int64_t run_ = 0;
  std::ostringstream log_;
};

TEST_F(SampleThinningTest, SamplesOlderThanTheirFullRateAreThinnedEveryTenMinutes) {
  SampleThinning thinning(*store_, clock_, log_, run_, 7 * kDayMs, 60'000);
  clock_.advance_ms(7 * kDayMs);
  thinning.tick();
  EXPECT_EQ(samples(), 1200U) << "not 10 minutes since the start: not due";
  clock_.advance_ms(SampleThinning::kSampleThinningMs + 60'000);
  thinning.tick();
  // All 10 minutes of samples have aged past 7 days: one stays in each of
  // the 11 minutes (counted from time 0) they touch.
  EXPECT_EQ(samples(), 11U);
  clock_.advance_ms(SampleThinning::kSampleThinningMs);
  thinning.tick();
  EXPECT_EQ(samples(), 11U) << "nothing more to thin";
  EXPECT_TRUE(log_.str().empty()) << log_.str();
}

TEST_F(SampleThinningTest, ZeroKeepsEverySample) {
  SampleThinning thinning(*store_, clock_, log_, run_, 0, 0);
  clock_.advance_ms(SampleThinning::kSampleThinningMs + 7 * kDayMs);
  thinning.tick();
  EXPECT_EQ(samples(), 1200U);
}

}  // namespace
}  // namespace colo
