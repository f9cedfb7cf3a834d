#include "sched/family.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

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

// params_hash(): equal maps hash alike, however built; the pairs here, which
// differ only in where a text ends or which text is a name, hash apart.
struct ParamsHashCase {
  std::string name;
  std::map<std::string, std::string> a, b;
  bool same = false;
};

class ParamsHash : public ::testing::TestWithParam<ParamsHashCase> {};

TEST_P(ParamsHash, EqualMapsHashAlikeAndTheseOthersApart) {
  const ParamsHashCase& c = GetParam();
  ASSERT_EQ(c.a == c.b, c.same);
  if (c.same) {
    EXPECT_EQ(params_hash(c.a), params_hash(c.b));
  } else {
    EXPECT_NE(params_hash(c.a), params_hash(c.b));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParamsHash,
    ::testing::Values(
        ParamsHashCase{"empty", {}, {}, true},
        ParamsHashCase{
            "equal", {{"lr", "0.1"}, {"seed", "3"}}, {{"seed", "3"}, {"lr", "0.1"}}, true},
        ParamsHashCase{
            "another_value", {{"lr", "0.1"}, {"seed", "3"}}, {{"lr", "0.1"}, {"seed", "4"}}, false},
        ParamsHashCase{"text_split_elsewhere", {{"a", "bc"}}, {{"ab", "c"}}, false},
        ParamsHashCase{"name_and_value_swapped", {{"a", "b"}}, {{"b", "a"}}, false},
        ParamsHashCase{"empty_against_an_empty_pair", {}, {{"", ""}}, false},
        ParamsHashCase{
            "one_more_parameter", {{"lr", "0.1"}}, {{"lr", "0.1"}, {"seed", "0"}}, false},
        ParamsHashCase{"values_moved_between_names",
                       {{"a", "1"}, {"b", "2"}},
                       {{"a", "2"}, {"b", "1"}},
                       false}),
    [](const ::testing::TestParamInfo<ParamsHashCase>& info) { return info.param.name; });

// FamilyFit: after every measurement (new instances, re-measured ones, out
// of order), its answers are exactly those of the full re-fit over its
// instances (estimate_from_family, probe_value, param_effects).

// One step of a family's measurements: instance `params` is measured as
// `measured` (merged over its earlier measurement as SignatureKnowledge
// does, unless `duplicate`: a store's second instance with the same values).
struct IncrementalStep {
  std::map<std::string, std::string> params;
  JobProfile measured;
  bool duplicate = false;
  bool replace = false;  // re-measured as `measured` alone, not merged (a time taken back)
};

struct IncrementalCase {
  const char* name;
  std::vector<IncrementalStep> steps;
  std::vector<std::map<std::string, std::string>> targets;
  std::optional<std::vector<std::string>> declared;
};

// A deterministic sequence (a linear congruential generator).
struct IncrementalLcg {
  uint64_t state;
  uint64_t next(uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  }
};

JobProfile measured_as(std::optional<double> memory_mib, std::optional<double> sm,
                       std::optional<double> rate = std::nullopt,
                       std::optional<int64_t> solo_ms = std::nullopt, double rate_uncertainty = 0) {
  JobProfile p;
  if (memory_mib) p.peak_memory_bytes = static_cast<uint64_t>(*memory_mib * kMiB);
  p.sm_active_pct = sm;
  p.samples_per_s = rate;
  if (rate) p.gpu_util_pct = std::min(100.0, *sm * 1.7);
  p.solo_ms = solo_ms;
  if (solo_ms) p.startup_ms = 15'000;
  p.rate_uncertainty = rate_uncertainty;
  return p;
}

// A grid's points measured in a shuffled order: first their memory alone
// (during the run), then in full (at their end), the ends out of order.
std::vector<IncrementalStep> incremental_grid(
    const std::vector<std::map<std::string, std::string>>& points,
    const std::function<JobProfile(size_t, bool)>& profile, uint64_t seed) {
  IncrementalLcg lcg{seed};
  std::vector<size_t> order(points.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[lcg.next(k)]);
  std::vector<IncrementalStep> steps;
  std::vector<size_t> pending;
  for (size_t k : order) {
    steps.push_back({points[k], profile(k, false)});
    pending.push_back(k);
    if (pending.size() >= 3 || lcg.next(3) == 0) {
      const size_t at = lcg.next(pending.size());
      steps.push_back({points[pending[at]], profile(pending[at], true)});
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(at));
    }
  }
  for (size_t k : pending) steps.push_back({points[k], profile(k, true)});
  return steps;
}

std::vector<std::map<std::string, std::string>> grid_points(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& axes) {
  std::vector<std::map<std::string, std::string>> out{{}};
  for (const auto& [name, values] : axes) {
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& p : out) {
      for (const std::string& v : values) {
        auto q = p;
        q[name] = v;
        next.push_back(q);
      }
    }
    out = next;
  }
  return out;
}

std::vector<IncrementalCase> incremental_cases() {
  std::vector<IncrementalCase> cases;
  const auto lr_seed =
      grid_points({{"lr", {"0.1", "0.01", "0.001"}}, {"seed", {"0", "1", "2", "3"}}});
  // Neutral parameters: every point alike (sums over many instances, out of order).
  cases.push_back({"neutral grid",
                   incremental_grid(
                       lr_seed,
                       [](size_t k, bool full) {
                         return full ? measured_as(1200 + 0.37 * static_cast<double>(k % 5),
                                                   19.3 + 0.01 * static_cast<double>(k), 410.7 + k,
                                                   static_cast<int64_t>(1'200'000 + 1'000 * k),
                                                   k % 4 == 0 ? 0.2 : 0.0)
                                     : measured_as(1200 + 0.37 * static_cast<double>(k % 5),
                                                   std::nullopt);
                       },
                       7),
                   {{{"lr", "0.1"}, {"seed", "0"}},
                    {{"lr", "0.5"}, {"seed", "0"}},
                    {{"lr", "0.5"}, {"seed", "9"}},
                    {{"lr", "0.01"}, {"seed", "3"}},
                    // A name the family lacks, presumed to matter: no estimate.
                    {{"lr", "0.1"}, {"seed", "0"}, {"batch_size", "64"}}},
                   std::nullopt});
  // A batch size that matters (a fit along a line), beside a neutral seed.
  const auto batch_seed =
      grid_points({{"batch_size", {"32", "64", "128", "256"}}, {"seed", {"0", "1"}}});
  cases.push_back({"batch size fitted",
                   incremental_grid(
                       batch_seed,
                       [&](size_t k, bool full) {
                         const double b = std::stod(batch_seed[k].at("batch_size"));
                         return full ? measured_as(900 + 11 * b, 10 + b / 8, 20000 / b,
                                                   static_cast<int64_t>(600'000 + 900 * b))
                                     : measured_as(900 + 11 * b, std::nullopt);
                       },
                       11),
                   {{{"batch_size", "32"}, {"seed", "0"}},
                    {{"batch_size", "96"}, {"seed", "1"}},
                    {{"batch_size", "1024"}, {"seed", "5"}}},
                   std::nullopt});
  // A model name that matters: categorical, never fitted across.
  const auto model_lr =
      grid_points({{"model", {"resnet", "vit", "bert"}}, {"lr", {"1", "2", "3"}}});
  cases.push_back({"categorical model",
                   incremental_grid(
                       model_lr,
                       [&](size_t k, bool full) {
                         const std::string& m = model_lr[k].at("model");
                         const double mem = m == "resnet" ? 2000 : m == "vit" ? 9000 : 30000;
                         return full ? measured_as(mem, mem / 500, 3e6 / mem, 500'000)
                                     : measured_as(mem, {});
                       },
                       3),
                   {{{"model", "vit"}, {"lr", "2"}},
                    {{"model", "vit"}, {"lr", "9"}},
                    {{"model", "gpt"}, {"lr", "1"}}},
                   std::nullopt});
  // Means tied at the least and at the greatest, between values whose order
  // as text is not their order of arrival, and moved by re-measurements: the
  // kept order of means must choose the first value by key among equals, as
  // the scan does (a parameter that matters by its measurements).
  const auto tied = grid_points({{"lr", {"0.3", "0.1", "0.2", "0.4"}}, {"seed", {"0", "1", "2"}}});
  cases.push_back({"tied means",
                   incremental_grid(
                       tied,
                       [&](size_t k, bool full) {
                         const std::string& lr = tied[k].at("lr");
                         const double mem = lr == "0.1" || lr == "0.3" ? 1000 : 1600;
                         const double sm = lr == "0.2" ? 30 : 20;
                         return full ? measured_as(mem + (k % 3 == 0 ? 600 : 0), sm, 100,
                                                   300'000 + 1'000 * static_cast<int64_t>(k))
                                     : measured_as(mem, {});
                       },
                       17),
                   {{{"lr", "0.1"}, {"seed", "0"}},
                    {{"lr", "0.4"}, {"seed", "2"}},
                    {{"lr", "0.5"}, {"seed", "1"}}},
                   std::nullopt});
  // Points alike in all but their times: the estimates share every field's
  // fit and differ only by the sibling whose time is scaled (its solo time,
  // start-up and epoch time), which must tell them apart.
  cases.push_back({"alike but their times",
                   incremental_grid(
                       lr_seed,
                       [](size_t k, bool full) {
                         if (!full) return measured_as(1200, std::nullopt);
                         JobProfile p = measured_as(
                             1200, 20, 100, 1'000'000 + 7'000 * static_cast<int64_t>(k / 6));
                         p.startup_ms = 10'000 + 1'000 * static_cast<int64_t>(k % 3);
                         if (k % 2 == 1) p.epoch_ms = 5'000.0 + static_cast<double>(k);
                         return p;
                       },
                       19),
                   {{{"lr", "0.5"}, {"seed", "0"}},
                    {{"lr", "0.5"}, {"seed", "1"}},
                    {{"lr", "0.5"}, {"seed", "2"}},
                    {{"lr", "0.5"}, {"seed", "3"}},
                    {{"lr", "0.01"}, {"seed", "9"}}},
                   std::nullopt});
  // The same instances stay the widest pair while their measurements change
  // (memory alone, then in full, larger): the effect read off them changes
  // with their values.
  const auto pair_points = grid_points({{"lr", {"1", "2"}}, {"seed", {"0", "1"}}});
  cases.push_back({"a widest pair measured again",
                   incremental_grid(
                       pair_points,
                       [&](size_t k, bool full) {
                         const double base = pair_points[k].at("lr") == "1" ? 1000 : 3000;
                         return full ? measured_as(base * 1.5, 20 + static_cast<double>(k), 100,
                                                   400'000)
                                     : measured_as(base, std::nullopt);
                       },
                       23),
                   {{{"lr", "1"}, {"seed", "0"}}, {{"lr", "3"}, {"seed", "0"}}},
                   std::nullopt});
  // Times that come out of index order and tie (siblings as near, the first
  // by index wins), then one taken back (every kept point starts again),
  // then more: a kept point's sibling must be the one a fresh search finds.
  const auto three_axes =
      grid_points({{"a", {"1", "2", "3"}}, {"b", {"x", "y"}}, {"c", {"p", "q", "r"}}});
  std::vector<IncrementalStep> retimed = incremental_grid(
      three_axes,
      [](size_t k, bool full) {
        if (!full) return measured_as(1000, std::nullopt);
        JobProfile p = measured_as(1000, 20, 100, 500'000 + 10'000 * static_cast<int64_t>(k));
        p.startup_ms = 1'000 * static_cast<int64_t>(k);
        return p;
      },
      29);
  size_t timed_step = retimed.size() / 2;  // the last one timed before the middle
  while (!retimed[timed_step].measured.solo_ms) --timed_step;
  retimed.insert(retimed.begin() + static_cast<std::ptrdiff_t>(retimed.size() / 2),
                 IncrementalStep{retimed[timed_step].params, measured_as(1000, 20), false, true});
  cases.push_back({"a time taken back",
                   retimed,
                   {{{"a", "1"}, {"b", "x"}, {"c", "p"}},
                    {{"a", "4"}, {"b", "x"}, {"c", "p"}},
                    {{"a", "4"}, {"b", "z"}, {"c", "p"}},
                    {{"a", "4"}, {"b", "z"}, {"c", "s"}}},
                   std::nullopt});
  // Stated resource_params.
  cases.push_back({"declared",
                   incremental_grid(
                       batch_seed,
                       [&](size_t k, bool full) {
                         const double b = std::stod(batch_seed[k].at("batch_size"));
                         return full ? measured_as(700 + 5 * b, 30, 100, 300'000)
                                     : measured_as(700 + 5 * b, {});
                       },
                       5),
                   {{{"batch_size", "32"}, {"seed", "0"}}, {{"batch_size", "48"}, {"seed", "3"}}},
                   std::vector<std::string>{"batch_size"}});
  // Instances that name different parameters, and a store's duplicates.
  std::vector<IncrementalStep> mixed = incremental_grid(
      lr_seed, [](size_t k, bool) { return measured_as(1000 + 3.0 * k, 20, 50, 100'000); }, 13);
  mixed.insert(mixed.begin() + 3,
               IncrementalStep{{{"lr", "0.1"}, {"seed", "0"}}, measured_as(1500, 22), true});
  mixed.push_back({{{"lr", "0.1"}}, measured_as(1100, 21, 40, 90'000)});
  cases.push_back({"mixed names and duplicates",
                   mixed,
                   {{{"lr", "0.1"}, {"seed", "0"}}, {{"lr", "0.1"}}, {{"lr", "7"}, {"seed", "7"}}},
                   std::nullopt});
  return cases;
}

std::string described(const FamilyEstimate& e) {
  if (!e.profile) return "none: " + e.missing;
  const JobProfile& p = *e.profile;
  return fmt::format("{} {:.17g} {:.17g} {:.17g} {:.17g} {} {} {:.17g} {:.17g} {:.17g} {}",
                     p.peak_memory_bytes.value_or(0), p.sm_active_pct.value_or(-1),
                     p.gpu_util_pct.value_or(-1), p.samples_per_s.value_or(-1),
                     p.epoch_ms.value_or(-1), p.solo_ms.value_or(-1), p.startup_ms.value_or(-1),
                     p.memory_uncertainty, p.sm_uncertainty, p.rate_uncertainty, p.source);
}

std::string described(const std::vector<ParamEffect>& effects) {
  std::string out;
  for (const ParamEffect& e : effects)
    out += fmt::format("{} {} {} {} {}; ", e.param, e.power, e.matters, e.measured, e.reason);
  return out;
}

class FamilyFitAgrees : public ::testing::TestWithParam<IncrementalCase> {};

TEST_P(FamilyFitAgrees, WithTheFullRefitAfterEveryMeasurement) {
  const IncrementalCase& c = GetParam();
  FamilyFit fit;
  std::map<std::map<std::string, std::string>, size_t> first_with;
  std::map<std::map<std::string, std::string>, FamilyPoint> points;
  size_t step = 0;
  for (const IncrementalStep& s : c.steps) {
    ++step;
    auto [first, added] = first_with.try_emplace(s.params, fit.instances().size());
    std::string name = "sweep[";
    for (const auto& [k, v] : s.params) name += k + "=" + v + ",";
    name += "]";
    if (added || s.duplicate) {
      const size_t index = fit.add({name, s.params, s.measured});
      EXPECT_EQ(index, fit.instances().size() - 1);
    } else if (s.replace) {
      fit.remeasure(first->second, s.measured);
    } else {
      const JobProfile& before = fit.instances()[first->second].measured;
      JobProfile merged = merge_profiles(s.measured, before);
      if (before.peak_memory_bytes && s.measured.peak_memory_bytes)
        merged.peak_memory_bytes =
            std::max(*before.peak_memory_bytes, *s.measured.peak_memory_bytes);
      fit.remeasure(first->second, merged);
    }
    std::vector<std::map<std::string, std::string>> targets = c.targets;
    for (const auto& [params, index] : first_with) targets.push_back(params);
    for (size_t t = 0; t < targets.size(); ++t) {
      const auto& target = targets[t];
      const std::string fresh =
          described(estimate_from_family(fit.instances(), target, c.declared));
      EXPECT_EQ(described(fit.estimate(target, c.declared)), fresh) << c.name << ", step " << step;
      // A kept point, asked at every step, at every other step or every
      // third (its timed sibling moved by the instances timed meanwhile).
      if ((step + t) % (t % 3 + 1) == 0) {
        EXPECT_EQ(described(fit.estimate(target, c.declared, nullptr, &points[target])), fresh)
            << c.name << ", step " << step << ", a kept point";
      }
      const double incremental = fit.probe_value(target, c.declared);
      const double full = probe_value(fit.instances(), target, c.declared);
      EXPECT_TRUE(incremental == full || (std::isinf(incremental) && std::isinf(full)))
          << c.name << ", step " << step << ": " << incremental << " vs " << full;
    }
    std::vector<std::string> names;
    for (const auto& [k, v] : c.targets.front()) names.push_back(k);
    for (Quantity q : {Quantity::kMemory, Quantity::kSmActivity, Quantity::kRate})
      EXPECT_EQ(described(fit.effects(q, names, c.declared)),
                described(param_effects(fit.instances(), q, names, c.declared)))
          << c.name << ", step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, FamilyFitAgrees, ::testing::ValuesIn(incremental_cases()),
                         [](const ::testing::TestParamInfo<IncrementalCase>& info) {
                           std::string n = info.param.name;
                           std::replace(n.begin(), n.end(), ' ', '_');
                           return n;
                         });

TEST(FamilyFit, AnEmptyFamilyHasNoEstimateAndEveryTargetIsFar) {
  FamilyFit fit;
  EXPECT_EQ(fit.estimate({{"lr", "0.1"}}, std::nullopt).missing, "no measured instance yet");
  EXPECT_TRUE(std::isinf(fit.probe_value({{"lr", "0.1"}}, std::nullopt)));
}

}  // namespace
}  // namespace colo
