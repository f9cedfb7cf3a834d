#include "common/paths.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace colo {
namespace {

namespace fs = std::filesystem;

TEST(MakeDirs, ModesAreExactWhateverTheUmaskAndDirectoriesThereAreLeftAlone) {
  const std::string root = ::testing::TempDir() + "make-dirs-" + std::to_string(getpid());
  fs::remove_all(root);
  fs::create_directories(root);
  ::chmod(root.c_str(), 0750);
  const mode_t old = ::umask(077);
  const Status made = make_dirs(root + "/a/b/c", 0700, 0711);
  ::umask(old);
  ASSERT_TRUE(made.ok()) << made.error().message();
  auto mode_of = [](const std::string& p) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    return st.st_mode & 07777;
  };
  EXPECT_EQ(mode_of(root), 0750u) << "it was there";
  EXPECT_EQ(mode_of(root + "/a"), 0711u);
  EXPECT_EQ(mode_of(root + "/a/b"), 0711u);
  EXPECT_EQ(mode_of(root + "/a/b/c"), 0700u);
  fs::remove_all(root);
}

}  // namespace
}  // namespace colo
