#include "run/engine_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/run_store.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

class EnginePolicyTest : public ::testing::Test {
 protected:
  EnginePolicyTest() {
    auto store = RunStore::open(dir_.path() + "/colo.db");
    EXPECT_TRUE(store.ok()) << store.error().message();
    store_ = std::move(store).value();
    in_.devices = {DeviceInfo{}, DeviceInfo{}};
    in_.devices[0].index = 0;
    in_.devices[1].index = 1;
    for (DeviceInfo& d : in_.devices) {
      d.name = "NVIDIA H100";
      d.memory_total_bytes = uint64_t{80} << 30;
    }
    in_.jobs_per_gpu = 2;
    in_.simulated = true;
  }

  testing::TempDir dir_{"colo_engine_policy_test"};
  std::unique_ptr<RunStore> store_;
  PolicyInputs in_;
};

struct PolicyCase {
  std::string policy;
  MechanismKind mechanism;
  bool quotas;
  std::string described;  // in its description
  bool priors;            // the auto policy's priors were made
  bool model_said;        // the interference model was shown
};

TEST_F(EnginePolicyTest, FixedOrAutoWithWhatEarlierRunsLearned) {
  const std::vector<PolicyCase> cases = {
      {"fixed", MechanismKind::kNaive, false, "fixed, up to 2 jobs per GPU", false, false},
      {"fixed", MechanismKind::kMps, true, "fixed, up to 2 jobs per GPU", false, false},
      {"auto", MechanismKind::kMps, false, "auto", true, true},
      {"auto", MechanismKind::kNaive, true, "auto", true, true},
  };
  for (const PolicyCase& c : cases) {
    in_.policy = c.policy;
    in_.mechanism = c.mechanism;
    in_.quotas = c.quotas;
    EnginePolicy made = make_engine_policy(*store_, in_);
    ASSERT_NE(made.scheduler, nullptr);
    EXPECT_THAT(made.scheduler->describe(), HasSubstr(c.described)) << c.policy;
    EXPECT_EQ(made.knowledge.priors.has_value(), c.priors) << c.policy;
    const bool said = std::any_of(made.events.begin(), made.events.end(), [](const auto& e) {
      return e.rfind("auto: interference model: ", 0) == 0;
    });
    EXPECT_EQ(said, c.model_said) << c.policy;
    EXPECT_TRUE(made.knowledge.introduced.empty());
  }
}

TEST_F(EnginePolicyTest, ProfilesFromElsewhereJoinTheStoresOnceEach) {
  LearnedProfile p;
  p.signature = "sig";
  p.gpu_name = "NVIDIA H100";
  p.simulated = true;
  in_.profiles_elsewhere = {p, p};
  EnginePolicy made = make_engine_policy(*store_, in_);
  ASSERT_EQ(made.knowledge.measured.size(), 1U);
  EXPECT_EQ(made.knowledge.measured[0].signature, "sig");
}

}  // namespace
}  // namespace colo
