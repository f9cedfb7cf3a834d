#include "data/ring_owner.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/proc_stat.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// A pid that no process has now (a child that exited and was reaped).
int dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

bool shm_exists(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd >= 0) close(fd);
  return fd >= 0;
}

// Issue 53 (privileged paths): a root service cleaning up after dead colos
// reads records in every user's data/<uid>/. One user's record that names
// another's loader process or ring is left alone (root would have killed and
// unlinked them for the forger); root's own records are acted on as before.
TEST(RingOwner, AUsersRecordNeverReachesAnotherUsersLoaderOrRing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to write a record as another user";
  std::string templ = ::testing::TempDir() + "rings.XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  const std::string name = "/colo-data-test-" + std::to_string(getpid());
  const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);  // root's
  ASSERT_GE(fd, 0);
  close(fd);
  // Root's process whose command line names the ring, as a loader's does.
  const pid_t loader = fork();
  if (loader == 0) {
    execl("/bin/sh", name.c_str(), "-c", "sleep 30 & wait", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Until it has exec'd (a condition, not a time).
  for (int i = 0; i < 10'000; ++i) {
    const std::string cmdline =
        read_proc_file("/proc/" + std::to_string(loader) + "/cmdline").value_or("");
    if (cmdline.find(name) != std::string::npos) break;
    usleep(1000);
  }
  RingOwnerRecord forged{name, "", loader, dead_pid(), "", 0};
  const std::string path = ring_owner_path(templ, name);
  ASSERT_TRUE(write_ring_owner(path, forged).ok());
  ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);  // nobody wrote it

  Result<std::vector<std::string>> lines = cleanup_stale_data_loaders(templ);
  ASSERT_TRUE(lines.ok()) << lines.error().message();
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_THAT(lines->front(), HasSubstr("which is not its writer's"));
  EXPECT_EQ(kill(loader, 0), 0) << "root's process was killed for another user's record";
  EXPECT_TRUE(shm_exists(name));

  // The same record written by root: the loader is stopped, the ring removed.
  ASSERT_EQ(chown(path.c_str(), 0, 0), 0);
  lines = cleanup_stale_data_loaders(templ);
  ASSERT_TRUE(lines.ok());
  EXPECT_FALSE(shm_exists(name));
  int status = 0;
  EXPECT_EQ(waitpid(loader, &status, 0), loader);
  EXPECT_TRUE(WIFSIGNALED(status));
  shm_unlink(name.c_str());
  std::system(("rm -rf '" + templ + "'").c_str());
}

}  // namespace
}  // namespace colo
