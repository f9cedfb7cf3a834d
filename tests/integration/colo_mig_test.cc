// `colo mig plan` / `colo mig profiles` end to end: the real binary, offline
// tables and the simulated backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "integration_util.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// Runs `colo ARGS`, stdout and stderr together.
CommandResult colo(const std::string& args) { return shell(std::string(COLO_BINARY) + " " + args); }

TEST(ColoMig, RefusesAnImpossibleLayoutWithTheReason) {
  CommandResult r = colo("mig plan 3g.20gb 1g.5gb:5 --gpu-model A100-40GB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("needs 8 compute slices; the GPU has 7"));
}

TEST(ColoMig, PrintsPlacementsOfAValidLayout) {
  CommandResult r = colo("mig plan '3g.20gb 2g.10gb:2' --gpu a100-40gb");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("    4    4  3g.20gb"));
  EXPECT_THAT(r.output, HasSubstr("    0    2  2g.10gb"));
  EXPECT_THAT(r.output, HasSubstr("uses 7 of 7 compute slices and 8 of 8 memory slices"));
}

TEST(ColoMig, JsonAndMemoryNeeds) {
  CommandResult r = colo("mig plan --memory 15GiB,60GiB --gpu-model H200 --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"profile\": \"1g.18gb\""));
  EXPECT_THAT(r.output, HasSubstr("\"profile\": \"3g.71gb\""));
  EXPECT_THAT(r.output, HasSubstr("\"ok\": true"));
}

TEST(ColoMig, BadInputExitsTwoNamingValidProfiles) {
  CommandResult r = colo("mig plan 3g.30gb --gpu-model A100-40GB");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("unknown MIG profile '3g.30gb'"));
  EXPECT_THAT(r.output, HasSubstr("valid profiles: 1g.5gb"));
  EXPECT_EQ(colo("mig plan 1g.5gb --gpu V100").exit_code, 2);
}

TEST(ColoMig, LiveProfilesFromTheSimulatedBackend) {
  CommandResult r = colo("mig profiles --backend sim --gpu-model A100-40GB");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("placements from sim"));
  EXPECT_THAT(r.output, HasSubstr("{0,4}:4"));
  CommandResult plan = colo("mig plan 4g.20gb 3g.20gb --backend sim --gpu-model A100-40GB");
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
}

}  // namespace
}  // namespace colo
