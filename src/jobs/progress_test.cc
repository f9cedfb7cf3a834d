#include "jobs/progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace colo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr UnixMillis kReadTime = 1'700'000'000'000;

TEST(ParseProgressLine, FullEpochEnd) {
  Result<ProgressEvent> r = parse_progress_line(
      R"({"event":"epoch_end","epoch":2,"step":390,"samples":50000,"time":1700000001.25,)"
      R"("metrics":{"loss":0.31,"acc":0.9,"note":"text","ok":true}})",
      kReadTime);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->kind, "epoch_end");
  EXPECT_EQ(r->epoch, 2);
  EXPECT_EQ(r->step, 390);
  EXPECT_EQ(r->samples, 50000);
  EXPECT_EQ(r->time_ms, 1'700'000'001'250);
  // Non-numeric metric values are ignored; the line stays valid.
  EXPECT_THAT(r->metrics, ElementsAre(Pair("acc", 0.9), Pair("loss", 0.31)));
}

TEST(ParseProgressLine, MinimalLineUsesReadTime) {
  Result<ProgressEvent> r = parse_progress_line("  {\"event\":\"start\"}\r\n", kReadTime);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->kind, "start");
  EXPECT_EQ(r->time_ms, kReadTime);
  EXPECT_FALSE(r->epoch);
  EXPECT_FALSE(r->step);
  EXPECT_FALSE(r->samples);
  EXPECT_TRUE(r->metrics.empty());
}

TEST(ParseProgressLine, TopLevelNumbersAreMetricsAndUnknownEventsAreKept) {
  Result<ProgressEvent> r = parse_progress_line(
      R"({"event":"my_event","loss":1.5,"lr":1e-3,"tag":"x","flag":false,"epoch":null,"time":10})",
      kReadTime);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->kind, "my_event");
  EXPECT_FALSE(r->epoch);
  EXPECT_EQ(r->time_ms, 10'000);
  EXPECT_THAT(r->metrics, ElementsAre(Pair("loss", 1.5), Pair("lr", 1e-3)));
}

struct MalformedCase {
  const char* line;
  const char* expected;
};

class MalformedProgressLine : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedProgressLine, IsAnErrorSayingWhy) {
  Result<ProgressEvent> r = parse_progress_line(GetParam().line, kReadTime);
  ASSERT_FALSE(r.ok()) << GetParam().line;
  EXPECT_THAT(r.error().message(), HasSubstr(GetParam().expected));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedProgressLine,
    ::testing::Values(MalformedCase{"", "empty"}, MalformedCase{"   ", "empty"},
                      MalformedCase{"Epoch 3 done", "not valid JSON"},
                      MalformedCase{R"({"event":"x")", "not valid JSON"},
                      MalformedCase{"[1,2]", "not a JSON object"},
                      MalformedCase{"42", "not a JSON object"},
                      MalformedCase{R"({"epoch":1})", "missing \"event\""},
                      MalformedCase{R"({"event":3})", "\"event\" must be a string"},
                      MalformedCase{R"({"event":""})", "must not be empty"},
                      MalformedCase{R"({"event":"e","epoch":1.5})", "\"epoch\" must be an integer"},
                      MalformedCase{R"({"event":"e","step":"3"})", "\"step\" must be an integer"},
                      MalformedCase{R"({"event":"e","samples":18446744073709551615})",
                                    "\"samples\" is out of range"},
                      MalformedCase{R"({"event":"e","time":"now"})", "\"time\" must be a number"},
                      MalformedCase{R"({"event":"e","time":-5})", "plausible"},
                      MalformedCase{R"({"event":"e","metrics":[1]})",
                                    "\"metrics\" must be an object"}));

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "progress.XXXXXX";
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
  std::string dir_;
};

using LineFollowerTest = TempDirTest;

TEST_F(LineFollowerTest, MissingFileIsNotAnError) {
  LineFollower follower(dir_ + "/none");
  EXPECT_TRUE(follower.read_new_lines().empty());
}

TEST_F(LineFollowerTest, PartialLinesWaitForTheirNewline) {
  std::string path = dir_ + "/p.jsonl";
  LineFollower follower(path);
  append(path, "one\ntw");
  EXPECT_THAT(follower.read_new_lines(), ElementsAre("one"));
  EXPECT_TRUE(follower.read_new_lines().empty());
  append(path, "o\r\nthree\n\nfo");
  EXPECT_THAT(follower.read_new_lines(), ElementsAre("two", "three", ""));
  append(path, "ur\n");
  EXPECT_THAT(follower.read_new_lines(), ElementsAre("four"));
}

TEST_F(LineFollowerTest, LargeAppendsSpanningReadBuffers) {
  std::string path = dir_ + "/big";
  LineFollower follower(path);
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + "\n";
  append(path, text);
  std::vector<std::string> lines = follower.read_new_lines();
  ASSERT_EQ(lines.size(), 20000u);
  EXPECT_EQ(lines[12345], "line 12345");
}

TEST_F(LineFollowerTest, TruncationRestartsAtTheBeginning) {
  std::string path = dir_ + "/t";
  LineFollower follower(path);
  append(path, "aaaaaaaaaa\nbbbbbbbbbb\npart");
  EXPECT_THAT(follower.read_new_lines(), ElementsAre("aaaaaaaaaa", "bbbbbbbbbb"));
  overwrite(path, "new\n");
  EXPECT_THAT(follower.read_new_lines(), ElementsAre("new"));
  append(path, "more\n");
  EXPECT_THAT(follower.read_new_lines(), ElementsAre("more"));
}

TEST_F(LineFollowerTest, ReplacedFileIsReadFromTheStart) {
  std::string path = dir_ + "/r";
  LineFollower follower(path);
  append(path, "a\n");
  EXPECT_THAT(follower.read_new_lines(), ElementsAre("a"));
  std::string other = dir_ + "/r2";
  append(other, "x\ny\nz\n");
  ASSERT_EQ(std::rename(other.c_str(), path.c_str()), 0);
  EXPECT_THAT(follower.read_new_lines(), ElementsAre("x", "y", "z"));
}

using ProgressReaderTest = TempDirTest;

TEST_F(ProgressReaderTest, ReadsEventsAndCountsMalformedLines) {
  std::string progress = dir_ + "/progress.jsonl";
  Result<ProgressReader> reader = ProgressReader::create(progress, dir_ + "/log", std::nullopt);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE(reader->poll(kReadTime).empty());
  append(progress,
         "{\"event\":\"start\"}\nnot json\n\n{\"event\":\"epoch_end\",\"epoch\":1}\n{\"ev");
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, "start");
  EXPECT_EQ(events[1].epoch, 1);
  EXPECT_EQ(reader->malformed_lines(), 1);
  append(progress, "ent\":\"end\"}\n");
  events = reader->poll(kReadTime + 5);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "end");
  EXPECT_EQ(events[0].time_ms, kReadTime + 5);
}

TEST_F(ProgressReaderTest, EpochRegexOverTheLog) {
  std::string log = dir_ + "/job.log";
  Result<ProgressReader> reader =
      ProgressReader::create(dir_ + "/progress.jsonl", log, std::string("Epoch (\\w+) done"));
  ASSERT_TRUE(reader.ok());
  append(log, "starting\nEpoch 4 done, loss 1.2\nnoise\nEpoch five done\nEpoch 9 done\nEpoch x");
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, "epoch_end");
  EXPECT_EQ(events[0].epoch, 4);
  EXPECT_EQ(events[1].epoch, 5);  // not numeric: running count after 4
  EXPECT_EQ(events[2].epoch, 9);
  EXPECT_EQ(events[2].time_ms, kReadTime);
  append(log, " done\n");
  events = reader->poll(kReadTime);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].epoch, 10);
  EXPECT_EQ(reader->malformed_lines(), 0);
}

TEST_F(ProgressReaderTest, RegexWithoutGroupCountsMatches) {
  std::string log = dir_ + "/job.log";
  Result<ProgressReader> reader = ProgressReader::create("", log, std::string("end of epoch"));
  ASSERT_TRUE(reader.ok());
  append(log, "end of epoch\nend of epoch\n" + std::string(100000, 'x') + "\nend of epoch\n");
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].epoch, 3);
}

TEST_F(ProgressReaderTest, InvalidRegexIsAnError) {
  Result<ProgressReader> reader = ProgressReader::create("", "", std::string("Epoch (\\d+"));
  ASSERT_FALSE(reader.ok());
  EXPECT_THAT(reader.error().message(), HasSubstr("invalid epoch_regex 'Epoch (\\d+'"));
}

}  // namespace
}  // namespace colo
