// Unit tests of the sharing mechanisms over fake seams, and of the real
// process plumbing (run_program, ProcFsProcessFinder) with ordinary programs.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <vector>

#include "common/names.h"
#include "common/paths.h"
#include "sharing/make_mechanism.h"
#include "sharing/mechanism.h"
#include "sharing/mps_control.h"
#include "sharing/mps_daemon.h"
#include "sharing/mps_mechanism.h"
#include "sharing/plain_sharing.h"
#include "sharing/process_finder.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// A fresh directory under /tmp, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/colo-sharing-test-XXXXXX";
    path_ = mkdtemp(name);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<DeviceInfo> two_devices() {
  DeviceInfo a;
  a.index = 0;
  a.name = "NVIDIA H200";
  a.uuid = "GPU-aaaa";
  DeviceInfo b = a;
  b.index = 1;
  b.uuid = "GPU-bbbb";
  return {a, b};
}

// ---- names -----------------------------------------------------------------

TEST(MechanismNames, RoundTrip) {
  for (MechanismKind kind : {MechanismKind::kExclusive, MechanismKind::kNaive, MechanismKind::kMps,
                             MechanismKind::kMig}) {
    Result<MechanismKind> parsed = parse_mechanism(to_string(kind));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_EQ(to_string(MechanismKind::kMps), "mps");
}

TEST(MechanismNames, UnknownNameListsValidOnes) {
  Result<MechanismKind> parsed = parse_mechanism("mig-parted");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error().message(), HasSubstr("'mig-parted'"));
  EXPECT_THAT(parsed.error().message(), HasSubstr("exclusive, naive, mps, mig"));
  EXPECT_FALSE(parse_mechanism("MPS ").ok());
}

// ---- exclusive and naive ----------------------------------------------------

TEST(PlainSharing, EnvironmentIsTheDeviceUuidOnly) {
  for (MechanismKind kind : {MechanismKind::kExclusive, MechanismKind::kNaive}) {
    Result<std::unique_ptr<Mechanism>> made = make_mechanism(kind, {});
    ASSERT_TRUE(made.ok());
    Mechanism& m = **made;
    EXPECT_EQ(m.kind(), kind);
    ASSERT_TRUE(m.prepare(two_devices()).ok());
    Placement p{"job", 1, 30, uint64_t{1} << 30};  // limits are ignored, not errors
    Result<Environment> env = m.environment_for(p);
    ASSERT_TRUE(env.ok()) << env.error().message();
    EXPECT_EQ(*env, (Environment{{"CUDA_VISIBLE_DEVICES", "GPU-bbbb"}}));
    EXPECT_TRUE(m.health_check().ok());
    EXPECT_TRUE(m.teardown().ok());
    EXPECT_TRUE(m.teardown().ok());
  }
}

TEST(PlainSharing, JobsPerDevice) {
  EXPECT_EQ((*make_mechanism(MechanismKind::kExclusive, {}))->max_jobs_per_device(), 1);
  EXPECT_GE((*make_mechanism(MechanismKind::kNaive, {}))->max_jobs_per_device(), 100);
}

// A run limited to some GPUs (--gpus 1) names them by index, not position.
TEST(PlainSharing, PlacementNamesTheGpuByItsIndex) {
  PlainSharing m(MechanismKind::kNaive);
  std::vector<DeviceInfo> devices = two_devices();
  ASSERT_TRUE(m.prepare({devices[1]}).ok());
  Result<Environment> env = m.environment_for({"j", devices[1].index, {}, {}});
  ASSERT_TRUE(env.ok()) << env.error().message();
  EXPECT_EQ(env->at("CUDA_VISIBLE_DEVICES"), devices[1].uuid);
  EXPECT_FALSE(m.environment_for({"j", devices[0].index, {}, {}}).ok());
}

TEST(PlainSharing, BadPlacementsAreErrors) {
  PlainSharing m(MechanismKind::kNaive);
  Result<Environment> early = m.environment_for({"early", 0, {}, {}});
  ASSERT_FALSE(early.ok());
  EXPECT_THAT(early.error().message(), HasSubstr("before prepare()"));
  std::vector<DeviceInfo> devices = two_devices();
  devices[0].uuid.clear();
  ASSERT_TRUE(m.prepare(devices).ok());
  Result<Environment> out_of_range = m.environment_for({"far", 2, {}, {}});
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_THAT(out_of_range.error().message(),
              HasSubstr("job 'far' is placed on GPU 2, which this run does not use"));
  Result<Environment> no_uuid = m.environment_for({"j", 0, {}, {}});
  ASSERT_FALSE(no_uuid.ok());
  EXPECT_THAT(no_uuid.error().message(), HasSubstr("no UUID"));
  EXPECT_FALSE(m.prepare({}).ok());
}

// ---- run_program / find_program --------------------------------------

TEST(RunProgram, PassesInputAndCollectsOutputAndStatus) {
  SystemClock clock;
  Result<CommandOutput> out =
      run_program({"sh", "-c", "cat; echo oops >&2; exit 3"}, {}, "hello\n", 5'000, clock);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->exit_status, 3);
  EXPECT_EQ(out->stdout_text, "hello\n");
  EXPECT_EQ(out->stderr_text, "oops\n");
}

TEST(RunProgram, AppliesEnvironmentChanges) {
  SystemClock clock;
  setenv("COLO_SHARING_TEST_DROP", "still here", 1);
  Result<CommandOutput> out = run_program(
      {"sh", "-c", "echo \"${COLO_SHARING_TEST_DROP-unset} $COLO_SHARING_TEST_ADD\""},
      {{"COLO_SHARING_TEST_DROP", ""}, {"COLO_SHARING_TEST_ADD", "added"}}, "", 5'000, clock);
  unsetenv("COLO_SHARING_TEST_DROP");
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->stdout_text, "unset added\n");
}

TEST(RunProgram, ReportsDeathBySignal) {
  SystemClock clock;
  Result<CommandOutput> out = run_program({"sh", "-c", "kill -9 $$"}, {}, "", 5'000, clock);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->exit_status, 128 + SIGKILL);
}

TEST(RunProgram, KillsProgramsThatRunTooLong) {
  SystemClock clock;
  const int64_t start = clock.monotonic_ms();
  Result<CommandOutput> out = run_program({"sh", "-c", "exec sleep 5"}, {}, "", 200, clock);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.error().message(), HasSubstr("did not finish within 200 ms"));
  EXPECT_LT(clock.monotonic_ms() - start, 2'000);
}

TEST(RunProgram, DoesNotWaitForBackgroundChildren) {
  SystemClock clock;
  const int64_t start = clock.monotonic_ms();
  Result<CommandOutput> out =
      run_program({"sh", "-c", "sleep 1 & echo started"}, {}, "", 5'000, clock);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->stdout_text, "started\n");
  EXPECT_LT(clock.monotonic_ms() - start, 900);
}

TEST(RunProgram, MissingProgramIsAClearError) {
  SystemClock clock;
  Result<CommandOutput> out = run_program({"colo-no-such-program-zz"}, {}, "", 1'000, clock);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.error().message(), HasSubstr("colo-no-such-program-zz not found on PATH"));
}

TEST(FindProgramOnPath, FirstExecutableWins) {
  TempDir a, b;
  auto make = [](const std::string& path, mode_t mode) {
    std::ofstream(path) << "#!/bin/sh\n";
    chmod(path.c_str(), mode);
  };
  make(a.path() + "/tool", 0644);  // not executable: skipped
  make(b.path() + "/tool", 0755);
  std::optional<std::string> found = find_program("tool", a.path() + ":" + b.path());
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, b.path() + "/tool");
  EXPECT_FALSE(find_program("tool", a.path()).has_value());
  EXPECT_TRUE(find_program(b.path() + "/tool", "").has_value());
  EXPECT_FALSE(find_program(a.path() + "/tool", "").has_value());
}

// ---- ProcFsProcessFinder ------------------------------------------------------

TEST(ProcFsProcessFinder, FindsByEnvironmentAndSignalsOnlyMatches) {
  const std::string mark = "COLO_SHARING_TEST_MARK=" + std::to_string(getpid());
  std::string sleep_path = *find_program("sleep", "/usr/bin:/bin");
  char arg0[] = "sleep";
  char arg1[] = "5";
  char* argv[] = {arg0, arg1, nullptr};
  std::string env_entry = mark;
  char* envp[] = {env_entry.data(), nullptr};
  pid_t child = 0;
  ASSERT_EQ(posix_spawn(&child, sleep_path.c_str(), nullptr, nullptr, argv, envp), 0);

  ProcFsProcessFinder finder;
  const std::string value = std::to_string(getpid());
  std::vector<ProcessInfo> found;
  for (int i = 0; i < 100 && found.empty(); ++i) {  // until exec has replaced the env
    found = finder.find_with_env("COLO_SHARING_TEST_MARK", value);
    if (found.empty()) usleep(10'000);
  }
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pid, child);
  EXPECT_EQ(found[0].comm, "sleep");
  EXPECT_TRUE(finder.is_alive(child));
  EXPECT_TRUE(finder.find_with_env("COLO_SHARING_TEST_MARK", value + "0").empty());

  Status refused = finder.send_signal(child, SIGKILL, "COLO_SHARING_TEST_MARK", "other");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("refusing to signal"));
  EXPECT_EQ(waitpid(child, nullptr, WNOHANG), 0);  // still running

  ASSERT_TRUE(finder.send_signal(child, SIGKILL, "COLO_SHARING_TEST_MARK", value).ok());
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(finder.is_alive(child));
}

// ---- MpsDaemon and MpsMechanism over fakes -----------------------------------

// A process table in memory. Processes leave on SIGKILL, and on SIGTERM
// unless they ignore it.
class FakeProcessFinder final : public ProcessFinder {
 public:
  struct Process {
    std::string comm;
    std::set<std::string> env;  // "NAME=value"
    bool ignores_term = false;
    uint64_t start = 0;  // ProcessInfo::start_ticks
  };

  std::vector<ProcessInfo> find_with_env(std::string_view name, std::string_view value) override {
    std::vector<ProcessInfo> found;
    const std::string entry = std::string(name) + "=" + std::string(value);
    for (const auto& [pid, p] : processes) {
      if (p.env.count(entry)) found.push_back({pid, p.comm, p.start});
    }
    return found;
  }
  bool is_alive(int pid) override { return processes.count(pid) > 0 || pid == getpid(); }
  Status send_signal(int pid, int sig, std::string_view name, std::string_view value) override {
    auto it = processes.find(pid);
    if (it == processes.end() ||
        !it->second.env.count(std::string(name) + "=" + std::string(value))) {
      refused.push_back(pid);
      return Error("refused");
    }
    signals.emplace_back(pid, sig);
    if (sig == SIGKILL || (sig == SIGTERM && !it->second.ignores_term)) processes.erase(it);
    return OkStatus();
  }

  std::map<int, Process> processes;
  std::vector<std::pair<int, int>> signals;
  std::vector<int> refused;
};

// Records what colo asks the control program; `quit` removes every process
// of the pipe dir named `nvidia-cuda-mps` from the fake table when quit_works.
class FakeMpsControl final : public MpsControl {
 public:
  explicit FakeMpsControl(FakeProcessFinder& finder) : finder_(finder) {}

  Result<CommandOutput> start_daemon(const Environment& env, bool multiuser) override {
    start_env = env;
    started_multiuser = multiuser;
    return start_result;
  }
  Result<CommandOutput> help() override { return CommandOutput{0, help_text, ""}; }
  Result<CommandOutput> run_command(const Environment& env, std::string_view input) override {
    commands.emplace_back(input);
    if (input == "quit\n" && quit_works) {
      const std::string entry =
          std::string(kMpsPipeDirectoryEnv) + "=" + env.at(kMpsPipeDirectoryEnv);
      std::erase_if(finder_.processes, [&](const auto& kv) {
        return kv.second.comm == "nvidia-cuda-mps" && kv.second.env.count(entry);
      });
      return CommandOutput{0, "", ""};
    }
    return CommandOutput{0, health_answer, ""};
  }

  Environment start_env;
  bool started_multiuser = false;
  std::string help_text = "  -d  daemon\n  -M  multi-user server\n";
  CommandOutput start_result{0, "", ""};
  std::string health_answer = "100.0\n";
  bool quit_works = true;
  std::vector<std::string> commands;

 private:
  FakeProcessFinder& finder_;
};

class MpsDaemonFakeTest : public ::testing::Test {
 protected:
  MpsDaemonOptions options() {
    MpsDaemonOptions o;
    o.state_dir = state_.path() + "/mps";
    o.visible_devices = "GPU-aaaa";
    return o;
  }
  bool state_dir_empty() {
    std::error_code ec;
    return std::filesystem::is_empty(state_.path() + "/mps", ec);
  }

  TempDir state_;
  FakeClock clock_;
  FakeProcessFinder finder_;
  FakeMpsControl control_{finder_};
};

TEST_F(MpsDaemonFakeTest, StartWritesOwnerRecordAndPrivateDirs) {
  Result<std::unique_ptr<MpsDaemon>> daemon =
      MpsDaemon::start(options(), control_, finder_, clock_);
  ASSERT_TRUE(daemon.ok()) << daemon.error().message();
  MpsDaemon& d = **daemon;
  EXPECT_EQ(d.pipe_dir(), d.dir() + "/pipe");
  EXPECT_EQ(control_.start_env.at(kMpsPipeDirectoryEnv), d.pipe_dir());
  EXPECT_EQ(control_.start_env.at(kMpsLogDirectoryEnv), d.log_dir());
  EXPECT_EQ(control_.start_env.at("CUDA_VISIBLE_DEVICES"), "GPU-aaaa");
  struct stat st {};
  ASSERT_EQ(stat(d.pipe_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  Result<MpsOwnerRecord> owner = read_owner_record(d.dir() + "/owner.json");
  ASSERT_TRUE(owner.ok()) << owner.error().message();
  EXPECT_EQ(owner->colo_pid, getpid());
  EXPECT_EQ(owner->pipe_dir, d.pipe_dir());
  EXPECT_EQ(owner->log_dir, d.log_dir());
  EXPECT_EQ(owner->hostname, host_name());
  EXPECT_EQ(owner->start_time_ms, clock_.now_ms());
  EXPECT_TRUE(d.health_check().ok());
  ASSERT_TRUE(d.stop().ok());
  EXPECT_EQ(control_.commands.back(), "quit\n");
  EXPECT_TRUE(state_dir_empty());
  EXPECT_TRUE(d.stop().ok());
}

TEST_F(MpsDaemonFakeTest, StopSignalsOnlyDaemonProcessesOfItsOwnPipeDir) {
  Result<std::unique_ptr<MpsDaemon>> daemon =
      MpsDaemon::start(options(), control_, finder_, clock_);
  ASSERT_TRUE(daemon.ok()) << daemon.error().message();
  const std::string ours = std::string(kMpsPipeDirectoryEnv) + "=" + (*daemon)->pipe_dir();
  const std::string theirs = std::string(kMpsPipeDirectoryEnv) + "=/tmp/nvidia-mps";
  finder_.processes[10] = {"nvidia-cuda-mps", {ours}, /*ignores_term=*/true};  // control daemon
  finder_.processes[11] = {"nvidia-cuda-mps", {ours}, false};                  // server
  finder_.processes[12] = {"python3", {ours}, false};                          // a client (job)
  finder_.processes[13] = {"nvidia-cuda-mps", {theirs}, false};  // someone else's daemon
  finder_.processes[14] = {"renamed", {ours}, false};            // named in the pid file
  finder_.processes[15] = {"nvidia-cuda-mps", {}, false};        // no env at all
  std::ofstream((*daemon)->pipe_dir() + "/nvidia-cuda-mps-control.pid") << "14\n";
  control_.quit_works = false;

  ASSERT_TRUE((*daemon)->stop().ok());
  EXPECT_EQ(control_.commands.back(), "quit\n");
  std::set<std::pair<int, int>> signals(finder_.signals.begin(), finder_.signals.end());
  EXPECT_EQ(signals, (std::set<std::pair<int, int>>{
                         {10, SIGTERM}, {11, SIGTERM}, {14, SIGTERM}, {10, SIGKILL}}));
  EXPECT_TRUE(finder_.refused.empty());
  EXPECT_TRUE(finder_.processes.count(12));
  EXPECT_TRUE(finder_.processes.count(13));
  EXPECT_TRUE(finder_.processes.count(15));
  EXPECT_TRUE(state_dir_empty());
}

TEST_F(MpsDaemonFakeTest, FailedLaunchIsReportedAndLeavesNothing) {
  control_.start_result = CommandOutput{1, "", "nvidia-cuda-mps-control: no devices\n"};
  Result<std::unique_ptr<MpsDaemon>> daemon =
      MpsDaemon::start(options(), control_, finder_, clock_);
  ASSERT_FALSE(daemon.ok());
  EXPECT_THAT(daemon.error().message(), HasSubstr("could not start the MPS control daemon"));
  EXPECT_THAT(daemon.error().message(),
              HasSubstr("exit status 1: nvidia-cuda-mps-control: no devices"));
  EXPECT_TRUE(control_.commands.empty());  // nothing to quit
  EXPECT_TRUE(state_dir_empty());
}

TEST_F(MpsDaemonFakeTest, DaemonThatNeverAnswersIsStoppedAndReported) {
  control_.health_answer = "Cannot find MPS control daemon process\n";
  MpsDaemonOptions o = options();
  o.start_timeout_ms = 1'000;
  Result<std::unique_ptr<MpsDaemon>> daemon = MpsDaemon::start(o, control_, finder_, clock_);
  ASSERT_FALSE(daemon.ok());
  EXPECT_THAT(daemon.error().message(), HasSubstr("did not answer within 1000 ms"));
  EXPECT_THAT(daemon.error().message(), HasSubstr("Cannot find MPS control daemon process"));
  EXPECT_EQ(control_.commands.back(), "quit\n");
  EXPECT_GT(control_.commands.size(), 5u);  // polled until the (fake) timeout
  EXPECT_TRUE(state_dir_empty());
}

TEST_F(MpsDaemonFakeTest, TooLongStateDirIsRejected) {
  MpsDaemonOptions o = options();
  o.state_dir = "/tmp/" + std::string(80, 'x');
  Result<std::unique_ptr<MpsDaemon>> daemon = MpsDaemon::start(o, control_, finder_, clock_);
  ASSERT_FALSE(daemon.ok());
  EXPECT_THAT(daemon.error().message(), HasSubstr("too long"));
  EXPECT_FALSE(std::filesystem::exists(o.state_dir));
}

TEST_F(MpsDaemonFakeTest, AdoptRefusesRecordsNamingOtherDirectories) {
  const std::string dir = state_.path() + "/mps/1-1";
  std::filesystem::create_directories(dir);
  MpsOwnerRecord record;
  record.colo_pid = 1;
  record.pipe_dir = "/tmp/nvidia-mps";
  record.log_dir = dir + "/log";
  ASSERT_TRUE(write_owner_record(dir + "/owner.json", record).ok());
  Result<std::unique_ptr<MpsDaemon>> adopted =
      MpsDaemon::adopt(dir, options(), control_, finder_, clock_);
  ASSERT_FALSE(adopted.ok());
  EXPECT_THAT(adopted.error().message(), HasSubstr("leaving it alone"));
  EXPECT_TRUE(std::filesystem::exists(dir));
}

TEST_F(MpsDaemonFakeTest, MechanismEnvironmentAndLifecycle) {
  auto finder = std::make_unique<FakeProcessFinder>();
  auto control = std::make_unique<FakeMpsControl>(*finder);
  FakeMpsControl* control_view = control.get();
  MpsDaemonOptions o = options();
  o.visible_devices = "ignored: prepare() sets it";
  MpsMechanism m(o, std::move(control), std::move(finder), clock_);
  EXPECT_EQ(m.max_jobs_per_device(), 48);
  EXPECT_FALSE(m.health_check().ok());
  EXPECT_FALSE(m.environment_for({"j", 0, {}, {}}).ok());

  ASSERT_TRUE(m.prepare(two_devices()).ok());
  EXPECT_FALSE(m.prepare(two_devices()).ok());
  EXPECT_EQ(control_view->start_env.at("CUDA_VISIBLE_DEVICES"), "GPU-aaaa,GPU-bbbb");
  const std::string pipe = m.daemon()->pipe_dir();

  Result<Environment> env = m.environment_for({"j", 1, 30, uint64_t{6} << 30});
  ASSERT_TRUE(env.ok()) << env.error().message();
  EXPECT_EQ(*env, (Environment{{"CUDA_MPS_PIPE_DIRECTORY", pipe},
                               {"CUDA_MPS_LOG_DIRECTORY", m.daemon()->log_dir()},
                               {"CUDA_VISIBLE_DEVICES", "GPU-bbbb"},
                               {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "30"},
                               {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=6144M"}}));
  Result<Environment> plain = m.environment_for({"k", 0, {}, {}});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->count("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 0u);
  EXPECT_EQ(plain->count("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), 0u);
  EXPECT_EQ(plain->at("CUDA_VISIBLE_DEVICES"), "GPU-aaaa");

  Result<Environment> bad_share = m.environment_for({"s", 0, 0, {}});
  ASSERT_FALSE(bad_share.ok());
  EXPECT_THAT(bad_share.error().message(), HasSubstr("sm_share must be 1-100"));
  EXPECT_FALSE(m.environment_for({"m", 0, {}, uint64_t{1000}}).ok());
  EXPECT_FALSE(m.environment_for({"d", 2, {}, {}}).ok());

  EXPECT_TRUE(m.health_check().ok());
  ASSERT_TRUE(m.teardown().ok());
  EXPECT_EQ(control_view->commands.back(), "quit\n");
  EXPECT_TRUE(m.teardown().ok());
  EXPECT_EQ(m.daemon(), nullptr);
  EXPECT_FALSE(std::filesystem::exists(pipe));
  EXPECT_FALSE(m.environment_for({"j", 0, {}, {}}).ok());
}

// Issue 56: an opportunistic client starts at below-normal priority with the
// thread percentage its placement chose (the smaller of that and its own
// sm_share); a normal one gets neither lever, and a job run outside MPS none.
TEST_F(MpsDaemonFakeTest, AnOpportunisticClientGetsBelowNormalPriorityAndItsThreadPercentage) {
  auto finder = std::make_unique<FakeProcessFinder>();
  auto control = std::make_unique<FakeMpsControl>(*finder);
  MpsMechanism m(options(), std::move(control), std::move(finder), clock_);
  ASSERT_TRUE(m.prepare(two_devices()).ok());
  struct Case {
    const char* what;
    bool opportunistic;
    std::optional<int> thread_pct;
    std::optional<int> sm_share_pct;
    bool outside_mps;
    std::optional<std::string> priority;  // CUDA_MPS_CLIENT_PRIORITY, absent: nullopt
    std::optional<std::string> threads;   // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
  };
  const std::vector<Case> cases = {
      {"normal", false, std::nullopt, std::nullopt, false, std::nullopt, std::nullopt},
      {"normal ignores the cap", false, 10, std::nullopt, false, std::nullopt, std::nullopt},
      {"opportunistic, no cap chosen", true, std::nullopt, std::nullopt, false, "1", std::nullopt},
      {"opportunistic, capped", true, 10, std::nullopt, false, "1", "10"},
      {"the job's own share is smaller", true, 25, 20, false, "1", "20"},
      {"the chosen cap is smaller", true, 10, 50, false, "1", "10"},
      {"outside MPS: no lever", true, 10, std::nullopt, true, std::nullopt, std::nullopt},
  };
  for (const Case& c : cases) {
    Placement p{"o", 0, c.sm_share_pct, {}};
    p.opportunistic = c.opportunistic;
    p.opportunistic_thread_pct = c.thread_pct;
    p.outside_mps = c.outside_mps;
    Result<Environment> env = m.environment_for(p);
    ASSERT_TRUE(env.ok()) << c.what << ": " << env.error().message();
    auto value = [&](const char* name) -> std::optional<std::string> {
      auto it = env->find(name);
      return it == env->end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    EXPECT_EQ(value("CUDA_MPS_CLIENT_PRIORITY"), c.priority) << c.what;
    EXPECT_EQ(value("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), c.threads) << c.what;
  }
  Placement bad{"o", 0, {}, {}};
  bad.opportunistic = true;
  bad.opportunistic_thread_pct = 0;
  Result<Environment> refused = m.environment_for(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("thread percentage must be 1-100"));
  ASSERT_TRUE(m.teardown().ok());
}

// MPS runs the servers of different users one after another, never
// together: a job of another user gets a daemon of that user's own, which
// that user can reach and no one else can list.
TEST_F(MpsDaemonFakeTest, AnotherUsersJobsGetAnMpsDaemonOfTheirOwn) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  ASSERT_EQ(::chmod(state_.path().c_str(), 0711), 0);
  auto finder = std::make_unique<FakeProcessFinder>();
  auto control = std::make_unique<FakeMpsControl>(*finder);
  FakeMpsControl* control_view = control.get();
  MpsMechanism m(options(), std::move(control), std::move(finder), clock_);
  ASSERT_TRUE(m.prepare(two_devices()).ok());
  const std::string own_pipe = m.daemon()->pipe_dir();

  Placement own{"mine", 0, {}, {}};
  own.user = ClientUser{::geteuid(), ::getegid(), {}};
  Result<Environment> mine = m.environment_for(own);
  ASSERT_TRUE(mine.ok()) << mine.error().message();
  EXPECT_EQ(mine->at(kMpsPipeDirectoryEnv), own_pipe) << "colo's own user: its own daemon";
  EXPECT_EQ(m.user_daemons(), 0u);

  Placement theirs{"theirs", 1, {}, uint64_t{2} << 30};
  theirs.user = ClientUser{65534, 65534, {}};
  Result<Environment> env = m.environment_for(theirs);
  ASSERT_TRUE(env.ok()) << env.error().message();
  const std::string pipe = env->at(kMpsPipeDirectoryEnv);
  EXPECT_NE(pipe, own_pipe);
  EXPECT_EQ(control_view->start_env.at(kMpsPipeDirectoryEnv), pipe) << "a daemon was started";
  EXPECT_EQ(control_view->start_env.at("CUDA_VISIBLE_DEVICES"), "GPU-aaaa,GPU-bbbb");
  EXPECT_EQ(env->at("CUDA_VISIBLE_DEVICES"), "GPU-bbbb");
  EXPECT_EQ(env->at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=2048M");
  struct stat st {};
  for (const std::string& dir : {pipe, env->at(kMpsLogDirectoryEnv)}) {
    ASSERT_EQ(::stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534u) << dir;
    EXPECT_EQ(st.st_mode & 07777, 0700u) << dir;
  }
  ASSERT_EQ(::stat(std::filesystem::path(pipe).parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u) << "others pass through, and cannot list";

  Result<Environment> again = m.environment_for(theirs);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->at(kMpsPipeDirectoryEnv), pipe) << "one daemon per user";
  EXPECT_EQ(m.user_daemons(), 1u);

  ASSERT_TRUE(m.teardown().ok());
  EXPECT_EQ(m.user_daemons(), 0u);
  EXPECT_FALSE(std::filesystem::exists(pipe));
  EXPECT_FALSE(std::filesystem::exists(own_pipe));
}

// Multi-user mode (issue 57): one daemon, started with -M, serves every
// user's jobs; its pipe directory is reached through one group and nothing
// else, and a user outside the group is told which directory stops them.
TEST_F(MpsDaemonFakeTest, AMultiUserDaemonServesEveryUserThroughItsGroupAlone) {
  ASSERT_EQ(::chmod(state_.path().c_str(), 0711), 0);
  const gid_t group = ::getegid();
  auto control = std::make_unique<FakeMpsControl>(finder_);
  FakeMpsControl* control_view = control.get();
  MpsDaemonOptions o = options();
  o.multiuser_group = group;
  MpsMechanism m(o, std::move(control), std::make_unique<FakeProcessFinder>(), clock_);
  EXPECT_FALSE(m.users_time_slice());
  ASSERT_TRUE(m.prepare(two_devices()).ok());
  EXPECT_TRUE(control_view->started_multiuser) << "-d -M";
  const std::string pipe = m.daemon()->pipe_dir();
  struct Dir {
    std::string path;
    mode_t mode;
  };
  for (const Dir& d : {Dir{m.daemon()->dir(), 0710}, Dir{pipe, 0750},
                       Dir{m.daemon()->log_dir(), 0710}, Dir{state_.path() + "/mps", 0711}}) {
    struct stat st {};
    ASSERT_EQ(::lstat(d.path.c_str(), &st), 0) << d.path;
    EXPECT_TRUE(S_ISDIR(st.st_mode)) << d.path;
    EXPECT_EQ(st.st_uid, ::geteuid()) << d.path;
    EXPECT_EQ(st.st_mode & 07777, d.mode) << d.path;
    if (d.mode != 0711) {
      EXPECT_EQ(st.st_gid, group) << d.path;
    }
  }

  struct Case {
    const char* name;
    ClientUser user;
    bool reaches;
  };
  const Case cases[] = {
      {"colo's own user", ClientUser{::geteuid(), ::getegid(), {}}, true},
      {"a member by primary group", ClientUser{65534, group, {}}, true},
      {"a member by a supplementary group", ClientUser{65533, 65533, {group}}, true},
      {"outside the group", ClientUser{65532, 65532, {}}, false},
  };
  for (const Case& c : cases) {
    Placement p{c.name, 1, {}, uint64_t{2} << 30};
    p.user = c.user;
    Result<Environment> env = m.environment_for(p);
    ASSERT_EQ(env.ok(), c.reaches) << c.name;
    if (!c.reaches) {
      EXPECT_THAT(env.error().message(), HasSubstr("user 65532 cannot enter " + m.daemon()->dir()));
      EXPECT_THAT(env.error().message(), HasSubstr("--mps-users separate"));
      continue;
    }
    EXPECT_EQ(env->at(kMpsPipeDirectoryEnv), pipe) << c.name << ": the one server";
    EXPECT_EQ(env->at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=2048M") << c.name;
  }
  EXPECT_EQ(m.user_daemons(), 0u) << "no daemon of anyone's own";
  ASSERT_TRUE(m.teardown().ok());
  EXPECT_FALSE(std::filesystem::exists(pipe));
}

TEST_F(MpsDaemonFakeTest, AUserWhoCannotReachThePipeDirectoryIsToldWhichDirectoryStopsThem) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  ASSERT_EQ(::chmod(state_.path().c_str(), 0700), 0);
  MpsMechanism m(options(), std::make_unique<FakeMpsControl>(finder_),
                 std::make_unique<FakeProcessFinder>(), clock_);
  ASSERT_TRUE(m.prepare(two_devices()).ok());
  Placement theirs{"theirs", 0, {}, {}};
  theirs.user = ClientUser{65534, 65534, {}};
  Result<Environment> env = m.environment_for(theirs);
  ASSERT_FALSE(env.ok());
  EXPECT_THAT(env.error().message(), HasSubstr("user 65534 cannot enter " + state_.path()));
  EXPECT_THAT(env.error().message(), HasSubstr("job 'theirs'"));
  EXPECT_EQ(m.user_daemons(), 0u);
  ASSERT_TRUE(m.teardown().ok());
}

TEST_F(MpsDaemonFakeTest, AServerThatDiedUnderItsClientsIsNamedAfterAJobFailure) {
  auto finder = std::make_unique<FakeProcessFinder>();
  FakeProcessFinder* table = finder.get();
  auto control = std::make_unique<FakeMpsControl>(*finder);
  FakeMpsControl* control_view = control.get();
  MpsMechanism m(options(), std::move(control), std::move(finder), clock_);
  ASSERT_TRUE(m.prepare(two_devices()).ok());
  const std::string ours = std::string(kMpsPipeDirectoryEnv) + "=" + m.daemon()->pipe_dir();
  table->processes[10] = {"nvidia-cuda-mps", {ours}, false};  // control daemon
  table->processes[11] = {"nvidia-cuda-mps", {ours}, false};  // server
  ASSERT_TRUE(m.health_check().ok());
  EXPECT_TRUE(m.check_after_job_failure().ok()) << "a job's own failure";

  table->processes.erase(11);
  Status dead = m.check_after_job_failure();
  ASSERT_FALSE(dead.ok());
  EXPECT_THAT(dead.error().message(), HasSubstr("MPS server (pid 11) is gone"));
  EXPECT_FALSE(m.check_after_job_failure().ok()) << "every job that failed with it";
  clock_.advance_ms(MpsMechanism::kDeathBlamedForMs + 1);
  EXPECT_TRUE(m.check_after_job_failure().ok()) << "a failure long after is the job's own";

  control_view->health_answer = "Cannot find MPS control daemon process\n";
  EXPECT_FALSE(m.check_after_job_failure().ok()) << "the control daemon no longer answers";
  ASSERT_TRUE(m.teardown().ok());
}

// The periodic check runs between the server's death and its client's exit:
// the death must still be named when the job's failure is seen.
TEST_F(MpsDaemonFakeTest, AServerDeathSeenByThePeriodicCheckIsStillNamedAtTheFailure) {
  auto finder = std::make_unique<FakeProcessFinder>();
  FakeProcessFinder* table = finder.get();
  auto control = std::make_unique<FakeMpsControl>(*finder);
  MpsMechanism m(options(), std::move(control), std::move(finder), clock_);
  ASSERT_TRUE(m.prepare(two_devices()).ok());
  const std::string ours = std::string(kMpsPipeDirectoryEnv) + "=" + m.daemon()->pipe_dir();
  table->processes[10] = {"nvidia-cuda-mps", {ours}, false, 100};  // control daemon
  table->processes[11] = {"nvidia-cuda-mps", {ours}, false, 200};  // server
  ASSERT_TRUE(m.health_check().ok());
  clock_.advance_ms(5'000);
  table->processes.erase(11);  // killed; the control daemon starts another
  table->processes[12] = {"nvidia-cuda-mps", {ours}, false, 300};
  ASSERT_TRUE(m.health_check().ok()) << "the control daemon still answers";
  clock_.advance_ms(3'000);
  Status dead = m.check_after_job_failure();
  ASSERT_FALSE(dead.ok());
  EXPECT_THAT(dead.error().message(), HasSubstr("MPS server (pid 11) is gone"));
  EXPECT_THAT(dead.error().message(), HasSubstr("server.log"));

  // The same pid, started again later, is another process: its predecessor died.
  ASSERT_TRUE(m.teardown().ok());
  ASSERT_TRUE(m.prepare(two_devices()).ok());
  const std::string again = std::string(kMpsPipeDirectoryEnv) + "=" + m.daemon()->pipe_dir();
  table->processes.clear();
  table->processes[20] = {"nvidia-cuda-mps", {again}, false, 400};
  ASSERT_TRUE(m.health_check().ok());
  EXPECT_TRUE(m.check_after_job_failure().ok()) << "a new daemon has no deaths behind it";
  table->processes[20].start = 500;
  EXPECT_FALSE(m.check_after_job_failure().ok());
  ASSERT_TRUE(m.teardown().ok());
}

}  // namespace
}  // namespace colo
