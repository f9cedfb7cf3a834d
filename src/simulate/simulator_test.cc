#include "simulate/simulator.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/profiles.h"
#include "common/units.h"
#include "jobs/job_file.h"
#include "jobs/job_signature.h"
#include "sched/qos_model.h"
#include "simulate/sim_jobs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kH200MemoryBytes = 143'771ull << 20;

SimJob job(const std::string& name, const std::string& sig, double memory_gib, double sm,
           int64_t solo_ms, bool known = true) {
  SimJob j;
  j.name = name;
  j.signature = sig;
  j.label = sig;
  j.truth.peak_memory_bytes = static_cast<uint64_t>(memory_gib * static_cast<double>(kGiB));
  j.truth.sm_active_pct = sm;
  j.truth.solo_ms = solo_ms;
  j.truth.samples_per_s = 1000;
  if (known) j.known = j.truth;
  return j;
}

SimOptions h200(int gpus = 1) {
  SimOptions o;
  o.gpus = gpus;
  o.gpu_memory_bytes = kH200MemoryBytes;
  return o;
}

PolicyResult run(const std::vector<SimJob>& jobs, const std::string& policy, const SimOptions& o) {
  Result<std::vector<PolicySpec>> p = parse_policies(policy);
  EXPECT_TRUE(p.ok());
  return simulate_policy(jobs, p->front(), o);
}

TEST(Simulator, ExclusiveRunsJobsOneAfterAnother) {
  std::vector<SimJob> jobs = {job("a", "a", 1, 50, 10'000), job("b", "a", 1, 50, 10'000)};
  PolicyResult r = run(jobs, "exclusive", h200());
  EXPECT_EQ(r.makespan_ms, 20'000);
  EXPECT_EQ(r.jobs_ok, 2);
  PolicyResult two_gpus = run(jobs, "exclusive", h200(2));
  EXPECT_EQ(two_gpus.makespan_ms, 10'000);
}

TEST(Simulator, MpsPairFollowsTheInterferenceModel) {
  std::vector<SimJob> jobs = {job("a", "a", 1, 20, 10'000), job("b", "a", 1, 20, 10'000)};
  PolicyResult r = run(jobs, "mps-2", h200());
  // Two jobs at 40% summed SM: no sharing loss, overhead 1/(1+0.005).
  EXPECT_NEAR(static_cast<double>(r.makespan_ms), 10'050, 1);
}

TEST(Simulator, NaiveAllOverMemoryRunsOutOfMemory) {
  std::vector<SimJob> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(job("big" + std::to_string(i), "big", 60, 10, 10'000));
  // The fixed policy is given the memory hints: it waits instead of crashing.
  EXPECT_EQ(run(jobs, "naive-all", h200()).jobs_failed, 0);
  // Without hints it starts all three; the third does not fit and is
  // retried with fewer neighbours: nothing is lost.
  for (SimJob& j : jobs) j.known = JobProfile{};
  PolicyResult blind = run(jobs, "naive-all", h200());
  EXPECT_EQ(blind.jobs_failed, 0);
  EXPECT_EQ(blind.jobs_ok, 3);
  EXPECT_EQ(blind.retries, 1);
  ASSERT_FALSE(blind.notes.empty());
  EXPECT_THAT(blind.notes.back(), HasSubstr("big2"));
  EXPECT_THAT(blind.notes.back(), HasSubstr("requeued to run with at most 1 other jobs"));
}

// A job started on a GPU finds beside it the peak memory of every job
// running there (the simulator keeps each GPU's sum as jobs start and end):
// over the GPU's memory, it runs out of memory and is retried.
struct MemoryCase {
  std::string name;
  int gpus = 1;
  // Unhinted jobs (naive-all places them blind): GiB at their peak, submitted
  // at, GPUs (a gang's, hinted: the policy holds its memory on each).
  struct Job {
    double gib = 0;
    int64_t submit_ms = 0;
    int gpus = 1;
  };
  std::vector<Job> jobs;
  int retries = 0;
};

class MemoryBesideRunningJobs : public testing::TestWithParam<MemoryCase> {};

TEST_P(MemoryBesideRunningJobs, OverTheGpuRunsOutOfMemory) {
  const MemoryCase& c = GetParam();
  std::vector<SimJob> jobs;
  for (size_t i = 0; i < c.jobs.size(); ++i) {
    jobs.push_back(job(fmt::format("j{}", i), fmt::format("s{}", i), c.jobs[i].gib, 10, 10'000,
                       /*known=*/c.jobs[i].gpus > 1));
    jobs.back().submit_ms = c.jobs[i].submit_ms;
    jobs.back().gpus = c.jobs[i].gpus;
  }
  SimOptions o;
  o.gpus = c.gpus;
  o.gpu_memory_bytes = 10 * kGiB;
  const PolicyResult r = run(jobs, "naive-all", o);
  EXPECT_EQ(r.retries, c.retries) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(r.jobs_ok, static_cast<int>(jobs.size()));
  EXPECT_EQ(r.jobs_failed, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MemoryBesideRunningJobs,
    testing::Values(
        MemoryCase{"three_fit_together", 1, {{3, 0}, {3, 0}, {3, 0}}, 0},
        MemoryCase{"the_fourth_does_not", 1, {{3, 0}, {3, 0}, {3, 0}, {3, 0}}, 1},
        // The first ended before the second starts: its memory left.
        MemoryCase{"an_ended_job_holds_none", 1, {{6, 0}, {6, 20'000}}, 0},
        MemoryCase{"a_running_one_does", 1, {{6, 0}, {6, 5'000}}, 1},
        // A gang's rank holds its memory on each of its GPUs.
        MemoryCase{"a_gang_holds_memory_on_each_gpu", 2, {{6, 0, 2}, {6, 1'000}, {6, 1'000}}, 2},
        MemoryCase{"an_ended_gang_holds_none", 2, {{6, 0, 2}, {6, 20'000}, {6, 20'000}}, 0}),
    [](const testing::TestParamInfo<MemoryCase>& info) { return info.param.name; });

TEST(Simulator, AutoMeasuresAnUnknownJobThenFills) {
  std::vector<SimJob> jobs;
  for (int i = 0; i < 6; ++i)
    jobs.push_back(job("j" + std::to_string(i), "s", 1, 19, 60'000, false));
  PolicyResult r = run(jobs, "auto", h200());
  EXPECT_EQ(r.jobs_ok, 6);
  EXPECT_THAT(r.notes.front(), HasSubstr("never measured"));
  EXPECT_THAT(r.notes.front(), HasSubstr("starting it on idle gpu0"));
  PolicyResult exclusive = run(jobs, "exclusive", h200());
  EXPECT_LT(r.makespan_ms * 2, exclusive.makespan_ms);
}

TEST(Simulator, AutoRetriesAJobThatOutgrowsItsEstimate) {
  std::vector<SimJob> jobs = {job("a", "a", 1, 10, 10'000), job("b", "a", 1, 10, 10'000)};
  jobs[1].truth.peak_memory_bytes = 8 * kGiB;  // the hint said 1 GiB
  PolicyResult r = run(jobs, "auto", h200());
  EXPECT_EQ(r.jobs_ok, 2);
  EXPECT_EQ(r.retries, 2);  // 1 GiB -> 2 GiB -> alone with the whole GPU
  EXPECT_EQ(r.jobs_failed, 0);
}

// Issue 53: the head of the queue gets a place. A big job that fits beside
// none of the others queues behind a long one; a stream of jobs that fit
// beside the long one would take each place that frees before it. Under
// the auto policy and a fixed one alike, it starts second, as soon as the
// long job ends.
TEST(Simulator, TheHeadOfTheQueueIsNotOvertakenByAStreamOfSmallerJobs) {
  std::vector<SimJob> jobs = {job("long", "long", 50, 19, 100'000),
                              job("big", "big", 95, 19, 10'000)};
  for (int i = 0; i < 6; ++i)
    jobs.push_back(job("mid" + std::to_string(i), "mid", 50, 19, 100'000));
  for (const std::string policy : {"auto", "mps-2"}) {
    PolicyResult r = run(jobs, policy, h200());
    EXPECT_EQ(r.jobs_ok, 8) << policy;
    ASSERT_GE(r.starts.size(), 2u) << policy;
    EXPECT_EQ(r.starts[1], "big") << policy << ": the big job waited behind the stream";
  }
}

// Issue 17: a grid is one family. Nothing is known of its jobs (no store, no
// hints): auto measures one instance, then the rest start from its profile.
TEST(Simulator, AGridIsMeasuredOnceThenPackedNearMpsAll) {
  Result<JobFile> file = parse_job_file(
      "[[job]]\nname = \"toy\"\ncommand = [\"train\", \"--lr\", \"{lr}\", \"--wd\", \"{wd}\"]\n"
      "grid = { lr = [0.1, 0.05, 0.02, 0.01], wd = [0.0, 0.0001, 0.001] }\n",
      "grid.toml", "/tmp");
  ASSERT_TRUE(file.ok()) << file.error().message();
  SimJobSet set = make_sim_jobs(*file, known_profiles({}, file->jobs, "H200", false));
  ASSERT_EQ(set.jobs.size(), 12u);
  PolicyResult autod = run(set.jobs, "auto", h200());
  PolicyResult mps_all = run(set.jobs, "mps-all", h200());
  EXPECT_EQ(autod.jobs_ok, 12);
  int probes = 0;
  for (const std::string& n : autod.notes)
    probes += n.find("measured there") != std::string::npos ? 1 : 0;
  EXPECT_EQ(probes, 1) << ::testing::PrintToString(autod.notes);
  // The other eleven start beside it while it is measured.
  EXPECT_THAT(autod.notes, ::testing::Contains(
                               HasSubstr("toy[lr=0.1,wd=0.0001] and 9 more instances: starting "
                                         "beside its family's newcomer while that is measured")));
  EXPECT_LE(static_cast<double>(autod.makespan_ms), 1.2 * static_cast<double>(mps_all.makespan_ms));
}

// Issue 34: eight jobs of one kind nobody has measured, each a quarter of
// the GPU: the siblings start beside the newcomer under small shares; as its
// memory grows past their limits (the simulator reports it as it grows),
// they are stopped and start again from its measurement; none fails, no
// attempt is counted against them.
TEST(Simulator, SpeculativeSiblingsTheNewcomerOutgrowsAreStoppedAndEndOk) {
  std::vector<SimJob> jobs;
  for (int i = 0; i < 8; ++i) {
    jobs.push_back(job("tables" + std::to_string(i), "tables", 36, 10, 60'000, false));
    jobs.back().truth.startup_ms = 10'000;
  }
  PolicyResult r = run(jobs, "auto", h200());
  EXPECT_EQ(r.jobs_ok, 8);
  EXPECT_EQ(r.jobs_failed, 0);
  EXPECT_EQ(r.stopped, 7) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(r.retries, 0) << "stopped before they overran";
  EXPECT_THAT(r.notes, ::testing::Contains(HasSubstr("not counted as an attempt")));
}

// Issue 34: a gang nobody has measured starts at once beside one-GPU jobs
// under the auto policy (its prior's claim contains it), instead of having
// its GPUs to itself until it is measured.
TEST(Simulator, ANewcomerGangStartsBesideOneGpuJobs) {
  std::vector<SimJob> jobs;
  jobs.push_back(job("ddp", "ddp", 6, 30, 60'000, false));
  jobs.back().gpus = 2;
  for (int i = 0; i < 4; ++i)
    jobs.push_back(job("single" + std::to_string(i), "single", 2, 20, 30'000, false));
  for (SimJob& j : jobs) {
    j.prior.peak_memory_bytes = 10 * kGiB;
    j.prior.sm_active_pct = 30;
    j.prior.source = "prior: test";
  }
  PolicyResult r = run(jobs, "auto", h200(2));
  EXPECT_EQ(r.jobs_ok, 5);
  EXPECT_THAT(r.notes, ::testing::Contains(HasSubstr("ddp: a gang never measured; prior: test")));
  EXPECT_LE(r.makespan_ms, 61'000) << "the one-GPU jobs ran beside the gang";
}

// Two at a time: one sibling starts beside the first newcomer while it is
// measured; the rest wait for it, and batch_size (presumed to matter) needs
// a second measured value, the farthest.
TEST(Simulator, ABatchSizeGridMeasuresASecondInstanceAtTheFarthestValue) {
  Result<JobFile> file = parse_job_file(
      "[[job]]\nname = \"r\"\ncommand = [\"train\", \"--batch-size\", \"{batch_size}\"]\n"
      "grid = { batch_size = [32, 64, 128, 256, 512] }\n",
      "grid.toml", "/tmp");
  ASSERT_TRUE(file.ok()) << file.error().message();
  SimJobSet set = make_sim_jobs(*file, known_profiles({}, file->jobs, "H200", false));
  SimOptions two = h200();
  two.auto_options.max_jobs_per_gpu = 2;
  PolicyResult r = run(set.jobs, "auto", two);
  EXPECT_EQ(r.jobs_ok, 5);
  std::vector<std::string> probes;
  for (const std::string& n : r.notes) {
    if (n.find("measured there") != std::string::npos) probes.push_back(n);
  }
  ASSERT_EQ(probes.size(), 2u) << ::testing::PrintToString(r.notes);
  EXPECT_THAT(probes[0], HasSubstr("r[batch_size=32]: never measured"));
  EXPECT_THAT(probes[1], HasSubstr("r[batch_size=512]: its family's measurements do not cover it"));
}

// Issue 22: four kinds of job nobody has measured, each with 10 s of
// start-up, start at once beside each other (contained by their memory
// limits) instead of one after another; once the store knows them (warm) the
// same queue takes less still.
TEST(Simulator, ColdJobsStartTogetherAndWarmIsFaster) {
  std::vector<SimJob> jobs;
  for (int k = 0; k < 4; ++k) {
    SimJob j = job(fmt::format("kind{}", k), fmt::format("s{}", k), 4, 20, 40'000, false);
    j.truth.startup_ms = 10'000;
    jobs.push_back(j);
  }
  PolicyResult cold = run(jobs, "auto", h200());
  PolicyResult warm = run(jobs, "auto-warm", h200());
  PolicyResult exclusive = run(jobs, "exclusive", h200());
  EXPECT_EQ(cold.jobs_ok, 4);
  EXPECT_EQ(cold.retries, 0);
  EXPECT_LT(cold.makespan_ms, 80'000) << "more than two at a time; one at a time takes 160 s";
  EXPECT_LE(warm.makespan_ms, cold.makespan_ms);
  EXPECT_LT(cold.makespan_ms * 2, exclusive.makespan_ms);
}

// A newcomer that needs more than the GPU could spare fails under its limit,
// alone, and is retried with what it took; nothing else fails.
TEST(Simulator, ANewcomerThatOverrunsItsLimitIsRetried) {
  std::vector<SimJob> jobs = {job("known", "k", 100, 20, 60'000)};
  SimJob big = job("big", "b", 60, 20, 30'000, false);
  big.prior = big.truth;
  big.prior.peak_memory_bytes = 10 * kGiB;  // the prior underestimates it
  big.prior.source = "prior: test";
  jobs.push_back(big);
  PolicyResult r = run(jobs, "auto", h200());
  EXPECT_EQ(r.jobs_ok, 2);
  EXPECT_EQ(r.jobs_failed, 0);
  EXPECT_EQ(r.retries, 1);
  EXPECT_THAT(r.notes, ::testing::Contains(HasSubstr("big: out of GPU memory")));
}

// Ten 10-minute jobs, one per GPU at a time: ceil(10 / GPUs) x 10 minutes.
std::vector<SimJob> ten_exclusive_jobs() {
  std::vector<SimJob> jobs;
  for (int i = 0; i < 10; ++i) jobs.push_back(job(fmt::format("j{}", i), "a", 1, 50, 600'000));
  return jobs;
}

TEST(Simulator, PlanFindsTheFewestGpusThatMeetTheDeadline) {
  Result<std::vector<PolicySpec>> exclusive = parse_policies("exclusive");
  ASSERT_TRUE(exclusive.ok());
  // 30 minutes: three rounds, so 4 GPUs (ceil(10/4) = 3); 3 GPUs need four.
  GpuPlan plan = fewest_gpus(ten_exclusive_jobs(), exclusive->front(), h200(), 1'800'000, 64);
  ASSERT_TRUE(plan.gpus.has_value());
  EXPECT_EQ(*plan.gpus, 4);
  std::vector<int> tried;
  for (const GpuPlan::Try& t : plan.tried) tried.push_back(t.gpus);
  EXPECT_EQ(tried, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(plan.tried[2].makespan_ms, 2'400'000);  // 3 GPUs: four rounds
  EXPECT_TRUE(plan.tried[2].all_ok);
}

TEST(Simulator, PlanSaysWhenNoNumberOfGpusMeetsTheDeadline) {
  Result<std::vector<PolicySpec>> exclusive = parse_policies("exclusive");
  ASSERT_TRUE(exclusive.ok());
  // No job is shorter than 10 minutes: 5 minutes is out of reach.
  GpuPlan plan = fewest_gpus(ten_exclusive_jobs(), exclusive->front(), h200(), 300'000, 12);
  EXPECT_FALSE(plan.gpus.has_value());
  ASSERT_FALSE(plan.tried.empty());
  EXPECT_EQ(plan.tried.back().gpus, 12);  // the bound was tried
}

// SimOptions::keep_scheduler takes each policy's scheduler when its
// simulation is done, and changes nothing of what it reports.
TEST(Simulator, AKeptSchedulerLeavesTheResultAsItWas) {
  std::vector<SimJob> jobs;
  jobs.push_back(job("ddp", "ddp", 6, 30, 60'000, false));
  jobs.back().gpus = 2;
  for (int i = 0; i < 6; ++i)
    jobs.push_back(job("single" + std::to_string(i), "single" + std::to_string(i % 3), 20 + i, 20,
                       30'000, i % 2 == 0));
  for (SimJob& j : jobs) {
    j.prior.peak_memory_bytes = 10 * kGiB;
    j.prior.sm_active_pct = 30;
    j.prior.source = "prior: test";
  }
  for (const char* policy : {"exclusive", "mps-all", "mps-2", "naive-all", "auto", "auto-warm"}) {
    SCOPED_TRACE(policy);
    const PolicyResult freed = run(jobs, policy, h200(2));
    SimOptions keeping = h200(2);
    std::vector<std::unique_ptr<Scheduler>> kept;
    keeping.keep_scheduler = [&](std::unique_ptr<Scheduler> s) { kept.push_back(std::move(s)); };
    const PolicyResult result = run(jobs, policy, keeping);
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_NE(kept.front(), nullptr);
    EXPECT_EQ(result.starts, freed.starts);
    EXPECT_EQ(result.notes, freed.notes);
    EXPECT_EQ(result.failures, freed.failures);
    EXPECT_EQ(result.makespan_ms, freed.makespan_ms);
    EXPECT_EQ(result.jobs_ok, freed.jobs_ok);
    EXPECT_EQ(result.retries, freed.retries);
  }
}

// make_sim_jobs's sources: one line per kind of job, consecutive kinds that
// say the same merged, at most 50 and a line for the rest. A kind alike the
// one before in all a line is made of is not formatted again: the lines
// must be those of formatting every kind (`formatted_every_kind`).
std::vector<std::string> formatted_every_kind(const std::vector<SimJob>& jobs) {
  std::vector<std::string> out;
  std::map<std::string, int> count;
  std::vector<const SimJob*> kinds;
  for (const SimJob& j : jobs)
    if (count[j.signature]++ == 0) kinds.push_back(&j);
  std::string last;
  int n = 0;
  size_t left = kinds.size();
  for (const SimJob* j : kinds) {
    const JobProfile& t = j->truth;
    const std::string line =
        fmt::format("{} x{{}}: {} peak, {:.0f}% SM, {:.0f}% busy, {} alone; from {}", j->label,
                    format_bytes(*t.peak_memory_bytes), *t.sm_active_pct, t.gpu_busy_pct(),
                    format_duration_ms(*t.solo_ms), !t.source.empty() ? t.source : "assumptions");
    if (line != last) {
      if (n > 0) out.push_back(fmt::format(fmt::runtime(last), n));
      n = 0;
      if (out.size() == 50) {
        out.push_back(fmt::format("... and {} more kinds of job", left));
        return out;
      }
    }
    last = line;
    n += count[j->signature];
    --left;
  }
  if (n > 0) out.push_back(fmt::format(fmt::runtime(last), n));
  return out;
}

TEST(SimJobs, SourceLinesAreThoseOfFormattingEveryKind) {
  // A kind: its block, the jobs of its signature, and what is known of it
  // (nullopt: nothing; its truth is then assumed).
  struct Kind {
    std::string group;
    int jobs = 1;
    std::optional<double> sm;
    uint64_t memory_gib = 2;
    std::string source = "hint: test.toml:1";
    std::optional<double> util;
  };
  struct Case {
    const char* name;
    std::vector<Kind> kinds;
    size_t lines;
  };
  auto many = [](int n, bool alternate) {
    std::vector<Kind> out;
    for (int i = 0; i < n; ++i)
      out.push_back({"g", 1, 20.0 + (alternate ? i % 2 : 0), 2, "hint: test.toml:1"});
    return out;
  };
  const std::vector<Case> cases = {
      {"a grid, alike", many(5, false), 1},
      {"formatted alike, not bit for bit", {{"g", 1, 19.1}, {"g", 1, 19.2}}, 1},
      {"-0 and 0: formatted apart", {{"g", 1, -0.0}, {"g", 1, 0.0}}, 2},
      {"alike, apart", {{"a", 1, 20.0}, {"b", 1, 20.0}, {"a", 1, 20.0}}, 3},
      {"repeats counted", {{"g", 3, 20.0}, {"g", 2, 20.0}}, 1},
      {"another source", {{"g", 1, 20.0}, {"g", 1, 20.0, 2, "store: run 1 job 2"}}, 2},
      {"another memory", {{"g", 1, 20.0}, {"g", 1, 20.0, 3}}, 2},
      {"another utilization",
       {{"g", 1, 20.0, 2, "hint", 50.0}, {"g", 1, 20.0, 2, "hint", 60.0}},
       2},
      {"nothing known", {{"g", 2, std::nullopt}, {"g", 1, std::nullopt}}, 1},
      {"more kinds than lines", many(60, true), 51},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    JobFile file;
    ProfilesBySignature known;
    int index = 0;
    for (const Kind& k : c.kinds) {
      ++index;
      for (int j = 0; j < k.jobs; ++j) {
        JobSpec spec;
        spec.name = fmt::format("{}{}#{}", k.group, index, j + 1);
        spec.group = k.group;
        spec.command = {"train", std::to_string(index)};
        spec.working_dir = "/tmp";
        file.jobs.push_back(spec);
        if (!k.sm) continue;
        JobProfile p;
        p.peak_memory_bytes = k.memory_gib * kGiB;
        p.sm_active_pct = k.sm;
        p.gpu_util_pct = k.util;
        p.solo_ms = 60'000;
        p.source = k.source;
        known[job_signature(spec)] = p;
      }
    }
    SimJobSet set = make_sim_jobs(file, known, known);
    EXPECT_EQ(set.sources, formatted_every_kind(set.jobs));
    EXPECT_EQ(set.sources.size(), c.lines) << ::testing::PrintToString(set.sources);
  }
}

TEST(Simulator, ParsePoliciesNamesTheBadEntry) {
  EXPECT_EQ(parse_policies("exclusive,mps-3,auto")->size(), 3u);
  Result<std::vector<PolicySpec>> bad = parse_policies("auto,mps-x");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(), HasSubstr("unknown policy 'mps-x'"));
  // Out of range: once "internal error: stoi" (an uncaught exception).
  for (const char* degree : {"mps-99999999999", "mps-0", "mps-49", "mps-007"}) {
    Result<std::vector<PolicySpec>> out_of_range = parse_policies(degree);
    ASSERT_FALSE(out_of_range.ok()) << degree;
    EXPECT_THAT(out_of_range.error().message(), HasSubstr(std::string("'") + degree + "'"));
    EXPECT_THAT(out_of_range.error().message(), HasSubstr("1 to 48"));
  }
  EXPECT_EQ(parse_policies("mps-48")->front().degree, 48);
  EXPECT_EQ(parse_policies("mps-1")->front().degree, 1);
}

// Issue 4's three orderings, on the benchmark job files in bench/policies
// with their H200 hints (no store): the same claims the GPU benchmarks check.
class PolicyOrderings : public ::testing::Test {
 protected:
  std::map<std::string, PolicyResult> simulate_file(const std::string& name) {
    const char* source = std::getenv("COLO_SOURCE_DIR");
    EXPECT_NE(source, nullptr) << "run through ctest (COLO_SOURCE_DIR)";
    Result<JobFile> file =
        load_job_file(std::string(source ? source : ".") + "/bench/policies/" + name);
    EXPECT_TRUE(file.ok()) << file.error().message();
    SimJobSet set = make_sim_jobs(*file, known_profiles({}, file->jobs, "H200", false));
    EXPECT_TRUE(set.assumptions.empty()) << set.assumptions.front();
    std::map<std::string, PolicyResult> out;
    for (const PolicySpec& p : standard_policies(static_cast<int>(set.jobs.size())))
      out[p.name] = simulate_policy(set.jobs, p, h200());
    for (const auto& [policy, r] : out) EXPECT_EQ(r.jobs_failed, 0) << policy;
    return out;
  }
  static double throughput(const PolicyResult& r) {
    return 1.0 / static_cast<double>(r.makespan_ms);
  }
};

TEST_F(PolicyOrderings, SweepAutoIsNearTheBestFixedDegreeAndFiveTimesExclusive) {
  auto r = simulate_file("sweep-resnet26.toml");
  double best_fixed = 0;
  for (int k = 2; k <= 14; ++k)
    best_fixed = std::max(best_fixed, throughput(r.at(fmt::format("mps-{}", k))));
  EXPECT_GE(throughput(r.at("auto")), 0.9 * best_fixed);
  EXPECT_GE(throughput(r.at("auto")), 5.0 * throughput(r.at("exclusive")));
}

TEST_F(PolicyOrderings, SaturatedJobsAutoIsNotSlowerThanExclusiveAndBeatsNaive) {
  auto r = simulate_file("cait4.toml");
  EXPECT_LE(r.at("auto").makespan_ms, r.at("exclusive").makespan_ms);
  EXPECT_LT(r.at("auto").makespan_ms, r.at("naive-all").makespan_ms);
}

// Issue 4 asks for auto at most 0.9x the best simple policy here. It is not
// met: all six fit in memory and together use about twice the GPU's SM
// capacity, so auto starts them all at once, as mps-all does (39.5 s each).
// No order does much better: the work phase is bounded by the jobs' summed
// solo SM-seconds over the GPU's capacity (about 29 s of the 39.5 s here),
// and every start-up already overlaps it. What holds is asserted; the gap is
// in the note.
TEST_F(PolicyOrderings, MixedQueueAutoBeatsExclusiveAndNaiveButNotMpsAll) {
  auto r = simulate_file("mixed.toml");
  EXPECT_LT(r.at("auto").makespan_ms, r.at("exclusive").makespan_ms / 2);
  EXPECT_LT(r.at("auto").makespan_ms, r.at("naive-all").makespan_ms);
  EXPECT_LE(r.at("auto").makespan_ms, r.at("mps-all").makespan_ms);
  EXPECT_GT(static_cast<double>(r.at("auto").makespan_ms),
            0.9 * static_cast<double>(r.at("mps-all").makespan_ms))
      << "the 0.9x criterion is met now: make this test assert it";
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// Issue 56's heavy case (main 84% SM, protected at 0.9, beside three
// opportunistic 63% SM jobs), and a light main (10% SM): per policy, the
// protected job's reported speed and whether it keeps its floor.
struct ProtectedCase {
  std::string policy;
  double main_sm;
  bool floor_held;
  std::optional<double> speed;  // when given, the reported speed (within 0.01)
  bool stops = false;           // the closed loop stopped a neighbour for its floor
};

class ProtectedSpeed : public testing::TestWithParam<ProtectedCase> {};

TEST_P(ProtectedSpeed, IsReportedAndHeldByTheClasses) {
  const ProtectedCase& c = GetParam();
  std::vector<SimJob> jobs = {job("main", "main", 12, c.main_sm, 60'000)};
  jobs[0].qos = QosClass::kProtected;
  jobs[0].min_speed = 0.9;
  for (int i = 0; i < 3; ++i) {
    jobs.push_back(job(fmt::format("light#{}", i + 1), "light", 3, 63, 30'000));
    jobs.back().qos = QosClass::kOpportunistic;
  }
  PolicyResult r = run(jobs, c.policy, h200());
  EXPECT_EQ(r.jobs_ok, 4) << c.policy;
  ASSERT_EQ(r.protected_speeds.size(), 1u) << c.policy;
  const PolicyResult::ProtectedSpeed& p = r.protected_speeds.front();
  EXPECT_EQ(p.job, "main");
  EXPECT_EQ(p.min_speed, 0.9);
  EXPECT_EQ(p.speed + 1e-9 >= p.min_speed, c.floor_held) << c.policy << ": " << p.speed;
  if (c.speed) EXPECT_NEAR(p.speed, *c.speed, 0.01) << c.policy;
  EXPECT_EQ(p.floor_stops > 0, c.stops) << c.policy << ": " << p.floor_stops;
  EXPECT_EQ(r.floor_stops, p.floor_stops) << c.policy;
}

INSTANTIATE_TEST_SUITE_P(Table, ProtectedSpeed,
                         testing::Values(
                             // Alone: its solo speed.
                             ProtectedCase{"exclusive", 84, true, 1.0},
                             // The fixed policies apply the classes too: one capped neighbour.
                             ProtectedCase{"mps-all", 84, true, std::nullopt},
                             // Naive sharing has no lever: its one opportunistic neighbour slows it
                             // below its floor, and the closed loop stops it (the fixed policy
                             // places it again: it knows no combinations).
                             ProtectedCase{"naive-all", 84, false, std::nullopt, true},
                             // One capped neighbour at a time keeps it at its floor.
                             ProtectedCase{"auto", 84, true, std::nullopt},
                             ProtectedCase{"auto-warm", 84, true, std::nullopt},
                             // A light main keeps its floor beside all three.
                             ProtectedCase{"auto-warm", 10, true, std::nullopt}),
                         [](const testing::TestParamInfo<ProtectedCase>& info) {
                           std::string name =
                               info.param.policy + "_sm" + std::to_string(int(info.param.main_sm));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(Simulator, JobsWithoutClassesReportNoProtectedSpeed) {
  std::vector<SimJob> jobs = {job("a", "a", 1, 50, 10'000), job("b", "a", 1, 50, 10'000)};
  for (const char* policy : {"exclusive", "mps-all", "auto"})
    EXPECT_TRUE(run(jobs, policy, h200()).protected_speeds.empty()) << policy;
}

// The protected job's GPU runs at qos_model's rates: beside one opportunistic
// neighbour capped at 20% of the threads, below normal priority, it keeps
// predict_qos()'s speed; the neighbour gets the harvest.
TEST(Simulator, AProtectedJobsGpuRunsAtTheQosModelsRates) {
  std::vector<SimJob> jobs = {job("main", "main", 12, 84, 60'000),
                              job("light", "light", 3, 63, 600'000)};
  jobs[0].qos = QosClass::kProtected;
  jobs[1].qos = QosClass::kOpportunistic;
  PolicyResult r = run(jobs, "auto-warm", h200());
  ASSERT_EQ(r.protected_speeds.size(), 1u);
  const OpportunisticChoice choice = choose_opportunistic_levers(0.84, 0.9);
  EXPECT_NEAR(r.protected_speeds[0].speed, choice.predicted.protected_speed, 0.005);
}

}  // namespace
}  // namespace colo
