#include "run/job_launch.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "jobs/progress_event.h"
#include "jobs/rendezvous.h"
#include "run/leftovers.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

EngineJob launch_job() {
  EngineJob job;
  job.spec.name = "train";
  job.spec.command = {"python3", "train.py"};
  job.spec.working_dir = "/work";
  job.spec.env = {{"A", "spec"}, {"B", "spec"}, {"C", "spec"}};
  job.id = 42;
  job.log_stem = "/logs/001-train";
  job.progress_path = "/logs/001-train.progress.jsonl";
  job.checkpoint_dir = "/logs/001-train.checkpoint";
  job.extra_env = {{"B", "extra"}, {"C", "extra"}};
  return job;
}

// Each layer wins over the one below it: the spec's env, the caller's
// extras, the mechanism's, then colo's own.
struct LayerCase {
  std::string variable;
  std::string value;
};

TEST(LaunchRequest, TheEnvironmentIsLayeredSpecExtrasMechanismThenColo) {
  const EngineJob job = launch_job();
  const Environment mechanism = {{"C", "mechanism"}, {"CUDA_VISIBLE_DEVICES", "1"}};
  Result<LaunchRequest> request = launch_request(
      {job, "/logs/001-train.attempt2.log", mechanism, {1}, 7, "tok", std::nullopt, std::nullopt});
  ASSERT_TRUE(request.ok()) << request.error().message();
  const std::vector<LayerCase> cases = {
      {"A", "spec"},
      {"B", "extra"},
      {"C", "mechanism"},
      {"CUDA_VISIBLE_DEVICES", "1"},
      {kGpusEnv, "1"},
      {kGpuCountEnv, "1"},
      {kProgressFileEnv, "/logs/001-train.progress.jsonl"},
      {"COLO_JOB_NAME", "train"},
      {"COLO_RUN_ID", "7"},
      {kRunTokenEnv, "tok"},
      {kJobTokenEnv, job_token("tok", 42)},
      {kCheckpointDirEnv, "/logs/001-train.checkpoint"},
  };
  for (const LayerCase& c : cases) {
    auto it = request->env.find(c.variable);
    ASSERT_NE(it, request->env.end()) << c.variable;
    EXPECT_EQ(it->second, c.value) << c.variable;
  }
  EXPECT_EQ(request->env.count(kProfileDirEnv), 0U);  // none given
  EXPECT_EQ(request->env.count("PYTHONPATH"), 0U);    // no client dir: untouched
  EXPECT_EQ(request->env.count(kPortEnv), 0U);        // not asked for
  EXPECT_EQ(request->argv, job.spec.command);
  EXPECT_EQ(request->working_dir, "/work");
  EXPECT_EQ(request->log_path, "/logs/001-train.attempt2.log");
  EXPECT_EQ(request->job_name, "train");
  EXPECT_TRUE(request->cgroup.empty());
}

TEST(LaunchRequest, AGangIsToldItsGpusInOrderAndGetsAPort) {
  EngineJob job = launch_job();
  job.spec.gpus = 2;
  Result<LaunchRequest> request =
      launch_request({job, "/l.log", Environment{}, {3, 1}, 7, "tok", std::nullopt, std::nullopt});
  ASSERT_TRUE(request.ok()) << request.error().message();
  EXPECT_EQ(request->env.at(kGpusEnv), "3,1");
  EXPECT_EQ(request->env.at(kGpuCountEnv), "2");
  ASSERT_EQ(request->env.count(kPortEnv), 1U);
  EXPECT_GT(std::stoi(request->env.at(kPortEnv)), 0);
  EXPECT_EQ(request->env.at("MASTER_PORT"), request->env.at(kPortEnv));
}

// PYTHONPATH: the job's own (its env, else its base environment, else
// colo's), with colo's client directory appended.
struct PythonPathCase {
  std::string name;
  std::optional<std::string> in_env;
  std::optional<std::string> in_base;
  std::optional<std::string> colos;
  std::string expected;
};

TEST(LaunchRequest, PythonPathGetsTheClientDirectoryOnTopOfTheJobsOwn) {
  const std::vector<PythonPathCase> cases = {
      {"none anywhere", {}, {}, {}, "/share/python"},
      {"colo's own", {}, {}, "/colo", "/colo:/share/python"},
      {"the base environment's wins over colo's", {}, "/base", "/colo", "/base:/share/python"},
      {"its env's wins over all", "/mine", "/base", "/colo", "/mine:/share/python"},
  };
  for (const PythonPathCase& c : cases) {
    EngineJob job = launch_job();
    if (c.in_env) job.spec.env["PYTHONPATH"] = *c.in_env;
    if (c.in_base)
      job.base_env = std::make_shared<const std::map<std::string, std::string>>(
          std::map<std::string, std::string>{{"PYTHONPATH", *c.in_base}});
    Result<LaunchRequest> request =
        launch_request({job, "/l.log", Environment{}, {0}, 1, "t", "/share/python", c.colos});
    ASSERT_TRUE(request.ok());
    EXPECT_EQ(request->env.at("PYTHONPATH"), c.expected) << c.name;
  }
}

TEST(JobLimits, TheJobsOwnLimitsWinOverTheDefaults) {
  JobSpec spec;
  const CgroupLimits defaults{uint64_t{8} << 30, 4};
  CgroupLimits limits = job_limits(spec, defaults);
  EXPECT_EQ(limits.memory_bytes, defaults.memory_bytes);
  EXPECT_EQ(limits.cpus, 4);
  spec.host_memory_bytes = uint64_t{2} << 30;
  spec.cpus = 1;
  limits = job_limits(spec, defaults);
  EXPECT_EQ(limits.memory_bytes, uint64_t{2} << 30);
  EXPECT_EQ(limits.cpus, 1);
}

struct ProfileCase {
  std::string name;
  ProfileSpec profile;
  std::optional<std::string> tool_path;
  std::vector<std::string> argv;           // after
  std::map<std::string, std::string> env;  // set
  bool event;
  bool log_note;
};

TEST(ProfileWindow, TorchIsToldThroughTheEnvironmentNsysAndNcuWrapTheCommand) {
  const std::vector<ProfileCase> cases = {
      {"torch",
       ProfileSpec{"torch", 2, std::nullopt, 5, 1500},
       std::nullopt,
       {"python3", "train.py"},
       {{"COLO_PROFILE", "torch"},
        {"COLO_PROFILE_AFTER_EPOCH", "2"},
        {"COLO_PROFILE_STEPS", "5"},
        {"COLO_PROFILE_DURATION_S", "1.5"}},
       false,
       false},
      {"nsys",
       ProfileSpec{"nsys", std::nullopt, 3000, std::nullopt, 2000},
       "/usr/bin/nsys",
       {"/usr/bin/nsys", "profile", "--output", "/p/nsys-attempt2", "--force-overwrite", "true",
        "--delay", "3", "--duration", "2", "python3", "train.py"},
       {},
       true,
       false},
      {"ncu",
       ProfileSpec{"ncu", std::nullopt, std::nullopt, std::nullopt, std::nullopt},
       "/usr/bin/ncu",
       {"/usr/bin/ncu", "--target-processes", "all", "--clock-control", "none", "--export",
        "/p/ncu-attempt2", "--force-overwrite", "--launch-count", "10", "python3", "train.py"},
       {},
       true,
       false},
      // An MPS client stays one, under colo's ncu pair on a port of its own
      // (PORT: whatever port was free), its levers kept.
      {"ncu under MPS",
       ProfileSpec{"ncu", std::nullopt, std::nullopt, 4, std::nullopt},
       "/usr/bin/ncu",
       {"/usr/bin/colo", "ncu-mps-pair", "--ncu", "/usr/bin/ncu", "--export", "/p/ncu-attempt2",
        "--launch-count", "4", "--port", "PORT", "--lock-dir", "/run/colo/locks", "--", "python3",
        "train.py"},
       {{"CUDA_MPS_PIPE_DIRECTORY", "/run/mps/pipe"}, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "20"}},
       true,
       true},
      {"nsys not installed",
       ProfileSpec{"nsys", std::nullopt, std::nullopt, std::nullopt, std::nullopt},
       std::nullopt,
       {"python3", "train.py"},
       {},
       true,
       true},
  };
  for (const ProfileCase& c : cases) {
    LaunchRequest request;
    request.argv = {"python3", "train.py"};
    // An MPS client's request carries its pipe directory and levers (the mechanism's environment).
    if (c.env.contains("CUDA_MPS_PIPE_DIRECTORY")) {
      request.env["CUDA_MPS_PIPE_DIRECTORY"] = "/run/mps/pipe";
      request.env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = "20";
    }
    const ProfileSetup setup = profile_window(c.profile, "/p", 2, c.tool_path,
                                              {"/usr/bin/colo", "/run/colo/locks"}, request);
    auto port = std::find(request.argv.begin(), request.argv.end(), "--port");
    if (port != request.argv.end() && ++port != request.argv.end()) {
      EXPECT_GT(std::stoi(*port), 0) << c.name;
      *port = "PORT";
    }
    EXPECT_EQ(request.argv, c.argv) << c.name;
    for (const auto& [k, v] : c.env) EXPECT_EQ(request.env[k], v) << c.name << " " << k;
    EXPECT_EQ(!setup.event.empty(), c.event) << c.name;
    EXPECT_EQ(!setup.log_note.empty(), c.log_note) << c.name;
  }
}

TEST(PrepareJobFiles, MakesTheLogCheckpointAndProfileDirectories) {
  testing::TempDir dir("colo_job_launch_test");
  EngineJob job = launch_job();
  job.log_stem = dir.path() + "/logs/001-train";
  job.progress_path = job.log_stem + ".progress.jsonl";
  job.checkpoint_dir = job.log_stem + ".checkpoint";
  job.profile_dir = job.log_stem + ".profile";
  ASSERT_TRUE(prepare_job_files(job).ok());
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/logs").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0711U);
  ASSERT_EQ(::stat(job.checkpoint_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  // No profile window and its own user: no profile directory yet.
  EXPECT_FALSE(std::filesystem::exists(job.profile_dir));
  job.spec.profile = ProfileSpec{"torch"};
  ASSERT_TRUE(prepare_job_files(job).ok());
  EXPECT_TRUE(std::filesystem::is_directory(job.profile_dir));
}

}  // namespace
}  // namespace colo
