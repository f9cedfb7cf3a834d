#include "jobs/line_follower.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace colo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

class LineFollowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "follower.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  void append(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::app | std::ios::binary) << text;
  }
  void overwrite(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::trunc | std::ios::binary) << text;
  }
  // The lines one read() hands out; cut lines are marked with a trailing "~".
  static std::vector<std::string> lines(LineFollower& f, bool writer_exited = false) {
    std::vector<std::string> out;
    f.read(writer_exited, [&](std::string_view line, bool truncated) {
      out.push_back(std::string(line) + (truncated ? "~" : ""));
    });
    return out;
  }
  std::string dir_;
};

TEST_F(LineFollowerTest, MissingFileIsNotAnError) {
  LineFollower follower(dir_ + "/none");
  EXPECT_TRUE(lines(follower).empty());
  EXPECT_FALSE(follower.refused());
  EXPECT_FALSE(follower.take_notice());
}

TEST_F(LineFollowerTest, PartialLinesWaitForTheirTerminator) {
  std::string path = dir_ + "/p.jsonl";
  LineFollower follower(path);
  append(path, "one\ntw");
  EXPECT_THAT(lines(follower), ElementsAre("one"));
  EXPECT_TRUE(lines(follower).empty());
  append(path, "o\r\nthree\n\nfo");
  EXPECT_THAT(lines(follower), ElementsAre("two", "three"));  // empty lines are not handed out
  append(path, "ur\n");
  EXPECT_THAT(lines(follower), ElementsAre("four"));
}

TEST_F(LineFollowerTest, CarriageReturnsEndLinesLikeAProgressBarRedraws) {
  std::string path = dir_ + "/bar.log";
  LineFollower follower(path);
  append(path, "Epoch 0:  10%| 39/390\rEpoch 0:  20%| 78/390\rEpoch 0:  30%");
  EXPECT_THAT(lines(follower), ElementsAre("Epoch 0:  10%| 39/390", "Epoch 0:  20%| 78/390"));
}

TEST_F(LineFollowerTest, LargeAppendsSpanningReadBuffers) {
  std::string path = dir_ + "/big";
  LineFollower follower(path);
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + "\n";
  append(path, text);
  std::vector<std::string> got = lines(follower);
  ASSERT_EQ(got.size(), 20000U);
  EXPECT_EQ(got[12345], "line 12345");
}

TEST_F(LineFollowerTest, TruncationRestartsAtTheBeginning) {
  std::string path = dir_ + "/t";
  LineFollower follower(path);
  append(path, "aaaaaaaaaa\nbbbbbbbbbb\npart");
  EXPECT_THAT(lines(follower), ElementsAre("aaaaaaaaaa", "bbbbbbbbbb"));
  overwrite(path, "new\n");
  EXPECT_THAT(lines(follower), ElementsAre("new"));
  append(path, "more\n");
  EXPECT_THAT(lines(follower), ElementsAre("more"));
}

TEST_F(LineFollowerTest, ReplacedFileIsReadFromTheStart) {
  std::string path = dir_ + "/r";
  LineFollower follower(path);
  append(path, "a\n");
  EXPECT_THAT(lines(follower), ElementsAre("a"));
  std::string other = dir_ + "/r2";
  append(other, "x\ny\nz\n");
  ASSERT_EQ(std::rename(other.c_str(), path.c_str()), 0);
  EXPECT_THAT(lines(follower), ElementsAre("x", "y", "z"));
}

// Issue 15: a job that replaced its progress file with a FIFO blocked colo in
// open() for ever.
TEST_F(LineFollowerTest, AFifoIsRefusedWithoutBlocking) {
  std::string path = dir_ + "/progress.jsonl";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  LineFollower follower(path);
  EXPECT_TRUE(lines(follower).empty());
  EXPECT_TRUE(follower.refused());
  std::optional<std::string> notice = follower.take_notice();
  ASSERT_TRUE(notice);
  EXPECT_THAT(*notice, HasSubstr("is a FIFO, not a regular file"));
  EXPECT_FALSE(follower.take_notice());  // said once
  EXPECT_TRUE(lines(follower, /*writer_exited=*/true).empty());
}

// Issue 15: a progress file symlinked to /dev/zero made colo allocate until
// std::bad_alloc.
TEST_F(LineFollowerTest, ASymbolicLinkIsNeverFollowed) {
  std::string zero = dir_ + "/zero";
  ASSERT_EQ(symlink("/dev/zero", zero.c_str()), 0);
  LineFollower to_zero(zero);
  EXPECT_TRUE(lines(to_zero).empty());
  ASSERT_TRUE(to_zero.refused());
  EXPECT_THAT(*to_zero.take_notice(), HasSubstr("is a symbolic link"));

  std::string real = dir_ + "/real";
  append(real, "secret\n");
  std::string link = dir_ + "/link";
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
  LineFollower to_file(link);
  EXPECT_TRUE(lines(to_file).empty());
  EXPECT_TRUE(to_file.refused());
}

TEST_F(LineFollowerTest, ALongLineIsCutAndItsRestSkipped) {
  std::string path = dir_ + "/long";
  LineFollower follower(path, FollowLimits{.max_line_bytes = 1000});
  append(path, std::string(200'000, 'x'));  // spans several read buffers
  std::vector<std::string> got = lines(follower);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0], std::string(1000, 'x') + "~");
  append(path, std::string(5000, 'y') + "\nnext\n" + std::string(1000, 'z') + "\n");
  EXPECT_THAT(lines(follower), ElementsAre("next", std::string(1000, 'z')));
}

TEST_F(LineFollowerTest, OneReadIsBoundedAndABacklogIsSkipped) {
  std::string path = dir_ + "/flood";
  LineFollower follower(path, FollowLimits{.max_line_bytes = 64,
                                           .max_read_bytes = 100,
                                           .max_final_bytes = 1000,
                                           .max_backlog_bytes = 500});
  std::string twenty;
  for (int i = 10; i < 30; ++i) twenty += "line " + std::to_string(i) + "..\n";  // 10 bytes each
  append(path, twenty);
  EXPECT_EQ(lines(follower).size(), 10U);  // 100 bytes
  EXPECT_EQ(lines(follower).size(), 10U);
  EXPECT_TRUE(lines(follower).empty());
  EXPECT_EQ(follower.skipped_bytes(), 0U);

  append(path, std::string(990, 'a') + "\ntail-of-a\nlast\n");  // over the backlog
  EXPECT_TRUE(lines(follower).empty());
  EXPECT_EQ(follower.skipped_bytes(), 1006U);
  append(path, "after\n");
  EXPECT_THAT(lines(follower), ElementsAre("after"));
  EXPECT_FALSE(follower.take_notice());  // skipping is counted, not a refusal
}

TEST_F(LineFollowerTest, SkippingIntoTheMiddleOfALineDropsItsRest) {
  std::string path = dir_ + "/mid";
  LineFollower follower(path, FollowLimits{.max_line_bytes = 64,
                                           .max_read_bytes = 100,
                                           .max_final_bytes = 1000,
                                           .max_backlog_bytes = 500});
  append(path, std::string(600, 'a'));  // no newline yet
  EXPECT_TRUE(lines(follower).empty());
  append(path, "rest-of-that-line\nnew\n");
  EXPECT_THAT(lines(follower), ElementsAre("new"));
}

TEST_F(LineFollowerTest, AfterTheWriterExitsTheLastLineCountsAndTheRestIsSkipped) {
  std::string path = dir_ + "/final";
  LineFollower follower(path);
  append(path, "a\nb");
  EXPECT_THAT(lines(follower), ElementsAre("a"));
  EXPECT_THAT(lines(follower, /*writer_exited=*/true), ElementsAre("b"));

  std::string big = dir_ + "/big-final";
  LineFollower bounded(big, FollowLimits{.max_line_bytes = 64,
                                         .max_read_bytes = 100,
                                         .max_final_bytes = 200,
                                         .max_backlog_bytes = 500});
  std::string text;
  for (int i = 0; i < 100; ++i) text += "line-" + std::to_string(100 + i) + "\n";  // 9 bytes
  append(big, text);
  std::vector<std::string> got = lines(bounded, /*writer_exited=*/true);
  EXPECT_EQ(got.size(), 22U);  // 200 bytes: 22 whole lines, then a cut one that is skipped
  EXPECT_EQ(got.front(), "line-100");
  EXPECT_EQ(bounded.skipped_bytes(), 900U - 200U);
}

TEST_F(LineFollowerTest, ResetFollowsAnotherPathFromItsStart) {
  std::string first = dir_ + "/a.log";
  std::string second = dir_ + "/a.attempt2.log";
  append(first, "one\n");
  append(second, "two\n");
  LineFollower follower(first);
  EXPECT_THAT(lines(follower), ElementsAre("one"));
  follower.reset(second);
  EXPECT_THAT(lines(follower), ElementsAre("two"));
}

}  // namespace
}  // namespace colo
