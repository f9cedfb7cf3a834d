#include "run/mps_fault_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

// A fault explains others' on the GPUs it was raised on, for kRecentFaultMs.
struct RecentCase {
  std::string name;
  std::vector<int> asked;
  int64_t at_ms;
  std::optional<std::string> expected;
};

TEST(MpsFaultLog, AFaultIsRecentOnItsGpusForAMinute) {
  MpsFaultLog log;
  log.raised({0, 1}, "a raised a fatal GPU fault on gpus 0,1 under MPS", 1000);
  const std::vector<RecentCase> cases = {
      {"its GPU, at once", {0}, 1000, "a raised a fatal GPU fault on gpus 0,1 under MPS"},
      {"its other GPU, a minute later",
       {1},
       1000 + MpsFaultLog::kRecentFaultMs,
       "a raised a fatal GPU fault on gpus 0,1 under MPS"},
      {"a gang that shares one", {2, 1}, 2000, "a raised a fatal GPU fault on gpus 0,1 under MPS"},
      {"another GPU", {2}, 1000, std::nullopt},
      {"after a minute", {0}, 1001 + MpsFaultLog::kRecentFaultMs, std::nullopt},
  };
  for (const RecentCase& c : cases) EXPECT_EQ(log.recent(c.asked, c.at_ms), c.expected) << c.name;
}

TEST(MpsFaultLog, PlacementSettlesAfterAFault) {
  MpsFaultLog log;
  EXPECT_FALSE(log.paused(0));
  log.settle(1000);
  EXPECT_TRUE(log.paused(1000));
  EXPECT_TRUE(log.paused(1000 + MpsFaultLog::kSettleMs - 1));
  EXPECT_FALSE(log.paused(1000 + MpsFaultLog::kSettleMs));
}

// Refused starts back off 2 s, 4 s, 8 s, ... up to 30 s; a client that gets
// going starts the count again.
TEST(MpsFaultLog, RefusedStartsBackOffDoublingUpToHalfAMinute) {
  MpsFaultLog log;
  const std::vector<int64_t> waits = {2000, 4000, 8000, 16'000, 30'000, 30'000, 30'000};
  for (size_t i = 0; i < waits.size(); ++i) {
    EXPECT_EQ(log.refused_start(0), waits[i]) << i;
    EXPECT_EQ(log.refused_in_a_row(), static_cast<int>(i) + 1);
  }
  EXPECT_TRUE(log.paused(29'999));
  log.accepted();
  EXPECT_EQ(log.refused_in_a_row(), 0);
  EXPECT_EQ(log.refused_start(100'000), 2000);
  EXPECT_TRUE(log.paused(101'999));
  EXPECT_FALSE(log.paused(102'000));
}

}  // namespace
}  // namespace colo
