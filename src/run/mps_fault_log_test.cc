#include "run/mps_fault_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

// A fault explains others' on the GPUs it was raised on, for kRecentFaultMs;
// each owner is told it as FaultCause says: whole to the raiser's owner, to
// others without the raiser's job or line.
struct RecentCase {
  std::string name;
  std::vector<int> asked;
  int64_t at_ms;
  uint32_t viewer;
  std::optional<std::string> expected;
};

TEST(MpsFaultLog, AFaultIsRecentOnItsGpusForAMinuteAndToldToEachOwnerAsTheirs) {
  MpsFaultLog log;
  const FaultCause cause{"a raised a fatal GPU fault on gpus 0,1 under MPS (assert x < n)",
                         "a job of another user raised a fatal GPU fault on gpus 0,1 under MPS",
                         1000};
  log.raised({0, 1}, cause, 1000);
  const std::vector<RecentCase> cases = {
      {"its GPU, at once", {0}, 1000, 1000, cause.whole},
      {"its other GPU, a minute later", {1}, 1000 + MpsFaultLog::kRecentFaultMs, 1000, cause.whole},
      {"a gang that shares one", {2, 1}, 2000, 1000, cause.whole},
      {"another user's job", {0}, 1000, 2000, cause.for_others},
      {"root's job", {1}, 1500, 0, cause.for_others},
      {"another GPU", {2}, 1000, 1000, std::nullopt},
      {"after a minute", {0}, 1001 + MpsFaultLog::kRecentFaultMs, 1000, std::nullopt},
  };
  for (const RecentCase& c : cases) {
    std::optional<FaultCause> recent = log.recent(c.asked, c.at_ms);
    ASSERT_EQ(recent.has_value(), c.expected.has_value()) << c.name;
    if (recent) EXPECT_EQ(recent->told_to(c.viewer), *c.expected) << c.name;
  }
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
