// MPS lifecycle tests against a fake control program: a shell script that
// starts a background "daemon" process carrying the inherited
// CUDA_MPS_PIPE_DIRECTORY, so the real ProcessMpsControl and
// ProcFsProcessFinder are exercised end to end.
#include "sharing/mps_daemon.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/names.h"
#include "sharing/make_mechanism.h"
#include "sharing/mechanism.h"
#include "sharing/mps_control.h"
#include "sharing/process_finder.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// The fake nvidia-cuda-mps-control. Modes: ok; ignore-quit (the daemon
// ignores quit and SIGTERM); fail-start (-d fails).
constexpr const char* kFakeControl = R"SH(#!/bin/sh
mode=@MODE@
pipe="$CUDA_MPS_PIPE_DIRECTORY"
pidfile="$pipe/nvidia-cuda-mps-control.pid"
case "$1" in
  -d)
    if [ "$mode" = fail-start ]; then echo "fake: cannot start: no GPU found" >&2; exit 1; fi
    if [ -z "$pipe" ] || [ ! -d "$pipe" ]; then echo "fake: no pipe dir" >&2; exit 2; fi
    printf '%s\n' "${CUDA_VISIBLE_DEVICES-unset}" > "$pipe/visible_devices"
    mkfifo "$pipe/fake.fifo" || exit 3
    "$0" serve </dev/null >/dev/null 2>&1 &
    echo $! > "$pidfile"
    exit 0 ;;
  serve)
    if [ "$mode" = ignore-quit ]; then trap '' TERM; fi
    exec 3<>"$pipe/fake.fifo"
    read -r line <&3
    exit 0 ;;
esac
if [ ! -f "$pidfile" ] || ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "fake: cannot find MPS control daemon process" >&2; exit 1
fi
while read -r cmd rest; do
  case "$cmd" in
    get_default_active_thread_percentage) echo 100.0 ;;
    quit) if [ "$mode" != ignore-quit ]; then echo quit > "$pipe/fake.fifo"; fi ;;
    *) echo "fake: unknown command $cmd" >&2; exit 1 ;;
  esac
done
exit 0
)SH";

class FakeMpsTest : public ::testing::Test {
 protected:
  FakeMpsTest() {
    char name[] = "/tmp/colo-mps-test-XXXXXX";
    root_ = mkdtemp(name);
    state_dir_ = root_ + "/state";
  }
  ~FakeMpsTest() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // Writes the fake control program in `mode` and returns its path. The name
  // stays within the 15 characters of /proc/PID/comm.
  std::string write_fake(const std::string& mode) {
    std::string script = kFakeControl;
    script.replace(script.find("@MODE@"), 6, mode);
    const std::string path = root_ + "/fake-mps-ctl";
    std::ofstream(path) << script;
    chmod(path.c_str(), 0755);
    return path;
  }

  MechanismOptions mechanism_options(const std::string& mode) {
    MechanismOptions o;
    o.state_dir = state_dir_;
    o.mps_control_program = write_fake(mode);
    o.mps_start_timeout_ms = 2'000;
    return o;
  }

  std::vector<ProcessInfo> users_of(const std::string& pipe_dir) {
    return finder_.find_with_env(kMpsPipeDirectoryEnv, pipe_dir);
  }

  bool state_dir_empty() {
    std::error_code ec;
    return std::filesystem::is_empty(state_dir_, ec);
  }

  // A pid that certainly belonged to a process that has exited.
  static int dead_pid() {
    pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, nullptr, 0);
    return child;
  }

  // Starts the fake daemon by hand in <state_dir>/<name>, as an earlier colo
  // with pid `owner_pid` on `host` would have, and returns its pipe dir.
  std::string start_daemon_by_hand(const std::string& name, int owner_pid, const std::string& host,
                                   MpsControl& control) {
    const std::string dir = state_dir_ + "/" + name;
    std::filesystem::create_directories(dir + "/pipe");
    std::filesystem::create_directories(dir + "/log");
    MpsOwnerRecord owner;
    owner.colo_pid = owner_pid;
    owner.hostname = host;
    owner.pipe_dir = dir + "/pipe";
    owner.log_dir = dir + "/log";
    EXPECT_TRUE(write_owner_record(dir + "/owner.json", owner).ok());
    Result<CommandOutput> started = control.start_daemon(
        {{kMpsPipeDirectoryEnv, owner.pipe_dir}, {kMpsLogDirectoryEnv, owner.log_dir}},
        /*multiuser=*/false);
    EXPECT_TRUE(started.ok() && started->exit_status == 0);
    return owner.pipe_dir;
  }

  std::string root_;
  std::string state_dir_;
  SystemClock clock_;
  ProcFsProcessFinder finder_;
};

TEST_F(FakeMpsTest, PrepareServeTeardown) {
  Result<std::unique_ptr<Mechanism>> made =
      make_mechanism(MechanismKind::kMps, mechanism_options("ok"));
  ASSERT_TRUE(made.ok());
  Mechanism& mps = **made;
  DeviceInfo gpu;
  gpu.uuid = "GPU-1234";
  ASSERT_TRUE(mps.prepare({gpu}).ok());

  Result<Environment> env = mps.environment_for({"job", 0, 50, uint64_t{512} << 20});
  ASSERT_TRUE(env.ok()) << env.error().message();
  const std::string pipe = env->at("CUDA_MPS_PIPE_DIRECTORY");
  EXPECT_EQ(pipe.rfind(state_dir_ + "/", 0), 0u);
  EXPECT_EQ(env->at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "50");
  EXPECT_EQ(env->at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=512M");
  EXPECT_EQ(env->at("CUDA_VISIBLE_DEVICES"), "GPU-1234");
  std::string daemon_devices;
  std::ifstream(pipe + "/visible_devices") >> daemon_devices;
  EXPECT_EQ(daemon_devices, "GPU-1234");

  std::vector<ProcessInfo> daemon = users_of(pipe);
  ASSERT_EQ(daemon.size(), 1u);
  EXPECT_EQ(daemon[0].comm, "fake-mps-ctl");
  EXPECT_TRUE(mps.health_check().ok());

  ASSERT_TRUE(mps.teardown().ok());
  EXPECT_TRUE(users_of(pipe).empty());
  EXPECT_FALSE(std::filesystem::exists(pipe));
  EXPECT_TRUE(state_dir_empty());
  EXPECT_TRUE(mps.teardown().ok());
  EXPECT_FALSE(mps.health_check().ok());
}

TEST_F(FakeMpsTest, DestructorStopsTheDaemon) {
  std::string pipe;
  {
    Result<std::unique_ptr<Mechanism>> made =
        make_mechanism(MechanismKind::kMps, mechanism_options("ok"));
    ASSERT_TRUE(made.ok());
    DeviceInfo gpu;
    gpu.uuid = "GPU-1";
    ASSERT_TRUE((*made)->prepare({gpu}).ok());
    pipe = (*made)->environment_for({"j", 0, {}, {}})->at("CUDA_MPS_PIPE_DIRECTORY");
    ASSERT_EQ(users_of(pipe).size(), 1u);
  }
  EXPECT_TRUE(users_of(pipe).empty());
  EXPECT_TRUE(state_dir_empty());
}

TEST_F(FakeMpsTest, DaemonIgnoringQuitAndSigtermIsKilled) {
  ProcessMpsControl control(write_fake("ignore-quit"), clock_, 2'000);
  MpsDaemonOptions options;
  options.state_dir = state_dir_;
  options.control_program = root_ + "/fake-mps-ctl";
  options.quit_timeout_ms = 200;
  options.term_timeout_ms = 200;
  Result<std::unique_ptr<MpsDaemon>> daemon = MpsDaemon::start(options, control, finder_, clock_);
  ASSERT_TRUE(daemon.ok()) << daemon.error().message();
  const std::string pipe = (*daemon)->pipe_dir();
  ASSERT_EQ(users_of(pipe).size(), 1u);
  usleep(100'000);  // let the fake install its SIGTERM trap
  ASSERT_TRUE((*daemon)->stop().ok());
  EXPECT_TRUE(users_of(pipe).empty());
  EXPECT_TRUE(state_dir_empty());
}

TEST_F(FakeMpsTest, FailedStartIsAClearErrorAndLeavesNoDirectory) {
  Result<std::unique_ptr<Mechanism>> made =
      make_mechanism(MechanismKind::kMps, mechanism_options("fail-start"));
  ASSERT_TRUE(made.ok());
  DeviceInfo gpu;
  gpu.uuid = "GPU-1";
  Status prepared = (*made)->prepare({gpu});
  ASSERT_FALSE(prepared.ok());
  EXPECT_THAT(prepared.error().message(), HasSubstr("could not start the MPS control daemon"));
  EXPECT_THAT(prepared.error().message(), HasSubstr("fake: cannot start: no GPU found"));
  EXPECT_TRUE(state_dir_empty());
  EXPECT_TRUE((*made)->teardown().ok());
}

TEST_F(FakeMpsTest, StaleDaemonOfDeadColoIsStoppedOthersAreLeftAlone) {
  MechanismOptions options = mechanism_options("ok");
  ProcessMpsControl control(options.mps_control_program, clock_, 2'000);
  const int dead = dead_pid();
  const std::string stale_pipe = start_daemon_by_hand("stale", dead, host_name(), control);
  const std::string live_pipe = start_daemon_by_hand("live", getpid(), host_name(), control);
  const std::string remote_pipe = start_daemon_by_hand("remote", dead, "another-host", control);
  ASSERT_EQ(users_of(stale_pipe).size(), 1u);

  Result<std::vector<std::string>> lines = cleanup_stale_mps_daemons(options);
  ASSERT_TRUE(lines.ok()) << lines.error().message();
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0], "stopped MPS daemon left by colo pid " + std::to_string(dead) +
                             " (pipe dir " + stale_pipe + ")");
  EXPECT_TRUE(users_of(stale_pipe).empty());
  EXPECT_FALSE(std::filesystem::exists(state_dir_ + "/stale"));
  EXPECT_EQ(users_of(live_pipe).size(), 1u);
  EXPECT_EQ(users_of(remote_pipe).size(), 1u);

  // Clean up the two left alone the way colo would.
  MpsDaemonOptions daemon_options;
  daemon_options.state_dir = state_dir_;
  daemon_options.control_program = options.mps_control_program;
  for (const char* name : {"live", "remote"}) {
    Result<std::unique_ptr<MpsDaemon>> adopted =
        MpsDaemon::adopt(state_dir_ + "/" + name, daemon_options, control, finder_, clock_);
    ASSERT_TRUE(adopted.ok()) << adopted.error().message();
    EXPECT_TRUE((*adopted)->stop().ok());
  }
  EXPECT_TRUE(users_of(live_pipe).empty());
  EXPECT_TRUE(users_of(remote_pipe).empty());
  EXPECT_TRUE(state_dir_empty());
}

TEST_F(FakeMpsTest, CleanupWithoutStateDirFindsNothing) {
  Result<std::vector<std::string>> lines = cleanup_stale_mps_daemons(mechanism_options("ok"));
  ASSERT_TRUE(lines.ok());
  EXPECT_TRUE(lines->empty());
}

}  // namespace
}  // namespace colo
