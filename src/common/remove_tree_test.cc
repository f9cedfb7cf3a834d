#include "common/remove_tree.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace colo {
namespace {

namespace fs = std::filesystem;

class RemoveTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "tree.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const std::string& path) { std::ofstream(path) << "x"; }
  std::string dir_;
};

// A tree a user owns is removed whole, and a link inside it is removed, not
// followed: what it points to (outside the tree) stays.
TEST_F(RemoveTreeTest, RemovesATreeWithoutFollowingItsLinks) {
  const std::string outside = dir_ + "/outside";
  fs::create_directories(outside + "/keep");
  touch(outside + "/keep/file");
  const std::string tree = dir_ + "/checkpoints/12";
  fs::create_directories(tree + "/a/b");
  touch(tree + "/a/b/state");
  touch(tree + "/top");
  fs::create_directory_symlink(outside, tree + "/a/link-to-dir");
  fs::create_symlink(outside + "/keep/file", tree + "/link-to-file");
  ASSERT_EQ(::mkfifo((tree + "/fifo").c_str(), 0600), 0);

  Status removed = remove_tree(tree + "/");
  ASSERT_TRUE(removed.ok()) << removed.error().message();
  EXPECT_FALSE(fs::exists(fs::symlink_status(tree)));
  EXPECT_TRUE(fs::exists(outside + "/keep/file"));
  EXPECT_TRUE(fs::exists(dir_ + "/checkpoints"));
  EXPECT_TRUE(remove_tree(tree).ok()) << "gone already: ok";
}

// The path itself a link: the link goes, its target stays.
TEST_F(RemoveTreeTest, APathThatIsALinkIsRemovedNotFollowed) {
  fs::create_directories(dir_ + "/target");
  touch(dir_ + "/target/file");
  fs::create_directory_symlink(dir_ + "/target", dir_ + "/link");
  ASSERT_TRUE(remove_tree(dir_ + "/link").ok());
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir_ + "/link")));
  EXPECT_TRUE(fs::exists(dir_ + "/target/file"));
  EXPECT_FALSE(remove_tree(dir_ + "/..").ok());
}

}  // namespace
}  // namespace colo
