#include "run/run_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "gpu/sim_backend.h"
#include "run/leftovers.h"
#include "store/testing/fake_runs.h"

extern char** environ;

namespace colo {
namespace {

using ::testing::HasSubstr;

// A mechanism that records what was done to it and fails prepare() when told.
class FakeMechanism final : public Mechanism {
 public:
  MechanismKind kind() const override { return MechanismKind::kNaive; }
  int max_jobs_per_device() const override { return 48; }
  Status prepare(const std::vector<DeviceInfo>&) override {
    ++prepared;
    if (fail_prepare) return Error("the fake mechanism refuses to start");
    return OkStatus();
  }
  Result<Environment> environment_for(const Placement&) override { return Environment{}; }
  Status health_check() override { return OkStatus(); }
  Status teardown() override {
    ++torn_down;
    return OkStatus();
  }
  bool fail_prepare = false;
  int prepared = 0;
  int torn_down = 0;
};

class RunSessionTest : public ::testing::Test {
 protected:
  RunSessionTest() : backend_(std::move(SimBackend::create("H100", 2, clock_)).value()) {
    auto store = RunStore::open(file("colo.db"));
    EXPECT_TRUE(store.ok()) << store.error().message();
    store_ = std::move(store).value();
    options_.locks.dir = file("locks");
    options_.state_dir = file("state");
    options_.command_line = "colo run test.toml";
    options_.cgroup_parent_override = "off";
    options_.store_retry_ms = 0;
    mechanism_options_.state_dir = file("state/mps");
    mechanism_options_.mig_state_dir = file("state/mig");
  }

  std::string file(const std::string& name) const { return dir_.path() + "/" + name; }

  SessionContext context(RunStore& store) {
    return SessionContext{clock_, *backend_, store, mechanism_, mechanism_options_, out_, stops_};
  }

  // Whether the GPUs are free again: another colo could take them at once.
  bool gpus_free() {
    Result<std::vector<DeviceInfo>> devices = backend_->devices();
    EXPECT_TRUE(devices.ok());
    GpuLockOptions lock;
    lock.dir = options_.locks.dir;
    lock.wait = false;
    return GpuLocks::acquire(*devices, lock, clock_).ok();
  }

  std::vector<RunRow> runs() {
    Result<std::vector<RunRow>> rows = store_->list_runs(10);
    EXPECT_TRUE(rows.ok());
    return rows.ok() ? *rows : std::vector<RunRow>{};
  }

  // A process carrying the run's token in a session of its own (it escaped
  // its job's process group), as a job's daemon would.
  static pid_t start_escapee(const std::string& token) {
    std::string env = std::string(kRunTokenEnv) + "=" + token;
    std::array<char*, 2> envp = {env.data(), nullptr};
    std::array<const char*, 4> argv = {"/bin/sh", "-c", "exec sleep 60", nullptr};
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    pid_t pid = 0;
    EXPECT_EQ(
        posix_spawn(&pid, "/bin/sh", nullptr, &attr, const_cast<char**>(argv.data()), envp.data()),
        0);
    posix_spawnattr_destroy(&attr);
    // Until the shell has become `sleep`: while it execs, its environment
    // cannot be read, and on a loaded machine close() may look just then.
    for (int i = 0; i < 100; ++i) {
      std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
      std::string first;
      std::getline(cmdline, first, '\0');
      if (first == "sleep") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pid;
  }

  // Whether `pid` (a child of this test) ended within a few seconds.
  static bool ended(pid_t pid) {
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return false;
  }

  testing::TempDir dir_{"colo_session_test"};
  SystemClock clock_;
  std::unique_ptr<SimBackend> backend_;
  std::unique_ptr<RunStore> store_;
  FakeMechanism mechanism_;
  MechanismOptions mechanism_options_;
  SessionOptions options_;
  std::ostringstream out_;
  std::atomic<int> stops_{0};
};

TEST_F(RunSessionTest, OpensAndClosesARun) {
  RunSession session(context(*store_), options_);
  ASSERT_TRUE(session.open().ok()) << out_.str();
  EXPECT_EQ(session.devices().size(), 2U);
  EXPECT_GT(session.run_id(), 0);
  EXPECT_EQ(mechanism_.prepared, 1);
  EXPECT_FALSE(gpus_free());
  ASSERT_TRUE(session.close(RunState::kOk).ok());
  EXPECT_EQ(mechanism_.torn_down, 1);
  EXPECT_TRUE(gpus_free());
  ASSERT_EQ(runs().size(), 1U);
  EXPECT_EQ(runs()[0].state, RunState::kOk);
  EXPECT_TRUE(session.close(RunState::kFailed).ok());  // idempotent
  EXPECT_EQ(mechanism_.torn_down, 1);
  EXPECT_EQ(runs()[0].state, RunState::kOk);
}

TEST_F(RunSessionTest, NoSuchGpuLeavesNothingTakenOrRecorded) {
  options_.only_devices = {7};
  RunSession session(context(*store_), options_);
  Status s = session.open();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message(), HasSubstr("there is no GPU 7"));
  EXPECT_TRUE(session.closed());
  EXPECT_TRUE(runs().empty());
  EXPECT_EQ(mechanism_.prepared, 0);
  EXPECT_EQ(mechanism_.torn_down, 0);
  EXPECT_TRUE(gpus_free());
}

TEST_F(RunSessionTest, GpusHeldByAnotherColoAreRefusedWithoutWaiting) {
  Result<std::vector<DeviceInfo>> devices = backend_->devices();
  GpuLockOptions lock;
  lock.dir = options_.locks.dir;
  auto held = GpuLocks::acquire(*devices, lock, clock_);
  ASSERT_TRUE(held.ok());
  options_.locks.wait = false;
  RunSession session(context(*store_), options_);
  ASSERT_FALSE(session.open().ok());
  EXPECT_TRUE(runs().empty());
  EXPECT_EQ(mechanism_.prepared, 0);
}

TEST_F(RunSessionTest, AStoreThatCannotRecordTheRunReleasesTheGpus) {
  auto reader = RunStore::open_read_only(file("colo.db"));
  ASSERT_TRUE(reader.ok()) << reader.error().message();
  RunSession session(context(**reader), options_);
  ASSERT_FALSE(session.open().ok());
  EXPECT_TRUE(session.closed());
  EXPECT_EQ(mechanism_.prepared, 0);
  EXPECT_TRUE(gpus_free());
  EXPECT_TRUE(runs().empty());
}

TEST_F(RunSessionTest, AMechanismThatCannotStartEndsTheRunFailedAndIsTornDown) {
  mechanism_.fail_prepare = true;
  RunSession session(context(*store_), options_);
  Status s = session.open();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message(), HasSubstr("naive mechanism could not start"));
  EXPECT_EQ(mechanism_.torn_down, 1);
  EXPECT_TRUE(gpus_free());
  ASSERT_EQ(runs().size(), 1U);
  EXPECT_EQ(runs()[0].state, RunState::kFailed);
}

TEST_F(RunSessionTest, CloseStopsWhatTheJobsLeftRunning) {
  RunSession session(context(*store_), options_);
  ASSERT_TRUE(session.open().ok());
  const pid_t escapee = start_escapee(session.token());
  const pid_t stranger = start_escapee("someone-else");
  ASSERT_TRUE(session.close(RunState::kCancelled).ok());
  EXPECT_TRUE(ended(escapee));
  EXPECT_FALSE(ended(stranger));  // not the run's: left alone (then killed by ended())
  EXPECT_THAT(out_.str(), HasSubstr("stopped 1 processes the jobs left running"));
  EXPECT_EQ(runs()[0].state, RunState::kCancelled);
}

TEST_F(RunSessionTest, ASessionLeftWithoutCloseEndsFailed) {
  {
    RunSession session(context(*store_), options_);
    ASSERT_TRUE(session.open().ok());
  }
  EXPECT_EQ(mechanism_.torn_down, 1);
  EXPECT_TRUE(gpus_free());
  ASSERT_EQ(runs().size(), 1U);
  EXPECT_EQ(runs()[0].state, RunState::kFailed);
}

}  // namespace
}  // namespace colo
