#include "jobs/log_cap.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace colo {
namespace {

using ::testing::HasSubstr;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Issue 54 (3): a log past its cap keeps its head and tail and says what
// was cut (one job wrote 30 MB in a second, with no cap); one within it, a
// link or a FIFO are left alone.
TEST(LogCap, ALogPastItsCapKeepsItsHeadAndTailAndSaysSo) {
  std::string templ = ::testing::TempDir() + "logcap.XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  const std::string log = templ + "/1-job.log";
  std::string text = "HEAD" + std::string(4000, 'a') + std::string(4000, 'b') + "TAIL";
  std::ofstream(log) << text;
  Result<std::optional<uint64_t>> within = cut_log(log, 10'000, "its cap");
  ASSERT_TRUE(within.ok());
  EXPECT_FALSE(within->has_value());

  Result<std::optional<uint64_t>> cut = cut_log(log, 1000, "its cap of 1000 B");
  ASSERT_TRUE(cut.ok()) << cut.error().message();
  ASSERT_TRUE(cut->has_value());
  const std::string after = read_all(log);
  EXPECT_EQ(after.size(), **cut);
  EXPECT_EQ(after.substr(0, 250), text.substr(0, 250));
  EXPECT_EQ(after.substr(after.size() - 250), text.substr(text.size() - 250));
  EXPECT_THAT(after, HasSubstr(" of this log were cut here: it passed its cap of 1000 B"));
  EXPECT_LT(after.size(), 1000u);

  const std::string target = templ + "/target";
  std::ofstream(target) << std::string(5000, 'x');
  std::filesystem::create_symlink(target, templ + "/link.log");
  EXPECT_FALSE(cut_log(templ + "/link.log", 1000, "cap").ok());
  EXPECT_EQ(std::filesystem::file_size(target), 5000u);
  ASSERT_EQ(::mkfifo((templ + "/fifo.log").c_str(), 0600), 0);
  EXPECT_FALSE(cut_log(templ + "/fifo.log", 1000, "cap").ok()) << "refused, not waited on";
  EXPECT_FALSE(cut_log(templ + "/absent.log", 1000, "cap")->has_value());
  std::filesystem::remove_all(templ);
}

}  // namespace
}  // namespace colo
