#include "profiling/ncu_launch.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/testing/eventually.h"
#include "gpu/gpu_lock.h"

namespace colo {
namespace {

namespace fs = std::filesystem;
using Argv = std::vector<std::string>;

TEST(NcuArgv, EachProcessGetsWhatTheRealNcuAcceptsInItsMode) {
  const NcuLaunch launch{"/opt/ncu", "/p/ncu-attempt1",       4,
                         41000,      {"python3", "train.py"}, "/run/colo/locks"};
  struct Case {
    const char* name;
    Argv got;
    Argv want;
  };
  const Case cases[] = {
      {"alone",
       ncu_alone_argv(launch),
       {"/opt/ncu", "--target-processes", "all", "--clock-control", "none", "--export",
        "/p/ncu-attempt1", "--force-overwrite", "--launch-count", "4", "python3", "train.py"}},
      {"the job's command: colo's own pair",
       ncu_mps_pair_argv("/usr/bin/colo", launch),
       {"/usr/bin/colo", "ncu-mps-pair", "--ncu", "/opt/ncu", "--export", "/p/ncu-attempt1",
        "--launch-count", "4", "--port", "41000", "--lock-dir", "/run/colo/locks", "--", "python3",
        "train.py"}},
      // What to profile and where it goes: the control's.
      {"control",
       ncu_control_argv(launch),
       {"/opt/ncu", "--mps", "control", "--mps-num-clients", "1", "--port", "41000",
        "--max-connections", "1", "--clock-control", "none", "--launch-count", "4", "--export",
        "/p/ncu-attempt1", "--force-overwrite"}},
      // A client refuses --export and --clock-control.
      {"client",
       ncu_client_argv(launch),
       {"/opt/ncu", "--mps", "client", "--port", "41000", "--max-connections", "1", "python3",
        "train.py"}},
  };
  for (const Case& c : cases) EXPECT_EQ(c.got, c.want) << c.name;
}

// run_ncu_mps_pair with the stand-in ncu (tests/integration/fake-ncu), in a
// child process of the test (it installs signal handlers and reaps children).
class NcuMpsPairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "ncu.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }

  struct Outcome {
    int code = -1;
    std::string output;
  };
  // Starts the pair for `command` in a child, with the control behaving as
  // `control` (the stand-in's FAKE_NCU_CONTROL) and `bound` for the control
  // after the job; its output goes to <dir>/log.
  pid_t start(const std::string& control, const Argv& command, std::chrono::milliseconds bound) {
    const pid_t pid = fork();
    if (pid == 0) {
      // Not the test's lock files: a lock shared with the test stays held while the child lives.
      ::close_range(3, ~0U, 0);
      setenv("FAKE_NCU_DIR", dir_.c_str(), 1);
      setenv("FAKE_NCU_CONTROL", control.c_str(), 1);
      setenv("CUDA_MPS_PIPE_DIRECTORY", "/run/mps/pipe", 1);
      std::FILE* out = std::freopen(log().c_str(), "w", stdout);
      if (out == nullptr || dup2(fileno(out), STDERR_FILENO) < 0) _exit(99);
      _exit(run_ncu_mps_pair(
          NcuLaunch{COLO_FAKE_NCU, dir_ + "/report", 10, 41000, command, dir_ + "/locks"}, bound));
    }
    return pid;
  }
  std::string log() const { return dir_ + "/log"; }
  std::string output() const {
    std::ifstream in(log());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // Waits for the pair started as `pid` to end.
  Outcome finish(pid_t pid) {
    Outcome o;
    int status = 0;
    // Bounded: a pair that never ends fails the test instead of hanging it.
    const bool ended =
        testutil::eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 60'000);
    if (!ended) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "the pair did not end within 60 s";
    }
    if (WIFEXITED(status)) o.code = WEXITSTATUS(status);
    o.output = output();
    return o;
  }
  Outcome run(const std::string& control, const Argv& command, std::chrono::milliseconds bound) {
    return finish(start(control, command, bound));
  }
  std::string dir_;
};

TEST_F(NcuMpsPairTest, TheControlWritesTheReportAndTheJobsCodeIsTheClients) {
  for (const auto& [command, code] :
       {std::pair<Argv, int>{{"true"}, 0}, {{"sh", "-c", "exit 3"}, 3}}) {
    fs::remove(dir_ + "/report.ncu-rep");
    for (const char* f : {"/client-41000", "/attached-41000", "/done-41000"}) fs::remove(dir_ + f);
    const Outcome o = run("ok", command, std::chrono::seconds(30));
    EXPECT_EQ(o.code, code) << o.output;
    EXPECT_TRUE(fs::exists(dir_ + "/report.ncu-rep")) << o.output;
    // The client stayed a client of the job's server.
    std::ifstream seen(dir_ + "/client-41000");
    std::string pipe;
    std::getline(seen, pipe);
    EXPECT_EQ(pipe, "/run/mps/pipe");
  }
}

TEST_F(NcuMpsPairTest, AControlThatFailsStopsTheClientWaitingForItAndSaysWhy) {
  const Outcome o = run("fail", {"sleep", "600"}, std::chrono::seconds(30));
  EXPECT_EQ(o.code, 1) << o.output;
  EXPECT_NE(o.output.find("==ERROR== Failed to discover MPS clients."), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("colo: ncu's control exited 1 before the job's end"), std::string::npos)
      << o.output;
}

TEST_F(NcuMpsPairTest, AControlStillRunningPastTheBoundIsStoppedAndTheJobKeepsItsCode) {
  // The hanging control never attaches: the client waits for it up to its
  // own bound, so this one's job is the client alone (attached by hand).
  std::ofstream(dir_ + "/attached-41000") << "";
  const Outcome o = run("hang", {"true"}, std::chrono::milliseconds(200));
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("had not ended 0.2 s after the job: stopped it"), std::string::npos)
      << o.output;
}

// ncu runs one MPS control per machine: a pair waits for the machine's lock
// before it starts either process, says for whom, and starts once it is free.
TEST_F(NcuMpsPairTest, APairWaitsForTheMachinesOneControlAndStartsOnceItIsFree) {
  SystemClock clock;
  GpuLockOptions options;
  options.dir = dir_ + "/locks";
  options.command = "the other profiled job";
  Result<std::unique_ptr<GpuLocks>> other =
      GpuLocks::acquire_one_per_machine("ncu-mps-control", "ncu's MPS control", options, clock);
  ASSERT_TRUE(other.ok()) << other.error().message();

  const pid_t pair = start("ok", {"true"}, std::chrono::seconds(30));
  const std::string waiting = fmt::format(
      "colo: waiting for ncu's MPS control (one per machine), in use by colo pid {}", getpid());
  EXPECT_TRUE(
      testutil::eventually([&] { return output().find(waiting) != std::string::npos; }, 30'000))
      << output();
  EXPECT_NE(output().find("the other profiled job"), std::string::npos) << output();
  EXPECT_FALSE(fs::exists(dir_ + "/client-41000")) << "the job started before the lock was free";

  other->reset();  // the other pair ended
  const Outcome o = finish(pair);
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(fs::exists(dir_ + "/report.ncu-rep")) << o.output;
}

TEST_F(NcuMpsPairTest, AStopWhileWaitingForTheMachinesControlEndsThePair) {
  SystemClock clock;
  GpuLockOptions options;
  options.dir = dir_ + "/locks";
  Result<std::unique_ptr<GpuLocks>> other =
      GpuLocks::acquire_one_per_machine("ncu-mps-control", "ncu's MPS control", options, clock);
  ASSERT_TRUE(other.ok()) << other.error().message();

  const pid_t pair = start("ok", {"true"}, std::chrono::seconds(30));
  ASSERT_TRUE(testutil::eventually(
      [&] { return output().find("colo: waiting for ncu's MPS control") != std::string::npos; },
      30'000))
      << output();
  kill(pair, SIGTERM);
  const Outcome o = finish(pair);
  EXPECT_EQ(o.code, 1) << o.output;
  EXPECT_NE(o.output.find("stopped while waiting for ncu's MPS control"), std::string::npos)
      << o.output;
  EXPECT_FALSE(fs::exists(dir_ + "/client-41000")) << o.output;
}

}  // namespace
}  // namespace colo
