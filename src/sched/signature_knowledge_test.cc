#include "sched/signature_knowledge.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "common/units.h"

namespace colo {
namespace {

constexpr uint64_t kLargest = 80 * kGiB;

JobProfile knowledge_profile(double memory_gib, std::optional<double> sm_pct = 40) {
  JobProfile p;
  p.peak_memory_bytes = static_cast<uint64_t>(memory_gib * static_cast<double>(kGiB));
  p.sm_active_pct = sm_pct;
  p.source = "measured";
  return p;
}

FamilyMember toy_member(const std::string& name, const std::string& lr) {
  return FamilyMember{"toy", name, {{"lr", lr}}, std::nullopt};
}

// What admission reads of signature "s" after `setup`.
struct UsableCase {
  std::string name;
  std::function<void(SignatureKnowledge&)> setup;
  std::optional<double> memory_gib;  // usable("s")'s peak; nullopt: none usable
  bool estimated = false;
};

class UsableProfile : public testing::TestWithParam<UsableCase> {};

// What a caller without a queued job's lookups asks: fresh ones each call,
// so that each looks the signature up.
bool fresh_estimated(const SignatureKnowledge& k, const std::string& signature) {
  SignatureKnowledge::Lookups lookups;
  return k.estimated(signature, lookups);
}
bool fresh_announce(SignatureKnowledge& k, const std::string& signature) {
  SignatureKnowledge::Lookups lookups;
  return k.announce(signature, lookups);
}
void fresh_ended(SignatureKnowledge& k, const std::string& signature, double samples) {
  SignatureKnowledge::Lookups lookups;
  k.ended(signature, lookups, samples);
}
std::optional<double> fresh_ended_samples(const SignatureKnowledge& k,
                                          const std::string& signature) {
  SignatureKnowledge::Lookups lookups;
  return k.ended_samples(signature, lookups);
}
void fresh_measured_memory(SignatureKnowledge& k, const std::string& signature,
                           const JobProfile& measured) {
  SignatureKnowledge::Lookups lookups;
  k.measured_memory(signature, lookups, measured);
}

TEST_P(UsableProfile, OwnProfileElseTheFamilysEstimate) {
  const UsableCase& c = GetParam();
  SignatureKnowledge k(kLargest);
  c.setup(k);
  const JobProfile* p = k.usable("s");
  ASSERT_EQ(p != nullptr, c.memory_gib.has_value());
  if (p != nullptr) {
    EXPECT_EQ(*p->peak_memory_bytes, static_cast<uint64_t>(*c.memory_gib * kGiB));
  }
  EXPECT_EQ(fresh_estimated(k, "s"), c.estimated);
  SignatureKnowledge::Lookups lookups;
  EXPECT_EQ(k.usable("s", lookups), p) << "the cached lookup answers the same";
}

INSTANTIATE_TEST_SUITE_P(
    Table, UsableProfile,
    testing::Values(
        UsableCase{"nothing_known", [](SignatureKnowledge&) {}, std::nullopt},
        UsableCase{"its_own_profile",
                   [](SignatureKnowledge& k) { k.set_profile("s", knowledge_profile(4)); }, 4.0},
        UsableCase{
            "a_memory_hint_alone_is_not_enough",
            [](SignatureKnowledge& k) { k.set_profile("s", knowledge_profile(4, std::nullopt)); },
            std::nullopt},
        UsableCase{
            "a_sibling_that_differs_in_a_neutral_parameter",
            [](SignatureKnowledge& k) {
              k.add_family_instance("toy", {"toy[lr=0.1]", {{"lr", "0.1"}}, knowledge_profile(6)});
              k.set_family("s", toy_member("toy[lr=0.2]", "0.2"));
            },
            6.0, true},
        UsableCase{"learned_by_a_sibling_in_this_run",
                   [](SignatureKnowledge& k) {
                     k.set_family("t", toy_member("toy[lr=0.1]", "0.1"));
                     k.set_family("s", toy_member("toy[lr=0.2]", "0.2"));
                     k.learned("t", knowledge_profile(5));
                   },
                   5.0, true},
        UsableCase{
            "an_estimate_beyond_every_gpu_is_measured_instead",
            [](SignatureKnowledge& k) {
              k.add_family_instance("toy", {"toy[lr=0.1]", {{"lr", "0.1"}}, knowledge_profile(90)});
              k.set_family("s", toy_member("toy[lr=0.2]", "0.2"));
            },
            std::nullopt},
        UsableCase{
            "its_own_peak_over_the_estimate",
            [](SignatureKnowledge& k) {
              k.add_family_instance("toy", {"toy[lr=0.1]", {{"lr", "0.1"}}, knowledge_profile(6)});
              k.set_family("s", toy_member("toy[lr=0.2]", "0.2"));
              k.raise_peak("s", 7 * kGiB);
            },
            7.0, true},
        UsableCase{"a_peak_measured_in_this_run_raises_its_own",
                   [](SignatureKnowledge& k) {
                     k.set_profile("s", knowledge_profile(4));
                     fresh_measured_memory(k, "s", knowledge_profile(5, std::nullopt));
                   },
                   5.0}),
    [](const auto& info) { return info.param.name; });

// usable() through Lookups kept from step to step (as a queued job keeps
// them) answers as a fresh lookup after every step: a profile or a family
// that comes after the lookups were filled is found.
struct LookupsCase {
  std::string name;
  std::vector<std::function<void(SignatureKnowledge&)>> steps;
};

class CachedLookups : public testing::TestWithParam<LookupsCase> {};

TEST_P(CachedLookups, AnswerAsAFreshLookupAfterEveryStep) {
  const LookupsCase& c = GetParam();
  SignatureKnowledge k(kLargest);
  SignatureKnowledge::Lookups s_lookups;
  SignatureKnowledge::Lookups t_lookups;
  auto expect_same = [&](const std::string& when) {
    for (auto [signature, lookups] : {std::pair{"s", &s_lookups}, std::pair{"t", &t_lookups}}) {
      EXPECT_EQ(k.usable(signature, *lookups), k.usable(signature)) << signature << " " << when;
      EXPECT_EQ(k.estimated(signature, *lookups), fresh_estimated(k, signature))
          << signature << " " << when;
      EXPECT_EQ(k.member(signature, *lookups), k.member(signature)) << signature << " " << when;
      EXPECT_EQ(k.ended_samples(signature, *lookups), fresh_ended_samples(k, signature))
          << signature << " " << when;
    }
  };
  expect_same("before any step");
  for (size_t i = 0; i < c.steps.size(); ++i) {
    c.steps[i](k);
    expect_same(fmt::format("after step {}", i + 1));
  }
  EXPECT_NE(k.usable("s"), nullptr) << "each case ends with s usable";
}

const auto kToyInstance = [](SignatureKnowledge& k) {
  k.add_family_instance("toy", {"toy[lr=0.1]", {{"lr", "0.1"}}, knowledge_profile(6)});
};

INSTANTIATE_TEST_SUITE_P(
    Table, CachedLookups,
    testing::Values(
        LookupsCase{"its_own_profile_set_later",
                    {[](SignatureKnowledge&) {},
                     [](SignatureKnowledge& k) { k.set_profile("s", knowledge_profile(4)); }}},
        LookupsCase{
            "a_family_given_after_its_own_hint",
            {[](SignatureKnowledge& k) { k.set_profile("s", knowledge_profile(4, std::nullopt)); },
             kToyInstance,
             [](SignatureKnowledge& k) { k.set_family("s", toy_member("toy[lr=0.2]", "0.2")); }}},
        // The member's own profile comes after the lookups found the member:
        // its peak (raised, measured) is read over the estimate.
        LookupsCase{"a_peak_raised_after_the_member_was_found",
                    {kToyInstance,
                     [](SignatureKnowledge& k) {
                       k.set_family("s", toy_member("toy[lr=0.2]", "0.2"));
                       k.set_family("t", toy_member("toy[lr=0.3]", "0.3"));
                     },
                     [](SignatureKnowledge& k) { k.raise_peak("s", 7 * kGiB); }}},
        LookupsCase{
            "a_peak_measured_after_the_member_was_found",
            {kToyInstance,
             [](SignatureKnowledge& k) { k.set_family("s", toy_member("toy[lr=0.2]", "0.2")); },
             [](SignatureKnowledge& k) {
               fresh_measured_memory(k, "s", knowledge_profile(9, std::nullopt));
             },
             [](SignatureKnowledge& k) {
               fresh_measured_memory(k, "t", knowledge_profile(3, std::nullopt));
             }}},
        LookupsCase{"learned_after_the_member_was_found",
                    {[](SignatureKnowledge& k) {
                       k.set_family("s", toy_member("toy[lr=0.2]", "0.2"));
                       k.set_family("t", toy_member("toy[lr=0.3]", "0.3"));
                     },
                     [](SignatureKnowledge& k) { k.learned("t", knowledge_profile(5)); },
                     [](SignatureKnowledge& k) { k.learned("s", knowledge_profile(2)); }}},
        LookupsCase{
            "a_profile_set_before_its_family",
            {[](SignatureKnowledge& k) { k.set_profile("s", knowledge_profile(4)); },
             [](SignatureKnowledge& k) { k.set_family("s", toy_member("toy[lr=0.2]", "0.2")); },
             [](SignatureKnowledge& k) { k.set_profile("s", knowledge_profile(3)); }}},
        LookupsCase{
            "given_a_second_family",
            {kToyInstance,
             [](SignatureKnowledge& k) {
               k.set_family("s",
                            FamilyMember{"other", "other[lr=0.2]", {{"lr", "0.2"}}, std::nullopt});
             },
             [](SignatureKnowledge& k) { k.set_family("s", toy_member("toy[lr=0.2]", "0.2")); }}}),
    [](const auto& info) { return info.param.name; });

// A sweep's estimates kept from step to step (each signature's FamilyPoint
// and its family's shared answer, as a queued job's are kept from event to
// event) answer as a knowledge that is told the same steps and asked only
// at the end.
struct KeptEstimatesCase {
  std::string name;
  std::vector<std::function<void(SignatureKnowledge&)>> steps;
};

const std::vector<std::string> kSweepSignatures = {"a1x", "a1y", "a2x", "a2y", "a3x", "a3y"};

// "a2y": toy[a=2,b=y].
FamilyMember sweep_member(const std::string& signature) {
  const std::string a = signature.substr(1, 1);
  const std::string b = signature.substr(2, 1);
  return FamilyMember{
      "toy", fmt::format("toy[a={},b={}]", a, b), {{"a", a}, {"b", b}}, std::nullopt};
}

JobProfile timed_profile(double memory_gib, int64_t solo_ms, int64_t startup_ms) {
  JobProfile p = knowledge_profile(memory_gib);
  p.samples_per_s = 100;
  p.solo_ms = solo_ms;
  p.startup_ms = startup_ms;
  return p;
}

std::string described_profile(const JobProfile* p) {
  if (p == nullptr) return "none";
  return fmt::format("{} {} {} {} {} {}", p->peak_memory_bytes.value_or(0),
                     p->sm_active_pct.value_or(-1), p->solo_ms.value_or(-1),
                     p->startup_ms.value_or(-1), p->memory_uncertainty, p->source);
}

class KeptEstimates : public testing::TestWithParam<KeptEstimatesCase> {};

TEST_P(KeptEstimates, AnswerAsAFreshKnowledgeAfterEveryStep) {
  const KeptEstimatesCase& c = GetParam();
  SignatureKnowledge kept(kLargest);
  for (const std::string& sig : kSweepSignatures) kept.set_family(sig, sweep_member(sig));
  for (size_t i = 0; i < c.steps.size(); ++i) {
    c.steps[i](kept);
    SignatureKnowledge fresh(kLargest);
    for (const std::string& sig : kSweepSignatures) fresh.set_family(sig, sweep_member(sig));
    for (size_t j = 0; j <= i; ++j) c.steps[j](fresh);
    for (const std::string& sig : kSweepSignatures) {
      EXPECT_EQ(described_profile(kept.usable(sig)), described_profile(fresh.usable(sig)))
          << sig << " after step " << i + 1;
      EXPECT_EQ(kept.missing(sig), fresh.missing(sig)) << sig << " after step " << i + 1;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, KeptEstimates,
    testing::Values(
        // Each measurement times a sibling nearer some points than their
        // last: a kept point must move to it (the first by index among as
        // near), and every point's answer changes with the family's.
        KeptEstimatesCase{
            "siblings_timed_nearer",
            {[](SignatureKnowledge& k) { k.learned("a3y", timed_profile(4, 900'000, 9'000)); },
             [](SignatureKnowledge& k) { k.learned("a2x", timed_profile(4, 800'000, 8'000)); },
             [](SignatureKnowledge& k) { k.learned("a1y", timed_profile(4, 700'000, 7'000)); },
             [](SignatureKnowledge& k) { fresh_measured_memory(k, "a1x", knowledge_profile(5)); },
             [](SignatureKnowledge& k) { k.learned("a1x", timed_profile(5, 600'000, 6'000)); },
             [](SignatureKnowledge& k) { k.learned("a2y", timed_profile(4, 500'000, 5'000)); }}},
        // A signature's own profile over its family's answer, and a peak
        // beyond every GPU: the shared answer is never changed for others.
        KeptEstimatesCase{
            "own_profiles_over_a_shared_answer",
            {[](SignatureKnowledge& k) { k.learned("a1x", timed_profile(4, 900'000, 9'000)); },
             [](SignatureKnowledge& k) { k.raise_peak("a2x", 6 * kGiB); },
             [](SignatureKnowledge& k) {
               k.set_profile("a3x", knowledge_profile(3, std::nullopt));
             },
             [](SignatureKnowledge& k) { k.learned("a2y", timed_profile(90, 800'000, 8'000)); },
             [](SignatureKnowledge& k) { k.learned("a3y", timed_profile(4, 700'000, 7'000)); }}},
        // A signature moved to another point of its family: its kept point
        // starts again.
        KeptEstimatesCase{
            "a_member_given_new_values",
            {[](SignatureKnowledge& k) { k.learned("a1x", timed_profile(4, 900'000, 9'000)); },
             [](SignatureKnowledge& k) { k.learned("a3y", timed_profile(4, 800'000, 8'000)); },
             [](SignatureKnowledge& k) { k.set_family("a1y", sweep_member("a3y")); },
             [](SignatureKnowledge& k) { k.learned("a2x", timed_profile(4, 700'000, 7'000)); }}}),
    [](const auto& info) { return info.param.name; });

// usable_stamp() after every step: where a signature's stamp is what it
// was, usable() answers the same profile, unchanged (the policy keeps a
// queued job's likeness by it). Signatures: "own" (a member of "toy" whose
// own profile is admissible alone), "hint" (a member with a memory hint
// only), "bare" (a member with no profile), "other" (a member of "zoo"),
// "loner" (no family, its own profile: its stamp is version()). The last
// field: the members whose stamp must stay across the case (their answers
// do not move).
struct StampCase {
  std::string name;
  std::vector<std::function<void(SignatureKnowledge&)>> steps;
  std::vector<std::string> kept;
};

class UsableStamps : public testing::TestWithParam<StampCase> {};

TEST_P(UsableStamps, KeepTheirValueOnlyWhileTheAnswerStays) {
  const StampCase& c = GetParam();
  SignatureKnowledge k(kLargest);
  k.add_family_instance("toy", {"toy[lr=0.1]", {{"lr", "0.1"}}, knowledge_profile(6)});
  k.add_family_instance("zoo", {"zoo[lr=0.1]", {{"lr", "0.1"}}, knowledge_profile(9)});
  k.set_profile("own", knowledge_profile(3));
  k.set_profile("hint", knowledge_profile(2, std::nullopt));
  k.set_profile("loner", knowledge_profile(1));
  k.set_family("own", toy_member("toy[lr=1]", "1"));
  k.set_family("hint", toy_member("toy[lr=2]", "2"));
  k.set_family("bare", toy_member("toy[lr=3]", "3"));
  k.set_family("other", FamilyMember{"zoo", "zoo[lr=4]", {{"lr", "4"}}, std::nullopt});
  const std::vector<std::string> signatures = {"own", "hint", "bare", "other", "loner"};
  struct Seen {
    SignatureKnowledge::Lookups lookups;
    uint64_t stamp = 0;
    const JobProfile* answer = nullptr;
    std::optional<JobProfile> content;
  };
  std::map<std::string, Seen> seen;
  for (const std::string& sig : signatures) {
    Seen& x = seen[sig];
    x.answer = k.usable(sig, x.lookups);
    if (x.answer != nullptr) x.content = *x.answer;
    x.stamp = k.usable_stamp(x.lookups);
  }
  std::map<std::string, uint64_t> first;
  for (const auto& [sig, x] : seen) first[sig] = x.stamp;
  for (size_t i = 0; i < c.steps.size(); ++i) {
    c.steps[i](k);
    for (const std::string& sig : signatures) {
      Seen& x = seen[sig];
      const JobProfile* answer = k.usable(sig, x.lookups);
      const uint64_t stamp = k.usable_stamp(x.lookups);
      if (stamp == x.stamp) {
        EXPECT_EQ(answer, x.answer) << sig << " after step " << i + 1 << ": same stamp";
        if (answer != nullptr && x.content)
          EXPECT_EQ(*answer, *x.content) << sig << " after step " << i + 1 << ": same stamp";
      }
      x.answer = answer;
      x.content = answer != nullptr ? std::optional<JobProfile>(*answer) : std::nullopt;
      x.stamp = stamp;
    }
  }
  for (const std::string& sig : c.kept)
    EXPECT_EQ(seen[sig].stamp, first[sig]) << sig << "'s answer never moved";
}

INSTANTIATE_TEST_SUITE_P(
    Table, UsableStamps,
    testing::Values(
        StampCase{
            "its_family_measured_again",
            {[](SignatureKnowledge& k) {
               k.add_family_instance("toy", {"toy[lr=5]", {{"lr", "5"}}, knowledge_profile(20)});
             },
             [](SignatureKnowledge& k) { k.learned("bare", knowledge_profile(30)); }},
            {"own", "other"}},
        StampCase{
            "another_family_measured",
            {[](SignatureKnowledge& k) {
              k.add_family_instance("zoo", {"zoo[lr=6]", {{"lr", "6"}}, knowledge_profile(12)});
            }},
            {"own", "hint", "bare"}},
        StampCase{
            "own_profiles_change",
            {[](SignatureKnowledge& k) { k.set_profile("own", knowledge_profile(4)); },
             [](SignatureKnowledge& k) { fresh_measured_memory(k, "own", knowledge_profile(7)); },
             [](SignatureKnowledge& k) { k.raise_peak("hint", 5 * kGiB); },
             [](SignatureKnowledge& k) { k.learned("hint", knowledge_profile(3, 30)); },
             [](SignatureKnowledge& k) { k.raise_peak("hint", 50 * kGiB); }},
            {"other"}},
        StampCase{
            "a_profile_no_longer_admissible_alone_then_again",
            {[](SignatureKnowledge& k) {
               k.set_profile("own", knowledge_profile(3, std::nullopt));
             },
             [](SignatureKnowledge& k) {
               k.add_family_instance("toy", {"toy[lr=8]", {{"lr", "8"}}, knowledge_profile(40)});
             },
             [](SignatureKnowledge& k) { k.set_profile("own", knowledge_profile(3)); },
             [](SignatureKnowledge& k) {
               k.add_family_instance("toy", {"toy[lr=9]", {{"lr", "9"}}, knowledge_profile(41)});
             }},
            {"other"}},
        StampCase{
            "a_bare_member_gets_a_profile",
            {[](SignatureKnowledge& k) { k.set_profile("bare", knowledge_profile(2)); },
             [](SignatureKnowledge& k) {
               k.add_family_instance("toy", {"toy[lr=7]", {{"lr", "7"}}, knowledge_profile(50)});
             }},
            {"other"}},
        StampCase{
            "members_given_new_values_or_another_family",
            {[](SignatureKnowledge& k) { k.set_family("hint", toy_member("toy[lr=0.1]", "0.1")); },
             [](SignatureKnowledge& k) {
               k.set_family("bare",
                            FamilyMember{"zoo", "zoo[lr=0.1]", {{"lr", "0.1"}}, std::nullopt});
             },
             [](SignatureKnowledge& k) {
               k.set_family(
                   "own",
                   FamilyMember{"toy", "toy[lr=1]", {{"lr", "1"}}, std::vector<std::string>{"lr"}});
             }},
            {"other"}},
        StampCase{"priors_labels_and_ended_work",
                  {[](SignatureKnowledge& k) { k.set_prior("bare", knowledge_profile(1)); },
                   [](SignatureKnowledge& k) { k.set_label("own", "toy"); },
                   [](SignatureKnowledge& k) { fresh_ended(k, "own", 100); }},
                  {"own", "hint", "bare", "other"}}),
    [](const auto& info) { return info.param.name; });

// Whether an operation moves version() (the key of the policy's caches).
struct VersionCase {
  std::string name;
  std::function<void(SignatureKnowledge&)> op;
  bool changes = false;
};

class KnowledgeVersion : public testing::TestWithParam<VersionCase> {};

TEST_P(KnowledgeVersion, MovesWheneverAnAnswerCouldChange) {
  const VersionCase& c = GetParam();
  SignatureKnowledge k(kLargest);
  k.set_family("s", toy_member("toy[lr=0.2]", "0.2"));
  const uint64_t before = k.version();
  EXPECT_NE(before, 0u);
  c.op(k);
  EXPECT_EQ(k.version() != before, c.changes);
}

INSTANTIATE_TEST_SUITE_P(
    Table, KnowledgeVersion,
    testing::Values(
        VersionCase{"set_profile",
                    [](SignatureKnowledge& k) { k.set_profile("s", knowledge_profile(1)); }, true},
        VersionCase{"set_prior",
                    [](SignatureKnowledge& k) { k.set_prior("s", knowledge_profile(1)); }, true},
        VersionCase{"set_family",
                    [](SignatureKnowledge& k) { k.set_family("t", toy_member("toy[lr=1]", "1")); },
                    true},
        VersionCase{"add_family_instance",
                    [](SignatureKnowledge& k) {
                      k.add_family_instance("toy", {"x", {}, knowledge_profile(1)});
                    },
                    true},
        VersionCase{"learned", [](SignatureKnowledge& k) { k.learned("s", knowledge_profile(1)); },
                    true},
        VersionCase{"raise_peak", [](SignatureKnowledge& k) { k.raise_peak("s", kGiB); }, true},
        VersionCase{"set_label", [](SignatureKnowledge& k) { k.set_label("s", "toy"); }, false},
        VersionCase{"ended", [](SignatureKnowledge& k) { fresh_ended(k, "s", 100); }, false},
        VersionCase{"measured_memory_without_a_peak",
                    [](SignatureKnowledge& k) { fresh_measured_memory(k, "s", JobProfile{}); },
                    false}),
    [](const auto& info) { return info.param.name; });

TEST(SignatureKnowledgeTest, PriorIsTheDefaultUnlessSetWithItsOwnHintsOver) {
  SignatureKnowledge k(kLargest);
  const JobProfile fallback = k.prior_of("s");
  EXPECT_TRUE(fallback.admissible()) << "the default prior places a newcomer";
  k.set_prior("s", knowledge_profile(3));
  EXPECT_EQ(*k.prior_of("s").peak_memory_bytes, 3 * kGiB);
  k.set_profile("s", knowledge_profile(2, std::nullopt));
  EXPECT_EQ(*k.prior_of("s").peak_memory_bytes, 2 * kGiB) << "its own hint wins";
  EXPECT_EQ(*k.prior_of("s").sm_active_pct, 40);
}

TEST(SignatureKnowledgeTest, LabelsProbeKeysAndNames) {
  SignatureKnowledge k(kLargest);
  EXPECT_EQ(k.label("0123456789abcdef"), "01234567");
  k.set_label("s", "resnet");
  k.set_label_if_none("s", "other");
  EXPECT_EQ(k.label("s"), "resnet");
  EXPECT_EQ(k.probe_key("s"), "s");
  k.set_family("s", toy_member("toy[lr=0.2]", "0.2"));
  EXPECT_EQ(k.probe_key("s"), "family:toy");
  EXPECT_EQ(k.member("s")->name, "toy[lr=0.2]");
  EXPECT_EQ(k.member("t"), nullptr);
  EXPECT_EQ(k.family_size("s"), (std::pair<size_t, size_t>{0, 1}));
}

TEST(SignatureKnowledgeTest, AnEstimateIsAnnouncedOncePerMeasurement) {
  SignatureKnowledge k(kLargest);
  k.add_family_instance("toy", {"toy[lr=0.1]", {{"lr", "0.1"}}, knowledge_profile(6)});
  k.set_family("s", toy_member("toy[lr=0.2]", "0.2"));
  EXPECT_TRUE(fresh_announce(k, "s"));
  EXPECT_FALSE(fresh_announce(k, "s"));
  k.learned("s", knowledge_profile(6.5));
  EXPECT_TRUE(fresh_announce(k, "s")) << "its family measured again";
  EXPECT_FALSE(fresh_announce(k, "unknown")) << "no family, no estimate";
}

TEST(SignatureKnowledgeTest, EndedWorkOfItsOwnElseOfItsFamily) {
  SignatureKnowledge k(kLargest);
  k.set_family("s", toy_member("toy[lr=0.2]", "0.2"));
  k.set_family("t", toy_member("toy[lr=0.1]", "0.1"));
  EXPECT_EQ(fresh_ended_samples(k, "s"), std::nullopt);
  fresh_ended(k, "t", 500);
  EXPECT_EQ(fresh_ended_samples(k, "s"), 500.0) << "a sibling's";
  fresh_ended(k, "s", 300);
  fresh_ended(k, "t", 700);
  EXPECT_EQ(fresh_ended_samples(k, "s"), 300.0) << "its own first";
  fresh_ended(k, "u", 40);
  EXPECT_EQ(fresh_ended_samples(k, "u"), 40.0) << "without a family: its own";
  k.set_family("u", toy_member("toy[lr=0.4]", "0.4"));
  EXPECT_EQ(fresh_ended_samples(k, "u"), 40.0)
      << "its own from before its membership, not the family's";
  fresh_ended(k, "u", 60);
  EXPECT_EQ(fresh_ended_samples(k, "u"), 60.0);
  EXPECT_EQ(fresh_ended_samples(k, "v"), std::nullopt);
}

// What a caller changes through a queued job's Lookups, kept from call to
// call (announce(), ended(), measured_memory()), is what it would change
// through fresh ones: two knowledges fed the same steps, one each way,
// answer alike after every step.
TEST(SignatureKnowledgeTest, ChangesThroughKeptLookupsAreThoseThroughFreshOnes) {
  SignatureKnowledge fresh(kLargest);
  SignatureKnowledge through(kLargest);
  std::map<std::string, SignatureKnowledge::Lookups> lookups;
  for (SignatureKnowledge* k : {&fresh, &through}) {
    k->add_family_instance("toy", {"toy[lr=0.1]", {{"lr", "0.1"}}, knowledge_profile(6)});
    k->set_family("s", toy_member("toy[lr=0.2]", "0.2"));
  }
  auto step = [&](const std::string& what, const std::string& signature) {
    SignatureKnowledge::Lookups& l = lookups[signature];
    if (what == "announce") {
      EXPECT_EQ(through.announce(signature, l), fresh_announce(fresh, signature))
          << what << " " << signature;
    } else if (what == "ended") {
      through.ended(signature, l, 250);
      fresh_ended(fresh, signature, 250);
    } else {
      through.measured_memory(signature, l, knowledge_profile(8, std::nullopt));
      fresh_measured_memory(fresh, signature, knowledge_profile(8, std::nullopt));
    }
    for (const std::string& s : {"s", "t"}) {
      EXPECT_EQ(fresh_ended_samples(through, s), fresh_ended_samples(fresh, s)) << what << " " << s;
      const JobProfile* a = through.usable(s);
      const JobProfile* b = fresh.usable(s);
      ASSERT_EQ(a == nullptr, b == nullptr) << what << " " << s;
      if (a != nullptr) EXPECT_EQ(a->peak_memory_bytes, b->peak_memory_bytes) << what << " " << s;
    }
  };
  // "t" has no membership when first named, then one.
  for (const char* what : {"announce", "ended", "measured_memory"}) step(what, "t");
  for (SignatureKnowledge* k : {&fresh, &through})
    k->set_family("t", toy_member("toy[lr=0.3]", "0.3"));
  for (const char* what : {"announce", "announce", "ended", "measured_memory", "announce"}) {
    step(what, "s");
    step(what, "t");
  }
}

TEST(SignatureKnowledgeTest, ProbeTargetAmongTheQueuedAndCachedUntilAChange) {
  SignatureKnowledge k(kLargest);
  k.add_family_instance("toy",
                        {"toy[batch_size=32]", {{"batch_size", "32"}}, knowledge_profile(2)});
  k.set_family("near", FamilyMember{"toy", "toy[batch_size=64]", {{"batch_size", "64"}}, {}});
  k.set_family("far", FamilyMember{"toy", "toy[batch_size=512]", {{"batch_size", "512"}}, {}});
  std::set<std::string> queued = {"near", "far"};
  auto is_queued = [&](const std::string& s) { return queued.contains(s); };
  k.keep_probe_targets_while(0);
  EXPECT_EQ(k.probe_target("toy", is_queued), "far") << "the farthest teaches most";
  queued.erase("far");
  EXPECT_EQ(k.probe_target("toy", is_queued), "far") << "cached while the caller says no change";
  k.keep_probe_targets_while(1);
  EXPECT_EQ(k.probe_target("toy", is_queued), "near");
  queued.clear();
  k.keep_probe_targets_while(2);
  EXPECT_EQ(k.probe_target("toy", is_queued), "");
}

// probe_target() over the caller's candidates answers as the scan of the
// family's signatures does, in whatever order they come.
struct CandidatesCase {
  std::string name;
  std::vector<std::string> candidates;  // every queued one, perhaps others
  bool refamilied = false;              // "odd" given a second family
  std::string want;
};

class ProbeTargetCandidates : public testing::TestWithParam<CandidatesCase> {};

TEST_P(ProbeTargetCandidates, AnswerAsTheScan) {
  const CandidatesCase& c = GetParam();
  SignatureKnowledge k(kLargest);
  k.add_family_instance("toy",
                        {"toy[batch_size=32]", {{"batch_size", "32"}}, knowledge_profile(2)});
  k.set_family("near", FamilyMember{"toy", "toy[batch_size=64]", {{"batch_size", "64"}}, {}});
  k.set_family("far1", FamilyMember{"toy", "toy[batch_size=512]", {{"batch_size", "512"}}, {}});
  k.set_family("far2", FamilyMember{"toy", "toy[batch_size=512]", {{"batch_size", "512"}}, {}});
  k.set_family("odd", FamilyMember{"other", "other[batch_size=999]", {{"batch_size", "999"}}, {}});
  if (c.refamilied)
    k.set_family("odd", FamilyMember{"toy", "toy[batch_size=999]", {{"batch_size", "999"}}, {}});
  const std::set<std::string> queued(c.candidates.begin(), c.candidates.end());
  auto is_queued = [&](const std::string& s) { return queued.contains(s); };
  std::vector<const std::string*> candidates;
  for (const std::string& s : c.candidates) candidates.push_back(&s);
  k.keep_probe_targets_while(0);
  const std::string scanned = k.probe_target("toy", is_queued);
  k.keep_probe_targets_while(1);
  EXPECT_EQ(k.probe_target("toy", is_queued, candidates), scanned);
  EXPECT_EQ(scanned, c.want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ProbeTargetCandidates,
    testing::Values(
        CandidatesCase{"a_tie_goes_to_the_first_listed", {"far2", "near", "far1"}, false, "far1"},
        CandidatesCase{"the_order_given_does_not_matter", {"far1", "far2", "near"}, false, "far1"},
        CandidatesCase{"one_queued", {"near"}, false, "near"},
        CandidatesCase{"another_familys_signature_is_left_out", {"odd", "near"}, false, "near"},
        // Listed in "other", of "toy" now: the scan of toy's list leaves it out.
        CandidatesCase{"a_signature_given_a_second_family", {"odd", "near"}, true, "near"},
        CandidatesCase{"none", {}, false, ""}),
    [](const auto& info) { return info.param.name; });

// A measurement joins its family as the first instance with the member's
// values (found by their hash, then kept by the member), or re-measures
// that one: how many instances the family holds, and the estimate of "q",
// an unmeasured member with lr 0.1 (lr is neutral: the largest peak its
// instances with lr 0.1 hold).
struct InstancesCase {
  std::string name;
  std::function<void(SignatureKnowledge&)> steps;
  size_t instances = 0;
  std::optional<double> q_gib;  // usable("q")'s peak; nullopt: none usable
};

class InstancesByValues : public testing::TestWithParam<InstancesCase> {};

TEST_P(InstancesByValues, OneInstanceForEachSetOfValues) {
  const InstancesCase& c = GetParam();
  SignatureKnowledge k(kLargest);
  k.reserve(8);
  c.steps(k);
  k.set_family("q", toy_member("toy[lr=0.1]#q", "0.1"));
  EXPECT_EQ(k.family_size("q").first, c.instances);
  const JobProfile* q = k.usable("q");
  ASSERT_EQ(q != nullptr, c.q_gib.has_value());
  if (q != nullptr) {
    EXPECT_EQ(*q->peak_memory_bytes, static_cast<uint64_t>(*c.q_gib * kGiB));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, InstancesByValues,
    testing::Values(
        InstancesCase{"nothing_measured", [](SignatureKnowledge&) {}, 0, std::nullopt},
        InstancesCase{"two_members_with_one_set_of_values",
                      [](SignatureKnowledge& k) {
                        k.set_family("a", toy_member("toy[lr=0.1]", "0.1"));
                        k.set_family("b", toy_member("toy[lr=0.1]#2", "0.1"));
                        k.learned("a", knowledge_profile(4));
                        k.learned("b", knowledge_profile(6));
                      },
                      1, 6.0},
        InstancesCase{"the_largest_peak_of_one_member_measured_again_and_again",
                      [](SignatureKnowledge& k) {
                        k.set_family("a", toy_member("toy[lr=0.1]", "0.1"));
                        k.learned("a", knowledge_profile(4));
                        fresh_measured_memory(k, "a", knowledge_profile(7));
                        k.learned("a", knowledge_profile(5));
                      },
                      1, 7.0},
        InstancesCase{"a_store_instance_with_the_same_values_first",
                      [](SignatureKnowledge& k) {
                        k.add_family_instance(
                            "toy",
                            FamilyInstance{"toy[lr=0.1]", {{"lr", "0.1"}}, knowledge_profile(2)});
                        k.set_family("a", toy_member("toy[lr=0.1]", "0.1"));
                        k.learned("a", knowledge_profile(3));
                      },
                      1, 3.0},
        InstancesCase{"the_store_twice_then_the_first_remeasured",
                      [](SignatureKnowledge& k) {
                        for (double gib : {2.0, 9.0}) {
                          k.add_family_instance(
                              "toy", FamilyInstance{
                                         "toy[lr=0.1]", {{"lr", "0.1"}}, knowledge_profile(gib)});
                        }
                        k.set_family("a", toy_member("toy[lr=0.1]", "0.1"));
                        k.learned("a", knowledge_profile(3));
                      },
                      2, 9.0},
        InstancesCase{"each_member_its_own_values",
                      [](SignatureKnowledge& k) {
                        for (const char* lr : {"0.1", "0.2", "0.3"}) {
                          const std::string sig = std::string("s") + lr;
                          k.set_family(sig, toy_member(fmt::format("toy[lr={}]", lr), lr));
                          k.learned(sig, knowledge_profile(4));
                        }
                      },
                      3, 4.0},
        InstancesCase{"forty_members_each_measured_twice_as_the_index_grows",
                      [](SignatureKnowledge& k) {
                        for (int round = 0; round < 2; ++round) {
                          for (int i = 0; i < 40; ++i) {
                            const std::string lr = i == 0 ? "0.1" : fmt::format("{}", i + 1);
                            const std::string sig = fmt::format("m{}", i);
                            if (round == 0)
                              k.set_family(sig, toy_member(fmt::format("toy[lr={}]", lr), lr));
                            k.learned(sig, knowledge_profile(round == 0 ? 4 : 5));
                          }
                        }
                      },
                      40, 5.0},
        InstancesCase{"given_new_values_after_a_measurement",
                      [](SignatureKnowledge& k) {
                        k.set_family("a", toy_member("toy[lr=0.1]", "0.1"));
                        k.learned("a", knowledge_profile(4));
                        k.set_family("a", toy_member("toy[lr=0.2]", "0.2"));
                        k.learned("a", knowledge_profile(8));
                      },
                      2, 4.0}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace colo
