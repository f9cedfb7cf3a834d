#include "jobs/progress.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
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

// A diverged value is recorded: JSON has no NaN, so the client writes it as
// a string; Python's own spellings are read too. Other text is not a value.
TEST(ParseProgressLine, NonFiniteValuesAreReadFromTheirNames) {
  Result<ProgressEvent> r = parse_progress_line(
      R"({"event":"metric","metrics":{"a":"nan","b":"Infinity","c":"-inf","d":"NaN?"}})",
      kReadTime);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->metrics.size(), 3u);
  EXPECT_TRUE(std::isnan(r->metrics.at("a")));
  EXPECT_EQ(r->metrics.at("b"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(r->metrics.at("c"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(metrics_to_json(r->metrics).dump(), R"({"a":"nan","b":"inf","c":"-inf"})");
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
      R"({"event":"my_event","loss":1.5,"lr":1e-3,"tag":"x","flag":false,"epoch":null,)"
      R"("time":1699999990})",
      kReadTime);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->kind, "my_event");
  EXPECT_FALSE(r->epoch);
  EXPECT_EQ(r->time_ms, 1'699'999'990'000);
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
                      // Issue 15: implausible numbers were accepted and their sums wrapped.
                      MalformedCase{R"({"event":"e","samples":-5})", "\"samples\" is out of range"},
                      MalformedCase{R"({"event":"e","samples":9223372036854775807})",
                                    "\"samples\" is out of range (0 to 1000000000000)"},
                      MalformedCase{R"({"event":"e","epoch":-1})", "\"epoch\" is out of range"},
                      MalformedCase{R"({"event":"e","step":1e3})", "\"step\" must be an integer"},
                      MalformedCase{R"({"event":"e","time":1e13})", "plausible"},
                      MalformedCase{R"({"event":"e","time":10})", "plausible"},
                      MalformedCase{R"({"event":"e","time":1700000100})", "plausible"},
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

using ProgressReaderTest = TempDirTest;

ProgressSources sources(std::string progress, std::string log = "",
                        std::optional<std::string> epoch_regex = std::nullopt,
                        std::optional<std::string> step_regex = std::nullopt,
                        std::optional<int64_t> epoch_samples = std::nullopt) {
  return ProgressSources{std::move(progress), std::move(log), std::move(epoch_regex),
                         std::move(step_regex), epoch_samples};
}

// Limits small enough to reach in a test.
ProgressLimits small_limits() {
  ProgressLimits l;
  l.step_interval_ms = 1000;
  l.metric_steps_per_s = 1;
  l.metric_step_burst = 3;
  l.epoch_ends_per_s = 1;
  l.epoch_end_burst = 3;
  l.other_events_per_s = 1;
  l.other_event_burst = 2;
  return l;
}

std::string kinds(const std::vector<ProgressEvent>& events) {
  std::string out;
  for (const ProgressEvent& e : events) {
    if (!out.empty()) out += ",";
    out += e.kind;
    if (e.epoch) out += std::to_string(*e.epoch);
  }
  return out;
}

TEST_F(ProgressReaderTest, ReadsEventsAndCountsMalformedLines) {
  std::string progress = dir_ + "/progress.jsonl";
  Result<ProgressReader> reader =
      ProgressReader::create(sources(progress, dir_ + "/log"), kReadTime);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE(reader->poll(kReadTime).empty());
  append(progress,
         "{\"event\":\"start\"}\nnot json\n\n  \n{\"event\":\"epoch_end\",\"epoch\":1}\n{\"ev");
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  EXPECT_EQ(kinds(events), "start,epoch_end1");
  EXPECT_FALSE(events[1].samples);
  EXPECT_EQ(reader->malformed_lines(), 1);
  append(progress, "ent\":\"end\"}\n");
  events = reader->poll(kReadTime + 5);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].kind, "end");
  EXPECT_EQ(events[0].time_ms, kReadTime + 5);
  EXPECT_FALSE(reader->throttled().any());
  EXPECT_TRUE(reader->take_notices().empty());
}

TEST_F(ProgressReaderTest, EpochSamplesFillEpochEndsThatDoNotSay) {
  std::string progress = dir_ + "/progress.jsonl";
  Result<ProgressReader> reader =
      ProgressReader::create(sources(progress, "", std::nullopt, std::nullopt, 50000), kReadTime);
  ASSERT_TRUE(reader.ok());
  append(progress,
         "{\"event\":\"epoch_end\",\"epoch\":1}\n{\"event\":\"epoch_end\",\"epoch\":2,"
         "\"samples\":4}\n");
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].samples, 50000);
  EXPECT_EQ(events[1].samples, 4);
}

TEST_F(ProgressReaderTest, TimesBeforeTheJobStartedAreTakenAsItsStart) {
  std::string progress = dir_ + "/progress.jsonl";
  Result<ProgressReader> reader = ProgressReader::create(sources(progress), kReadTime);
  ASSERT_TRUE(reader.ok());
  append(progress, "{\"event\":\"start\",\"time\":1699999000}\n");
  std::vector<ProgressEvent> events = reader->poll(kReadTime + 10);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].time_ms, kReadTime);
}

TEST_F(ProgressReaderTest, EpochRegexOverTheLog) {
  std::string log = dir_ + "/job.log";
  Result<ProgressReader> reader = ProgressReader::create(
      sources(dir_ + "/progress.jsonl", log, std::string("Epoch (\\w+) done")), kReadTime);
  ASSERT_TRUE(reader.ok());
  append(log, "starting\nEpoch 4 done, loss 1.2\nnoise\nEpoch five done\nEpoch 9 done\nEpoch x");
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(events[0].kind, "epoch_end");
  EXPECT_EQ(events[0].epoch, 4);
  EXPECT_EQ(events[1].epoch, 5);  // not numeric: running count after 4
  EXPECT_EQ(events[2].epoch, 9);
  EXPECT_EQ(events[2].time_ms, kReadTime);
  append(log, " done\n");
  events = reader->poll(kReadTime);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].epoch, 10);
  EXPECT_EQ(reader->malformed_lines(), 0);
}

TEST_F(ProgressReaderTest, RegexWithoutGroupCountsMatches) {
  std::string log = dir_ + "/job.log";
  Result<ProgressReader> reader =
      ProgressReader::create(sources("", log, std::string("end of epoch")), kReadTime);
  ASSERT_TRUE(reader.ok());
  append(log, "end of epoch\nend of epoch\n" + std::string(100000, 'x') + "\nend of epoch\n");
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(events[2].epoch, 3);
}

TEST_F(ProgressReaderTest, EpochRegexNamedGroupsAndEpochSamples) {
  std::string log = dir_ + "/job.log";
  Result<ProgressReader> reader = ProgressReader::create(
      {"", log, std::string(R"(Epoch (?P<epoch>\d+) done(?:: (?P<samples>-?\d+) samples)?)"),
       std::nullopt, 1000},
      kReadTime);
  ASSERT_TRUE(reader.ok());
  append(log, "Epoch 1 done: 640 samples\nEpoch 2 done\nEpoch 3 done: -5 samples\n");
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].samples, 640);
  EXPECT_EQ(events[1].samples, 1000);  // epoch_samples
  EXPECT_EQ(reader->malformed_lines(), 1);
}

// Lines read in one poll were written since the poll before: each gets its
// share of that time by its place in the bytes read, not all the read time.
TEST_F(ProgressReaderTest, RegexEpochsReadTogetherAreSpreadOverTheTimeSinceTheLastPoll) {
  std::string log = dir_ + "/job.log";
  Result<ProgressReader> reader = ProgressReader::create(
      {"", log, std::string(R"(epoch (?P<epoch>\d+))"), std::nullopt, 1000}, kReadTime);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE(reader->poll(kReadTime + 200).empty());
  append(log, "epoch 1\nepoch 2\nepoch 3\nepoch 4\n");
  // Colo was held up: the next poll comes 2 s after the last.
  std::vector<ProgressEvent> events = reader->poll(kReadTime + 2200);
  ASSERT_EQ(events.size(), 4U);
  EXPECT_EQ(events[0].time_ms, kReadTime + 700);
  EXPECT_EQ(events[1].time_ms, kReadTime + 1200);
  EXPECT_EQ(events[2].time_ms, kReadTime + 1700);
  EXPECT_EQ(events[3].time_ms, kReadTime + 2200);
  append(log, "epoch 5\n");
  events = reader->poll(kReadTime + 2400);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].time_ms, kReadTime + 2400) << "alone in its poll: the read time";
}

// The file's modification time says when its last line was written: lines
// read late are spread up to it, not up to the read.
TEST_F(ProgressReaderTest, RegexEpochsReadLateEndAtTheFilesLastWrite) {
  std::string log = dir_ + "/job.log";
  Result<ProgressReader> reader = ProgressReader::create(
      {"", log, std::string(R"(epoch (?P<epoch>\d+))"), std::nullopt, 1000}, kReadTime);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE(reader->poll(kReadTime + 200).empty());
  append(log, "epoch 1\nepoch 2\n");
  const struct timespec written = {(kReadTime + 1200) / 1000, 200'000'000};
  const struct timespec times[2] = {written, written};
  ASSERT_EQ(utimensat(AT_FDCWD, log.c_str(), times, 0), 0);
  std::vector<ProgressEvent> events = reader->poll(kReadTime + 2200);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].time_ms, kReadTime + 700);
  EXPECT_EQ(events[1].time_ms, kReadTime + 1200);
}

TEST_F(ProgressReaderTest, StepRegexGivesStepsAndEpochEnds) {
  std::string log = dir_ + "/job.log";
  ProgressLimits limits;
  limits.step_interval_ms = 0;
  Result<ProgressReader> reader = ProgressReader::create(
      {"", log, std::nullopt,
       std::string(R"(Train: (?P<epoch>\d+) \[\s*(?P<step>\d+)/(?P<steps>\d+) )"), 390 * 128},
      kReadTime, limits);
  ASSERT_TRUE(reader.ok());
  append(log,
         "Train: 0 [   0/390 (  0%)]  Loss: 6.91 (6.91)\n"
         "Train: 0 [ 195/390 ( 50%)]  Loss: 4.10 (5.02)\n"
         "Train: 0 [ 389/390 (100%)]  Loss: 3.20 (4.11)\n"
         "Test: [  78/78]  Time: 0.101 (0.120)\n"
         "Train: 1 [   0/390 (  0%)]  Loss: 3.10 (3.10)\n");
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  EXPECT_EQ(kinds(events), "step0,step0,step0,epoch_end0,step1");
  EXPECT_EQ(events[1].samples, 195 * 128);
  EXPECT_EQ(events[3].samples, 390 * 128);
}

TEST_F(ProgressReaderTest, InvalidRegexIsAnError) {
  Result<ProgressReader> reader =
      ProgressReader::create(sources("", "", std::string("Epoch (\\d+")), kReadTime);
  ASSERT_FALSE(reader.ok());
  EXPECT_THAT(reader.error().message(), HasSubstr("epoch_regex 'Epoch (\\d+' is not a valid"));
  reader = ProgressReader::create(sources("", "", std::nullopt, std::string("loss")), kReadTime);
  ASSERT_FALSE(reader.ok());
  EXPECT_THAT(reader.error().message(), HasSubstr("step_regex 'loss' needs a group"));
}

TEST_F(ProgressReaderTest, StepsAreCoalescedToOnePerIntervalWithTheirSamplesSummed) {
  std::string progress = dir_ + "/progress.jsonl";
  Result<ProgressReader> reader =
      ProgressReader::create(sources(progress), kReadTime, small_limits());
  ASSERT_TRUE(reader.ok());
  std::string steps;
  for (int i = 1; i <= 1000; ++i) {
    steps += "{\"event\":\"step\",\"step\":" + std::to_string(i) + ",\"samples\":128}\n";
  }
  append(progress, steps);
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  ASSERT_EQ(events.size(), 1U);  // the first step goes out at once
  EXPECT_EQ(events[0].samples, 128);
  EXPECT_TRUE(reader->poll(kReadTime + 500).empty());
  events = reader->poll(kReadTime + 1000);  // the interval passed: the rest, as one
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].step, 1000);
  EXPECT_EQ(events[0].samples, 999 * 128);
  // Coalescing steps is normal, not throttling.
  EXPECT_FALSE(reader->throttled().any());
}

// Issue 33 (4): steps that carry a metric are kept one by one up to the
// burst (a short run keeps every loss it logged), then about one a second.
TEST_F(ProgressReaderTest, StepsWithMetricsAreKeptEachUpToTheirBurst) {
  std::string progress = dir_ + "/progress.jsonl";
  auto steps = [](int from, int to) {
    std::string text;
    for (int i = from; i <= to; ++i) {
      text += "{\"event\":\"step\",\"step\":" + std::to_string(i) +
              ",\"samples\":1,\"loss\":" + std::to_string(1.0 / i) + "}\n";
    }
    return text;
  };
  {  // The defaults: 400 steps logged at once are 400 events, each with its loss.
    Result<ProgressReader> reader = ProgressReader::create(sources(progress), kReadTime);
    ASSERT_TRUE(reader.ok());
    append(progress, steps(1, 400));
    std::vector<ProgressEvent> events = reader->poll(kReadTime);
    ASSERT_EQ(events.size(), 400U);
    EXPECT_EQ(events[399].step, 400);
    EXPECT_DOUBLE_EQ(events[399].metrics.at("loss"), 1.0 / 400);
  }
  std::filesystem::remove(progress);
  // Beyond the burst (3 here): the rest wait for the interval, coalesced.
  Result<ProgressReader> reader =
      ProgressReader::create(sources(progress), kReadTime, small_limits());
  ASSERT_TRUE(reader.ok());
  append(progress, steps(1, 10));
  EXPECT_EQ(reader->poll(kReadTime).size(), 3U);
  std::vector<ProgressEvent> events = reader->poll(kReadTime + 1000);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].step, 10);
  EXPECT_EQ(events[0].samples, 7);
}

TEST_F(ProgressReaderTest, EpochEndsBeyondTheirRateAreCoalescedNeverLost) {
  std::string progress = dir_ + "/progress.jsonl";
  Result<ProgressReader> reader =
      ProgressReader::create(sources(progress), kReadTime, small_limits());
  ASSERT_TRUE(reader.ok());
  std::string text;
  for (int e = 1; e <= 10; ++e) {
    text += "{\"event\":\"epoch_end\",\"epoch\":" + std::to_string(e) + ",\"samples\":100}\n";
  }
  append(progress, text);
  std::vector<ProgressEvent> events = reader->poll(kReadTime);
  EXPECT_EQ(kinds(events), "epoch_end1,epoch_end2,epoch_end3");  // the burst
  events = reader->poll(kReadTime + 1000);  // one more token: the other seven, as one
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].epoch, 10);
  EXPECT_EQ(events[0].samples, 700);
  EXPECT_EQ(events[0].metrics.at("coalesced_epochs"), 7);
  EXPECT_EQ(reader->throttled().coalesced_epochs, 6);
}

TEST_F(ProgressReaderTest, SamplesSumsSaturateInsteadOfWrapping) {
  std::string progress = dir_ + "/progress.jsonl";
  Result<ProgressReader> reader =
      ProgressReader::create(sources(progress), kReadTime, small_limits());
  ASSERT_TRUE(reader.ok());
  std::string text = "{\"event\":\"step\",\"samples\":1}\n";
  for (int i = 0; i < 20; ++i) text += "{\"event\":\"step\",\"samples\":1000000000000}\n";
  append(progress, text);
  (void)reader->poll(kReadTime);
  std::vector<ProgressEvent> events = reader->poll(kReadTime + 1000);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].samples, 20 * kMaxSamplesPerEvent);
  EXPECT_GT(*events[0].samples, 0);
}

TEST_F(ProgressReaderTest, OtherEventsBeyondTheirRateAreDroppedAndTheJobIsToldOnce) {
  std::string progress = dir_ + "/progress.jsonl";
  Result<ProgressReader> reader =
      ProgressReader::create(sources(progress), kReadTime, small_limits());
  ASSERT_TRUE(reader.ok());
  append(progress, std::string(10, '\n') +
                       "{\"event\":\"metric\",\"loss\":1}\n"
                       "{\"event\":\"metric\",\"loss\":2}\n"
                       "{\"event\":\"metric\",\"loss\":3}\n"
                       "{\"event\":\"metric\",\"loss\":4}\n");
  EXPECT_EQ(reader->poll(kReadTime).size(), 2U);
  EXPECT_EQ(reader->throttled().dropped_events, 2);
  std::vector<std::string> notices = reader->take_notices();
  ASSERT_EQ(notices.size(), 1U);
  EXPECT_THAT(notices[0], HasSubstr("progress throttled"));
  EXPECT_THAT(notices[0], HasSubstr("2 events dropped"));
  append(progress, "{\"event\":\"metric\",\"loss\":5}\n{\"event\":\"metric\",\"loss\":6}\n");
  (void)reader->poll(kReadTime);
  EXPECT_TRUE(reader->take_notices().empty());  // once

  ThrottleCounts counts = reader->throttled();
  EXPECT_EQ(counts.dropped_events, 4);
  ProgressEvent event = counts.to_event(kReadTime);
  EXPECT_EQ(event.kind, "throttled");
  ThrottleCounts back = ThrottleCounts::from_event(event);
  EXPECT_EQ(back.dropped_events, 4);
  EXPECT_EQ(back.describe(), "4 events dropped");
}

TEST_F(ProgressReaderTest, OverTheParseBudgetEpochEndsAreStillRead) {
  std::string progress = dir_ + "/progress.jsonl";
  ProgressLimits limits;
  limits.parse_bytes_per_poll = 4096;
  Result<ProgressReader> reader = ProgressReader::create(sources(progress), kReadTime, limits);
  ASSERT_TRUE(reader.ok());
  std::string text;
  for (int i = 0; i < 10000; ++i) {
    text += "{\"event\":\"step\",\"samples\":1}\n";
    if (i % 1000 == 999)
      text += "{\"event\":\"epoch_end\",\"epoch\":" + std::to_string(i / 1000 + 1) + "}\n";
  }
  append(progress, text);
  std::vector<ProgressEvent> events = reader->poll(kReadTime, /*job_exited=*/true);
  int epochs = 0;
  for (const ProgressEvent& e : events) epochs += e.kind == "epoch_end" ? 1 : 0;
  EXPECT_EQ(epochs, 10);
  EXPECT_GT(reader->throttled().dropped_events, 9000);
}

// Issue 15: a job flooding its progress file made colo read (and keep) all of
// it at once. Each poll now reads a bounded amount and skips a backlog.
TEST_F(ProgressReaderTest, AFloodIsReadInBoundedPollsAndItsBacklogSkipped) {
  std::string progress = dir_ + "/progress.jsonl";
  ProgressLimits limits;
  limits.progress_file.max_read_bytes = 64 * 1024;
  limits.progress_file.max_backlog_bytes = 1 << 20;
  limits.progress_file.max_final_bytes = 128 * 1024;
  Result<ProgressReader> reader = ProgressReader::create(sources(progress), kReadTime, limits);
  ASSERT_TRUE(reader.ok());
  std::string line = "{\"event\":\"step\",\"samples\":128}\n";
  std::string chunk;
  for (int i = 0; i < 1000; ++i) chunk += line;
  for (int i = 0; i < 20; ++i) append(progress, chunk);  // 640 KB
  UnixMillis now = kReadTime;
  (void)reader->poll(now);
  EXPECT_EQ(reader->throttled().skipped_bytes, 0);
  for (int i = 0; i < 60; ++i) append(progress, chunk);  // 2.6 MB: over the backlog
  (void)reader->poll(now += 200);
  EXPECT_GT(reader->throttled().skipped_bytes, 1 << 20);
  for (int i = 0; i < 20; ++i) append(progress, chunk);
  (void)reader->poll(now += 200, /*job_exited=*/true);  // reads 128 KiB, skips the rest
  EXPECT_GT(reader->throttled().skipped_bytes, (1 << 20) + 500 * 1000);
  EXPECT_THAT(reader->take_notices(), ElementsAre(HasSubstr("skipped unread")));
}

TEST_F(ProgressReaderTest, ARefusedProgressFileIsToldOnce) {
  std::string progress = dir_ + "/progress.jsonl";
  ASSERT_EQ(mkfifo(progress.c_str(), 0600), 0);
  Result<ProgressReader> reader = ProgressReader::create(sources(progress), kReadTime);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE(reader->poll(kReadTime).empty());
  EXPECT_THAT(reader->take_notices(), ElementsAre(HasSubstr("is a FIFO")));
  EXPECT_TRUE(reader->poll(kReadTime).empty());
  EXPECT_TRUE(reader->take_notices().empty());
  EXPECT_EQ(reader->throttled().refused_files, 1);
}

TEST_F(ProgressReaderTest, ANoteGoesIntoARegularLogOnly) {
  std::string log = dir_ + "/job.log";
  append(log, "partial line");
  append_note_to_log(log, "progress throttled: x");
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "partial line\ncolo: progress throttled: x\n");
  std::string link = dir_ + "/link.log";
  ASSERT_EQ(symlink(log.c_str(), link.c_str()), 0);
  append_note_to_log(link, "not through links");
  std::ifstream again(log);
  std::string after((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, text);
}

// A job's metric names: control characters are stripped (every user's
// `colo show` prints them), and beyond max_metric_names distinct names the
// values of new ones are dropped, counted, and the job is told once.
TEST_F(ProgressReaderTest, MetricNamesAreCleanedAndBoundedPerJob) {
  std::string progress = dir_ + "/progress.jsonl";
  ProgressLimits limits;
  limits.max_metric_names = 3;
  Result<ProgressReader> reader = ProgressReader::create(sources(progress), kReadTime, limits);
  ASSERT_TRUE(reader.ok());
  append(progress,
         "{\"event\":\"epoch_end\",\"epoch\":1,\"metrics\":{\"lo\\u001b[31mss\":1,\"acc\":0.5,"
         "\"\\u0007\":3}}\n"
         "{\"event\":\"epoch_end\",\"epoch\":2,\"metrics\":{\"loss\":0.5,\"lr\":0.1,\"m1\":1,"
         "\"m2\":2}}\n");
  std::vector<ProgressEvent> events = reader->poll(kReadTime, /*job_exited=*/true);
  ASSERT_EQ(events.size(), 2U);
  // "\x1b[31m" loses its ESC; a name of control characters only is no name.
  EXPECT_THAT(events[0].metrics, ElementsAre(Pair("acc", 0.5), Pair("lo[31mss", 1)));
  // "loss" (names come in name order) is the third; lr, m1 and m2 are over the bound.
  EXPECT_THAT(events[1].metrics, ElementsAre(Pair("loss", 0.5)));
  EXPECT_EQ(reader->throttled().dropped_metrics, 3);
  std::vector<std::string> notices = reader->take_notices();
  ASSERT_EQ(notices.size(), 1U);
  EXPECT_THAT(notices[0], HasSubstr("more than 3 distinct metric names"));
  EXPECT_TRUE(reader->take_notices().empty());
}

}  // namespace
}  // namespace colo
