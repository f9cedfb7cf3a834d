#include "serve/queue_order.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

using ::testing::HasSubstr;

constexpr uid_t kAlice = 1000;
constexpr uid_t kBob = 1001;

std::vector<int64_t> ids_of(const std::vector<QueuedInOrder>& jobs) {
  std::vector<int64_t> ids;
  for (const QueuedInOrder& j : jobs) ids.push_back(j.id);
  return ids;
}

TEST(QueueOrder, StartOrderFollowsTheScheduler) {
  const std::map<uid_t, OwnerShare> alice_used = {{kAlice, {"alice", 3'600'000, 1}},
                                                  {kBob, {"bob", 0, 1}}};
  const std::map<uid_t, OwnerShare> alice_weighted = {{kAlice, {"alice", 3'600'000, 4}},
                                                      {kBob, {"bob", 1'000'000, 1}}};
  struct Case {
    std::string what;
    std::vector<QueuedInOrder> queued;
    const std::map<uid_t, OwnerShare>* shares;
    std::vector<int64_t> order;
  };
  const std::vector<Case> cases = {
      {"first come, first served", {{3, kBob}, {1, kAlice}, {2, kAlice}}, nullptr, {1, 2, 3}},
      {"fair share: the one who used least first",
       {{1, kAlice}, {2, kAlice}, {3, kBob}},
       &alice_used,
       {3, 1, 2}},
      {"usage over weight", {{1, kBob}, {2, kAlice}}, &alice_weighted, {2, 1}},
      {"priority before fair share",
       {{1, kAlice, 5}, {2, kBob}, {3, kAlice}},
       &alice_used,
       {1, 2, 3}},
      {"opportunistic after every other", {{1, kBob, 9, true}, {2, kAlice}}, &alice_used, {2, 1}},
      {"an owner never seen used nothing", {{1, kAlice}, {2, 4242}}, &alice_used, {2, 1}},
  };
  for (const Case& c : cases)
    EXPECT_EQ(ids_of(in_start_order(c.queued, c.shares)), c.order) << c.what;
}

TEST(QueueOrder, WaitsBehindSaysWhatReallyHoldsAJob) {
  const std::map<uid_t, OwnerShare> shares = {{kAlice, {"alice", 3'600'000, 1}},
                                              {kBob, {"bob", 0, 2}}};
  const std::map<uid_t, OwnerShare> even = {{kAlice, {"alice", 0, 1}}, {kBob, {"bob", 0, 1}}};
  struct Case {
    std::string what;
    QueuedInOrder job;
    QueuedInOrder first;
    const std::map<uid_t, OwnerShare>* shares;
    std::string says;  // "": no word from the order
  };
  const std::vector<Case> cases = {
      {"the first waits for room, not the order", {3, kBob}, {3, kBob}, &shares, ""},
      {"behind its owner's own", {4, kBob}, {3, kBob}, &shares, ""},
      {"behind another user who used less",
       {1, kAlice},
       {3, kBob},
       &shares,
       "fair share: bob's jobs go first (bob used 0ms at weight 2, alice used 1h00m of GPU "
       "time lately; half-life 1d 0h)"},
      {"usage even: arrival", {2, kBob}, {1, kAlice}, &even, "arrival: job 1 of alice came first"},
      {"priority",
       {1, kAlice},
       {3, kBob, 2},
       &shares,
       "priority: job 3 of bob goes first (priority 2 over 0)"},
      {"opportunistic", {1, kAlice, 0, true}, {3, kBob}, &shares, "opportunistic: starts after"},
      {"first come, first served", {5, kAlice}, {3, kBob}, nullptr, ""},
  };
  for (const Case& c : cases) {
    const std::string said = waits_behind(c.job, c.first, c.shares, 86'400'000);
    if (c.says.empty()) {
      EXPECT_EQ(said, "") << c.what;
    } else {
      EXPECT_THAT(said, HasSubstr(c.says)) << c.what;
    }
  }
}

}  // namespace
}  // namespace colo
