#include "common/user_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace colo {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class UserFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "user-file-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(UserFileTest, ReadsARegularFileWithinItsBound) {
  std::ofstream(dir_ + "/summary.json") << "{\"window\": 1}";
  Result<std::string> text = read_user_file(dir_ + "/summary.json", 1024);
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(*text, "{\"window\": 1}");
  Result<std::string> exact = read_user_file(dir_ + "/summary.json", 13);
  ASSERT_TRUE(exact.ok()) << exact.error().message();

  Result<std::optional<UserFile>> missing = open_user_file(dir_ + "/none");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  Result<std::string> read_missing = read_user_file(dir_ + "/none", 1024);
  ASSERT_FALSE(read_missing.ok());
  EXPECT_EQ(read_missing.error().message(), dir_ + "/none does not exist");
}

// Finding 4 of issue 53: a summary linked to /dev/zero took the service's
// memory from 11 MB to 2 GB; a huge file is refused by its size.
TEST_F(UserFileTest, ALinkADeviceOrAFileOverTheBoundIsRefusedNamingIt) {
  fs::create_symlink("/dev/zero", dir_ + "/linked.json");
  Result<std::string> linked = read_user_file(dir_ + "/linked.json", 1024);
  ASSERT_FALSE(linked.ok());
  EXPECT_THAT(linked.error().message(), HasSubstr(dir_ + "/linked.json is a symbolic link"));

  Result<std::string> device = read_user_file("/dev/zero", 1024);
  ASSERT_FALSE(device.ok());
  EXPECT_THAT(device.error().message(),
              HasSubstr("/dev/zero is a character device, not a regular file"));

  Result<std::string> directory = read_user_file(dir_, 1024);
  ASSERT_FALSE(directory.ok());
  EXPECT_THAT(directory.error().message(), HasSubstr("is a directory, not a regular file"));

  const std::string huge = dir_ + "/huge.json";
  std::ofstream(huge) << "x";
  fs::resize_file(huge, uint64_t{8} << 30);  // sparse
  Result<std::string> big = read_user_file(huge, 1 << 20);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message(),
            huge + " holds 8.0 GiB, more than the 1.0 MiB colo reads of it; it is not read");
}

// Finding 5 of issue 53: a trace that was a FIFO held an HTTP worker for good.
TEST_F(UserFileTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = dir_ + "/trace.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result<std::optional<UserFile>> opened = open_user_file(fifo);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().message(),
            fifo + " is a FIFO, not a regular file; colo does not read it");
}

TEST_F(UserFileTest, ANameIsOpenedRelativeToItsDirectoryAndShownWhole) {
  std::ofstream(dir_ + "/trace.json") << "0123456789";
  const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir_fd, 0);
  Result<std::optional<UserFile>> file = open_user_file("trace.json", dir_fd, "the trace");
  ASSERT_TRUE(file.ok() && file->has_value());
  EXPECT_EQ((*file)->size(), 10u);
  Result<std::string> tail = read_user_file_range(**file, 6, 100, "the trace");
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, "6789");
  fs::create_symlink("/dev/zero", dir_ + "/zero");
  Result<std::optional<UserFile>> linked = open_user_file("zero", dir_fd, dir_ + "/zero");
  ::close(dir_fd);
  ASSERT_FALSE(linked.ok());
  EXPECT_THAT(linked.error().message(), HasSubstr(dir_ + "/zero is a symbolic link"));
}

}  // namespace
}  // namespace colo
