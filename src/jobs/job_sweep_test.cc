#include "jobs/job_sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "jobs/job_signature.h"

namespace colo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr const char* kSweepDir = "/data/exp";

GridParam listed(const std::string& name, std::vector<std::string> values, int line = 0) {
  GridParam p;
  p.name = name;
  p.values = std::move(values);
  p.line = line;
  return p;
}

GridParam drawn(const std::string& name, GridParam::Draw draw, double lo, double hi, int line = 0) {
  GridParam p;
  p.name = name;
  p.draw = draw;
  p.lo = lo;
  p.hi = hi;
  p.line = line;
  return p;
}

JobBlock sweep_block(const std::string& name, std::vector<std::string> command,
                     std::vector<GridParam> grid = {}) {
  JobBlock block;
  block.name = name;
  block.line = 2;
  block.command = {std::move(command), 3};
  block.grid = std::move(grid);
  return block;
}

std::vector<JobSpec> expanded(const JobBlock& block) {
  std::vector<JobSpec> jobs;
  expand(block, "f.toml", kSweepDir, jobs);
  return jobs;
}

std::vector<std::string> names_of(const std::vector<JobSpec>& jobs) {
  std::vector<std::string> out;
  for (const JobSpec& job : jobs) out.push_back(job.name);
  return out;
}

TEST(JobSweep, AGridExpandsToItsProductFirstParameterSlowestTimesRepeat) {
  JobBlock block =
      sweep_block("resnet", {"python3", "train.py", "--lr", "{lr}", "--model", "{model}"},
                  {listed("lr", {"0.1", "0.01"}), listed("model", {"r26", "r50"})});
  block.repeat = 2;
  std::vector<JobSpec> jobs = expanded(block);
  EXPECT_THAT(names_of(jobs),
              ElementsAre("resnet[lr=0.1,model=r26]#1", "resnet[lr=0.1,model=r26]#2",
                          "resnet[lr=0.1,model=r50]#1", "resnet[lr=0.1,model=r50]#2",
                          "resnet[lr=0.01,model=r26]#1", "resnet[lr=0.01,model=r26]#2",
                          "resnet[lr=0.01,model=r50]#1", "resnet[lr=0.01,model=r50]#2"));
  const JobSpec& last = jobs.back();
  EXPECT_THAT(last.command, ElementsAre("python3", "train.py", "--lr", "0.01", "--model", "r50"));
  EXPECT_THAT(last.params, ElementsAre(Pair("lr", "0.01"), Pair("model", "r50")));
  EXPECT_EQ(last.repeat_index, 2);
  EXPECT_EQ(last.group, "resnet");
  EXPECT_EQ(last.source, "f.toml:2");
  EXPECT_EQ(last.working_dir, kSweepDir);
}

// Count: what expand() makes, and what expanded_count() says of it.
struct CountCase {
  const char* label;
  JobBlock block;
  int64_t count;
};

TEST(JobSweep, TheCountIsRepeatTimesThePointsOrTheSamples) {
  JobBlock plain = sweep_block("p", {"x"});
  JobBlock repeated = plain;
  repeated.repeat = 3;
  JobBlock grid = sweep_block("g", {"x"},
                              {listed("a", {"1", "2", "3", "4"}), listed("b", {"true", "false"}),
                               listed("c", {"x", "y", "z", "w", "v"})});
  grid.repeat = 3;
  JobBlock search = sweep_block("s", {"x"}, {drawn("lr", GridParam::Draw::kUniform, 0, 1)});
  search.search = RandomSearch{7, 1, 4};
  search.repeat = 2;
  const std::vector<CountCase> cases = {
      {"one job", plain, 1},
      {"repeated", repeated, 3},
      {"a grid", grid, int64_t{4} * 2 * 5 * 3},
      {"a search", search, 14},
  };
  for (const CountCase& c : cases) {
    EXPECT_EQ(expanded_count(c.block), c.count) << c.label;
    EXPECT_EQ(static_cast<int64_t>(expanded(c.block).size()), c.count) << c.label;
  }
  // Past the bound it stops multiplying, before any overflow.
  JobBlock huge = sweep_block("h", {"x"});
  for (const char* name : {"p", "q", "r", "s", "t", "u", "v", "w"}) {
    huge.grid.push_back(listed(name, std::vector<std::string>(1000, "1")));
  }
  EXPECT_GT(expanded_count(huge), kMaxExpandedJobs);
  EXPECT_LE(expanded_count(huge), kMaxExpandedJobs * 1000);
}

TEST(JobSweep, ValuesReachTheCommandWorkdirAndEnvAndGpusAndPortAreBuiltIn) {
  JobBlock block = sweep_block("f", {"echo", "{lr}", "{{lr}}", "{gpus}", "{port}"},
                               {listed("lr", {"1.0"}), listed("s", {"x y"})});
  block.settings.workdir = Sourced<std::string>{"runs/{s}/../{s}/", 5};
  block.settings.env["LR"] = {"lr={lr}", 6};
  block.settings.env["PORT"] = {"{port}", 6};
  block.settings.gpus = 2;
  std::vector<JobSpec> jobs = expanded(block);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_THAT(jobs[0].command, ElementsAre("echo", "1.0", "{lr}", "2", "{port}"));
  EXPECT_EQ(jobs[0].working_dir, "/data/exp/runs/x y");
  EXPECT_THAT(jobs[0].env, ElementsAre(Pair("LR", "lr=1.0"), Pair("PORT", "{port}")));
  EXPECT_EQ(jobs[0].gpus, 2);
  EXPECT_EQ(jobs[0].name, "f[lr=1.0,s=x y]");
  EXPECT_EQ(jobs[0].repeat_index, 1);
}

TEST(JobSweep, OneBlocksInstancesShareAFamilyThatIsItsTemplate) {
  JobBlock sweep = sweep_block("sweep", {"train", "--lr", "{lr}"}, {listed("lr", {"0.1", "0.2"})});
  sweep.resource_params = Sourced<std::vector<std::string>>{{"lr"}, 4};
  std::vector<JobSpec> jobs = expanded(sweep);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].family, jobs[1].family);
  EXPECT_NE(jobs[0].family, job_signature(jobs[0]));
  EXPECT_EQ(jobs[0].resource_params, std::vector<std::string>{"lr"});
  // Without a placeholder the family is the job's own signature, and a
  // literal text that reads like a placeholder is not one.
  std::vector<JobSpec> literal = expanded(sweep_block("literal", {"train", "--lr", "{{lr}}"}));
  ASSERT_EQ(literal.size(), 1u);
  EXPECT_EQ(literal[0].family, job_signature(literal[0]));
  EXPECT_NE(literal[0].family, jobs[0].family);
  EXPECT_FALSE(literal[0].resource_params);
}

// Settings the block does not set take their defaults; a sweep's points and
// repeats are preemptible unless the block says otherwise.
TEST(JobSweep, UnsetSettingsTakeTheirDefaults) {
  struct Case {
    const char* label;
    JobBlock block;
    bool preemptible;
  };
  JobBlock one = sweep_block("one", {"x"});
  JobBlock repeated = one;
  repeated.repeat = 2;
  JobBlock grid = sweep_block("grid", {"x", "{lr}"}, {listed("lr", {"1"})});
  JobBlock kept = repeated;
  kept.settings.preemptible = false;
  JobBlock opted = one;
  opted.settings.preemptible = true;
  for (const Case& c : std::vector<Case>{{"one", one, false},
                                         {"repeated", repeated, true},
                                         {"grid", grid, true},
                                         {"kept", kept, false},
                                         {"opted", opted, true}}) {
    for (const JobSpec& job : expanded(c.block)) {
      EXPECT_EQ(job.preemptible, c.preemptible) << c.label;
      EXPECT_EQ(job.restart, RestartPolicy::kOnFailure) << c.label;
      EXPECT_EQ(job.priority, 0) << c.label;
      EXPECT_EQ(job.gpus, 1) << c.label;
      EXPECT_FALSE(job.gpu_memory_bytes) << c.label;
      EXPECT_FALSE(job.dataset) << c.label;
    }
  }
}

TEST(JobSweep, ARandomSearchDrawsTheSamePointsForTheSameSeedEachOnce) {
  JobBlock block = sweep_block(
      "t", {"train", "{lr}", "{opt}"},
      {drawn("lr", GridParam::Draw::kLogUniform, 1e-4, 0.1), listed("opt", {"sgd", "adam"})});
  block.search = RandomSearch{40, 7, 4};
  std::vector<JobSpec> jobs = expanded(block);
  ASSERT_EQ(jobs.size(), 40u);
  std::set<std::string> names, opts;
  int below_1e3 = 0;
  for (const JobSpec& job : jobs) {
    names.insert(job.name);
    opts.insert(job.params.at("opt"));
    const double lr = std::stod(job.params.at("lr"));
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 0.1);
    below_1e3 += lr < 1e-3;
    EXPECT_EQ(job.command[1], job.params.at("lr"));
    EXPECT_EQ(job.family, jobs[0].family);
  }
  EXPECT_EQ(names.size(), 40u) << "every instance named apart";
  EXPECT_THAT(opts, ElementsAre("adam", "sgd"));
  EXPECT_GE(below_1e3, 5) << "log-uniform over three decades: about a third below 1e-3";
  EXPECT_EQ(names_of(expanded(block)), names_of(jobs));
  block.search->seed = 8;
  EXPECT_NE(expanded(block)[0].name, jobs[0].name);
  // A space of 2 x 3 points cannot give 10 samples apart: it gives its 6.
  JobBlock small =
      sweep_block("s", {"x"}, {listed("opt", {"sgd", "adam"}), listed("bs", {"32", "64", "128"})});
  small.search = RandomSearch{10, 0, 4};
  EXPECT_EQ(expanded(small).size(), 6u);
}

struct ProblemCase {
  const char* label;
  JobBlock block;
  std::vector<std::string> problems;  // "line: substring", in order
};

TEST(JobSweep, CheckBlockFindsWhatNoSingleKeyShows) {
  JobBlock ok = sweep_block("ok", {"x", "{lr}", "{gpus}", "{port}", "{{w}}"},
                            {listed("lr", {"1"}), listed("batch", {"2"})});
  ok.settings.workdir = Sourced<std::string>{"runs/{lr}", 5};
  ok.settings.env["B"] = {"{batch}", 6};
  ok.resource_params = Sourced<std::vector<std::string>>{{"batch", "batch^2"}, 7};

  JobBlock search_no_grid = sweep_block("a", {"x"});
  search_no_grid.search = RandomSearch{4, 0, 9};
  JobBlock drawn_no_search =
      sweep_block("a", {"x"}, {drawn("lr", GridParam::Draw::kUniform, 0.1, 0.2, 8)});
  JobBlock reserved = sweep_block("a", {"x", "{port}"}, {listed("port", {"1", "2"})});
  JobBlock unknown = sweep_block("a", {"x", "{lrr}"}, {listed("lr", {"1"})});
  unknown.settings.workdir = Sourced<std::string>{"{w}", 5};
  unknown.settings.env["A"] = {"{seed}", 6};
  JobBlock bad_resource = sweep_block("a", {"x"}, {listed("px", {"1"})});
  bad_resource.resource_params = Sourced<std::vector<std::string>>{{"bach", "px^4"}, 7};

  const std::vector<ProblemCase> cases = {
      {"ok", ok, {}},
      {"search without a grid", search_no_grid, {"9: search draws the grid's parameters"}},
      {"distribution without a search",
       drawn_no_search,
       {"8: grid.lr is a distribution, which only a random search draws from"}},
      {"reserved name", reserved, {"2: grid parameter 'port' is reserved"}},
      {"unknown placeholders",
       unknown,
       {"3: command: unknown placeholder '{lrr}' (did you mean 'lr'?)",
        "5: workdir: unknown placeholder '{w}'", "6: env.A: unknown placeholder '{seed}'"}},
      {"resource params",
       bad_resource,
       {"7: resource_params: 'bach' names no grid parameter",
        "7: resource_params: 'px^4': the power after '^' must be 1, 2 or 3"}},
  };
  for (const ProblemCase& c : cases) {
    std::vector<std::string> found;
    for (const BlockProblem& p : check_block(c.block)) {
      found.push_back(std::to_string(p.line) + ": " + p.message);
    }
    ASSERT_EQ(found.size(), c.problems.size()) << c.label;
    for (size_t i = 0; i < found.size(); ++i) {
      EXPECT_THAT(found[i], HasSubstr(c.problems[i])) << c.label;
    }
  }
}

struct ProfileCheckCase {
  std::string name;
  ProfileSpec profile;
  std::optional<std::string> problem;  // a substring of it
};

class ProfileChecks : public testing::TestWithParam<ProfileCheckCase> {};

TEST_P(ProfileChecks, FindWhatNoSingleKeyShows) {
  const ProfileCheckCase& c = GetParam();
  std::optional<std::string> problem = check_profile(c.profile);
  ASSERT_EQ(problem.has_value(), c.problem.has_value()) << problem.value_or("");
  if (problem) {
    EXPECT_THAT(*problem, HasSubstr(*c.problem));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ProfileChecks,
    testing::Values(
        ProfileCheckCase{"torch_after_epochs_for_steps", {"torch", 1, {}, 20, {}}, std::nullopt},
        ProfileCheckCase{
            "nsys_after_a_time_for_a_time", {"nsys", {}, 30'000, {}, 5'000}, std::nullopt},
        ProfileCheckCase{"no_tool", {"", 1, {}, 20, {}}, "needs its tool"},
        ProfileCheckCase{"after_epoch_and_after",
                         {"torch", 1, 30'000, 20, {}},
                         "after_epoch or after, not both"},
        ProfileCheckCase{
            "steps_and_duration", {"torch", 1, {}, 20, 5'000}, "steps or duration, not both"},
        ProfileCheckCase{
            "after_epoch_needs_torch", {"ncu", 1, {}, 20, {}}, "ncu starts after a time"}),
    [](const auto& info) { return info.param.name; });

TEST(JobSweep, CheckBlocksCountsTheFileThenNamesMissingDatasets) {
  JobBlock big = sweep_block("big", {"x"});
  big.repeat = kMaxExpandedJobs - 1;
  JobBlock reader = sweep_block("reader", {"x"});
  reader.settings.dataset = Sourced<std::string>{"imagenett", 7};
  JobBlock plain = sweep_block("plain", {"x"});

  EXPECT_THAT(check_blocks({big, reader}, {"imagenett"}), IsEmpty()) << "at the limit";
  std::vector<BlockProblem> over = check_blocks({big, reader, plain}, {});
  ASSERT_EQ(over.size(), 1u) << "past the limit, only the block that passes it";
  EXPECT_EQ(over[0].line, 2);
  EXPECT_THAT(over[0].message, HasSubstr("job 'plain': the file expands to more than 100000"));
  std::vector<BlockProblem> missing = check_blocks({plain, reader}, {"imagenette"});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].line, 7);
  EXPECT_THAT(missing[0].message,
              HasSubstr("job 'reader': dataset 'imagenett' has no [data.imagenett] table"));
  EXPECT_THAT(missing[0].message, HasSubstr("imagenette"));
}

TEST(JobSweep, ExpandBlocksSharesTheFilesSettingsAndFindsNamesUsedTwice) {
  FileWide shared;
  shared.objective = "accuracy";
  shared.lower_is_better = {{"accuracy", false}};
  shared.fail_fast = false;
  JobBlock a = sweep_block("a", {"x", "{lr}"}, {listed("lr", {"1", "2"})});
  JobBlock again = sweep_block("a[lr=2]", {"y"});
  again.line = 9;
  std::vector<JobSpec> jobs;
  std::vector<BlockProblem> problems = expand_blocks({a, again}, "f.toml", kSweepDir, shared, jobs);
  EXPECT_THAT(names_of(jobs), ElementsAre("a[lr=1]", "a[lr=2]", "a[lr=2]"));
  for (const JobSpec& job : jobs) {
    EXPECT_EQ(job.objective, "accuracy");
    EXPECT_THAT(job.lower_is_better, ElementsAre(Pair("accuracy", false)));
    EXPECT_FALSE(job.fail_fast);
  }
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].line, 9);
  EXPECT_THAT(problems[0].message, HasSubstr("job name 'a[lr=2]' is used more than once"));
}

// expand_blocks() builds each point's spec once and moves it in as its last
// repeat (the others are copies): every job is whole, the names used twice
// are found in job order with the first one's source, whatever the blocks'
// sizes.
struct ExpandCase {
  std::string name;
  std::vector<JobBlock> blocks;
  std::vector<std::string> names;
  std::vector<std::string> commands;  // each job's command, its arguments joined by ' '
  std::vector<std::pair<int, std::string>> problems;  // line, the message's "also at" source
};

JobBlock repeated(JobBlock block, int64_t repeat, int line) {
  block.repeat = repeat;
  block.line = line;
  return block;
}

class ExpandBlocks : public ::testing::TestWithParam<ExpandCase> {};

TEST_P(ExpandBlocks, EveryJobWholeAndNamesUsedTwiceFound) {
  const ExpandCase& c = GetParam();
  std::vector<JobSpec> jobs;
  std::vector<BlockProblem> problems = expand_blocks(c.blocks, "f.toml", kSweepDir, {}, jobs);
  EXPECT_EQ(names_of(jobs), c.names);
  std::vector<std::string> commands;
  for (const JobSpec& job : jobs) {
    std::string joined;
    for (const std::string& arg : job.command) joined += (joined.empty() ? "" : " ") + arg;
    commands.push_back(joined);
    EXPECT_EQ(job.working_dir, kSweepDir) << job.name;
    EXPECT_FALSE(job.family.empty()) << job.name;
    EXPECT_EQ(job.source.substr(0, 7), "f.toml:") << job.name;
  }
  EXPECT_EQ(commands, c.commands);
  ASSERT_EQ(problems.size(), c.problems.size());
  for (size_t i = 0; i < problems.size(); ++i) {
    EXPECT_EQ(problems[i].line, c.problems[i].first);
    EXPECT_THAT(problems[i].message, HasSubstr("(also at " + c.problems[i].second + ")"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ExpandBlocks,
    ::testing::Values(
        ExpandCase{"nothing", {}, {}, {}, {}},
        ExpandCase{"a_grid_each_point_once",
                   {sweep_block("g", {"x", "{lr}", "{gpus}"}, {listed("lr", {"1", "2", "3"})})},
                   {"g[lr=1]", "g[lr=2]", "g[lr=3]"},
                   {"x 1 1", "x 2 1", "x 3 1"},
                   {}},
        ExpandCase{"a_grid_repeated_every_copy_whole",
                   {repeated(sweep_block("g", {"x", "{lr}"}, {listed("lr", {"1", "2"})}), 3, 4)},
                   {"g[lr=1]#1", "g[lr=1]#2", "g[lr=1]#3", "g[lr=2]#1", "g[lr=2]#2", "g[lr=2]#3"},
                   {"x 1", "x 1", "x 1", "x 2", "x 2", "x 2"},
                   {}},
        ExpandCase{
            "two_grids_values_not_carried_over",
            {sweep_block("a", {"x", "{lr}-{seed}"},
                         {listed("lr", {"1", "2"}), listed("seed", {"7", "8"})}),
             repeated(sweep_block("b", {"y", "{bs}"}, {listed("bs", {"16"})}), 1, 6)},
            {"a[lr=1,seed=7]", "a[lr=1,seed=8]", "a[lr=2,seed=7]", "a[lr=2,seed=8]", "b[bs=16]"},
            {"x 1-7", "x 1-8", "x 2-7", "x 2-8", "y 16"},
            {}},
        ExpandCase{
            "names_used_twice_across_three_blocks",
            {repeated(sweep_block("a", {"x"}), 1, 2), repeated(sweep_block("b", {"y"}), 1, 5),
             repeated(sweep_block("a", {"z"}), 1, 8), repeated(sweep_block("b", {"w"}), 1, 9),
             repeated(sweep_block("a", {"v"}), 1, 11)},
            {"a", "b", "a", "b", "a"},
            {"x", "y", "z", "w", "v"},
            {{8, "f.toml:2"}, {9, "f.toml:5"}, {11, "f.toml:2"}}}),
    [](const ::testing::TestParamInfo<ExpandCase>& info) { return info.param.name; });

TEST(JobSweep, MergeTakesWhatTheBlockSetsAndEnvKeyByKey) {
  JobSettings defaults;
  defaults.workdir = Sourced<std::string>{"d", 1};
  defaults.env["SHARED"] = {"d", 1};
  defaults.env["ONLY_DEFAULT"] = {"d", 1};
  defaults.gpu_memory_bytes = 4;
  defaults.priority = -5;
  JobSettings own;
  own.env["SHARED"] = {"job", 9};
  own.priority = 20;
  own.stall_timeout_ms = 0;
  JobSettings merged = JobSettings::merge(defaults, own);
  EXPECT_EQ(merged.workdir->value, "d");
  EXPECT_EQ(merged.env.at("SHARED").value, "job");
  EXPECT_EQ(merged.env.at("SHARED").line, 9);
  EXPECT_EQ(merged.env.at("ONLY_DEFAULT").value, "d");
  EXPECT_EQ(merged.gpu_memory_bytes, 4u);
  EXPECT_EQ(merged.priority, 20);
  EXPECT_EQ(merged.stall_timeout_ms, 0) << "\"off\" is set, not absent";
  EXPECT_THAT(JobSettings::merge({}, {}).env, IsEmpty());
}

TEST(JobSweep, NormalDirIsAbsoluteNormalAndHasNoTrailingSlash) {
  const std::vector<std::vector<std::string>> cases = {
      // path, base, expected
      {"sub", "/data/exp", "/data/exp/sub"},
      {"../other/./dir/", "/data/exp/sub", "/data/exp/other/dir"},
      {"/abs/dir/", "/data/exp", "/abs/dir"},
      {".", "/data/exp/", "/data/exp"},
      {"/", "/data", "/"},
  };
  for (const auto& c : cases) EXPECT_EQ(normal_dir(c[0], c[1]), c[2]) << c[0];
}

}  // namespace
}  // namespace colo
