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

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ReplaceFile, WritesThenReplacesWholeAndLeavesNothingBeside) {
  const std::string dir = ::testing::TempDir() + "replace-file-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/request.json";
  ASSERT_TRUE(replace_file(path, "first\n").ok());
  EXPECT_EQ(read(path), "first\n");
  ASSERT_TRUE(replace_file(path, "second").ok());
  EXPECT_EQ(read(path), "second");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(dir);
}

TEST(ReplaceFile, AnUnwritableDirectoryIsAnErrorNamingTheFile) {
  const Status s = replace_file("/nonexistent-colo-dir/page.html", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message(), ::testing::HasSubstr("/nonexistent-colo-dir/page.html.tmp"));
}

TEST(StagedFile, IsPrivateAndInPlaceOnlyWhenCommittedElseNothingIsLeft) {
  const std::string dir = ::testing::TempDir() + "staged-file-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/copy.db";
  const mode_t previous = ::umask(0);
  {
    Result<StagedFile> staged = StagedFile::create(path);
    ::umask(previous);
    ASSERT_TRUE(staged.ok()) << staged.error().message();
    EXPECT_EQ(std::filesystem::path(staged->path()).parent_path(), dir);
    EXPECT_EQ(std::filesystem::status(staged->path()).permissions(),
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // not committed: removed

  std::ofstream(path) << "older";
  Result<StagedFile> staged = StagedFile::create(path);
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
