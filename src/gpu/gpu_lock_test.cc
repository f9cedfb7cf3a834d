#include "gpu/gpu_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

namespace colo {
namespace {

using ::testing::HasSubstr;

class GpuLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "gpulock.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    root_ = templ;
    options_.dir = root_ + "/locks";
    options_.command = "colo run a.toml";
    options_.poll_ms = 10;
  }
  void TearDown() override { std::system(("rm -rf '" + root_ + "'").c_str()); }

  static std::vector<DeviceInfo> gpus(std::vector<std::string> uuids) {
    std::vector<DeviceInfo> out;
    for (size_t i = 0; i < uuids.size(); ++i) {
      DeviceInfo d;
      d.index = static_cast<int>(i);
      d.uuid = uuids[i];
      out.push_back(d);
    }
    return out;
  }

  std::string root_;
  GpuLockOptions options_;
  SystemClock clock_;
};

TEST_F(GpuLockTest, ASecondOwnerIsRefusedWithTheHolderNamed) {
  auto first = GpuLocks::acquire(gpus({"GPU-a", "GPU-b"}), options_, clock_);
  ASSERT_TRUE(first.ok()) << first.error().message();
  struct stat st {};
  ASSERT_EQ(::stat(options_.dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);

  GpuLockOptions second = options_;
  second.wait = false;
  auto refused = GpuLocks::acquire(gpus({"GPU-x", "GPU-b"}), second, clock_);
  ASSERT_FALSE(refused.ok());
  const std::string& m = refused.error().message();
  EXPECT_THAT(m, HasSubstr("GPU 1 (GPU-b) is in use by colo pid " + std::to_string(getpid())));
  EXPECT_THAT(m, HasSubstr("colo run a.toml"));
  EXPECT_THAT(m, HasSubstr("--gpus"));
  // Nothing stays locked after a refusal: GPU-x is free.
  EXPECT_FALSE(GpuLocks::holder_of(options_.dir, "GPU-x"));
  ASSERT_TRUE(GpuLocks::holder_of(options_.dir, "GPU-b"));
  EXPECT_EQ(GpuLocks::holder_of(options_.dir, "GPU-b")->pid, getpid());

  first->reset();
  EXPECT_FALSE(GpuLocks::holder_of(options_.dir, "GPU-b")) << "released with its owner";
  EXPECT_TRUE(GpuLocks::acquire(gpus({"GPU-x", "GPU-b"}), second, clock_).ok());
}

TEST_F(GpuLockTest, AWaitingOwnerGetsTheGpuWhenTheHolderLeaves) {
  auto first = GpuLocks::acquire(gpus({"GPU-a"}), options_, clock_);
  ASSERT_TRUE(first.ok());
  std::vector<std::string> told;
  GpuLockOptions waiting = options_;
  waiting.command = "colo serve";
  waiting.on_wait = [&](const std::string& m) { told.push_back(m); };
  std::thread release([&] {
    clock_.sleep_for_ms(100);
    first->reset();
  });
  const int64_t t0 = clock_.monotonic_ms();
  auto second = GpuLocks::acquire(gpus({"GPU-a"}), waiting, clock_);
  release.join();
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_GE(clock_.monotonic_ms() - t0, 90);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_THAT(told[0], HasSubstr("waiting for GPU 0 (GPU-a), in use by colo pid"));
  ASSERT_TRUE(GpuLocks::holder_of(options_.dir, "GPU-a"));
  EXPECT_EQ(GpuLocks::holder_of(options_.dir, "GPU-a")->command, "colo serve");
}

TEST_F(GpuLockTest, AStopRequestEndsTheWait) {
  auto first = GpuLocks::acquire(gpus({"GPU-a"}), options_, clock_);
  ASSERT_TRUE(first.ok());
  std::atomic<int> stops{1};
  GpuLockOptions waiting = options_;
  waiting.stop_requests = &stops;
  auto second = GpuLocks::acquire(gpus({"GPU-a"}), waiting, clock_);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.error().message(), HasSubstr("stopped while waiting for GPU 0"));
}

TEST_F(GpuLockTest, AnotherProcessHoldsUntilItDies) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    auto held = GpuLocks::acquire(gpus({"GPU-a"}), options_, clock_);
    char c = held.ok() ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  std::optional<GpuLockHolder> holder = GpuLocks::holder_of(options_.dir, "GPU-a");
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, child);
  EXPECT_EQ(holder->uid, geteuid());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(GpuLocks::holder_of(options_.dir, "GPU-a")) << "the kernel released it";
  GpuLockOptions now = options_;
  now.wait = false;
  EXPECT_TRUE(GpuLocks::acquire(gpus({"GPU-a"}), now, clock_).ok());
  close(ready[0]);
  close(ready[1]);
}

// A machine lock (not a GPU's): one holder at a time, the waiter told whom
// for; its file made beforehand (as root colo does) is shared by every
// user, and a link in its place is never followed.
TEST_F(GpuLockTest, AMachineLockIsHeldByOneAndItsFileIsEveryones) {
  ASSERT_TRUE(create_machine_lock_file(options_.dir, "tool").ok());
  struct stat st {};
  ASSERT_EQ(stat((options_.dir + "/tool.lock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  ASSERT_TRUE(create_machine_lock_file(options_.dir, "tool").ok());  // kept as it is

  auto first = GpuLocks::acquire_one_per_machine("tool", "the tool", options_, clock_);
  ASSERT_TRUE(first.ok()) << first.error().message();
  GpuLockOptions now = options_;
  now.wait = false;
  auto second = GpuLocks::acquire_one_per_machine("tool", "the tool", now, clock_);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.error().message(),
              HasSubstr("the tool is in use by colo pid " + std::to_string(getpid())));
  first->reset();
  EXPECT_TRUE(GpuLocks::acquire_one_per_machine("tool", "the tool", now, clock_).ok());

  ASSERT_EQ(symlink((root_ + "/elsewhere").c_str(), (options_.dir + "/linked.lock").c_str()), 0);
  EXPECT_FALSE(create_machine_lock_file(options_.dir, "linked").ok());
  EXPECT_FALSE(GpuLocks::acquire_one_per_machine("linked", "the tool", options_, clock_).ok());
  EXPECT_FALSE(std::filesystem::exists(root_ + "/elsewhere"));
}

// Simulated GPUs are one COLO_HOME's: their locks stay in its state
// directory unless a directory is named, never in the machine's.
TEST(GpuLockDir, SimulatedGpusLockInTheStateDirectory) {
  unsetenv("COLO_LOCK_DIR");
  EXPECT_EQ(gpu_lock_dir("", true, "/home/a/.local/state/colo"),
            "/home/a/.local/state/colo/sim-locks");
  EXPECT_EQ(gpu_lock_dir("", false, "/home/a/.local/state/colo"), default_gpu_lock_dir());
  EXPECT_EQ(gpu_lock_dir("/named", true, "/state"), "/named");
  setenv("COLO_LOCK_DIR", "/somewhere/locks", 1);
  EXPECT_EQ(gpu_lock_dir("", true, "/state"), "/somewhere/locks");
  EXPECT_EQ(gpu_lock_dir("", false, "/state"), "/somewhere/locks");
  unsetenv("COLO_LOCK_DIR");
}

TEST(GpuLockDir, EnvironmentOverridesTheDefault) {
  setenv("COLO_LOCK_DIR", "/somewhere/locks", 1);
  EXPECT_EQ(default_gpu_lock_dir(), "/somewhere/locks");
  unsetenv("COLO_LOCK_DIR");
  std::string dir = default_gpu_lock_dir();
  EXPECT_TRUE(dir == "/run/colo/locks" || dir == "/tmp/colo-locks") << dir;
}

}  // namespace
}  // namespace colo
