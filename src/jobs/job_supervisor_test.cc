#include "jobs/job_supervisor.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace colo {
namespace {

using ::testing::HasSubstr;

// Builds a wait status as waitpid reports it.
int exited(int code) { return (code & 0xff) << 8; }
int signaled(int sig) { return sig & 0x7f; }

struct ClassifyCase {
  const char* label;
  int wait_status;
  bool stop_requested;
  std::string log_tail;
  JobState state;
  std::string reason;
};

class ClassifyExit : public ::testing::TestWithParam<ClassifyCase> {};

TEST_P(ClassifyExit, Table) {
  const ClassifyCase& c = GetParam();
  JobExit exit = classify_exit(c.wait_status, c.stop_requested, c.log_tail);
  EXPECT_EQ(to_string(exit.state), to_string(c.state)) << c.label;
  EXPECT_EQ(exit.reason, c.reason) << c.label;
  if (WIFEXITED(c.wait_status)) {
    EXPECT_EQ(exit.exit_code, WEXITSTATUS(c.wait_status)) << c.label;
    EXPECT_FALSE(exit.signal) << c.label;
  } else {
    EXPECT_EQ(exit.signal, WTERMSIG(c.wait_status)) << c.label;
    EXPECT_FALSE(exit.exit_code) << c.label;
  }
}

const std::string kOomLog =
    "epoch 1\n  torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB  \nbye\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, ClassifyExit,
    ::testing::Values(
        ClassifyCase{"ok", exited(0), false, "", JobState::kOk, "exit code 0"},
        ClassifyCase{"ok despite oom text", exited(0), false, kOomLog, JobState::kOk,
                     "exit code 0"},
        ClassifyCase{"failed", exited(3), false, "Traceback\n", JobState::kFailed,
                     "exit code 3: Traceback"},
        ClassifyCase{"failed, nothing said", exited(3), false, "", JobState::kFailed,
                     "exit code 3"},
        ClassifyCase{"failed, blank lines only", exited(2), false, "\n  \n\r\n", JobState::kFailed,
                     "exit code 2"},
        ClassifyCase{"oom exit", exited(1), false, kOomLog, JobState::kOutOfMemory,
                     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"},
        ClassifyCase{"stopped, exited", exited(0), true, "", JobState::kCancelled,
                     "stopped by colo (exited with code 0)"},
        ClassifyCase{"stopped, exited with oom", exited(1), true, kOomLog, JobState::kCancelled,
                     "stopped by colo (exited with code 1)"},
        ClassifyCase{"stopped by term", signaled(SIGTERM), true, "", JobState::kCancelled,
                     "stopped by colo (SIGTERM)"},
        ClassifyCase{"stopped by kill", signaled(SIGKILL), true, "", JobState::kCancelled,
                     "stopped by colo (SIGKILL after grace period)"},
        ClassifyCase{"stopped by int", signaled(SIGINT), true, "", JobState::kCancelled,
                     "stopped by colo (SIGINT)"},
        ClassifyCase{"killed", signaled(SIGKILL), false, "", JobState::kKilled,
                     "killed by signal 9 (SIGKILL)"},
        ClassifyCase{"segfault", signaled(SIGSEGV), false, "", JobState::kKilled,
                     "killed by signal 11 (SIGSEGV)"},
        ClassifyCase{"core dumped", signaled(SIGABRT) | 0x80, false, "", JobState::kKilled,
                     "killed by signal 6 (SIGABRT, core dumped)"},
        ClassifyCase{"killed with oom", signaled(SIGABRT), false,
                     "terminate called: CUBLAS_STATUS_ALLOC_FAILED\n", JobState::kOutOfMemory,
                     "CUDA out of memory: terminate called: CUBLAS_STATUS_ALLOC_FAILED"}),
    [](const ::testing::TestParamInfo<ClassifyCase>& info) {
      std::string name = info.param.label;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(ClassifyExitReason, LongOomLineIsCutTo200Chars) {
  std::string line = "RuntimeError: CUDA out of memory. " + std::string(500, 'x');
  JobExit exit = classify_exit(exited(1), false, line + "\n");
  EXPECT_EQ(exit.state, JobState::kOutOfMemory);
  EXPECT_EQ(exit.reason, line.substr(0, 200) + "...");
}

TEST(ClassifyExitReason, ControlCharactersFromTheLogAreShownEscaped) {
  // The reason is printed by colo run and colo show: a job's escape codes must
  // not reach the terminal.
  JobExit exit = classify_exit(exited(1), false, "\x1b[31mCUDA out of memory\x07 x\n");
  EXPECT_EQ(exit.state, JobState::kOutOfMemory);
  EXPECT_EQ(exit.reason, "\\x1b[31mCUDA out of memory\\x07 x");
}

// A job that dies at once (an import error) says why in its last line: the
// reason shows it, not only "exit code 1".
TEST(ClassifyExitReason, AFailedJobsReasonEndsWithTheLastLineOfItsLog) {
  const std::string traceback =
      "Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n"
      "    import foo\nModuleNotFoundError: No module named 'foo'\n\n";
  EXPECT_EQ(classify_exit(exited(1), false, traceback).reason,
            "exit code 1: ModuleNotFoundError: No module named 'foo'");
  // Colours and other control characters are removed; a progress bar's last
  // redraw (after '\r') is the line.
  EXPECT_EQ(classify_exit(exited(1), false, "\x1b[1;31mError:\x1b[0m bad\x07 flag\t--x\n").reason,
            "exit code 1: Error: bad flag --x");
  EXPECT_EQ(classify_exit(exited(1), false, "10%\r50%\rfailed at 50%\r\n").reason,
            "exit code 1: failed at 50%");
  // Bounded: 200 bytes, cut between characters, invalid UTF-8 as '?'.
  const std::string long_line = std::string(199, 'x') + "\xc3\xa9" + std::string(100, 'y');
  EXPECT_EQ(classify_exit(exited(1), false, long_line + "\n").reason,
            "exit code 1: " + std::string(199, 'x') + "...");
  EXPECT_EQ(classify_exit(exited(1), false, "bad \xff byte\n").reason, "exit code 1: bad ? byte");
  // Out of memory keeps its own reason.
  EXPECT_EQ(classify_exit(exited(1), false, "CUDA out of memory\nbye\n").state,
            JobState::kOutOfMemory);
}

// The reason is the log's most informative line (jobs/log_reason.h), not a
// banner or a hint that happens to be last.
TEST(ClassifyExitReason, AFailedJobsReasonIsTheMostInformativeLine) {
  EXPECT_EQ(classify_exit(exited(1), false,
                          "[rank1]: RuntimeError: rank 1 failed\n"
                          "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                          "====================\ntrain.py FAILED\n====================\n")
                .reason,
            "exit code 1: RuntimeError: rank 1 failed");
  const std::string device_assert =
      "/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
      "block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
      "RuntimeError: CUDA error: device-side assert triggered\n"
      "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n";
  EXPECT_EQ(classify_exit(exited(1), false, device_assert).reason,
            "exit code 1: Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: Assertion `t >= 0 "
            "&& t < n_classes` failed.");
  // A kill adds an assertion, NCCL error or exception, not a mere last line.
  EXPECT_EQ(classify_exit(signaled(SIGABRT), false, device_assert).reason,
            "killed by signal 6 (SIGABRT): Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
            "Assertion `t >= 0 && t < n_classes` failed.");
  EXPECT_EQ(classify_exit(signaled(SIGKILL), false, "epoch 3 loss 0.2\n").reason,
            "killed by signal 9 (SIGKILL)");
}

TEST(FindOomMessage, RecognisesEachPatternAndReturnsTheLine) {
  for (const char* line :
       {"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20 MiB",
        "RuntimeError: CUDA error: out of memory",
        "CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate",
        "cudaErrorMemoryAllocation: out of memory", "jax: RESOURCE_EXHAUSTED: Out of memory while",
        "tf.errors.OutOfMemoryError"}) {
    std::string log = std::string("start\n") + line + "\nTraceback end\n";
    EXPECT_EQ(find_oom_message(log), std::string(line)) << line;
  }
}

TEST(FindOomMessage, NoMatchAndCaseSensitivity) {
  EXPECT_FALSE(find_oom_message(""));
  EXPECT_FALSE(find_oom_message("epoch 1 loss 0.3\nall good\n"));
  EXPECT_FALSE(find_oom_message("cuda out of memory (lower case)\n"));
  EXPECT_FALSE(find_oom_message("host out of memory\n"));
}

TEST(FindOomMessage, ReturnsTheLastMatchingLineAndSplitsOnCarriageReturns) {
  EXPECT_EQ(find_oom_message("CUDA out of memory first\nx\nCUDA out of memory last\ntail"),
            "CUDA out of memory last");
  EXPECT_EQ(find_oom_message("50%|#####\rCUDA error: out of memory"), "CUDA error: out of memory");
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "supervisor.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  LaunchRequest request(const std::string& name, std::vector<std::string> argv) {
    LaunchRequest r;
    r.job_name = name;
    r.argv = std::move(argv);
    r.working_dir = dir_;
    r.log_path = dir_ + "/" + name + ".log";
    return r;
  }
  LaunchRequest shell(const std::string& name, const std::string& script) {
    return request(name, {"/bin/sh", "-c", script});
  }

  // Polls until `count` jobs have finished or `timeout_ms` passed.
  std::vector<FinishedJob> wait_for(JobSupervisor& sup, size_t count, int64_t timeout_ms = 1500) {
    std::vector<FinishedJob> done;
    const int64_t deadline = clock_.monotonic_ms() + timeout_ms;
    while (done.size() < count && clock_.monotonic_ms() < deadline) {
      for (FinishedJob& f : sup.poll()) done.push_back(std::move(f));
      if (done.size() < count) clock_.sleep_for_ms(5);
    }
    return done;
  }

  // Waits until the file exists and is non-empty.
  std::string wait_for_file(const std::string& path) {
    for (int i = 0; i < 200; ++i) {
      std::ifstream in(path);
      std::stringstream text;
      text << in.rdbuf();
      if (!text.str().empty() && text.str().back() == '\n') return text.str();
      clock_.sleep_for_ms(5);
    }
    return "";
  }

  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // True when the process is gone or a zombie (dead, waiting for its reaper).
  static bool is_dead(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return true;
    std::string line;
    std::getline(stat, line);
    size_t close = line.rfind(')');
    return close == std::string::npos || close + 2 >= line.size() || line[close + 2] == 'Z' ||
           line[close + 2] == 'X';
  }

  SystemClock clock_;
  std::string dir_;
};

TEST_F(SupervisorTest, FailedJobKeepsItsExitCodeAndLog) {
  JobSupervisor sup(clock_);
  Result<pid_t> pid = sup.start(shell("fail", "echo hi; echo err >&2; exit 3"));
  ASSERT_TRUE(pid.ok()) << pid.error().message();
  EXPECT_EQ(sup.running_count(), 1u);
  EXPECT_EQ(sup.running_pids(), std::vector<pid_t>{*pid});
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].job_name, "fail");
  EXPECT_EQ(done[0].pid, *pid);
  EXPECT_EQ(done[0].exit.state, JobState::kFailed);
  EXPECT_EQ(done[0].exit.exit_code, 3);
  EXPECT_EQ(done[0].exit.reason, "exit code 3: err") << "with the last line of its log";
  EXPECT_GT(done[0].ended_ms, 0);
  EXPECT_EQ(read(dir_ + "/fail.log"), "hi\nerr\n");
  EXPECT_EQ(sup.running_count(), 0u);
}

TEST_F(SupervisorTest, SuccessfulJobIsOkAndStdinIsEmpty) {
  JobSupervisor sup(clock_);
  ASSERT_TRUE(sup.start(shell("ok", "cat; echo done")).ok());
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.state, JobState::kOk);
  EXPECT_EQ(read(dir_ + "/ok.log"), "done\n");
}

// colo stopped (kill -STOP) while its job ended: the end once was the time
// colo looked again, 15 s late.
TEST_F(SupervisorTest, AJobFoundEndedAfterALongGapEndsWhenItLastWroteNotWhenFound) {
  JobSupervisor sup(clock_);
  ASSERT_TRUE(sup.start(shell("quick", "sleep 0.3; echo done")).ok());
  EXPECT_TRUE(sup.poll().empty());
  const UnixMillis before = clock_.now_ms();
  clock_.sleep_for_ms(JobSupervisor::kLateReapMs + 1500);  // "stopped"
  std::vector<FinishedJob> done = sup.poll();
  const UnixMillis found = clock_.now_ms();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.state, JobState::kOk);
  EXPECT_GE(done[0].ended_ms, before);
  EXPECT_LT(done[0].ended_ms, before + 1500) << "found at +" << found - before << " ms";
}

TEST_F(SupervisorTest, WithoutACgroupTheProcessGroupEndsWithTheJob) {
  // A grandchild once outlived a job that exited normally.
  const std::string marker = "sleep 300.3" + std::to_string(getpid());
  JobSupervisor sup(clock_);
  ASSERT_TRUE(sup.start(shell("parent", marker + " & sleep 0.1")).ok());
  auto done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.state, JobState::kOk);
  clock_.sleep_for_ms(50);
  // "[.]": the pattern must not match the shell that runs pgrep.
  EXPECT_NE(
      std::system(("pgrep -f 'sleep 300[.]3" + std::to_string(getpid()) + "' >/dev/null").c_str()),
      0)
      << "the grandchild outlived the job";
  EXPECT_FALSE(done[0].exit.usage.cpu_ms.has_value());  // no cgroup, nothing measured
}

TEST_F(SupervisorTest, MissingProgramFailsToStartAndSaysWhich) {
  JobSupervisor sup(clock_);
  Result<pid_t> pid = sup.start(request("a", {"colo-no-such-program-xyz", "--flag"}));
  ASSERT_FALSE(pid.ok());
  EXPECT_THAT(pid.error().message(), HasSubstr("job 'a'"));
  EXPECT_THAT(pid.error().message(), HasSubstr("cannot start 'colo-no-such-program-xyz'"));
  EXPECT_THAT(pid.error().message(), HasSubstr("No such file or directory"));
  EXPECT_EQ(sup.running_count(), 0u);
  EXPECT_THAT(read(dir_ + "/a.log"), HasSubstr("colo-no-such-program-xyz"));
  // The failed child was reaped: no zombie is left behind.
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
}

TEST_F(SupervisorTest, NotExecutableAndMissingWorkdirAreStartErrors) {
  JobSupervisor sup(clock_);
  std::ofstream(dir_ + "/script.sh") << "echo hi\n";
  Result<pid_t> pid = sup.start(request("a", {dir_ + "/script.sh"}));
  ASSERT_FALSE(pid.ok());
  EXPECT_THAT(pid.error().message(), HasSubstr("Permission denied"));

  LaunchRequest r = request("b", {"/bin/true"});
  r.working_dir = dir_ + "/missing";
  pid = sup.start(r);
  ASSERT_FALSE(pid.ok());
  EXPECT_THAT(pid.error().message(), HasSubstr("cannot change to working directory"));
  EXPECT_THAT(pid.error().message(), HasSubstr(dir_ + "/missing"));

  EXPECT_FALSE(sup.start(request("c", {})).ok());
  LaunchRequest bad_log = request("d", {"/bin/true"});
  bad_log.log_path = dir_ + "/no/such/dir/d.log";
  pid = sup.start(bad_log);
  ASSERT_FALSE(pid.ok());
  EXPECT_THAT(pid.error().message(), HasSubstr("cannot open log file"));
}

TEST_F(SupervisorTest, EnvironmentAndWorkingDirectoryAreApplied) {
  JobSupervisor sup(clock_);
  ASSERT_EQ(mkdir((dir_ + "/work").c_str(), 0755), 0);
  setenv("COLO_TEST_INHERITED", "from-colo", 1);
  setenv("COLO_TEST_OVERRIDDEN", "old", 1);
  LaunchRequest r = shell("env", "echo \"$COLO_TEST_INHERITED $COLO_TEST_OVERRIDDEN $EXTRA\"; pwd");
  r.working_dir = dir_ + "/work";
  r.env = {{"COLO_TEST_OVERRIDDEN", "new"}, {"EXTRA", "x y"}};
  ASSERT_TRUE(sup.start(r).ok());
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.state, JobState::kOk);
  char* real = realpath((dir_ + "/work").c_str(), nullptr);
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(read(dir_ + "/env.log"), "from-colo new x y\n" + std::string(real) + "\n");
  free(real);  // NOLINT(cppcoreguidelines-no-malloc): realpath's buffer
  unsetenv("COLO_TEST_INHERITED");
  unsetenv("COLO_TEST_OVERRIDDEN");
}

TEST_F(SupervisorTest, PathFromTheJobEnvironmentIsUsedToFindTheProgram) {
  JobSupervisor sup(clock_);
  const std::string bin = dir_ + "/bin";
  ASSERT_EQ(mkdir(bin.c_str(), 0755), 0);
  std::ofstream(bin + "/colo-test-tool") << "#!/bin/sh\necho tool ran\n";
  chmod((bin + "/colo-test-tool").c_str(), 0755);
  LaunchRequest r = request("p", {"colo-test-tool"});
  r.env = {{"PATH", bin + ":/usr/bin:/bin"}};
  Result<pid_t> pid = sup.start(r);
  ASSERT_TRUE(pid.ok()) << pid.error().message();
  ASSERT_EQ(wait_for(sup, 1).size(), 1u);
  EXPECT_EQ(read(dir_ + "/p.log"), "tool ran\n");
}

// The program is found as execvp finds it (the child cannot call execvp: it
// shares colo's memory, and execvp reads colo's environment): a file on PATH
// that may not be executed is passed over for a later one, a file the kernel
// cannot execute (no #!) is run by /bin/sh, and colo's own environment is
// left as it was.
TEST_F(SupervisorTest, TheProgramIsFoundAsExecvpFindsItAndColosEnvironmentStays) {
  JobSupervisor sup(clock_);
  const std::string first = dir_ + "/first";
  const std::string second = dir_ + "/second";
  ASSERT_EQ(mkdir(first.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(second.c_str(), 0755), 0);
  std::ofstream(first + "/colo-test-tool") << "#!/bin/sh\necho not me\n";  // not executable
  std::ofstream(second + "/colo-test-tool") << "echo \"no shebang, args $1 $2\"\n";
  chmod((second + "/colo-test-tool").c_str(), 0755);
  char** environ_before = environ;
  const std::string path_before = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  LaunchRequest r = request("p", {"colo-test-tool", "a", "b c"});
  r.env = {{"PATH", first + ":" + second + ":/usr/bin:/bin"}};
  Result<pid_t> pid = sup.start(r);
  ASSERT_TRUE(pid.ok()) << pid.error().message();
  EXPECT_EQ(environ, environ_before);
  EXPECT_EQ(std::getenv("PATH") != nullptr ? std::getenv("PATH") : "", path_before);
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.state, JobState::kOk) << read(dir_ + "/p.log");
  EXPECT_EQ(read(dir_ + "/p.log"), "no shebang, args a b c\n");

  // Only a file that may not be executed: that is the error, as execvp says it.
  LaunchRequest denied = request("q", {"colo-test-tool"});
  denied.env = {{"PATH", first + ":" + dir_ + "/missing"}};
  pid = sup.start(denied);
  ASSERT_FALSE(pid.ok());
  EXPECT_THAT(pid.error().message(), HasSubstr("Permission denied"));
}

TEST_F(SupervisorTest, ChildRunsInItsOwnProcessGroup) {
  JobSupervisor sup(clock_);
  Result<pid_t> pid = sup.start(request("s", {"sleep", "30"}));
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(getpgid(*pid), *pid);
  EXPECT_NE(getpgid(*pid), getpgrp());
}

TEST_F(SupervisorTest, StopAllCancelsWithTerm) {
  JobSupervisor sup(clock_);
  ASSERT_TRUE(sup.start(request("s1", {"sleep", "30"})).ok());
  ASSERT_TRUE(sup.start(request("s2", {"sleep", "30"})).ok());
  EXPECT_TRUE(sup.poll().empty());
  const int64_t t0 = clock_.monotonic_ms();
  sup.stop_all(200);
  std::vector<FinishedJob> done = wait_for(sup, 2);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_LT(clock_.monotonic_ms() - t0, 1000);
  for (const FinishedJob& f : done) {
    EXPECT_EQ(f.exit.state, JobState::kCancelled);
    EXPECT_EQ(f.exit.reason, "stopped by colo (SIGTERM)");
  }
}

TEST_F(SupervisorTest, ChildIgnoringTermIsKilledAfterTheGracePeriod) {
  JobSupervisor sup(clock_);
  const std::string ready = dir_ + "/ready";
  Result<pid_t> pid = sup.start(shell("stubborn", "trap '' TERM; echo > " + ready + "; sleep 30"));
  ASSERT_TRUE(pid.ok());
  ASSERT_FALSE(wait_for_file(ready).empty());
  const int64_t t0 = clock_.monotonic_ms();
  sup.stop(*pid, 200);
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  const int64_t took = clock_.monotonic_ms() - t0;
  EXPECT_GE(took, 200);
  EXPECT_LT(took, 1000);
  EXPECT_EQ(done[0].exit.state, JobState::kCancelled);
  EXPECT_EQ(done[0].exit.signal, SIGKILL);
  EXPECT_EQ(done[0].exit.reason, "stopped by colo (SIGKILL after grace period)");
}

TEST_F(SupervisorTest, StopOnlyStopsThatJobEvenAmongNamesakes) {
  JobSupervisor sup(clock_);
  ASSERT_TRUE(sup.start(request("same", {"sleep", "30"})).ok());
  Result<pid_t> stopped = sup.start(request("same", {"sleep", "30"}));
  ASSERT_TRUE(stopped.ok());
  sup.stop(*stopped, 200);
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].pid, *stopped);
  EXPECT_EQ(done[0].exit.state, JobState::kCancelled);
  EXPECT_EQ(sup.running_count(), 1u);
}

TEST_F(SupervisorTest, BaseEnvironmentReplacesColosOwn) {
  setenv("COLO_SUPERVISOR_TEST_OWN", "colo", 1);
  JobSupervisor sup(clock_);
  LaunchRequest r = shell("env", "echo own=$COLO_SUPERVISOR_TEST_OWN base=$BASE job=$JOB");
  r.base_env =
      std::make_shared<const std::map<std::string, std::string>>(std::map<std::string, std::string>{
          {"BASE", "b"}, {"JOB", "overridden"}, {"PATH", "/usr/bin:/bin"}});
  r.env["JOB"] = "j";
  ASSERT_TRUE(sup.start(r).ok());
  ASSERT_EQ(wait_for(sup, 1).size(), 1u);
  EXPECT_EQ(read(r.log_path), "own= base=b job=j\n");
  unsetenv("COLO_SUPERVISOR_TEST_OWN");
}

TEST_F(SupervisorTest, RunsAsAnotherUserWhenRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to change identity";
  Result<RunAs> nobody = run_as_user(65534);
  if (!nobody.ok()) GTEST_SKIP() << "no user 65534 here: " << nobody.error().message();
  JobSupervisor sup(clock_);
  LaunchRequest r = shell("as", "echo $(id -u) $(id -g) $HOME $USER");
  r.working_dir = "/";
  r.run_as = *nobody;
  ASSERT_TRUE(sup.start(r).ok());
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.state, JobState::kOk) << done[0].exit.reason;
  EXPECT_EQ(read(r.log_path),
            fmt::format("65534 {} {} {}\n", nobody->gid, nobody->home, nobody->user));
  struct stat st {};
  ASSERT_EQ(::stat(r.log_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u) << "the log is given to whom the job runs as";
}

// Issue 35, item 10: a root service opened a shared loader's log, in a
// directory its user owns, with truncate and following links. Whatever the
// user placed at the path is left as it is, and colo is not blocked.
TEST_F(SupervisorTest, ALinkAFifoOrAnotherNameAtTheLogPathIsNeverFollowedOrEmptied) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious\n";
  JobSupervisor sup(clock_);
  LaunchRequest r = shell("log", "echo fresh");
  ASSERT_EQ(::symlink(victim.c_str(), r.log_path.c_str()), 0);
  Result<pid_t> linked = sup.start(r);
  ASSERT_FALSE(linked.ok());
  EXPECT_THAT(linked.error().message(), HasSubstr("symbolic link, which colo does not follow"));
  ASSERT_EQ(::unlink(r.log_path.c_str()), 0);
  ASSERT_EQ(::link(victim.c_str(), r.log_path.c_str()), 0);
  Result<pid_t> hard = sup.start(r);
  ASSERT_FALSE(hard.ok());
  EXPECT_THAT(hard.error().message(), HasSubstr("not a plain file of its own"));
  EXPECT_EQ(read(victim), "precious\n");
  ASSERT_EQ(::unlink(r.log_path.c_str()), 0);
  ASSERT_EQ(::mkfifo(r.log_path.c_str(), 0600), 0);
  EXPECT_FALSE(sup.start(r).ok()) << "a FIFO with no reader is refused, not waited on";
  ASSERT_EQ(::unlink(r.log_path.c_str()), 0);
  // Its own log from an earlier start is emptied, as before.
  std::ofstream(r.log_path) << "an earlier start\n";
  ASSERT_TRUE(sup.start(r).ok());
  ASSERT_EQ(wait_for(sup, 1, 10'000).size(), 1u);
  EXPECT_EQ(read(r.log_path), "fresh\n");
}

TEST(RunAs, UnknownUidIsAnError) {
  Result<RunAs> who = run_as_user(4'000'000'001u);
  ASSERT_FALSE(who.ok());
  EXPECT_THAT(who.error().message(), HasSubstr("4000000001"));
  Result<RunAs> self = run_as_user(getuid());
  ASSERT_TRUE(self.ok()) << self.error().message();
  EXPECT_EQ(self->uid, getuid());
  EXPECT_FALSE(self->user.empty());
}

TEST_F(SupervisorTest, JobKilledBySomeoneElseIsKilled) {
  JobSupervisor sup(clock_);
  Result<pid_t> pid = sup.start(request("victim", {"sleep", "30"}));
  ASSERT_TRUE(pid.ok());
  ASSERT_EQ(kill(*pid, SIGKILL), 0);
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.state, JobState::kKilled);
  EXPECT_EQ(done[0].exit.reason, "killed by signal 9 (SIGKILL)");
}

TEST_F(SupervisorTest, OutOfMemoryInTheLogAndExitOneIsOom) {
  JobSupervisor sup(clock_);
  ASSERT_TRUE(sup.start(shell("oom",
                              "echo 'epoch 1'; echo 'torch.OutOfMemoryError: CUDA out of "
                              "memory. Tried to allocate 20.00 MiB' >&2; exit 1"))
                  .ok());
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.state, JobState::kOutOfMemory);
  EXPECT_EQ(done[0].exit.exit_code, 1);
  EXPECT_EQ(done[0].exit.reason,
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB");
}

TEST_F(SupervisorTest, StopKillsGrandchildrenInTheGroup) {
  JobSupervisor sup(clock_);
  const std::string pid_file = dir_ + "/grandchild.pid";
  // The grandchild ignores TERM, so only the KILL to the group can end it.
  ASSERT_TRUE(
      sup.start(shell("tree", "(trap '' TERM; exec sleep 30) & echo $! > " + pid_file + "; wait"))
          .ok());
  std::string text = wait_for_file(pid_file);
  ASSERT_FALSE(text.empty());
  const pid_t grandchild = std::stoi(text);
  EXPECT_FALSE(is_dead(grandchild));
  sup.stop_all(200);
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.state, JobState::kCancelled);
  bool dead = false;
  for (int i = 0; i < 100 && !dead; ++i) {
    dead = is_dead(grandchild);
    if (!dead) clock_.sleep_for_ms(5);
  }
  EXPECT_TRUE(dead) << "grandchild " << grandchild << " survived the stop";
}

TEST_F(SupervisorTest, DestructorKillsAndReapsRunningJobs) {
  pid_t pid = 0;
  {
    JobSupervisor sup(clock_);
    Result<pid_t> started = sup.start(request("s", {"sleep", "30"}));
    ASSERT_TRUE(started.ok());
    pid = *started;
  }
  // Reaped by the destructor: it is no longer our child.
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST_F(SupervisorTest, BlockedSignalsInColoAreNotInheritedByJobs) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old), 0);
  JobSupervisor sup(clock_);
  Result<pid_t> pid = sup.start(request("s", {"sleep", "30"}));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(pid.ok());
  sup.stop_all(5000);
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.reason, "stopped by colo (SIGTERM)");
}

TEST_F(SupervisorTest, SignalsIgnoredByColoAreDefaultInJobs) {
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGTERM, &ignore, &old), 0);
  JobSupervisor sup(clock_);
  Result<pid_t> pid = sup.start(request("s", {"sleep", "30"}));
  sigaction(SIGTERM, &old, nullptr);
  ASSERT_TRUE(pid.ok());
  sup.stop_all(5000);
  std::vector<FinishedJob> done = wait_for(sup, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].exit.reason, "stopped by colo (SIGTERM)");
}

}  // namespace
}  // namespace colo
