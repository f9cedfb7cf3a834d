#include "common/replace_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace colo {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A directory of its own for each test, removed after it.
class ReplaceFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "replace-file-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(victim()) << "root's own\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A file the writer must never write through a link.
  std::string victim() const { return dir_ + "/victim"; }
  // The names in `dir`, sorted.
  static std::vector<std::string> names(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string dir_;
};

TEST_F(ReplaceFile, WritesThenReplacesWholeAndLeavesNothingBeside) {
  const std::string path = dir_ + "/request.json";
  ASSERT_TRUE(replace_file(path, "first\n").ok());
  EXPECT_EQ(read(path), "first\n");
  ASSERT_TRUE(replace_file(path, "second").ok());
  EXPECT_EQ(read(path), "second");
  EXPECT_EQ(names(dir_), (std::vector<std::string>{"request.json", "victim"}));
}

TEST_F(ReplaceFile, AnUnwritableDirectoryIsAnErrorNamingTheFile) {
  const Status s = replace_file("/nonexistent-colo-dir/page.html", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message(), HasSubstr("cannot write /nonexistent-colo-dir/page.html"));
}

// Finding 3 of issue 53: a job planted request.json.tmp as a link to a
// root-only file, and `colo profile` (root) wrote the request into it.
TEST_F(ReplaceFile, ALinkAtTheOldTemporaryNameOrAtTheTargetIsNeverWrittenThrough) {
  const std::string path = dir_ + "/request.json";
  fs::create_symlink(victim(), path + ".tmp");
  ASSERT_TRUE(replace_file(path, "{\"tool\":\"torch\"}\n").ok());
  EXPECT_EQ(read(victim()), "root's own\n");
  EXPECT_EQ(read(path), "{\"tool\":\"torch\"}\n");

  // A link at the target's name is replaced, its target left alone.
  const std::string linked = dir_ + "/linked.json";
  fs::create_symlink(victim(), linked);
  ASSERT_TRUE(replace_file(linked, "new\n").ok());
  EXPECT_EQ(read(victim()), "root's own\n");
  EXPECT_FALSE(fs::is_symlink(linked));
  EXPECT_EQ(read(linked), "new\n");
}

TEST_F(ReplaceFile, TheModeIsExactlyTheOneAskedWhateverTheUmask) {
  const mode_t old = ::umask(077);
  const Status s = replace_file(dir_ + "/page.html", "x", {.mode = 0644, .sync = true});
  ::umask(old);
  ASSERT_TRUE(s.ok()) << s.error().message();
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/page.html").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST_F(ReplaceFile, AWriterThatFailsLeavesTheTargetAsItWasAndNothingBeside) {
  const std::string path = dir_ + "/plan.json";
  ASSERT_TRUE(replace_file(path, "old").ok());
  const Status s =
      replace_file_with(path, [](int, const std::string&) { return Status(Error("disk full")); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "cannot write " + path + ": disk full");
  EXPECT_EQ(read(path), "old");
  EXPECT_EQ(names(dir_), (std::vector<std::string>{"plan.json", "victim"}));
}

// As root, in a directory another user owns: the file is theirs, and a link
// of theirs standing for the directory is not followed.
TEST_F(ReplaceFile, AsRootInAUsersDirectoryTheFileIsTheirsAndTheirLinkIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  constexpr uid_t kUser = 54321;
  constexpr gid_t kGroup = 54322;
  const std::string theirs = dir_ + "/theirs";
  fs::create_directories(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), kUser, kGroup), 0);
  ASSERT_TRUE(replace_file(theirs + "/request.json", "x").ok());
  struct stat st {};
  ASSERT_EQ(::stat((theirs + "/request.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kUser);
  EXPECT_EQ(st.st_gid, kGroup);

  // Their directory swapped for a link of theirs to root's.
  const std::string roots = dir_ + "/roots";
  fs::create_directories(roots);
  const std::string swapped = dir_ + "/swapped";
  fs::create_symlink(roots, swapped);
  ASSERT_EQ(::lchown(swapped.c_str(), kUser, kGroup), 0);
  const Status s = replace_file(swapped + "/request.json", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message(), HasSubstr("is a symbolic link of another user (uid 54321)"));
  EXPECT_TRUE(names(roots).empty());
  // Root's own link is followed.
  ASSERT_EQ(::lchown(swapped.c_str(), 0, 0), 0);
  EXPECT_TRUE(replace_file(swapped + "/request.json", "x").ok());
  EXPECT_EQ(names(roots), std::vector<std::string>{"request.json"});
}

TEST(StagedFile, IsPrivateAndInPlaceOnlyWhenCommittedElseNothingIsLeft) {
  const std::string dir = ::testing::TempDir() + "staged-file-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/copy.db";
  const mode_t previous = ::umask(0);
  {
    Result<StagedFile> staged = StagedFile::create(path, kPrivateDurableFile);
    ::umask(previous);
    ASSERT_TRUE(staged.ok()) << staged.error().message();
    EXPECT_EQ(std::filesystem::path(staged->path()).parent_path(), dir);
    EXPECT_EQ(std::filesystem::status(staged->path()).permissions(),
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // not committed: removed

  std::ofstream(path) << "older";
  Result<StagedFile> staged = StagedFile::create(path, kPrivateDurableFile);
  ASSERT_TRUE(staged.ok());
  ASSERT_EQ(::write(staged->fd(), "new", 3), 3);
  const Status refused = staged->commit(ExistingFile::kRefuse);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("already exists"));
  EXPECT_EQ(read(path), "older");
  ASSERT_TRUE(staged->commit(ExistingFile::kReplace).ok());
  EXPECT_EQ(read(path), "new");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace colo
