#include "jobs/job_file.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "jobs/job_signature.h"
#include "jobs/job_spec_json.h"

namespace colo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr const char* kBase = "/data/exp";

JobFile parse_ok(const std::string& text) {
  Result<JobFile> r = parse_job_file(text, "f.toml", kBase);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? std::move(r).value() : JobFile{};
}

std::vector<std::string> names(const JobFile& file) {
  std::vector<std::string> out;
  for (const JobSpec& job : file.jobs) out.push_back(job.name);
  return out;
}

TEST(JobFile, MinimalJobGetsDefaults) {
  JobFile file = parse_ok(R"(
[[job]]
name = "a"
command = ["python3", "train.py"]
)");
  ASSERT_EQ(file.jobs.size(), 1u);
  const JobSpec& job = file.jobs[0];
  EXPECT_EQ(job.name, "a");
  EXPECT_EQ(job.group, "a");
  EXPECT_THAT(job.command, ElementsAre("python3", "train.py"));
  EXPECT_EQ(job.working_dir, kBase);
  EXPECT_TRUE(job.env.empty());
  EXPECT_FALSE(job.gpu_memory_bytes);
  EXPECT_FALSE(job.sm_share_pct);
  EXPECT_FALSE(job.memory_limit_bytes);
  EXPECT_FALSE(job.epoch_regex);
  EXPECT_TRUE(job.params.empty());
  EXPECT_EQ(job.repeat_index, 1);
  EXPECT_EQ(job.source, "f.toml:2");
  EXPECT_EQ(file.path, "f.toml");
  EXPECT_FALSE(file.max_jobs_per_gpu);
  EXPECT_FALSE(file.mechanism);
}

TEST(JobFile, FullExampleWithRunDefaultsAndOverrides) {
  JobFile file = parse_ok(R"(
[run]
max_per_gpu = 7
mechanism = "mps"

[defaults]
workdir = "bench"
env = { PYTHONUNBUFFERED = "1", SHARED = "d" }
gpu_memory = "4GiB"
sm_share = 50
memory_limit = "10GiB"
epoch_regex = "Epoch (\\d+) done"

[[job]]
name = "one"
command = ["python3", "train.py"]
env = { SHARED = "job", THREADS = 4 }
gpu_memory = 1048576
workdir = "/abs/dir/"

[[job]]
name = "two"
command = ["sh"]
sm_share = 100
)");
  EXPECT_EQ(file.max_jobs_per_gpu, 7);
  EXPECT_EQ(file.mechanism, "mps");
  ASSERT_EQ(file.jobs.size(), 2u);
  const JobSpec& one = file.jobs[0];
  EXPECT_THAT(one.env, ElementsAre(Pair("PYTHONUNBUFFERED", "1"), Pair("SHARED", "job"),
                                   Pair("THREADS", "4")));
  EXPECT_EQ(one.gpu_memory_bytes, 1048576u);
  EXPECT_EQ(one.sm_share_pct, 50);
  EXPECT_EQ(one.memory_limit_bytes, 10ull << 30);
  EXPECT_EQ(one.epoch_regex, "Epoch (\\d+) done");
  EXPECT_FALSE(one.step_regex);
  EXPECT_FALSE(one.epoch_samples);
  EXPECT_EQ(one.working_dir, "/abs/dir");
  const JobSpec& two = file.jobs[1];
  EXPECT_EQ(two.working_dir, "/data/exp/bench");
  EXPECT_EQ(two.gpu_memory_bytes, 4ull << 30);
  EXPECT_EQ(two.sm_share_pct, 100);
  EXPECT_THAT(two.env, ElementsAre(Pair("PYTHONUNBUFFERED", "1"), Pair("SHARED", "d")));
  EXPECT_EQ(two.source, "f.toml:21");
}

TEST(JobFile, GridAndRepeatExpandInOrderWithNames) {
  JobFile file = parse_ok(R"(
[[job]]
name = "resnet"
command = ["python3", "train.py", "--lr", "{lr}", "--model", "{model}"]
repeat = 2
grid = { model = ["r26", "r50"], lr = [0.1, 0.01] }
)");
  EXPECT_THAT(names(file),
              ElementsAre("resnet[lr=0.1,model=r26]#1", "resnet[lr=0.1,model=r26]#2",
                          "resnet[lr=0.1,model=r50]#1", "resnet[lr=0.1,model=r50]#2",
                          "resnet[lr=0.01,model=r26]#1", "resnet[lr=0.01,model=r26]#2",
                          "resnet[lr=0.01,model=r50]#1", "resnet[lr=0.01,model=r50]#2"));
  const JobSpec& last = file.jobs.back();
  EXPECT_THAT(last.command, ElementsAre("python3", "train.py", "--lr", "0.01", "--model", "r50"));
  EXPECT_THAT(last.params, ElementsAre(Pair("lr", "0.01"), Pair("model", "r50")));
  EXPECT_EQ(last.repeat_index, 2);
  EXPECT_EQ(last.group, "resnet");
}

TEST(JobFile, SweepCountIsTheProductOfGridSizesTimesRepeat) {
  JobFile file = parse_ok(R"(
[[job]]
name = "s"
command = ["x", "{a}{b}{c}"]
repeat = 3
grid = { a = [1, 2, 3, 4], b = [true, false], c = ["x", "y", "z", "w", "v"] }

[[job]]
name = "plain"
command = ["y"]
)");
  EXPECT_EQ(file.jobs.size(), 4u * 2 * 5 * 3 + 1);
  EXPECT_EQ(file.jobs.back().name, "plain");
}

TEST(JobFile, ValueFormattingAndSubstitutionEverywhere) {
  JobFile file = parse_ok(R"(
[defaults]
env = { FROM_DEFAULTS = "lr={lr}" }

[[job]]
name = "f"
command = ["echo", "{lr}", "{{lr}}", "a}}b", "{n}-{flag}-{s}", "{big}", '{"e": {lr}}', "awk '{print $1}'", "{lr"]
workdir = "runs/{s}"
env = { LR = "{lr}" }
grid = { lr = [1.0], n = [-3], flag = [true], s = ["x y"], big = [1e20] }
)");
  ASSERT_EQ(file.jobs.size(), 1u);
  const JobSpec& job = file.jobs[0];
  EXPECT_THAT(job.command, ElementsAre("echo", "1.0", "{lr}", "a}}b", "-3-true-x y", "1e+20",
                                       "{\"e\": 1.0}", "awk '{print $1}'", "{lr"));
  EXPECT_EQ(job.working_dir, "/data/exp/runs/x y");
  EXPECT_EQ(job.env.at("LR"), "1.0");
  EXPECT_EQ(job.env.at("FROM_DEFAULTS"), "lr=1.0");
  EXPECT_EQ(job.name, "f[big=1e+20,flag=true,lr=1.0,n=-3,s=x y]");
}

TEST(JobFile, RelativeBaseDirAndDotDotAreNormalised) {
  Result<JobFile> r = parse_job_file(R"(
[[job]]
name = "a"
command = ["x"]
workdir = "../other/./dir"
)",
                                     "f.toml", "/data/exp/sub");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs[0].working_dir, "/data/exp/other/dir");
}

// Each bad input: the text, and substrings its error message must contain.
struct BadCase {
  const char* label;
  const char* text;
  std::vector<std::string> expected;
};

class BadJobFile : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadJobFile, ErrorNamesFileLineAndKey) {
  const BadCase& c = GetParam();
  Result<JobFile> r = parse_job_file(c.text, "bad.toml", kBase);
  ASSERT_FALSE(r.ok()) << c.label;
  for (const std::string& part : c.expected) {
    EXPECT_THAT(r.error().message(), HasSubstr(part)) << c.label;
  }
}

constexpr const char* kJobHead = "[[job]]\nname = \"a\"\ncommand = [\"x\"]\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, BadJobFile,
    ::testing::Values(
        BadCase{"empty", "", {"bad.toml is empty", "[[job]]", "docs/job-file.md"}},
        BadCase{"whitespace", "  \n\n\t\n", {"bad.toml is empty"}},
        BadCase{"only comments", "# nothing\n", {"bad.toml has no settings", "[[job]]"}},
        BadCase{
            "no jobs", "[run]\nmax_per_gpu = 2\n", {"bad.toml: no [[job]]", "docs/job-file.md"}},
        BadCase{"syntax",
                "[[job]]\nname = \"a\ncommand = [\"x\"]\n",
                {"bad.toml:2:", "TOML syntax error"}},
        BadCase{"syntax bad value",
                "[[job]]\nname = \"a\"\nrepeat = two\n",
                {"bad.toml:3:", "TOML syntax error"}},
        BadCase{"unknown job key",
                "[[job]]\nname = \"a\"\ncomand = [\"x\"]\n",
                {"bad.toml:3:", "job 'a'", "unknown key 'comand'", "did you mean 'command'?",
                 "bad.toml:1:", "missing key 'command'"}},
        BadCase{"unknown defaults key",
                "[defaults]\nwrkdir = \".\"\n[[job]]\nname=\"a\"\ncommand=[\"x\"]\n",
                {"bad.toml:2:", "[defaults]", "unknown key 'wrkdir'", "did you mean 'workdir'?"}},
        BadCase{"job key in defaults",
                "[defaults]\ncommand = [\"x\"]\n[[job]]\nname=\"a\"\ncommand=[\"x\"]\n",
                {"bad.toml:2:", "key 'command' cannot have a default"}},
        BadCase{
            "unknown run key",
            "[run]\nmax_per_gpus = 2\n[[job]]\nname=\"a\"\ncommand=[\"x\"]\n",
            {"bad.toml:2:", "[run]", "unknown key 'max_per_gpus'", "did you mean 'max_per_gpu'?"}},
        BadCase{"unknown top-level",
                "jobs = 1\n[[job]]\nname=\"a\"\ncommand=[\"x\"]\n",
                {"bad.toml:1:", "unknown top-level key 'jobs'", "did you mean 'job'?"}},
        BadCase{"job as table",
                "[job]\nname = \"a\"\ncommand = [\"x\"]\n",
                {"bad.toml:1:", "write [[job]], not [job]"}},
        BadCase{"missing name",
                "[[job]]\ncommand = [\"x\"]\n",
                {"bad.toml:1:", "job #1", "missing key 'name'"}},
        BadCase{"bad name",
                "[[job]]\nname = \"a b\"\ncommand = [\"x\"]\n",
                {"bad.toml:2:", "key 'name'", "got a string \"a b\""}},
        BadCase{"name not string",
                "[[job]]\nname = 3\ncommand = [\"x\"]\n",
                {"bad.toml:2:", "key 'name'", "got an integer 3"}},
        BadCase{"command string",
                "[[job]]\nname = \"a\"\ncommand = \"python3 x.py\"\n",
                {"bad.toml:3:", "job 'a'", "key 'command' must be a non-empty array",
                 "split it into an array"}},
        BadCase{"command empty",
                "[[job]]\nname = \"a\"\ncommand = []\n",
                {"bad.toml:3:", "key 'command'", "got an empty array"}},
        BadCase{"command number",
                "[[job]]\nname = \"a\"\ncommand = [\"x\",\n 3]\n",
                {"bad.toml:4:", "command[1] must be a string", "put it in quotes"}},
        BadCase{"command empty program",
                "[[job]]\nname = \"a\"\ncommand = [\"\"]\n",
                {"bad.toml:3:", "command[0]"}},
        BadCase{"repeat zero",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nrepeat = 0\n",
                {"bad.toml:4:", "job 'a'", "key 'repeat' must be a positive integer",
                 "got an integer 0"}},
        BadCase{"repeat float",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nrepeat = 1.5\n",
                {"bad.toml:4:", "key 'repeat'", "got a float 1.5"}},
        BadCase{"qos unknown",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nqos = \"guaranteed\"\n",
                {"bad.toml:4:", "job 'a'",
                 "key 'qos' must be \"protected\", \"normal\" or "
                 "\"opportunistic\"",
                 "got \"guaranteed\""}},
        BadCase{"qos misspelt",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nqos = \"protectd\"\n",
                {"bad.toml:4:", "did you mean 'protected'?"}},
        BadCase{"qos not a string",
                "[defaults]\nqos = 1\n[[job]]\nname = \"a\"\ncommand = [\"x\"]\n",
                {"bad.toml:2:", "[defaults]", "key 'qos'", "got an integer 1"}},
        BadCase{
            "min_speed above one",
            "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nqos = \"protected\"\n"
            "min_speed = 1.5\n",
            {"bad.toml:5:", "key 'min_speed'", "above 0 and at most 1", "such as 0.9", "got 1.5"}},
        BadCase{"min_speed zero",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nqos = \"protected\"\n"
                "min_speed = 0\n",
                {"bad.toml:5:", "key 'min_speed'", "got 0"}},
        BadCase{"min_speed a string",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nqos = \"protected\"\n"
                "min_speed = \"90%\"\n",
                {"bad.toml:5:", "key 'min_speed'", "got a string \"90%\""}},
        BadCase{"min_speed without protected",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nmin_speed = 0.8\n",
                {"bad.toml:4:", "job 'a'", "min_speed is the floor of a protected job",
                 "this job is normal", "add qos = \"protected\""}},
        BadCase{"min_speed from defaults on an opportunistic job",
                "[defaults]\nqos = \"protected\"\nmin_speed = 0.8\n[[job]]\nname = \"a\"\n"
                "command = [\"x\"]\nqos = \"opportunistic\"\n",
                {"bad.toml:3:", "job 'a'", "this job is opportunistic"}},
        BadCase{"priority range",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\npriority = 500\n",
                {"bad.toml:4:", "key 'priority'", "from -100 (last) to 100 (first)"}},
        BadCase{"sm_share range",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nsm_share = 101\n",
                {"bad.toml:4:", "key 'sm_share' must be a percentage from 1 to 100"}},
        BadCase{"gpu_memory unit",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\ngpu_memory = \"4 parsecs\"\n",
                {"bad.toml:4:", "key 'gpu_memory'", "unknown unit"}},
        BadCase{"memory_limit type",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nmemory_limit = true\n",
                {"bad.toml:4:", "key 'memory_limit'", "got a boolean true"}},
        BadCase{"gpu_memory zero",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\ngpu_memory = 0\n",
                {"bad.toml:4:", "key 'gpu_memory'"}},
        BadCase{"bad regex",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nepoch_regex = \"(\"\n",
                {"bad.toml:4:", "key 'epoch_regex' is not a valid regular expression"}},
        BadCase{"regex only std::regex knew",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nepoch_regex = \"(a)\\\\1\"\n",
                {"bad.toml:4:", "job 'a'",
                 "key 'epoch_regex' is not a valid regular expression (RE2 "
                 "syntax)"}},
        // Found by tests/fuzz/job_file_fuzz.cc: toml++ 3.3.0 reached
        // __builtin_unreachable() on this character (UBSan reports it).
        BadCase{"non-ASCII character where a key goes",
                "[[job]]\nname = \"a\"\nc\xc8\x88 = [\"true\"]\n",
                {"bad.toml:3:", "TOML syntax error"}},
        BadCase{"step group in epoch_regex",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nepoch_regex = \"(?P<step>\\\\d+)\"\n",
                {"bad.toml:4:", "key 'epoch_regex' has a group named 'step'"}},
        BadCase{"bad step_regex",
                "[defaults]\nstep_regex = \"loss (?P<loss>\\\\S+)\"\n[[job]]\nname = \"a\"\n"
                "command = [\"x\"]\n",
                {"bad.toml:2:", "[defaults]", "key 'step_regex' needs a group named 'step'"}},
        BadCase{"epoch_samples zero",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nepoch_samples = 0\n",
                {"bad.toml:4:",
                 "key 'epoch_samples' must be a whole number of samples from 1 to "
                 "1000000000000, got an integer 0"}},
        BadCase{"epoch_samples string",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nepoch_samples = \"50k\"\n",
                {"bad.toml:4:", "key 'epoch_samples'"}},
        BadCase{"preemptible not bool",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\npreemptible = \"yes\"\n",
                {"bad.toml:4:", "key 'preemptible' must be true or false", "got a string"}},
        BadCase{"env not table",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nenv = \"A=1\"\n",
                {"bad.toml:4:", "key 'env' must be a table"}},
        BadCase{"env value array",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nenv = { A = [1] }\n",
                {"bad.toml:4:", "key 'env.A' must be a string"}},
        BadCase{"env bad name",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nenv = { 1A = \"x\" }\n",
                {"bad.toml:4:", "'1A' is not a valid environment variable name"}},
        BadCase{"workdir type",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nworkdir = 3\n",
                {"bad.toml:4:", "key 'workdir'"}},
        BadCase{"grid not table",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\ngrid = [1]\n",
                {"bad.toml:4:", "key 'grid' must be a table"}},
        BadCase{"grid empty values",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\ngrid = { lr = [] }\n",
                {"bad.toml:4:", "grid.lr must be a non-empty array"}},
        BadCase{"grid scalar",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\ngrid = { lr = 0.1 }\n",
                {"bad.toml:4:", "grid.lr must be a non-empty array", "got a float 0.1"}},
        BadCase{"grid nested",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\ngrid = { lr = [[1]] }\n",
                {"bad.toml:4:", "grid.lr values must be strings"}},
        BadCase{"unknown placeholder",
                "[[job]]\nname = \"a\"\ncommand = [\"x\", \"{lrr}\"]\ngrid = { lr = [1] }\n",
                {"bad.toml:3:", "job 'a'", "command", "unknown placeholder '{lrr}'",
                 "did you mean 'lr'?", "grid parameters: lr"}},
        BadCase{"placeholder without grid",
                "[[job]]\nname = \"a\"\ncommand = [\"x\", \"{lr}\"]\n",
                {"bad.toml:3:", "unknown placeholder '{lr}'", "this job has no grid"}},
        BadCase{"placeholder in defaults env",
                "[defaults]\nenv = { A = \"{seed}\" }\n[[job]]\nname=\"a\"\ncommand=[\"x\"]\n",
                {"bad.toml:2:", "job 'a'", "env.A", "unknown placeholder '{seed}'"}},
        BadCase{"placeholder in workdir",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nworkdir = \"{w}\"\n",
                {"bad.toml:4:", "workdir", "unknown placeholder '{w}'"}},
        BadCase{"placeholder-shaped word in a program",
                "[[job]]\nname = \"a\"\ncommand = [\"awk\", \"{print}\"]\n",
                {"bad.toml:3:", "unknown placeholder '{print}'", "write '{{print}}'"}},
        BadCase{
            "duplicate names",
            "[[job]]\nname = \"a\"\ncommand = [\"x\"]\n[[job]]\nname = \"a\"\ncommand = [\"y\"]\n",
            {"bad.toml:4:", "job name 'a' is used more than once", "bad.toml:1"}},
        BadCase{"duplicate grid values",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\ngrid = { lr = [1, 1] }\n",
                {"bad.toml:1:", "job name 'a[lr=1]' is used more than once"}},
        BadCase{"too many jobs",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nrepeat = 100\n"
                "grid = { p = [1,2,3,4,5,6,7,8,9,10], q = [1,2,3,4,5,6,7,8,9,10], "
                "r = [1,2,3,4,5,6,7,8,9,10], s = [1, 2] }\n",
                {"bad.toml:1:", "job 'a'", "more than 100000 jobs"}},
        BadCase{"max_per_gpu zero",
                "[run]\nmax_per_gpu = 0\n[[job]]\nname=\"a\"\ncommand=[\"x\"]\n",
                {"bad.toml:2:", "[run]", "key 'max_per_gpu' must be a positive integer"}},
        BadCase{"mechanism typo",
                "[run]\nmechanism = \"mpss\"\n[[job]]\nname=\"a\"\ncommand=[\"x\"]\n",
                {"bad.toml:2:", "key 'mechanism'", "\"mpss\"", "did you mean 'mps'?"}},
        BadCase{"run not table",
                "run = 3\n[[job]]\nname=\"a\"\ncommand=[\"x\"]\n",
                {"bad.toml:1:", "[run]: must be a table"}},
        BadCase{"run key in job",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nmax_per_gpu = 2\n",
                {"bad.toml:4:", "unknown key 'max_per_gpu'", "belongs in [run]"}},
        BadCase{"job entry not table", "job = [1]\n", {"bad.toml:1:", "job #1 must be a table"}},
        BadCase{"unknown policy",
                "[run]\npolicy = \"autoo\"\n[[job]]\nname=\"a\"\ncommand=[\"x\"]\n",
                {"bad.toml:2:", "'policy' must be \"fixed\" or \"auto\"", "did you mean 'auto'"}},
        BadCase{"sm_activity out of range",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nsm_activity = 120\n",
                {"bad.toml:4:", "'sm_activity' must be a percentage from 1 to 100"}},
        BadCase{"restart not a policy",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nrestart = \"always\"\n",
                {"bad.toml:4:", "'restart' must be \"on-failure\" or \"never\"", "always"}},
        BadCase{"solo_time not a duration",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nsolo_time = \"soon\"\n",
                {"bad.toml:4:", "'solo_time' must be a duration"}},
        // Issue 15: overflowing values once read "got zero" or were capped at 2^63.
        BadCase{"solo_time overflowing",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nsolo_time = \"1e30s\"\n",
                {"bad.toml:4:", "too long"}},
        BadCase{"gpu_memory overflowing",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\ngpu_memory = \"1e30\"\n",
                {"bad.toml:4:", "too large"}},
        // A NUL cut the argument short at exec; escape codes reached the terminal.
        BadCase{
            "grid value with a NUL",
            "[[job]]\nname = \"a\"\ncommand = [\"x\", \"{v}\"]\ngrid.v = [\"ok\", \"a\\u0000b\"]\n",
            {"bad.toml:4:", "grid.v", "control character", "\\x00"}},
        BadCase{
            "grid value with an escape code",
            "[[job]]\nname = \"a\"\ncommand = [\"x\", \"{v}\"]\ngrid.v = [\"\\u001b[31mred\"]\n",
            {"bad.toml:4:", "grid.v", "control character", "\\x1b"}},
        BadCase{"resource_params names no grid parameter",
                "[[job]]\nname = \"a\"\ncommand = [\"x\", \"{batch}\"]\n"
                "grid = { batch = [1, 2] }\nresource_params = [\"bach\"]\n",
                {"bad.toml:5:", "resource_params: 'bach' names no grid parameter",
                 "(did you mean 'batch'?)", "(grid parameters: batch)"}},
        BadCase{"resource_params with a bad power",
                "[[job]]\nname = \"a\"\ncommand = [\"x\", \"{px}\"]\n"
                "grid = { px = [32, 64] }\nresource_params = [\"px^4\"]\n",
                {"bad.toml:5:", "'px^4': the power after '^' must be 1, 2 or 3"}},
        BadCase{"resource_params not an array",
                "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nresource_params = \"bs\"\n",
                {"bad.toml:4:", "'resource_params' must be an array of grid parameter names"}},
        BadCase{"resource_params in defaults",
                "[defaults]\nresource_params = [\"bs\"]\n[[job]]\nname = \"a\"\n"
                "command = [\"x\"]\n",
                {"bad.toml:2:", "key 'resource_params' cannot have a default"}}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string name = info.param.label;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(JobFile, FamiliesAreTheBlocksTemplates) {
  JobFile file = parse_ok(R"(
[[job]]
name = "sweep"
command = ["python3", "train.py", "--lr", "{lr}", "--batch-size", "{batch_size}"]
grid = { lr = [0.1, 0.01], batch_size = [32, 64] }
resource_params = ["batch_size"]

[[job]]
name = "again"
command = ["python3", "train.py", "--lr", "{lr}", "--batch-size", "{batch_size}"]
grid = { lr = [0.5], batch_size = [128] }

[[job]]
name = "other"
command = ["python3", "train.py", "--lr", "{lr}", "--batch-size", "{batch_size}", "--x"]
grid = { lr = [0.5], batch_size = [128] }

[[job]]
name = "plain"
command = ["python3", "train.py", "--lr", "0.1"]
repeat = 2
)");
  ASSERT_EQ(file.jobs.size(), 8u);
  // One block's instances share a family; so does another block with the
  // same template; another template is another family.
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(file.jobs[i].family, file.jobs[0].family);
  EXPECT_NE(file.jobs[0].family, job_signature(file.jobs[0]));
  EXPECT_NE(file.jobs[5].family, file.jobs[0].family);
  EXPECT_EQ(file.jobs[0].resource_params, std::vector<std::string>{"batch_size"});
  EXPECT_FALSE(file.jobs[4].resource_params.has_value());
  // Without a grid the family is the job's own signature.
  EXPECT_EQ(file.jobs[6].family, job_signature(file.jobs[6]));
  EXPECT_EQ(file.jobs[7].family, file.jobs[6].family);
  // A literal text that reads like a placeholder is not one.
  JobFile literal = parse_ok(R"(
[[job]]
name = "braces"
command = ["python3", "train.py", "--lr", "{{lr}}"]
)");
  EXPECT_NE(literal.jobs[0].family, file.jobs[0].family);
}

TEST(JobFile, PolicyAndProfileHints) {
  JobFile file = parse_ok(R"(
[run]
policy = "auto"
[defaults]
sm_activity = 19
[[job]]
name = "a"
command = ["x"]
gpu_util = 37
solo_time = "1m30s"
)");
  EXPECT_EQ(file.policy, "auto");
  ASSERT_EQ(file.jobs.size(), 1u);
  EXPECT_EQ(file.jobs[0].sm_activity_pct, 19);
  EXPECT_EQ(file.jobs[0].gpu_util_pct, 37);
  EXPECT_EQ(file.jobs[0].solo_time_ms, 90'000);
}

TEST(JobFile, RestartDefaultsToOnFailureAndJobsOverrideDefaults) {
  JobFile file = parse_ok(R"(
[defaults]
restart = "never"
[[job]]
name = "a"
command = ["x"]
[[job]]
name = "b"
command = ["x"]
restart = "on-failure"
)");
  ASSERT_EQ(file.jobs.size(), 2u);
  EXPECT_EQ(file.jobs[0].restart, RestartPolicy::kNever);
  EXPECT_EQ(file.jobs[1].restart, RestartPolicy::kOnFailure);
  EXPECT_EQ(parse_ok(kJobHead).jobs[0].restart, RestartPolicy::kOnFailure);
}

TEST(JobFile, PriorityDefaultsToZeroAndTravelsToTheService) {
  JobFile file = parse_ok(R"(
[defaults]
priority = -5
[[job]]
name = "a"
command = ["x"]
[[job]]
name = "b"
command = ["x"]
priority = 20
)");
  ASSERT_EQ(file.jobs.size(), 2u);
  EXPECT_EQ(file.jobs[0].priority, -5);
  EXPECT_EQ(file.jobs[1].priority, 20);
  EXPECT_EQ(parse_ok(kJobHead).jobs[0].priority, 0);
  Result<JobSpec> back = job_spec_from_json(job_spec_to_json(file.jobs[1]));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->priority, 20);
}

// Issue 56: the class in [defaults] and [[job]], normal by default; a
// protected job's floor 0.9 unless it says otherwise; both reach the service.
TEST(JobFile, QosClassesDefaultToNormalAndTravelToTheService) {
  JobFile file = parse_ok(R"(
[defaults]
qos = "opportunistic"
[[job]]
name = "fill"
command = ["x"]
[[job]]
name = "main"
command = ["x"]
qos = "protected"
[[job]]
name = "main2"
command = ["x"]
qos = "protected"
min_speed = 0.75
[[job]]
name = "plain"
command = ["x"]
qos = "normal"
)");
  ASSERT_EQ(file.jobs.size(), 4u);
  struct Want {
    QosClass qos;
    double min_speed;
  };
  const std::vector<Want> want = {{QosClass::kOpportunistic, kDefaultMinSpeed},
                                  {QosClass::kProtected, 0.9},
                                  {QosClass::kProtected, 0.75},
                                  {QosClass::kNormal, kDefaultMinSpeed}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(file.jobs[i].qos, want[i].qos) << file.jobs[i].name;
    EXPECT_EQ(file.jobs[i].min_speed, want[i].min_speed) << file.jobs[i].name;
    Result<JobSpec> back = job_spec_from_json(job_spec_to_json(file.jobs[i]));
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back->qos, want[i].qos) << file.jobs[i].name;
    EXPECT_EQ(back->min_speed, want[i].min_speed) << file.jobs[i].name;
  }
  EXPECT_EQ(parse_ok(kJobHead).jobs[0].qos, QosClass::kNormal);
  // A whole-number floor is a floor too.
  EXPECT_EQ(
      parse_ok(std::string(kJobHead) + "qos = \"protected\"\nmin_speed = 1\n").jobs[0].min_speed,
      1.0);
}

TEST(JobFile, SweepPointsArePreemptibleUnlessTheFileSaysOtherwise) {
  JobFile file = parse_ok(R"(
[[job]]
name = "one"
command = ["x"]
[[job]]
name = "sweep"
command = ["x", "{lr}"]
grid = { lr = ["0.1", "0.2"] }
[[job]]
name = "kept"
command = ["x"]
repeat = 2
preemptible = false
[[job]]
name = "opted"
command = ["x"]
preemptible = true
)");
  ASSERT_EQ(file.jobs.size(), 6u);
  EXPECT_FALSE(file.jobs[0].preemptible) << "a single job is not, by default";
  EXPECT_TRUE(file.jobs[1].preemptible);
  EXPECT_TRUE(file.jobs[2].preemptible);
  EXPECT_FALSE(file.jobs[3].preemptible);
  EXPECT_FALSE(file.jobs[4].preemptible);
  EXPECT_TRUE(file.jobs[5].preemptible);
  for (const JobSpec& job : file.jobs) {
    Result<JobSpec> back = job_spec_from_json(job_spec_to_json(job));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->preemptible, job.preemptible) << job.name;
  }
}

TEST(JobFile, AGangGetsItsGpuCountAndKeepsPortForTheStart) {
  JobFile file = parse_ok(R"(
[[job]]
name = "ddp"
gpus = 2
grid = { lr = [0.1] }
command = ["torchrun", "--nproc_per_node", "{gpus}", "--master_port", "{port}", "t.py", "{lr}"]
env = { PORT_TOO = "{port}" }
[[job]]
name = "one"
command = ["x", "{gpus}"]
)");
  ASSERT_EQ(file.jobs.size(), 2u);
  EXPECT_EQ(file.jobs[0].gpus, 2);
  EXPECT_THAT(file.jobs[0].command, ElementsAre("torchrun", "--nproc_per_node", "2",
                                                "--master_port", "{port}", "t.py", "0.1"));
  EXPECT_EQ(file.jobs[0].env.at("PORT_TOO"), "{port}");
  EXPECT_EQ(file.jobs[1].gpus, 1);
  EXPECT_THAT(file.jobs[1].command, ElementsAre("x", "1"));
  // A gang is another job than the same command on one GPU.
  JobSpec one = file.jobs[0];
  one.gpus = 1;
  EXPECT_NE(job_signature(one), job_signature(file.jobs[0]));
}

TEST(JobFile, GpusMustBeAWholeNumberAndGridNamesCannotTakeTheBuiltInPlaceholders) {
  for (const char* bad : {"gpus = 0", "gpus = 65", "gpus = \"2\"", "gpus = 1.5"}) {
    Result<JobFile> r = parse_job_file(std::string(kJobHead) + bad + "\n", "bad.toml", kBase);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.error().message(), HasSubstr("bad.toml:4:")) << bad;
    EXPECT_THAT(r.error().message(), HasSubstr("a whole number of GPUs from 1 to 64")) << bad;
  }
  Result<JobFile> r = parse_job_file(
      "[[job]]\nname = \"a\"\ncommand = [\"x\", \"{port}\"]\ngrid = { port = [1, 2] }\n",
      "bad.toml", kBase);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("grid parameter 'port' is reserved"));
}

// The throughput keys exactly as docs/job-file.md shows them.
TEST(JobFile, ThroughputKeysForScriptsColoCannotChange) {
  JobFile file = parse_ok(R"toml(
[defaults]
epoch_samples = 50000

[[job]]
name = "own-print"
command = ["python3", "train.py"]
epoch_regex = 'Epoch (?P<epoch>\d+) done: (?P<samples>\d+) samples'

[[job]]
name = "timm"
command = ["python3", "train.py", "/data/imagenet", "--model", "resnet50"]
epoch_samples = 1281167
step_regex = 'Train: (?P<epoch>\d+) \[\s*(?P<step>\d+)/(?P<steps>\d+) .*Loss: (?P<loss>[0-9.]+)'

[[job]]
name = "lightning"
command = ["python3", "fit.py"]
step_regex = 'Epoch (?P<epoch>\d+):.*\| (?P<step>\d+)/(?P<steps>\d+) \['

[[job]]
name = "hf"
command = ["python3", "run_glue.py"]
epoch_samples = 3668
step_regex = "'loss': (?P<loss>[0-9.e-]+).*'epoch': (?P<epoch>[0-9.]+)"

[[job]]
name = "mnist"
command = ["python3", "main.py"]
epoch_samples = 60000
step_regex = 'Train Epoch: (?P<epoch>\d+) \[(?P<step>\d+)/(?P<steps>\d+)'
epoch_regex = '^Test set: Average loss: (?P<loss>\S+),'
)toml");
  ASSERT_EQ(file.jobs.size(), 5U);
  EXPECT_EQ(file.jobs[0].epoch_samples, 50000);
  EXPECT_EQ(file.jobs[0].epoch_regex, R"(Epoch (?P<epoch>\d+) done: (?P<samples>\d+) samples)");
  EXPECT_FALSE(file.jobs[0].step_regex);
  EXPECT_EQ(file.jobs[1].epoch_samples, 1281167);
  EXPECT_TRUE(file.jobs[1].step_regex);
  EXPECT_EQ(file.jobs[2].epoch_samples, 50000);
  EXPECT_TRUE(file.jobs[3].step_regex);
  EXPECT_TRUE(file.jobs[4].epoch_regex && file.jobs[4].step_regex);
}

// [objective]: the metric and its goal, and other metrics' goals, into
// every job (and through the service's JSON); a goal that is neither min nor
// max, a metric without its goal and an unknown key are errors on their line.
TEST(JobFile, AnObjectiveDeclaresWhichWayIsBetterForEveryJob) {
  JobFile file = parse_ok(R"(
[objective]
metric = "fid"
goal = "min"
goals = { inception_score = "max" }

[[job]]
name = "gan"
command = ["x"]
grid = { lr = [1, 2] }
)");
  ASSERT_EQ(file.jobs.size(), 2u);
  for (const JobSpec& job : file.jobs) {
    EXPECT_EQ(job.objective, "fid");
    EXPECT_THAT(job.lower_is_better,
                ElementsAre(Pair("fid", true), Pair("inception_score", false)));
  }
  Result<JobSpec> back = job_spec_from_json(job_spec_to_json(file.jobs[0]));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->objective, "fid");
  EXPECT_EQ(back->lower_is_better, file.jobs[0].lower_is_better);
  EXPECT_EQ(objective_of_spec(job_spec_to_json(file.jobs[0])).lower_is_better.at("fid"), true);

  Result<JobFile> bad = parse_job_file(R"([objective]
metric = "fid"
goals = { bleu = "higher" }
mode = 1

[[job]]
name = "a"
command = ["x"]
)",
                                       "f.toml", kBase);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(),
              HasSubstr("f.toml:3: [objective]: key 'goals.bleu' must be \"min\" (lower is "
                        "better) or \"max\", got \"higher\""));
  EXPECT_THAT(bad.error().message(), HasSubstr("[objective]: unknown key 'mode'"));
  EXPECT_THAT(bad.error().message(),
              HasSubstr("[objective]: metric 'fid' needs its goal: add goal = \"min\""));
}

// [early_stop]: the rule and its numbers into every job (and through the
// service's JSON); it needs a declared objective, a known rule and sane
// numbers, each error on its line.
TEST(JobFile, AnEarlyStopRuleGoesWithTheObjectiveIntoEveryJob) {
  JobFile file = parse_ok(R"(
[objective]
metric = "val_loss"
goal = "min"

[early_stop]
rule = "asha"
min_epochs = 2
reduction = 4
max_epochs = 32

[[job]]
name = "t"
command = ["x"]
grid = { lr = [1, 2] }
)");
  ASSERT_EQ(file.jobs.size(), 2u);
  for (const JobSpec& job : file.jobs) {
    ASSERT_TRUE(job.early_stop);
    EXPECT_EQ(job.early_stop->rule, EarlyStopRule::kAsha);
    EXPECT_EQ(job.early_stop->min_epochs, 2);
    EXPECT_EQ(job.early_stop->reduction, 4);
    EXPECT_EQ(job.early_stop->max_epochs, 32);
    EXPECT_EQ(job.early_stop->min_trials, 3) << "the default";
  }
  Result<JobSpec> back = job_spec_from_json(job_spec_to_json(file.jobs[0]));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->early_stop, file.jobs[0].early_stop);
  EXPECT_FALSE(parse_ok("[[job]]\nname = \"a\"\ncommand = [\"x\"]\n").jobs[0].early_stop);

  Result<JobFile> bad = parse_job_file(R"([early_stop]
rule = "hyperband"
reduction = 1
patience = 3

[[job]]
name = "a"
command = ["x"]
)",
                                       "f.toml", kBase);
  ASSERT_FALSE(bad.ok());
  const std::string message = bad.error().message();
  EXPECT_THAT(message, HasSubstr("f.toml:2: [early_stop]: key 'rule' must be \"median\" or "
                                 "\"asha\", got \"hyperband\""));
  EXPECT_THAT(message, HasSubstr("f.toml:3: [early_stop]: key 'reduction' must be an integer of "
                                 "2 or more"));
  EXPECT_THAT(message, HasSubstr("f.toml:4: [early_stop]: unknown key 'patience'"));
  EXPECT_THAT(message, HasSubstr("[early_stop]: judges the objective, and the file declares "
                                 "none: add an [objective]"));
}

// search = { kind = "random" }: `samples` points, each parameter drawn on its
// own from its distribution (an array or choice: one of its values), the
// same for the same seed, within the ranges, every instance named apart;
// a distribution without a search, and bad ranges, are errors on their line.
TEST(JobFile, ARandomSearchDrawsItsSamplesFromTheDistributions) {
  const std::string text = R"(
[[job]]
name = "t"
command = ["train", "--lr", "{lr}", "--wd", "{wd}", "--opt", "{opt}", "--bs", "{bs}"]
search = { kind = "random", samples = 40, seed = 7 }
grid = { lr = { loguniform = [1e-4, 0.1] }, wd = { uniform = [0, 0.5] }, opt = { choice = ["sgd", "adam"] }, bs = [32, 64, 128] }
)";
  JobFile file = parse_ok(text);
  ASSERT_EQ(file.jobs.size(), 40u);
  std::set<std::string> names, opts, sizes;
  double lr_min = 1, lr_max = 0, below_1e3 = 0;
  for (const JobSpec& job : file.jobs) {
    names.insert(job.name);
    const double lr = std::stod(job.params.at("lr"));
    const double wd = std::stod(job.params.at("wd"));
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 0.1);
    EXPECT_GE(wd, 0);
    EXPECT_LE(wd, 0.5);
    lr_min = std::min(lr_min, lr);
    lr_max = std::max(lr_max, lr);
    below_1e3 += lr < 1e-3;
    opts.insert(job.params.at("opt"));
    sizes.insert(job.params.at("bs"));
    EXPECT_EQ(job.command[2], job.params.at("lr"));
    EXPECT_EQ(job.family, file.jobs[0].family) << "one family, as a grid's points";
  }
  EXPECT_EQ(names.size(), 40u) << "every instance named apart";
  EXPECT_THAT(opts, ElementsAre("adam", "sgd"));
  EXPECT_THAT(sizes, ElementsAre("128", "32", "64"));
  // Log-uniform over three decades: about a third below 1e-3 (uniform would give 1%).
  EXPECT_GE(below_1e3, 5);
  EXPECT_LT(lr_max / lr_min, 1000.0 + 1e-9);
  EXPECT_GT(lr_max / lr_min, 50.0);
  // The same seed draws the same points; another seed others.
  JobFile again = parse_ok(text);
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(again.jobs[i].name, file.jobs[i].name);
  std::string other = text;
  other.replace(other.find("seed = 7"), 8, "seed = 8");
  EXPECT_NE(parse_ok(other).jobs[0].name, file.jobs[0].name);

  // A space of 2 x 3 points cannot give 10 samples apart: it gives its 6.
  JobFile small = parse_ok(R"([[job]]
name = "t"
command = ["x"]
search = { kind = "random", samples = 10 }
grid = { opt = { choice = ["sgd", "adam"] }, bs = [32, 64, 128] }
)");
  EXPECT_EQ(small.jobs.size(), 6u);

  Result<JobFile> bad = parse_job_file(R"([[job]]
name = "a"
command = ["x"]
grid = { lr = { loguniform = [0, 0.1] }, wd = { uniform = [1, 1] }, m = { normal = [0, 1] } }

[[job]]
name = "b"
command = ["x"]
grid = { lr = { uniform = [0.1, 0.2] } }

[[job]]
name = "c"
command = ["x"]
search = { kind = "bayes", samples = 4 }
grid = { lr = [1] }
)",
                                       "f.toml", kBase);
  ASSERT_FALSE(bad.ok());
  const std::string message = bad.error().message();
  // Each says what is wrong with the value it got, not only what it wants.
  EXPECT_THAT(message, HasSubstr("f.toml:4: job 'a': grid.lr.loguniform must be [lo, hi], two "
                                 "finite numbers with lo < hi and lo > 0; got lo = 0: a log scale "
                                 "has no 0 (try lo = 0.0001)"));
  EXPECT_THAT(message, HasSubstr("grid.wd.uniform must be [lo, hi], two finite numbers with lo < "
                                 "hi; got lo = 1, not below hi = 1"));
  EXPECT_THAT(message, HasSubstr("grid.m must be an array of values, or one distribution"));
  EXPECT_THAT(message, HasSubstr("f.toml:9: job 'b': grid.lr is a distribution, which only a "
                                 "random search draws from"));
  EXPECT_THAT(message, HasSubstr("f.toml:14: job 'c': search.kind must be \"random\""));
}

// profile = { ... }: a job's profiling window, from [defaults] too, through
// the service's JSON; a tool other than torch, nsys or ncu, both after and
// after_epoch, and after_epoch for a tool without the client are errors.
TEST(JobFile, AProfileWindowIsReadWithItsTool) {
  JobFile file = parse_ok(R"(
[defaults]
profile = { tool = "torch", after_epoch = 2, steps = 20 }

[[job]]
name = "a"
command = ["x"]

[[job]]
name = "b"
command = ["x"]
profile = { tool = "nsys", after = "30s", duration = "10s" }
)");
  ASSERT_EQ(file.jobs.size(), 2u);
  ASSERT_TRUE(file.jobs[0].profile);
  EXPECT_EQ(file.jobs[0].profile->tool, "torch");
  EXPECT_EQ(file.jobs[0].profile->after_epoch, 2);
  EXPECT_EQ(file.jobs[0].profile->steps, 20);
  ASSERT_TRUE(file.jobs[1].profile);
  EXPECT_EQ(file.jobs[1].profile->after_ms, 30'000);
  EXPECT_EQ(file.jobs[1].profile->duration_ms, 10'000);
  for (const JobSpec& job : file.jobs) {
    Result<JobSpec> back = job_spec_from_json(job_spec_to_json(job));
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back->profile, job.profile);
  }
  Result<JobFile> bad = parse_job_file(R"([[job]]
name = "a"
command = ["x"]
profile = { tool = "perf" }

[[job]]
name = "b"
command = ["x"]
profile = { tool = "torch", after = "1s", after_epoch = 1 }

[[job]]
name = "c"
command = ["x"]
profile = { tool = "ncu", after_epoch = 1 }
)",
                                       "f.toml", kBase);
  ASSERT_FALSE(bad.ok());
  const std::string message = bad.error().message();
  EXPECT_THAT(message, HasSubstr("f.toml:4: job 'a': key 'profile.tool' must be \"torch\", "
                                 "\"nsys\" or \"ncu\", got \"perf\""));
  EXPECT_THAT(message, HasSubstr("job 'b': profile takes after_epoch or after, not both"));
  EXPECT_THAT(message, HasSubstr("job 'c': profile.after_epoch needs the Python client"));
}

// Every duration key is read one way (TableReader::duration): a string such
// as its example, longer than zero; its errors name the key as written in the
// file and the example, whether the value is no string, no duration or zero.
TEST(JobFile, EveryDurationKeyIsReadOneWay) {
  struct Case {
    const char* key;      // as the error names it
    const char* section;  // the file, with VALUE where the value goes
    const char* example;
    std::optional<int64_t> (*read)(const JobFile&);
  };
  const std::vector<Case> cases = {
      {"solo_time", "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nsolo_time = VALUE\n", "\"12m\"",
       [](const JobFile& f) { return f.jobs[0].solo_time_ms; }},
      {"startup_time", "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nstartup_time = VALUE\n",
       "\"12m\"", [](const JobFile& f) { return f.jobs[0].startup_time_ms; }},
      {"stall_timeout", "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nstall_timeout = VALUE\n",
       "\"10m\", or \"off\"", [](const JobFile& f) { return f.jobs[0].stall_timeout_ms; }},
      {"profile.after",
       "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nprofile = { tool = \"nsys\", after = VALUE }\n",
       "\"30s\"",
       [](const JobFile& f) {
         return f.jobs[0].profile ? f.jobs[0].profile->after_ms : std::nullopt;
       }},
      {"profile.duration",
       "[[job]]\nname = \"a\"\ncommand = [\"x\"]\nprofile = { tool = \"nsys\", duration = VALUE "
       "}\n",
       "\"30s\"",
       [](const JobFile& f) {
         return f.jobs[0].profile ? f.jobs[0].profile->duration_ms : std::nullopt;
       }},
      {"lag_timeout",
       "[data.d]\npath = \"/d\"\nlag_timeout = VALUE\n[[job]]\nname = \"a\"\ncommand = "
       "[\"x\"]\ndataset = \"d\"\n",
       "\"30s\"", [](const JobFile& f) { return f.data_sources.at("d").lag_timeout_ms; }},
  };
  const auto with = [](std::string text, const std::string& value) {
    return text.replace(text.find("VALUE"), 5, value);
  };
  for (const Case& c : cases) {
    Result<JobFile> ok = parse_job_file(with(c.section, "\"1m30s\""), "d.toml", kBase);
    ASSERT_TRUE(ok.ok()) << c.key << ": " << ok.error().message();
    EXPECT_EQ(c.read(*ok), 90'000) << c.key;
    const std::string expected =
        fmt::format("key '{}' must be a duration such as {}", c.key, c.example);
    for (const auto& [value, why] : std::vector<std::pair<std::string, std::string>>{
             {"30", ", got an integer 30"},
             {"\"soon\"", ": 'soon' is not a duration"},
             {"\"0s\"", ": got zero"}}) {
      Result<JobFile> bad = parse_job_file(with(c.section, value), "d.toml", kBase);
      ASSERT_FALSE(bad.ok()) << c.key << " = " << value;
      EXPECT_THAT(bad.error().message(), HasSubstr(expected + why)) << c.key << " = " << value;
    }
  }
  // stall_timeout alone takes "off": no bound.
  EXPECT_EQ(parse_ok("[[job]]\nname = \"a\"\ncommand = [\"x\"]\nstall_timeout = \"off\"\n")
                .jobs[0]
                .stall_timeout_ms,
            0);
}

TEST(JobFile, ReportsEveryErrorNotJustTheFirst) {
  Result<JobFile> r = parse_job_file(R"([[job]]
name = "a"
command = ["x"]
repeat = -1

[[job]]
name = "b"
command = ["y"]
smshare = 5
)",
                                     "f.toml", kBase);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("f.toml:4: job 'a': key 'repeat'"));
  EXPECT_THAT(r.error().message(),
              HasSubstr("f.toml:9: job 'b': unknown key 'smshare' (did you mean 'sm_share'?)"));
}

class JobFileOnDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "jobfile.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(JobFileOnDisk, LoadsAndResolvesWorkdirAgainstTheFilesDirectory) {
  std::string path = write("sweep.toml",
                           "[[job]]\nname = \"a\"\ncommand = [\"x\"]\n"
                           "[[job]]\nname = \"b\"\ncommand = [\"x\"]\nworkdir = \"sub\"\n");
  Result<JobFile> r = load_job_file(path);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, path);
  EXPECT_EQ(r->jobs[0].working_dir, dir_);
  EXPECT_EQ(r->jobs[1].working_dir, dir_ + "/sub");
  EXPECT_EQ(r->jobs[1].source, path + ":4");
}

TEST_F(JobFileOnDisk, MissingFileSaysSo) {
  Result<JobFile> r = load_job_file(dir_ + "/nope.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("nope.toml"));
  EXPECT_THAT(r.error().message(), HasSubstr("No such file or directory"));
}

TEST_F(JobFileOnDisk, DirectoryIsNotAJobFile) {
  Result<JobFile> r = load_job_file(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("is a directory"));
}

TEST_F(JobFileOnDisk, UnreadableFileGivesTheReason) {
  if (geteuid() == 0) GTEST_SKIP() << "root can read any file";
  std::string path = write("secret.toml", "[[job]]\n");
  chmod(path.c_str(), 0);
  Result<JobFile> r = load_job_file(path);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("Permission denied"));
}

TEST_F(JobFileOnDisk, AFileTooLargeIsRefusedBeforeItIsParsed) {
  // 50 MB of [[job]] once took 1.79 GB and 16 s before it was refused.
  std::string path = dir_ + "/huge.toml";
  {
    std::ofstream out(path);
    const std::string block = "[[job]]\nname = \"a\"\ncommand = [\"x\"]\n";
    for (size_t written = 0; written <= kMaxJobFileBytes; written += block.size()) out << block;
  }
  Result<JobFile> r = load_job_file(path);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr(path));
  EXPECT_THAT(r.error().message(), HasSubstr("job files up to 8.0 MiB"));
  EXPECT_THAT(r.error().message(), HasSubstr("repeat"));
}

TEST(JobFile, MoreJobSectionsThanJobsAllowedAreRefusedAtOnce) {
  std::string text;
  for (int i = 0; i <= 100'000; ++i) text += "[[job]]\n";
  Result<JobFile> r = parse_job_file(text, "many.toml", kBase);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("100001 [[job]] sections"));
  EXPECT_THAT(r.error().message(), HasSubstr("at most 100000"));
}

TEST_F(JobFileOnDisk, EmptyFileOnDisk) {
  Result<JobFile> r = load_job_file(write("empty.toml", ""));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("empty.toml is empty"));
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

TEST(JobFileMig, ProfileAndGroupAreReadAndDefaulted) {
  Result<JobFile> file = parse_job_file(R"(
[run]
mechanism = "mig"

[defaults]
mig_group = "pair"

[[job]]
name = "dlrm"
command = ["python3", "dlrm.py"]
mig_profile = "4g.20gb"

[[job]]
name = "resnet"
command = ["python3", "train.py"]
)",
                                        "mig.toml", "/tmp");
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->mechanism, "mig");
  ASSERT_EQ(file->jobs.size(), 2u);
  EXPECT_EQ(file->jobs[0].mig_profile, "4g.20gb");
  EXPECT_EQ(file->jobs[0].mig_group, "pair");
  EXPECT_FALSE(file->jobs[1].mig_profile);
  EXPECT_EQ(file->jobs[1].mig_group, "pair");

  Result<JobFile> bad =
      parse_job_file("[[job]]\nname=\"a\"\ncommand=[\"x\"]\nmig_profile = 3\n", "bad.toml", "/");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("bad.toml:4: job 'a': key 'mig_profile' must be a string"),
            std::string::npos)
      << bad.error().message();
}

TEST(JobFileData, DataTablesAndTheDatasetKey) {
  JobFile file = parse_ok(R"(
[data.imagenet]
path = "datasets/train"
format = "imagefolder"
size = 176
augment = false
threads = 6
ring = "2GiB"
chunk = 32
lag_timeout = "1m"
cpus = "0-3"
seed = 7

[data.cifar]
path = "/data/cifar-10-batches-bin"

[defaults]
dataset = "imagenet"

[[job]]
name = "a"
command = ["x"]

[[job]]
name = "b"
command = ["x"]
dataset = "cifar"
)");
  ASSERT_EQ(file.data_sources.size(), 2u);
  const DataSourceSpec& d = file.data_sources.at("imagenet");
  EXPECT_EQ(d.path, "/data/exp/datasets/train");
  EXPECT_EQ(d.format, "imagefolder");
  EXPECT_EQ(d.image_size, 176);
  EXPECT_EQ(d.augment, false);
  EXPECT_EQ(d.threads, 6);
  EXPECT_EQ(d.ring_bytes, 2ull << 30);
  EXPECT_EQ(d.chunk, 32);
  EXPECT_EQ(d.lag_timeout_ms, 60'000);
  EXPECT_EQ(d.cpus, "0-3");
  EXPECT_EQ(d.seed, 7);
  EXPECT_EQ(d.source, "f.toml:2");
  EXPECT_FALSE(file.data_sources.at("cifar").image_size);
  EXPECT_EQ(file.jobs[0].dataset, "imagenet");
  EXPECT_EQ(file.jobs[1].dataset, "cifar");
}

TEST(JobFileData, BadDataTablesSayWhatToWrite) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"[data.x]\nformat = \"jpeg\"\n",
       {"bad.toml:2:", "[data.x]: key 'format' must be \"imagefolder\"", "needs a path"}},
      {"[data.x]\npath = \"d\"\nthreds = 2\n",
       {"bad.toml:3:", "unknown key 'threds' (did you mean 'threads'?)"}},
      {"[data.x]\npath = \"d\"\nsize = 0\n", {"bad.toml:3:", "'size' must be a crop size"}},
      {"[data.x]\npath = \"d\"\ncpus = \"all\"\n", {"bad.toml:3:", "'cpus' must be a CPU list"}},
      {"[data.x]\npath = \"d\"\nlag_timeout = \"never\"\n",
       {"bad.toml:3:", "'lag_timeout' must be a duration"}},
      {"data = 3\n", {"bad.toml:1:", "'data' must hold tables such as [data.imagenet]"}},
      {"[data.imagenet]\npath = \"d\"\n[[job]]\nname = \"a\"\ncommand = [\"x\"]\n"
       "dataset = \"imagenett\"\n",
       {"bad.toml:6:", "job 'a': dataset 'imagenett' has no [data.imagenett] table",
        "did you mean 'imagenet'"}},
  };
  for (const auto& [text, expected] : cases) {
    std::string full = text;
    if (full.find("[[job]]") == std::string::npos)
      full += "[[job]]\nname = \"a\"\ncommand = [\"x\"]\n";
    Result<JobFile> r = parse_job_file(full, "bad.toml", kBase);
    ASSERT_FALSE(r.ok()) << text;
    for (const std::string& part : expected)
      EXPECT_THAT(r.error().message(), HasSubstr(part)) << text;
  }
}

}  // namespace
}  // namespace colo
