#include "run/stall_watch.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

constexpr UnixMillis kStart = 1'000'000;

StallOptions adaptive() {
  StallOptions o;
  o.floor_ms = 60'000;
  o.multiple = 3;
  o.before_progress_ms = 900'000;
  return o;
}

// After epochs of 2 s, the bound is the floor plus 3 x 2 s: silent for 66 s
// is fine, for 67 s stalled, and the reason names the last epoch and its time.
TEST(StallWatch, TheAdaptiveBoundIsTheFloorPlusAMultipleOfItsEpochTime) {
  StallWatch w(kStart, std::nullopt, false, adaptive());
  w.progress(kStart + 5'000, std::nullopt);  // a first step
  w.progress(kStart + 7'000, 1, 2'000);
  w.progress(kStart + 9'000, 2, 2'000);
  ASSERT_EQ(w.bound_ms(), 66'000);
  EXPECT_FALSE(w.stalled(kStart + 9'000 + 66'000));
  std::optional<std::string> why = w.stalled(kStart + 9'000 + 67'000);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why,
            "stalled: no progress for 67 s after epoch 2 (last epoch took 2.0 s; the bound was "
            "66 s)");
}

// The longest gap between reports counts too (an evaluation pass between
// epochs), so a job with steps of 0.1 s and a 20 s pause is not stalled at 25 s.
TEST(StallWatch, TheLongestGapBetweenReportsWidensTheBound) {
  StallWatch w(kStart, std::nullopt, false, adaptive());
  w.progress(kStart + 1'000);
  w.progress(kStart + 21'000);
  w.progress(kStart + 21'100);
  EXPECT_EQ(w.bound_ms(), 60'000 + 60'000);
  EXPECT_FALSE(w.stalled(kStart + 21'100 + 25'000));
}

// Before its first report a job is watched only when it is known to report,
// with the generous start-up bound; a job that never reports is never stalled.
TEST(StallWatch, BeforeAnyProgressOnlyJobsKnownToReportAreWatched) {
  StallWatch silent(kStart, std::nullopt, false, adaptive());
  EXPECT_FALSE(silent.bound_ms());
  EXPECT_FALSE(silent.stalled(kStart + 10 * 3'600'000));
  StallWatch known(kStart, std::nullopt, true, adaptive());
  EXPECT_EQ(known.bound_ms(), 900'000);
  EXPECT_FALSE(known.stalled(kStart + 900'000));
  ASSERT_TRUE(known.stalled(kStart + 900'001));
  EXPECT_EQ(*known.stalled(kStart + 900'001),
            "stalled: no progress for 900 s since it started (the bound was 900 s)");
}

// A job's own stall_timeout wins over the run's default, which wins over the
// adaptive bound; 0 turns the watch off.
TEST(StallWatch, AJobsOwnTimeoutWinsOverTheRunsDefaultAndZeroTurnsItOff) {
  StallOptions run = adaptive();
  run.timeout_ms = 30'000;
  StallWatch by_default(kStart, std::nullopt, false, run);
  EXPECT_EQ(by_default.bound_ms(), 30'000);
  EXPECT_TRUE(by_default.stalled(kStart + 30'001));  // even before its first report
  StallWatch own(kStart, 2'000, false, run);
  own.progress(kStart + 1'000, 1, 1'000);
  EXPECT_EQ(own.bound_ms(), 2'000);
  EXPECT_FALSE(own.stalled(kStart + 3'000));
  EXPECT_TRUE(own.stalled(kStart + 3'001));
  StallWatch off(kStart, 0, true, run);
  EXPECT_FALSE(off.bound_ms());
  EXPECT_FALSE(off.stalled(kStart + 10 * 3'600'000));
}

// After a fatal fault on its GPU, a job that has reported progress is
// watched closely, even one whose watch was off: a hung client of a faulted
// MPS server holds the server. The bound follows its latest pace, not its
// first epoch's warm-up. One that has not reported yet keeps its bound, and
// one that reports again has run on past the fault.
TEST(StallWatch, AfterAFaultOnItsGpuAReportingJobIsWatchedClosely) {
  StallWatch w(kStart, std::nullopt, false, adaptive());
  w.progress(kStart + 8'000);             // its first step, after start-up
  w.progress(kStart + 10'000, 1, 9'000);  // its first epoch, with the warm-up
  EXPECT_EQ(w.bound_ms(), 60'000 + 27'000);
  w.fault_seen(kStart + 10'500);
  EXPECT_TRUE(w.after_fault());
  EXPECT_EQ(w.bound_ms(), 5'000 + 6'000);  // its pace since its first step
  EXPECT_FALSE(w.stalled(kStart + 10'000 + 11'000));
  EXPECT_TRUE(w.stalled(kStart + 10'000 + 11'001));
  // A report made before the fault, read after it, proves nothing; nor does
  // one within the floor after it (work in flight when the client hung).
  w.progress(kStart + 10'400, 2, 400);
  EXPECT_TRUE(w.after_fault());
  EXPECT_EQ(w.bound_ms(), 5'000 + 1'200);
  w.progress(kStart + 11'400, 3, 1'000);
  EXPECT_TRUE(w.after_fault());
  w.progress(kStart + 15'500, 4, 1'000);
  EXPECT_FALSE(w.after_fault());
  EXPECT_EQ(w.bound_ms(), 60'000 + 12'300);  // the longest gap, between epochs 3 and 4

  StallWatch starting(kStart, std::nullopt, true, adaptive());
  starting.fault_seen(kStart);
  EXPECT_EQ(starting.bound_ms(), 900'000);
  StallWatch off(kStart, 0, false, adaptive());
  off.progress(kStart + 1'000, 1, 1'000);
  off.fault_seen(kStart + 1'500);
  EXPECT_EQ(off.bound_ms(), 5'000 + 3'000);
}

// After a fault, a silent job whose processes sleep (a client hung on the
// faulted MPS server) is stalled once the floor has passed, long before its
// bound; one whose processes compute is left to its bound.
TEST(StallWatch, AfterAFaultASilentJobWhoseProcessesSleepIsStalledAtTheFloor) {
  StallWatch hung(kStart, std::nullopt, false, adaptive());
  hung.progress(kStart + 9'000);
  hung.progress(kStart + 10'000);
  hung.fault_seen(kStart + 11'000);
  EXPECT_EQ(hung.bound_ms(), 5'000 + 3'000);
  hung.cpu_used(kStart + 11'000, 50'000);
  hung.cpu_used(kStart + 15'000, 50'010);  // 4 s: not the floor yet
  EXPECT_FALSE(hung.stalled(kStart + 15'000));
  hung.cpu_used(kStart + 16'000, 50'020);  // 20 ms in 5 s: 0.4% of a core
  const std::optional<std::string> why = hung.stalled(kStart + 16'000);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why,
            "stalled: no progress for 6.0 s, and its processes used 20 ms of CPU time in the "
            "5.0 s after the fault");

  StallWatch busy(kStart, std::nullopt, false, adaptive());
  busy.progress(kStart + 10'000);  // its first report: 10 s after its start
  busy.fault_seen(kStart + 11'000);
  busy.cpu_used(kStart + 11'000, 50'000);
  busy.cpu_used(kStart + 16'000, 54'000);
  EXPECT_FALSE(busy.stalled(kStart + 16'000));
  EXPECT_TRUE(busy.stalled(kStart + 10'000 + 35'001));

  // One that waits on its GPU without spinning (little CPU) but reports
  // within its pace is not stalled by its CPU time.
  StallWatch blocking(kStart, std::nullopt, false, adaptive());
  blocking.progress(kStart + 9'000);
  blocking.progress(kStart + 10'000);
  blocking.fault_seen(kStart + 10'500);
  blocking.cpu_used(kStart + 10'500, 1'000);
  blocking.progress(kStart + 11'000);
  blocking.progress(kStart + 12'000);
  blocking.progress(kStart + 13'000);
  blocking.progress(kStart + 14'000);
  blocking.progress(kStart + 15'000);
  blocking.cpu_used(kStart + 15'600, 1'005);
  EXPECT_FALSE(blocking.stalled(kStart + 15'600));

  // CPU time read without a fault, or before its baseline, decides nothing.
  StallWatch quiet(kStart, std::nullopt, false, adaptive());
  quiet.progress(kStart + 10'000);
  quiet.cpu_used(kStart + 11'000, 0);
  quiet.cpu_used(kStart + 20'000, 0);
  EXPECT_FALSE(quiet.stalled(kStart + 20'000));
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// The evidence of a stall: its processes' GPU memory and SM use, its GPUs'
// SM activity, its processes' states, each "not seen" when absent.
TEST(StallEvidence, SaysWhatColoSeesOfTheJobAndWhatItDoesNot) {
  std::map<int, std::vector<EngineProcess>> processes;
  EngineProcess mine;
  mine.job_id = 7;
  mine.sample.used_memory_bytes = uint64_t{2} << 30;
  mine.sample.sm_util_pct = 30;
  EngineProcess theirs;
  theirs.job_id = 8;
  theirs.sample.used_memory_bytes = uint64_t{5} << 30;
  processes[0] = {mine, theirs};
  std::map<int, std::deque<DeviceSample>> recent;
  DeviceSample d;
  d.device = 0;
  d.sm_active_pct = 12;
  recent[0] = {d};
  ProcessState state;
  state.pid = 100;
  state.command = "python3";
  state.state = 'D';
  state.wchan = "nv_wait";
  EXPECT_EQ(stall_evidence(7, {0}, processes, recent, {state}),
            "GPU memory 2.0 GiB, its SM use 30%; gpu0 SM activity 12%; processes: 100 python3 D "
            "in nv_wait");
  EXPECT_EQ(stall_evidence(9, {1}, processes, recent, {}),
            "no GPU process of it seen; no process left in its group");
}

}  // namespace
}  // namespace colo
