#include "sched/family.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "common/units.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// A measured instance: memory in MiB, SM activity, rate; solo time optional.
FamilyInstance instance(std::string name, std::map<std::string, std::string> params,
                        double memory_mib, double sm, std::optional<double> rate = std::nullopt,
                        std::optional<int64_t> solo_ms = std::nullopt) {
  FamilyInstance i;
  i.name = std::move(name);
  i.params = std::move(params);
  i.measured.peak_memory_bytes = static_cast<uint64_t>(memory_mib * kMiB);
  i.measured.sm_active_pct = sm;
  i.measured.samples_per_s = rate;
  i.measured.solo_ms = solo_ms;
  return i;
}

struct NameCase {
  const char* param;
  bool matters;
};

class PresumedByName : public ::testing::TestWithParam<NameCase> {};

TEST_P(PresumedByName, SizesMatterOthersAreNeutral) {
  EXPECT_EQ(presumed_to_matter(GetParam().param), GetParam().matters) << GetParam().param;
}

INSTANTIATE_TEST_SUITE_P(Names, PresumedByName,
                         ::testing::Values(NameCase{"batch_size", true}, NameCase{"bs", true},
                                           NameCase{"image_size", true}, NameCase{"imgSize", true},
                                           NameCase{"img_size", true}, NameCase{"resolution", true},
                                           NameCase{"seq_len", true}, NameCase{"model", true},
                                           NameCase{"hidden_dim", true}, NameCase{"lr", false},
                                           NameCase{"learning_rate", false},
                                           NameCase{"seed", false}, NameCase{"wd", false},
                                           NameCase{"weight_decay", false},
                                           NameCase{"momentum", false}, NameCase{"dropout", false},
                                           NameCase{"epochs", false}));

TEST(ParamEffects, StatedParametersAreExactlyThoseThatMatter) {
  std::vector<ParamEffect> effects =
      param_effects({}, Quantity::kMemory, {"batch_size", "image_size", "lr"},
                    std::vector<std::string>{"batch_size", "image_size^2"});
  ASSERT_EQ(effects.size(), 3u);
  EXPECT_TRUE(effects[0].matters);
  EXPECT_EQ(effects[0].power, 1);
  EXPECT_TRUE(effects[1].matters);
  EXPECT_EQ(effects[1].power, 2);
  EXPECT_FALSE(effects[2].matters);
  EXPECT_EQ(effects[0].reason, "stated in resource_params");
}

TEST(ParamEffects, MeasurementsOverrideTheGuessFromTheName) {
  // lr changed nothing; batch_size doubled the memory; seed was never varied
  // alone (guessed neutral); "size" changed nothing although its name says
  // it would.
  std::vector<FamilyInstance> measured = {
      instance("t[bs=32,lr=0.1,seed=1,size=4]",
               {{"bs", "32"}, {"lr", "0.1"}, {"seed", "1"}, {"size", "4"}}, 1000, 20),
      instance("t[bs=32,lr=0.01,seed=1,size=4]",
               {{"bs", "32"}, {"lr", "0.01"}, {"seed", "1"}, {"size", "4"}}, 1020, 20),
      instance("t[bs=64,lr=0.1,seed=1,size=4]",
               {{"bs", "64"}, {"lr", "0.1"}, {"seed", "1"}, {"size", "4"}}, 2000, 20),
      instance("t[bs=64,lr=0.1,seed=1,size=8]",
               {{"bs", "64"}, {"lr", "0.1"}, {"seed", "1"}, {"size", "8"}}, 2010, 21),
  };
  std::vector<ParamEffect> memory =
      param_effects(measured, Quantity::kMemory, {"bs", "lr", "seed", "size"}, std::nullopt);
  ASSERT_EQ(memory.size(), 4u);
  EXPECT_TRUE(memory[0].matters);
  EXPECT_TRUE(memory[0].measured);
  EXPECT_THAT(memory[0].reason, HasSubstr("measured: t[bs=32,lr=0.1,seed=1,size=4] 1000 MiB"));
  EXPECT_FALSE(memory[1].matters);
  EXPECT_TRUE(memory[1].measured);
  EXPECT_THAT(memory[1].reason, HasSubstr("within noise"));
  EXPECT_FALSE(memory[2].matters);
  EXPECT_FALSE(memory[2].measured);
  EXPECT_THAT(memory[2].reason, HasSubstr("presumed neutral"));
  EXPECT_FALSE(memory[3].matters);
  EXPECT_TRUE(memory[3].measured);
  // SM activity: batch size changed nothing there.
  std::vector<ParamEffect> sm =
      param_effects(measured, Quantity::kSmActivity, {"bs", "lr", "seed", "size"}, std::nullopt);
  EXPECT_FALSE(sm[0].matters);
  EXPECT_TRUE(sm[0].measured);
}

TEST(FamilyEstimate, SiblingsThatDifferInNeutralParametersShareTheMeasurement) {
  std::vector<FamilyInstance> measured = {
      instance("toy[lr=0.1,wd=0]", {{"lr", "0.1"}, {"wd", "0"}}, 1200, 19, 16000, 21000)};
  measured[0].measured.startup_ms = 12000;
  FamilyEstimate e =
      estimate_from_family(measured, {{"lr", "0.01"}, {"wd", "0.001"}}, std::nullopt);
  ASSERT_TRUE(e.profile.has_value()) << e.missing;
  EXPECT_EQ(e.profile->source, "from sibling toy[lr=0.1,wd=0]");
  EXPECT_EQ(*e.profile->peak_memory_bytes, 1200 * kMiB);
  EXPECT_DOUBLE_EQ(*e.profile->sm_active_pct, 19);
  EXPECT_DOUBLE_EQ(*e.profile->samples_per_s, 16000);
  EXPECT_EQ(e.profile->memory_uncertainty, 0);
  EXPECT_EQ(*e.profile->solo_ms, 21000);
  EXPECT_EQ(*e.profile->startup_ms, 12000);
}

// Rates measured beside other jobs (kNoSoloRateUncertainty) are no solo
// rates, and an estimate from two that agree is none either; a fit over
// batch sizes keeps its inputs' uncertainty too.
TEST(FamilyEstimate, AnEstimateFromRatesMeasuredBesideOthersIsNoSoloRate) {
  std::vector<FamilyInstance> measured = {
      instance("toy[lr=0.1]", {{"lr", "0.1"}}, 1200, 19, 16000),
      instance("toy[lr=0.03]", {{"lr", "0.03"}}, 1200, 19, 16100)};
  for (FamilyInstance& i : measured) i.measured.rate_uncertainty = kNoSoloRateUncertainty;
  FamilyEstimate e = estimate_from_family(measured, {{"lr", "0.01"}}, std::nullopt);
  ASSERT_TRUE(e.profile.has_value()) << e.missing;
  EXPECT_DOUBLE_EQ(e.profile->rate_uncertainty, kNoSoloRateUncertainty);
  EXPECT_FALSE(e.profile->has_solo_rate());
  EXPECT_EQ(e.profile->sm_uncertainty, 0) << "SM activity keeps its own spread";

  std::vector<FamilyInstance> sizes = {
      instance("r[batch_size=32]", {{"batch_size", "32"}}, 1640, 30, 4000),
      instance("r[batch_size=512]", {{"batch_size", "512"}}, 11240, 90, 12000)};
  sizes[1].measured.rate_uncertainty = kNoSoloRateUncertainty;
  FamilyEstimate fitted = estimate_from_family(sizes, {{"batch_size", "128"}}, std::nullopt);
  ASSERT_TRUE(fitted.profile.has_value()) << fitted.missing;
  EXPECT_FALSE(fitted.profile->has_solo_rate());
  measured[0].measured.rate_uncertainty = 0;  // one measured alone
  measured.pop_back();
  EXPECT_TRUE(
      estimate_from_family(measured, {{"lr", "0.01"}}, std::nullopt).profile->has_solo_rate());
}

TEST(FamilyEstimate, NothingMeasuredMeansNoEstimate) {
  FamilyEstimate e = estimate_from_family({}, {{"lr", "0.1"}}, std::nullopt);
  EXPECT_FALSE(e.profile.has_value());
  EXPECT_EQ(e.missing, "no measured instance yet");
}

TEST(FamilyEstimate, OneValueOfAParameterThatMattersIsNotEnoughToFit) {
  std::vector<FamilyInstance> measured = {
      instance("r[batch_size=32]", {{"batch_size", "32"}}, 1500, 30)};
  FamilyEstimate e = estimate_from_family(measured, {{"batch_size", "512"}}, std::nullopt);
  EXPECT_FALSE(e.profile.has_value());
  EXPECT_EQ(e.missing, "peak memory: one measured value of batch_size (32): a fit needs two");
  // The same instance with the batch size stated neutral shares the sibling's.
  FamilyEstimate neutral =
      estimate_from_family(measured, {{"batch_size", "512"}}, std::vector<std::string>{});
  ASSERT_TRUE(neutral.profile.has_value());
  EXPECT_EQ(neutral.profile->source, "from sibling r[batch_size=32]");
}

struct FitCase {
  const char* batch;
  double expected_mib;
  double uncertainty;
};

class FitOverBatchSize : public ::testing::TestWithParam<FitCase> {};

// Memory = 1000 MiB + 20 MiB per sample, measured at 32 and 512: values in
// between are interpolated with the 5% floor; beyond, the uncertainty grows
// with the distance in units of the measured range (480).
TEST_P(FitOverBatchSize, LinearWithAFixedPartAndAnUncertainty) {
  std::vector<FamilyInstance> measured = {
      instance("r[batch_size=32]", {{"batch_size", "32"}}, 1000 + 20 * 32, 30, 4000, 60000),
      instance("r[batch_size=512]", {{"batch_size", "512"}}, 1000 + 20 * 512, 90, 12000, 30000),
  };
  FamilyEstimate e =
      estimate_from_family(measured, {{"batch_size", GetParam().batch}}, std::nullopt);
  ASSERT_TRUE(e.profile.has_value()) << e.missing;
  EXPECT_NEAR(static_cast<double>(*e.profile->peak_memory_bytes) / kMiB, GetParam().expected_mib,
              0.01);
  EXPECT_NEAR(e.profile->memory_uncertainty, GetParam().uncertainty, 1e-9);
  EXPECT_EQ(e.profile->source, "from a fit over batch_size to r[batch_size=32], r[batch_size=512]");
}

INSTANTIATE_TEST_SUITE_P(Batches, FitOverBatchSize,
                         ::testing::Values(FitCase{"64", 1000 + 20 * 64, 0.05},
                                           FitCase{"128", 1000 + 20 * 128, 0.05},
                                           FitCase{"256", 1000 + 20 * 256, 0.05},
                                           FitCase{"992", 1000 + 20 * 992, 0.05 * 2},
                                           FitCase{"16", 1000 + 20 * 16, 0.05 * (1 + 16.0 / 480)}));

TEST(FamilyEstimate, ScatterWidensTheUncertaintyAndTimeFollowsTheRate) {
  // Three points off a line: the largest relative residual is the uncertainty.
  std::vector<FamilyInstance> measured = {
      instance("r[bs=100]", {{"bs", "100"}}, 1000, 40, 1000, 100000),
      instance("r[bs=200]", {{"bs", "200"}}, 2400, 60, 2000),
      instance("r[bs=300]", {{"bs", "300"}}, 3000, 80, 3000),
  };
  measured[0].measured.startup_ms = 10000;
  FamilyEstimate e = estimate_from_family(measured, {{"bs", "250"}}, std::nullopt);
  ASSERT_TRUE(e.profile.has_value()) << e.missing;
  // Line: y = 133.33 + 10 x; residuals -133, +267, -133 on 1133, 2133, 3133.
  EXPECT_NEAR(static_cast<double>(*e.profile->peak_memory_bytes) / kMiB, 133.333 + 2500, 0.01);
  EXPECT_NEAR(e.profile->memory_uncertainty, 266.667 / 2133.333, 1e-4);
  EXPECT_NEAR(*e.profile->samples_per_s, 2500, 1e-6);
  // The nearest timed sibling (bs=100) alone: 10 s start-up + 90 s of work
  // at 1000 samples/s, so 36 s at 2500.
  EXPECT_EQ(*e.profile->startup_ms, 10000);
  EXPECT_EQ(*e.profile->solo_ms, 10000 + 36000);
}

TEST(FamilyEstimate, CategoricalParametersAreNeverFittedAcross) {
  std::vector<FamilyInstance> measured = {
      instance("s[model=resnet26,bs=64]", {{"model", "resnet26"}, {"bs", "64"}}, 1000, 20),
      instance("s[model=resnet26,bs=128]", {{"model", "resnet26"}, {"bs", "128"}}, 1800, 30),
  };
  FamilyEstimate other =
      estimate_from_family(measured, {{"model", "resnet50"}, {"bs", "64"}}, std::nullopt);
  EXPECT_FALSE(other.profile.has_value());
  EXPECT_EQ(other.missing, "peak memory: no measured instance with model=resnet50");
  FamilyEstimate same =
      estimate_from_family(measured, {{"model", "resnet26"}, {"bs", "96"}}, std::nullopt);
  ASSERT_TRUE(same.profile.has_value()) << same.missing;
  EXPECT_NEAR(static_cast<double>(*same.profile->peak_memory_bytes) / kMiB, 1400, 0.01);
}

TEST(FamilyEstimate, PowersTurnAnImageSizeIntoPixels) {
  // Memory linear in batch x pixels: 500 + 0.01 per (sample x pixel).
  auto mem = [](double bs, double px) { return 500 + 0.01 * bs * px * px; };
  std::vector<FamilyInstance> measured = {
      instance("v[bs=32,px=64]", {{"bs", "32"}, {"px", "64"}}, mem(32, 64), 30),
      instance("v[bs=64,px=128]", {{"bs", "64"}, {"px", "128"}}, mem(64, 128), 60),
  };
  FamilyEstimate e = estimate_from_family(measured, {{"bs", "64"}, {"px", "64"}},
                                          std::vector<std::string>{"bs", "px^2"});
  ASSERT_TRUE(e.profile.has_value()) << e.missing;
  EXPECT_NEAR(static_cast<double>(*e.profile->peak_memory_bytes) / kMiB, mem(64, 64), 0.01);
  EXPECT_THAT(e.profile->source, HasSubstr("a fit over bs x px^2"));
}

TEST(ProbeValue, TheFarthestUnmeasuredValueTeachesMost) {
  std::vector<FamilyInstance> measured = {
      instance("r[batch_size=32]", {{"batch_size", "32"}}, 1640, 30)};
  const double v64 = probe_value(measured, {{"batch_size", "64"}}, std::nullopt);
  const double v512 = probe_value(measured, {{"batch_size", "512"}}, std::nullopt);
  EXPECT_GT(v512, v64);
  EXPECT_NEAR(v512, 2 * std::log(16.0), 1e-9);  // memory and SM activity
  EXPECT_EQ(probe_value(measured, {{"batch_size", "32"}}, std::nullopt), 0);
  EXPECT_TRUE(std::isinf(probe_value({}, {{"batch_size", "32"}}, std::nullopt)));
  // Neutral parameters teach nothing.
  EXPECT_EQ(probe_value({instance("t[lr=0.1]", {{"lr", "0.1"}}, 1000, 20)}, {{"lr", "0.01"}},
                        std::nullopt),
            0);
}

TEST(InstanceLabel, DropsTheRepeatSuffixOnly) {
  EXPECT_EQ(instance_label("toy[lr=0.1]#3"), "toy[lr=0.1]");
  EXPECT_EQ(instance_label("toy[lr=0.1]"), "toy[lr=0.1]");
  EXPECT_EQ(instance_label("toy#x"), "toy#x");
  EXPECT_EQ(instance_label("toy#"), "toy#");
}

}  // namespace
}  // namespace colo
