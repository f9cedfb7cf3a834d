// Tests of the multi-user MPS probe (sharing/mps_user_probe.h) and of what
// the service makes of its outcome (after_mps_probe(), sharing/mps_users.h).
// The probe's clients are a stand-in script here (the real one needs a GPU:
// bench/mps-users.sh runs it there); it answers as the driver would in each
// case, chosen by MODE in the environment the probe passes on.
#include "sharing/mps_user_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/clock.h"
#include "sharing/mps_users.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(MpsUserProbe, WhatTheProbeSawDecidesSharedOrSeparateAndTheLineSaysIt) {
  const MpsUsersChoice shared{true, "MPS: one multi-user server per GPU (users share it)"};
  const MpsUsersChoice separate{false, "MPS: a daemon per user (--mps-users separate; ...)"};
  struct Case {
    MpsUsersChoice choice;
    Result<MpsProbeOutcome> outcome;
    bool shared;
    const char* says;
  };
  const Case cases[] = {
      {shared, MpsProbeOutcome{true, 1234}, true,
       "MPS: one multi-user server per GPU (users share it; a non-root client's first CUDA work "
       "ran beside colo's in 1.2 s)"},
      {shared, MpsProbeOutcome{false, 20000}, false,
       "MPS: a daemon per user (under the multi-user server a non-root client's first CUDA work "
       "did not run beside colo's within 20 s; users' jobs time-slice)"},
      {shared, Error("cuInit failed"), false,
       "MPS: a daemon per user (the multi-user server could not be proved: cuInit failed; users' "
       "jobs time-slice)"},
      // A choice that is already separate is not the probe's to change.
      {separate, MpsProbeOutcome{true, 10}, false, separate.line.c_str()},
  };
  for (const Case& c : cases) {
    const MpsUsersChoice after = after_mps_probe(c.choice, c.outcome);
    EXPECT_EQ(after.shared, c.shared) << c.says;
    EXPECT_EQ(after.line, c.says);
  }
}

// A stand-in for `colo mps-probe-client` in a directory of its own.
class ProbeStandIn : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/colo-mps-probe-XXXXXX";
    dir_ = mkdtemp(name);
    program_ = dir_ + "/colo";
    std::ofstream(program_) << R"sh(#!/bin/sh
# $1 is mps-probe-client; $2 is --hold for colo's own client.
case "$MODE" in
  together) echo "ready 3"; [ "$2" = --hold ] && cat >/dev/null; exit 0 ;;
  serialized)  # the second user's client waits for the first's to end
    if [ "$2" = --hold ]; then echo "ready 3"; cat >/dev/null; exit 0; fi
    exec sleep 60 ;;
  no-driver) echo "mps-probe-client: cannot load the CUDA driver (libcuda.so.1)" >&2; exit 1 ;;
  other-fails)
    if [ "$2" = --hold ]; then echo "ready 3"; cat >/dev/null; exit 0; fi
    echo "mps-probe-client: cuInit failed: CUDA error 805" >&2; exit 1 ;;
esac
)sh";
    ::chmod(program_.c_str(), 0755);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Result<MpsProbeOutcome> probe(const char* mode, int other_timeout_ms = 60'000) {
    MpsUserProbeOptions options;
    options.program = program_;
    // colo's own uid: the identity change is not what is under test here.
    options.other = ClientUser{::geteuid(), ::getegid(), {}};
    options.other_timeout_ms = other_timeout_ms;
    ProcessMpsUserProbe probe(options, clock_);
    return probe.run({{"MODE", mode}});
  }

  std::string dir_, program_;
  SystemClock clock_;
};

TEST_F(ProbeStandIn, TwoClientsThatBothWorkAreTogether) {
  Result<MpsProbeOutcome> outcome = probe("together");
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_TRUE(outcome->together);
  EXPECT_LT(outcome->waited_ms, 60'000);
}

TEST_F(ProbeStandIn, ASecondClientStillWaitingAtTheBoundIsNotTogether) {
  // The stand-in's second client never answers: the bound is what runs out,
  // however busy the machine.
  Result<MpsProbeOutcome> outcome = probe("serialized", 300);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_FALSE(outcome->together);
  EXPECT_EQ(outcome->waited_ms, 300);
}

TEST_F(ProbeStandIn, AClientThatFailsIsAnErrorSayingWhatItSaid) {
  Result<MpsProbeOutcome> own = probe("no-driver");
  ASSERT_FALSE(own.ok());
  EXPECT_THAT(own.error().message(), HasSubstr("colo's own probe client did no CUDA work"));
  EXPECT_THAT(own.error().message(), HasSubstr("cannot load the CUDA driver"));

  Result<MpsProbeOutcome> other = probe("other-fails");
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.error().message(), HasSubstr("cuInit failed: CUDA error 805"));
}

}  // namespace
}  // namespace colo
