#include "jobs/cgroup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "common/clock.h"
#include "jobs/job_supervisor.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(CgroupParse, FindsTheCgroup2MountAmongOthers) {
  struct Case {
    const char* label;
    const char* mountinfo;
    std::optional<std::string> expected;
  };
  const Case cases[] = {
      {"unified only",
       "24 30 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
       "36 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
       "/sys/fs/cgroup"},
      {"hybrid: v1 controllers and a unified mount",
       "40 35 0:35 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
       "45 35 0:40 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
       "/sys/fs/cgroup/unified"},
      {"optional fields before the separator",
       "36 24 0:30 / /cg rw shared:9 master:2 - cgroup2 none rw\n", "/cg"},
      {"v1 only", "40 35 0:35 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", std::nullopt},
      {"empty", "", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(cgroup2_mount(c.mountinfo), c.expected) << c.label;
}

TEST(CgroupParse, OwnCgroupIsTheUnifiedLine) {
  EXPECT_EQ(own_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n"),
            "/user.slice/user-1000.slice/session-3.scope");
  EXPECT_EQ(own_cgroup("4:memory:/x\n1:name=systemd:/\n0::/\n"), "/");
  EXPECT_EQ(own_cgroup("4:memory:/x\n"), std::nullopt);
}

TEST(CgroupParent, OffAndUnwritableOverridesSayWhy) {
  Result<std::string> off = choose_cgroup_parent("off");
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(off.error().message(), "COLO_CGROUP_PARENT=off");
  Result<std::string> missing = choose_cgroup_parent("/nonexistent/cgroup");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/cgroup is not a cgroup"),
            std::string::npos);
}

TEST(ProcessStart, ThisProcessHasAStartTimeAndADeadOneNone) {
  EXPECT_TRUE(process_start_ticks(getpid()).has_value());
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(process_start_ticks(child).has_value());
}

// Limits and what they did, on a directory standing in for a cgroup (the
// kernel's files written by hand).
TEST(CgroupFiles, LimitsAreWrittenAndAnOomKillIsRead) {
  std::string dir = ::testing::TempDir() + "cgfiles.XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  auto put = [&](const std::string& file, const std::string& text) {
    std::ofstream(dir + "/" + file) << text;
  };
  auto get = [&](const std::string& file) {
    std::ifstream in(dir + "/" + file);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  Status none = apply_cgroup_limits(dir, {uint64_t{1} << 30, 2});
  ASSERT_FALSE(none.ok()) << "no memory controller: said, not ignored";
  EXPECT_THAT(none.error().message(), HasSubstr("memory.max is missing"));
  // Empty files: a plain file keeps what a shorter write leaves, a control file does not.
  for (const char* file : {"memory.max", "memory.swap.max", "cpu.max"}) put(file, "");
  ASSERT_TRUE(apply_cgroup_limits(dir, {uint64_t{1} << 30, 2}).ok());
  EXPECT_EQ(get("memory.max"), "1073741824");
  EXPECT_EQ(get("memory.swap.max"), "0");
  EXPECT_EQ(get("cpu.max"), "200000 100000");
  EXPECT_TRUE(apply_cgroup_limits(dir, {}).ok()) << "no limits, nothing to write";

  put("memory.peak", "1073700000\n");
  put("memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n");
  put("cpu.stat", "usage_usec 2500000\nuser_usec 2000000\n");
  JobUsage used = read_cgroup_usage(dir);
  EXPECT_EQ(used.memory_max_bytes, uint64_t{1} << 30);
  EXPECT_EQ(used.oom_kills, 1);
  EXPECT_EQ(used.cpu_ms, 2500);
  put("memory.max", "max\n");
  EXPECT_FALSE(read_cgroup_usage(dir).memory_max_bytes.has_value());
  std::system(("rm -rf '" + dir + "'").c_str());
}

// Issue 54 (4): in a cgroup systemd delegated to it (a unit with
// Delegate=yes: the xattr trusted.delegate=1), colo makes its jobs' cgroups
// inside it, moving itself into the leaf "colo" there, so that the unit's
// limits and systemd's final kill reach the jobs (before, as root, it made
// them at the top of the hierarchy, outside the unit). In a child process,
// which the test moves into a stand-in unit's cgroup; skipped where this
// machine lets no one make cgroups.
TEST(CgroupParent, ADelegatedCgroupOfItsOwnHoldsTheJobsAndColoInALeaf) {
  std::optional<std::string> mount = cgroup2_mount([] {
    std::ifstream in("/proc/self/mountinfo");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }());
  if (geteuid() != 0 || !mount) GTEST_SKIP() << "needs root and cgroup v2";
  const std::string unit = "colo-test-" + std::to_string(getpid()) + ".service";
  const std::string dir = *mount + "/" + unit;
  if (::mkdir(dir.c_str(), 0755) != 0) GTEST_SKIP() << "cannot make cgroups here";
  ASSERT_EQ(::setxattr(dir.c_str(), "trusted.delegate", "1", 1, 0), 0) << std::strerror(errno);
  EXPECT_TRUE(is_delegated(dir));
  const pid_t child = fork();
  if (child == 0) {
    std::ofstream(dir + "/cgroup.procs") << getpid() << "\n";
    Result<std::string> parent = choose_cgroup_parent(nullptr);
    if (!parent.ok() || *parent != dir) _exit(2);
    std::ifstream self("/proc/self/cgroup");
    const std::string own((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
    if (own.find("0::/" + unit + "/colo\n") == std::string::npos) _exit(3);
    Result<RunCgroup> run = RunCgroup::create(*parent);
    if (!run.ok() || run->path().rfind(dir + "/run-", 0) != 0) _exit(4);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: not its own cgroup; 3: not in the leaf; 4: run cgroup";
  (void)kill_and_remove_cgroup(dir);
  std::ifstream left(dir + "/cgroup.procs");
  EXPECT_FALSE(left.good()) << "removed";
}

// The real thing, where this machine lets colo make cgroups (root, or a
// delegated subtree); skipped, saying why, elsewhere (CI in a container).
class RealCgroup : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> parent = choose_cgroup_parent(std::getenv("COLO_CGROUP_PARENT"));
    if (!parent.ok()) GTEST_SKIP() << "no cgroup here: " << parent.error().message();
    Result<RunCgroup> run = RunCgroup::create(*parent);
    if (!run.ok()) GTEST_SKIP() << "no cgroup here: " << run.error().message();
    run_.emplace(std::move(*run));
    parent_ = *parent;
    std::string templ = ::testing::TempDir() + "cgroup.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  // How many processes run `marker` (a pattern: its '.' must be written "[.]"
  // so that it does not match the shell running pgrep).
  static int alive(const std::string& marker) {
    std::string pattern = marker;
    if (size_t dot = pattern.find('.'); dot != std::string::npos) pattern.replace(dot, 1, "[.]");
    std::string command = "pgrep -f '" + pattern + "' | wc -l";
    FILE* p = popen(command.c_str(), "r");
    int n = -1;
    if (p != nullptr && fscanf(p, "%d", &n) != 1) n = -1;
    if (p != nullptr) pclose(p);
    return n;
  }

  std::optional<RunCgroup> run_;
  std::string parent_;
  std::string dir_;
  SystemClock clock_;
};

TEST_F(RealCgroup, AJobsLeftoversEndWithItAndItsCpuTimeIsMeasured) {
  Result<std::string> cgroup = run_->make_job_cgroup(7);
  ASSERT_TRUE(cgroup.ok()) << cgroup.error().message();
  const std::string marker = "sleep 300.0" + std::to_string(getpid());
  JobSupervisor supervisor(clock_);
  LaunchRequest request;
  request.job_name = "leaky";
  // Burns some CPU, then leaves a grandchild and a daemon in a new session.
  request.argv = {"/bin/sh", "-c",
                  "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; " + marker +
                      "1 & setsid sh -c '" + marker + "2 &'; sleep 0.2"};
  request.working_dir = dir_;
  request.log_path = dir_ + "/leaky.log";
  request.cgroup = *cgroup;
  ASSERT_TRUE(supervisor.start(request).ok());
  std::vector<FinishedJob> done;
  for (int i = 0; i < 1000 && done.empty(); ++i) {
    done = supervisor.poll();
    clock_.sleep_for_ms(10);
  }
  ASSERT_EQ(done.size(), 1U);
  EXPECT_EQ(done[0].exit.state, JobState::kOk);
  EXPECT_EQ(alive(marker + "[12]"), 0);
  ASSERT_TRUE(done[0].exit.usage.cpu_ms.has_value());
  EXPECT_GT(*done[0].exit.usage.cpu_ms, 10);
  struct stat st {};
  EXPECT_NE(stat(cgroup->c_str(), &st), 0) << "the job's cgroup was not removed";
}

// Needs the memory controller in colo's cgroups (cgroup v2 with it
// delegated); skipped, saying so, where the kernel keeps memory on v1.
TEST_F(RealCgroup, AJobOverItsHostMemoryLimitIsKilledAndRecordedAsSuch) {
  Result<std::string> cgroup = run_->make_job_cgroup(8);
  ASSERT_TRUE(cgroup.ok()) << cgroup.error().message();
  if (Status s = apply_cgroup_limits(*cgroup, {uint64_t{64} << 20, std::nullopt}); !s.ok())
    GTEST_SKIP() << s.error().message();
  JobSupervisor supervisor(clock_);
  LaunchRequest request;
  request.job_name = "hog";
  // Holds ever more memory in the shell's own variable until killed.
  request.argv = {"/bin/sh", "-c", "x=0123456789; while :; do x=$x$x; done"};
  request.working_dir = dir_;
  request.log_path = dir_ + "/hog.log";
  request.cgroup = *cgroup;
  ASSERT_TRUE(supervisor.start(request).ok());
  std::vector<FinishedJob> done;
  for (int i = 0; i < 3000 && done.empty(); ++i) {
    done = supervisor.poll();
    clock_.sleep_for_ms(10);
  }
  ASSERT_EQ(done.size(), 1U);
  EXPECT_EQ(done[0].exit.state, JobState::kFailed);
  EXPECT_THAT(done[0].exit.reason, HasSubstr("killed by its host memory limit (host_memory 64"));
  EXPECT_GE(done[0].exit.usage.oom_kills, 1);
}

TEST_F(RealCgroup, RunCgroupsOfADeadColoAreFoundAndEmptied) {
  // A stand-in for a colo that died: a child process that makes its run
  // cgroup, starts a daemon in it, and is killed.
  const std::string marker = "sleep 300.1" + std::to_string(getpid());
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t colo = fork();
  if (colo == 0) {
    close(ready[0]);
    Result<RunCgroup> run = RunCgroup::create(parent_);
    if (!run.ok()) _exit(1);
    Result<std::string> job = run->make_job_cgroup(1);
    if (!job.ok()) _exit(2);
    std::ofstream(*job + "/cgroup.procs") << 0;
    if (std::system(("setsid sh -c '" + marker + " &'").c_str()) != 0) _exit(3);
    ssize_t ignored = write(ready[1], "x", 1);
    (void)ignored;
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  EXPECT_EQ(alive(marker), 1);
  // Alive: its cgroup is left alone.
  for (const std::string& line : cleanup_stale_run_cgroups(parent_))
    EXPECT_EQ(line.find(std::to_string(colo)), std::string::npos) << line;
  EXPECT_EQ(alive(marker), 1);
  kill(colo, SIGKILL);
  waitpid(colo, nullptr, 0);
  std::vector<std::string> lines = cleanup_stale_run_cgroups(parent_);
  std::string said;
  for (const std::string& line : lines) said += line + "\n";
  EXPECT_NE(said.find("stopped 1 leftover job processes of a colo that died (pid " +
                      std::to_string(colo)),
            std::string::npos)
      << said;
  EXPECT_EQ(alive(marker), 0);
}

}  // namespace
}  // namespace colo
