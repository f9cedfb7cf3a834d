#include "analysis/profiles.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "analysis/profile_event.h"
#include "analysis/stored.h"
#include "jobs/job_signature.h"
#include "store/run_store.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using testing::FakeRun;
using testing::kFakeGiB;
using testing::kFakeT0;

TEST(LearnedProfiles, SoloRunGivesTheProfileAndCollocatedRunsOnlyMemory) {
  auto store = testing::open_memory_store();
  FakeRun solo;
  solo.mechanism = "exclusive";
  solo.sm_active_pct = 19;
  solo.gpu_util_pct = 37;
  solo.job_memory_bytes = kFakeGiB;
  add_fake_run(*store, solo, kFakeT0);
  FakeRun together = solo;
  together.mechanism = "mps";
  together.degree = 4;
  together.job_memory_bytes = 3 * kFakeGiB / 2;
  add_fake_run(*store, together, kFakeT0 + 100'000);

  Result<std::vector<LearnedProfile>> profiles = learn_profiles(*store);
  ASSERT_TRUE(profiles.ok()) << profiles.error().message();
  ASSERT_EQ(profiles->size(), 1u);
  const LearnedProfile& p = profiles->front();
  EXPECT_EQ(p.gpu_name, "NVIDIA H200");
  EXPECT_EQ(p.group, "resnet26");
  EXPECT_EQ(p.runs, 5);  // jobs measured: one alone, four together
  EXPECT_NEAR(*p.profile.sm_active_pct, 19, 1e-9);
  EXPECT_NEAR(*p.profile.gpu_util_pct, 37, 1e-9);
  // Steady state: epochs 2-3, 80,000 samples each, 5 s apart.
  EXPECT_NEAR(*p.profile.samples_per_s, 16'000, 1e-6);
  EXPECT_NEAR(*p.profile.epoch_ms, 5'000, 1e-9);
  EXPECT_EQ(*p.profile.solo_ms, 20'000);
  // Memory: the largest seen, collocated runs included.
  EXPECT_EQ(*p.profile.peak_memory_bytes, 3 * kFakeGiB / 2);
  EXPECT_THAT(p.profile.source, ::testing::HasSubstr("run 1 job 1 (exclusive, alone, simulated)"));

  Result<std::vector<Collocation>> measured = measured_collocations(*store, *profiles);
  ASSERT_TRUE(measured.ok()) << measured.error().message();
  ASSERT_EQ(measured->size(), 1u);
  EXPECT_EQ(measured->front().mode, ShareMode::kSpatial);
  EXPECT_EQ(measured->front().jobs.size(), 4u);
  EXPECT_NEAR(measured->front().measured_total, 4.0, 1e-6);
}

// Jobs whose start-ups differ by up to 9 s but which, once past them, run as
// fast together as alone: calibrate() is told 4.0 solo jobs' worth (the rate
// while all four ran). The union of their steady epochs would say 2.94.
TEST(LearnedProfiles, CalibrationTakesTheRateWhileTheJobsRanTogether) {
  auto store = testing::open_memory_store();
  FakeRun solo;
  solo.mechanism = "exclusive";
  solo.epochs = 6;
  add_fake_run(*store, solo, kFakeT0);
  FakeRun together = solo;
  together.mechanism = "mps";
  together.degree = 4;
  together.stagger_ms = 3'000;
  const int64_t run = add_fake_run(*store, together, kFakeT0 + 100'000);

  Result<std::vector<LearnedProfile>> profiles = learn_profiles(*store);
  ASSERT_TRUE(profiles.ok()) << profiles.error().message();
  Result<std::vector<Collocation>> measured = measured_collocations(*store, *profiles);
  ASSERT_TRUE(measured.ok()) << measured.error().message();
  ASSERT_EQ(measured->size(), 1u);
  EXPECT_NEAR(measured->front().measured_total, 4.0, 1e-9);
  EXPECT_EQ(measured->front().source, fmt::format("run {} (mps, 4 jobs)", run));
  Result<InterferenceModel> model = calibrated_model(*store, InterferenceModel{}, *profiles);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->source, "calibrated from 1 measured collocations");
}

// A job idles the GPU while it starts up; its profile is its working load.
TEST(LearnedProfiles, SmActivityComesFromTheSteadyEpochsNotStartUp) {
  auto store = testing::open_memory_store();
  FakeRun solo;
  solo.mechanism = "exclusive";
  solo.sm_active_pct = 19;
  solo.gpu_util_pct = 37;
  solo.startup_idle_ms = 6'000;  // of the first epoch's 10 s
  add_fake_run(*store, solo, kFakeT0);
  Result<RunSummary> summary = analyse_run(*store, 1);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  ASSERT_TRUE(summary->jobs.front().mean_sm_active_pct.has_value());
  EXPECT_LT(*summary->jobs.front().mean_sm_active_pct, 15);  // start-up pulls the mean down

  Result<std::vector<LearnedProfile>> profiles = learn_profiles(*store);
  ASSERT_TRUE(profiles.ok()) << profiles.error().message();
  ASSERT_EQ(profiles->size(), 1u);
  EXPECT_NEAR(*profiles->front().profile.sm_active_pct, 19, 1e-9);
  EXPECT_NEAR(*profiles->front().profile.gpu_util_pct, 37, 1e-9);
}

// ran_alone's sweep against the definition, job by job, on random runs with
// shared starts and ends, instants, jobs still running and jobs never started.
TEST(LearnedProfiles, RanAloneIsWhetherAnyOtherJobOverlappedOnItsGpu) {
  std::mt19937 random(11);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  int alone_seen = 0;
  for (int trial = 0; trial < 500; ++trial) {
    RunSummary run;
    const int count = 1 + pick(12);
    for (int i = 0; i < count; ++i) {
      JobSummary job;
      job.id = i + 1;
      if (pick(8) > 0) job.device = pick(2);
      if (pick(8) > 0) job.started_ms = pick(20);
      if (job.started_ms && pick(8) > 0) job.ended_ms = *job.started_ms + pick(6) - 1;
      run.jobs.push_back(job);
    }
    const std::vector<bool> alone = ran_alone(run);
    ASSERT_EQ(alone.size(), run.jobs.size());
    for (size_t i = 0; i < run.jobs.size(); ++i) {
      const JobSummary& job = run.jobs[i];
      const bool expected =
          job.device && job.started_ms && job.ended_ms &&
          std::none_of(run.jobs.begin(), run.jobs.end(), [&](const JobSummary& other) {
            return other.id != job.id && other.device == job.device && other.started_ms &&
                   *other.started_ms < *job.ended_ms &&
                   other.ended_ms.value_or(std::numeric_limits<int64_t>::max()) > *job.started_ms;
          });
      ASSERT_EQ(alone[i], expected) << "trial " << trial << ", job " << job.id;
      alone_seen += expected ? 1 : 0;
    }
  }
  EXPECT_GT(alone_seen, 100) << "the runs hold jobs that ran alone";
}

TEST(LearnedProfiles, JobsThatNeverRanAloneHaveMemoryOnly) {
  auto store = testing::open_memory_store();
  FakeRun together;
  together.degree = 2;
  add_fake_run(*store, together, kFakeT0);
  Result<std::vector<LearnedProfile>> profiles = learn_profiles(*store);
  ASSERT_TRUE(profiles.ok());
  ASSERT_EQ(profiles->size(), 1u);
  EXPECT_FALSE(profiles->front().profile.sm_active_pct);
  EXPECT_FALSE(profiles->front().profile.admissible());
  EXPECT_EQ(profiles->front().profile.source, "store: 2 jobs, never alone");
}

// A run of a sweep as analysis sees it: a probe (job 1) that its family
// joined, and two siblings placed by estimates; all on one H100.
RunSummary sweep_run() {
  RunSummary run;
  run.run.id = 7;
  run.run.state = RunState::kOk;
  run.run.mechanism = "mps";
  DeviceInfo gpu;
  gpu.name = "NVIDIA H100 80GB HBM3";
  run.devices = {gpu};
  for (int i = 0; i < 3; ++i) {
    JobSummary j;
    j.id = i + 1;
    j.state = JobState::kOk;
    j.device = 0;
    j.started_ms = kFakeT0 + (i == 0 ? 0 : 10'000);
    j.ended_ms = kFakeT0 + 40'000;
    j.group = "toy";
    j.family = "fam";
    j.params = {{"batch_size", std::to_string(32 << (4 * i))}};  // 32, 512, 8192
    j.name = "toy[batch_size=" + j.params["batch_size"] + "]";
    j.signature = "sig" + std::to_string(i);
    run.jobs.push_back(std::move(j));
  }
  run.jobs[0].peak_memory_bytes = kFakeGiB;
  run.jobs[1].peak_memory_bytes = 3 * kFakeGiB;
  run.jobs[2].peak_memory_bytes = 40 * kFakeGiB;
  JobProfile probe;
  probe.peak_memory_bytes = kFakeGiB;
  probe.sm_active_pct = 30;
  probe.samples_per_s = 4000;
  probe.startup_ms = 9'000;
  run.jobs[0].probe = profile_in(profile_event(kProbeEvent, probe, kFakeT0), kProbeEvent);
  run.jobs[0].samples = 120'000;  // 30 s at its rate alone
  JobProfile estimate;
  estimate.peak_memory_bytes = 3 * kFakeGiB + kFakeGiB / 10;
  estimate.memory_uncertainty = 0.05;
  estimate.sm_active_pct = 50;
  run.jobs[1].estimate =
      profile_in(profile_event(kEstimateEvent, estimate, kFakeT0), kEstimateEvent);
  return run;
}

TEST(ProfileEvents, RoundTripAndOnlyTheirKind) {
  JobProfile p;
  p.peak_memory_bytes = 5 * kFakeGiB;
  p.memory_uncertainty = 0.12;
  p.sm_active_pct = 40;
  p.sm_uncertainty = 0.05;
  p.samples_per_s = 1234;
  p.rate_uncertainty = 0.2;
  p.startup_ms = 8000;
  ProgressEvent e = profile_event(kEstimateEvent, p, kFakeT0);
  EXPECT_EQ(e.kind, "estimate");
  std::optional<JobProfile> back = profile_in(e, kEstimateEvent);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back->peak_memory_bytes, 5 * kFakeGiB);
  EXPECT_DOUBLE_EQ(back->memory_uncertainty, 0.12);
  EXPECT_DOUBLE_EQ(*back->sm_active_pct, 40);
  EXPECT_DOUBLE_EQ(*back->samples_per_s, 1234);
  EXPECT_DOUBLE_EQ(back->rate_uncertainty, 0.2);
  EXPECT_EQ(*back->startup_ms, 8000);
  EXPECT_FALSE(profile_in(e, kProbeEvent).has_value());
  ProgressEvent epoch;
  epoch.kind = "epoch_end";
  EXPECT_FALSE(profile_in(epoch, kEstimateEvent).has_value());
}

TEST(LearnedProfiles, AProbeJoinedByItsFamilyStillGivesItsSoloNumbers) {
  ProfileLearner learner;
  learner.add(sweep_run());
  std::vector<LearnedProfile> profiles = learner.profiles();
  ASSERT_EQ(profiles.size(), 3u);
  const LearnedProfile& probed = profiles[0];
  EXPECT_EQ(probed.family, "fam");
  EXPECT_EQ(probed.params.at("batch_size"), "32");
  EXPECT_TRUE(probed.profile.admissible());
  EXPECT_DOUBLE_EQ(*probed.profile.sm_active_pct, 30);
  EXPECT_EQ(*probed.profile.startup_ms, 9'000);
  EXPECT_EQ(probed.profile.source, "store: run 7 job 1 (mps, probe)");
  // Its time alone, estimated: its start-up, then 120,000 samples at 4,000/s.
  EXPECT_EQ(probed.profile.solo_ms, 39'000);
  // The siblings ran with others: memory only, and the estimate one was placed by.
  EXPECT_FALSE(profiles[1].profile.admissible());
  ASSERT_TRUE(profiles[1].estimate.has_value());
  EXPECT_EQ(profiles[1].estimate->run_id, 7);
  EXPECT_EQ(*profiles[1].estimate->measured_peak_bytes, 3 * kFakeGiB);
  EXPECT_EQ(profiles[1].job_name, "toy[batch_size=512]");
  EXPECT_FALSE(profiles[2].estimate.has_value());
}

TEST(LearnedProfiles, AProbesEstimatedTimeAloneNeverReplacesOneMeasuredAlone) {
  ProfileContribution probe;
  probe.signature = "sig";
  probe.gpu_name = "NVIDIA H100";
  probe.solo = ProfileContribution::Solo::kProbe;
  probe.measured.sm_active_pct = 30;
  probe.measured.solo_ms = 39'000;
  ProfileContribution alone = probe;
  alone.solo = ProfileContribution::Solo::kAlone;
  alone.measured.solo_ms = 50'000;
  ProfileContribution later_probe = probe;
  later_probe.measured.solo_ms = 20'000;

  ProfileLearner probed_only;
  probed_only.add(probe);
  probed_only.add(later_probe);
  EXPECT_EQ(probed_only.profiles().at(0).profile.solo_ms, 20'000);  // the latest estimate

  ProfileLearner learner;
  learner.add(probe);
  learner.add(alone);
  learner.add(later_probe);
  EXPECT_EQ(learner.profiles().at(0).profile.solo_ms, 50'000);
}

TEST(LearnedProfiles, FamilyInstancesAndWhatAFilesJobsWouldBePlacedBy) {
  ProfileLearner learner;
  learner.add(sweep_run());
  const std::vector<LearnedProfile> learned = learner.profiles();
  // A file with the family's three measured instances and a new one.
  std::vector<JobSpec> jobs;
  for (const char* bs : {"32", "512", "8192", "128"}) {
    JobSpec j;
    j.name = std::string("toy[batch_size=") + bs + "]";
    j.group = "toy";
    j.family = "fam";
    j.params = {{"batch_size", bs}};
    j.command = {"train", "--batch-size", bs};
    jobs.push_back(j);
  }
  std::map<std::string, std::vector<FamilyInstance>> instances =
      family_instances(learned, jobs, "H100", false);
  ASSERT_EQ(instances.size(), 1u);
  ASSERT_EQ(instances.at("fam").size(), 3u);
  EXPECT_EQ(instances.at("fam")[0].name, "toy[batch_size=32]");
  EXPECT_TRUE(family_instances(learned, jobs, "H200", false).empty());

  // The store's signatures are not these jobs' (their commands differ), so
  // every job is placed by the family: memory is fitted over 32..8192, but
  // SM activity was measured at batch size 32 alone (presumed to matter: no
  // fit from one value), so only that batch size has a usable profile.
  ProfilesBySignature usable = usable_profiles({}, instances, jobs);
  ASSERT_EQ(usable.size(), 1u);
  EXPECT_TRUE(usable.contains(job_signature(jobs[0])));
  // Stated neutral, the probe's SM activity speaks for all of them.
  for (JobSpec& j : jobs) j.resource_params = std::vector<std::string>{};
  usable = usable_profiles({}, instances, jobs);
  ASSERT_EQ(usable.size(), 4u);
  const JobProfile& p = usable.at(job_signature(jobs[3]));
  EXPECT_DOUBLE_EQ(*p.sm_active_pct, 30);
  EXPECT_EQ(*p.peak_memory_bytes, 40 * kFakeGiB) << "neutral: the largest measured peak";
}

// What learning reads of a run is derived once and kept in the store: a
// later learn reads the kept facts (shown by facts kept with a memory no row
// holds), the profiles are the same as from the rows, and facts kept by
// another version of colo, or that are not facts, are derived again.
TEST(RunFacts, LearningReadsTheFactsKeptOfEachEndedRun) {
  auto store = testing::open_memory_store();
  FakeRun solo;
  solo.mechanism = "exclusive";
  const int64_t first = add_fake_run(*store, solo, kFakeT0);
  FakeRun together = solo;
  together.mechanism = "mps";
  together.degree = 4;
  const int64_t second = add_fake_run(*store, together, kFakeT0 + 100'000);
  for (int64_t run : {first, second}) {
    Result<std::optional<std::string>> kept = store->derived(run, kRunFactsKind, kRunFactsVersion);
    ASSERT_TRUE(kept.ok());
    EXPECT_FALSE(kept->has_value()) << "nothing is kept before it is derived";
  }
  Result<std::vector<LearnedProfile>> from_rows = learn_profiles(*store);
  ASSERT_TRUE(from_rows.ok()) << from_rows.error().message();
  Result<std::optional<std::string>> kept = store->derived(second, kRunFactsKind, kRunFactsVersion);
  ASSERT_TRUE(kept.ok() && kept->has_value());
  std::optional<RunFacts> facts = parse_run_facts(**kept);
  ASSERT_TRUE(facts.has_value());
  // Four jobs of one signature, folded (fold_contributions).
  ASSERT_EQ(facts->contributions.size(), 2u);
  EXPECT_EQ(facts->contributions[0].jobs + facts->contributions[1].jobs, 4);
  EXPECT_TRUE(facts->may_be_collocation);

  Result<std::vector<LearnedProfile>> from_facts = learn_profiles(*store);
  ASSERT_TRUE(from_facts.ok()) << from_facts.error().message();
  EXPECT_EQ(*from_facts, *from_rows);

  RunFacts marked = *facts;
  marked.contributions[0].peak_memory_bytes = 7 * kFakeGiB;
  ASSERT_TRUE(
      store->keep_derived(second, kRunFactsKind, kRunFactsVersion, run_facts_json(marked)).ok());
  Result<std::vector<LearnedProfile>> marked_profiles = learn_profiles(*store);
  ASSERT_TRUE(marked_profiles.ok());
  EXPECT_EQ(marked_profiles->front().profile.peak_memory_bytes, 7 * kFakeGiB);

  for (auto [version, body] : {std::pair{kRunFactsVersion + 1, run_facts_json(marked)},
                               std::pair{kRunFactsVersion, std::string("{\"jobs\": 3}")}}) {
    ASSERT_TRUE(store->keep_derived(second, kRunFactsKind, version, body).ok());
    Result<std::vector<LearnedProfile>> again = learn_profiles(*store);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *from_rows) << body;
    kept = store->derived(second, kRunFactsKind, kRunFactsVersion);
    ASSERT_TRUE(kept.ok() && kept->has_value());
    EXPECT_EQ(parse_run_facts(**kept), facts) << "derived again and kept";
  }
}

TEST(RunFacts, FoldedContributionsLearnTheSameProfilesFromFewerEntries) {
  // Random runs of three signatures on two GPUs, with every kind of entry
  // add() reads (names empty or not, each kind of solo, family, params,
  // estimates, peaks absent, zero or not), learned after history already
  // learned: folded or not, the same profiles.
  std::mt19937 random(7);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<ProfileContribution> history;
    std::vector<ProfileContribution> run;
    for (std::vector<ProfileContribution>* into : {&history, &run}) {
      const int count = 1 + pick(40);
      for (int i = 0; i < count; ++i) {
        ProfileContribution c;
        c.signature = fmt::format("sig{}", pick(3));
        c.gpu_name = pick(2) == 0 ? "NVIDIA H100" : "NVIDIA H200";
        c.simulated = pick(2) == 0;
        c.job_name = pick(4) == 0 ? "" : fmt::format("job{}", i);
        c.group = fmt::format("g{}", pick(3));
        c.command = {fmt::format("cmd{}", i)};
        if (pick(3) == 0) c.family = fmt::format("fam{}", pick(2));
        if (pick(3) == 0) c.params = {{"lr", fmt::format("{}", pick(5))}};
        if (int peak = pick(4); peak > 0) c.peak_memory_bytes = (peak - 1) * kFakeGiB;
        if (pick(5) == 0) c.estimate = LearnedProfile::EstimateCheck{i, c.job_name, {}, {}};
        c.solo = static_cast<ProfileContribution::Solo>(pick(3));
        c.measured.sm_active_pct = pick(100);
        c.measured.epoch_ms = pick(1000);
        if (pick(3) > 0) c.measured.solo_ms = pick(1000);  // a probe's may be unknown
        c.measured.source = fmt::format("entry {}", i);
        into->push_back(std::move(c));
      }
    }
    ProfileLearner whole;
    ProfileLearner folded;
    for (const ProfileContribution& c : history) {
      whole.add(c);
      folded.add(c);
    }
    for (const ProfileContribution& c : run) whole.add(c);
    const std::vector<ProfileContribution> fewer = fold_contributions(run);
    for (const ProfileContribution& c : fewer) folded.add(c);
    ASSERT_EQ(folded.profiles(), whole.profiles()) << "trial " << trial;
    ASSERT_LE(fewer.size(), run.size());
  }

  // Many jobs of one signature keep a handful.
  std::vector<ProfileContribution> many(10'000);
  for (size_t i = 0; i < many.size(); ++i) {
    many[i].signature = "sweep point";
    many[i].job_name = fmt::format("job{}", i);
    many[i].peak_memory_bytes = i % 97 * kFakeGiB;
  }
  const std::vector<ProfileContribution> few = fold_contributions(many);
  EXPECT_LE(few.size(), 3u);
  EXPECT_EQ(few.back().jobs + static_cast<int64_t>(few.size()) - 1, 10'000);
}

TEST(RunFacts, KeptFactsReadBackAsTheyWereWithEveryField) {
  RunFacts facts{profile_contributions(sweep_run()), true};
  ASSERT_EQ(facts.contributions.size(), 3u);
  ASSERT_TRUE(std::any_of(facts.contributions.begin(), facts.contributions.end(),
                          [](const ProfileContribution& c) { return c.estimate.has_value(); }));
  facts.contributions[2].solo = ProfileContribution::Solo::kAlone;
  facts.contributions[2].measured.epoch_ms = 1234.5;
  facts.contributions[2].measured.solo_ms = 99'000;
  facts.contributions[1].jobs = 41;
  EXPECT_EQ(parse_run_facts(run_facts_json(facts)), facts);
  // A command's argument that is not UTF-8 is kept replaced, not thrown on.
  facts.contributions[0].command.push_back("\xff");
  std::optional<RunFacts> odd = parse_run_facts(run_facts_json(facts));
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(odd->contributions[0].command.back(), "\xEF\xBF\xBD");
  EXPECT_FALSE(parse_run_facts("not json").has_value());
  EXPECT_FALSE(parse_run_facts(R"({"may_be_collocation": true, "jobs": [{"solo": "maybe"}]})"));
}

}  // namespace
}  // namespace colo
