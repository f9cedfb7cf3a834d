// Table-driven tests of the choice between one multi-user MPS server and a
// daemon per user (sharing/mps_users.h).
#include "sharing/mps_users.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(MpsUsers, NamesRoundTripAndABadOneListsTheGoodOnes) {
  for (MpsUsers mode : {MpsUsers::kAuto, MpsUsers::kShared, MpsUsers::kSeparate}) {
    Result<MpsUsers> parsed = parse_mps_users(to_string(mode));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, mode);
  }
  Result<MpsUsers> bad = parse_mps_users("both");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(), HasSubstr("auto, shared, separate"));
}

TEST(MpsUsers, TheHelpTextOffersMultiUserModeByMOrByName) {
  struct Case {
    const char* help;
    bool offers;
  };
  const Case cases[] = {
      // Driver 580's control binary (abridged).
      {"Usage: nvidia-cuda-mps-control [OPTIONS]\n  -d, --daemon   Start the daemon\n"
       "  -f, --foreground\n  -M, --multiuser-server  Start a multi-user server\n",
       true},
      {"usage: nvidia-cuda-mps-control -d [-M]\n", true},
      {"  -M   serve clients of every user\n", true},
      {"Multi-user server mode is supported\n", true},
      {"Usage: nvidia-cuda-mps-control [-d | -f]\n  -d  daemon\n  -f  foreground\n", false},
      {"  -MAX   not an option we know\n  --Mode\n", false},
      {"", false},
  };
  for (const Case& c : cases) EXPECT_EQ(help_offers_multiuser(c.help), c.offers) << c.help;
}

TEST(MpsUsers, ChoosesSharedOnlyAsRootWithMultiUserModeAndSaysWhichInOneLine) {
  struct Case {
    MpsUsers requested;
    bool offers, root;
    bool ok, shared;
    const char* says;  // the line, or a part of the error
  };
  const Case cases[] = {
      {MpsUsers::kAuto, true, true, true, true,
       "MPS: one multi-user server per GPU (users share it)"},
      {MpsUsers::kAuto, false, true, true, false,
       "MPS: a daemon per user (the driver has no multi-user mode; users' jobs time-slice)"},
      {MpsUsers::kAuto, true, false, true, false,
       "MPS: a daemon per user (colo serve runs as uid 1000, not root, and takes only its own "
       "user's jobs; users' jobs time-slice)"},
      {MpsUsers::kSeparate, true, true, true, false,
       "MPS: a daemon per user (--mps-users separate; users' jobs time-slice)"},
      {MpsUsers::kShared, true, true, true, true,
       "MPS: one multi-user server per GPU (users share it)"},
      {MpsUsers::kShared, false, true, false, false, "offers no multi-user mode"},
      {MpsUsers::kShared, true, false, false, false, "needs colo serve to run as root"},
  };
  for (const Case& c : cases) {
    Result<MpsUsersChoice> chosen =
        choose_mps_users(c.requested, c.offers, c.root, c.root ? 0 : 1000, "mps-control");
    ASSERT_EQ(chosen.ok(), c.ok) << to_string(c.requested) << " " << c.offers << c.root;
    if (!c.ok) {
      EXPECT_THAT(chosen.error().message(), HasSubstr(c.says));
      continue;
    }
    EXPECT_EQ(chosen->shared, c.shared) << c.says;
    EXPECT_EQ(chosen->line, c.says);
  }
}

}  // namespace
}  // namespace colo
