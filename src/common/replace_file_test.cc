#include "common/replace_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
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

}  // namespace
}  // namespace colo
