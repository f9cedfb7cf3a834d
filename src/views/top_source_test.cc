#include "views/top_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "gpu/sim_backend.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(LocalTopSource, ReadsTheGpusAndTheirProcessesWithWhoRunsThem) {
  FakeClock clock;
  auto backend = SimBackend::create("H100", 2, clock);
  ASSERT_TRUE(backend.ok()) << backend.error().message();
  (*backend)->process_started(1, 4242, SimLoadHint{8ull << 30, 40});
  Result<std::vector<DeviceInfo>> devices = (*backend)->devices();
  ASSERT_TRUE(devices.ok());
  std::map<uint32_t, ProcessIdentity> table = {{4242, {"alice", "python3"}}};
  LocalTopSource source(
      **backend, *devices, clock, [&](uint32_t pid) { return table[pid]; }, /*history=*/3);
  TopInput in = source.read();
  EXPECT_FALSE(in.from_service);
  EXPECT_THAT(in.source, HasSubstr("simulated H100"));
  EXPECT_TRUE(in.snapshot.service.simulated);
  ASSERT_EQ(in.snapshot.gpus.size(), 2u);
  ASSERT_TRUE(in.snapshot.gpus[1].latest);
  EXPECT_NEAR(*in.snapshot.gpus[1].latest->sm_active_pct, 40.0, 0.01);
  EXPECT_EQ(in.snapshot.gpus[1].power_limit_w, (*devices)[1].power_limit_w);
  ASSERT_EQ(in.snapshot.processes.size(), 1u);
  const ProcessView& p = in.snapshot.processes[0];
  EXPECT_EQ(p.gpu, 1);
  EXPECT_EQ(p.pid, 4242u);
  EXPECT_EQ(p.user, "alice");
  EXPECT_EQ(p.command, "python3");
  EXPECT_GE(*p.used_memory_bytes, 8ull << 30);
  EXPECT_FALSE(p.job);
  // History is kept per GPU, bounded, oldest first.
  for (int i = 0; i < 5; ++i) {
    clock.advance_ms(1000);
    in = source.read();
  }
  EXPECT_EQ(in.snapshot.samples.size(), 6u);  // 3 per GPU
  EXPECT_LT(in.snapshot.samples.front().time_ms, in.snapshot.samples.back().time_ms);
  EXPECT_THAT(plain_text(render_top(in, {}, 160, 30, clock.now_ms())),
              HasSubstr("4242 process      8.5G SM  40% alice     python3"));
}

TEST(LocalTopSource, HasNoJobsToCancelOrFollow) {
  FakeClock clock;
  auto backend = SimBackend::create("H200", 1, clock);
  ASSERT_TRUE(backend.ok());
  LocalTopSource source(**backend, *(*backend)->devices(), clock);
  EXPECT_THAT(source.cancel(1).error().message(), HasSubstr("no colo serve runs here"));
  EXPECT_FALSE(source.read_log(1, 0).ok());
}

// A source whose job logs are files in memory: path -> text, per attempt.
class FakeLogs final : public TopSource {
 public:
  TopInput read() override { return {}; }
  Status cancel(int64_t /*id*/) override { return OkStatus(); }
  Result<LogChunk> read_log(int64_t /*id*/, uint64_t offset) override {
    ++reads;
    if (fail) return Error("job 3 belongs to bob; you (alice) may read only your own logs");
    const std::string& text = files[current];
    const size_t from = std::min<size_t>(offset, text.size());
    const std::string data = text.substr(from, chunk);
    return LogChunk{current, data, from + data.size(), ended};
  }
  std::map<std::string, std::string> files;
  std::string current;
  size_t chunk = 4;
  bool ended = false;
  bool fail = false;
  int reads = 0;
};

TEST(FollowLog, ReadsWhatIsNewThenANewAttemptFromItsStartThenTheEnd) {
  FakeLogs logs;
  logs.files["/j/3.log"] = "one\ntwo\n";
  logs.current = "/j/3.log";
  TopState state;
  state.mode = TopMode::kLog;
  state.log_job = 3;
  follow_log(logs, state);
  EXPECT_EQ(state.log_text, "one\ntwo\n");
  EXPECT_EQ(state.log_offset, 8u);
  logs.files["/j/3.log"] += "three\n";
  follow_log(logs, state);
  EXPECT_EQ(state.log_text, "one\ntwo\nthree\n");
  // The job failed and runs again: its second attempt logs elsewhere.
  logs.files["/j/3.attempt2.log"] = "again\n";
  logs.current = "/j/3.attempt2.log";
  follow_log(logs, state);
  EXPECT_EQ(state.log_text, "one\ntwo\nthree\n---- a new attempt: /j/3.attempt2.log\nagain\n");
  EXPECT_FALSE(state.log_ended);
  logs.ended = true;
  follow_log(logs, state);
  EXPECT_TRUE(state.log_ended);
  const int reads = logs.reads;
  follow_log(logs, state);
  EXPECT_EQ(logs.reads, reads) << "an ended log is not read again";
}

TEST(FollowLog, ARefusalIsShownAndNothingElseChanges) {
  FakeLogs logs;
  logs.fail = true;
  TopState state;
  state.mode = TopMode::kLog;
  state.log_job = 3;
  follow_log(logs, state);
  EXPECT_THAT(state.message, HasSubstr("may read only your own logs"));
  EXPECT_TRUE(state.log_text.empty());
  state.mode = TopMode::kTable;
  const int reads = logs.reads;
  follow_log(logs, state);
  EXPECT_EQ(logs.reads, reads) << "only while a log is shown";
}

}  // namespace
}  // namespace colo
