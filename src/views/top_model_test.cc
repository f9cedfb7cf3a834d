#include "views/top_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace colo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr UnixMillis kNow = 1'700'000'100'000;

QueueJob job(int64_t id, const std::string& name, const std::string& owner,
             const std::string& state) {
  QueueJob j;
  j.id = id;
  j.name = name;
  j.group = name.substr(0, name.find('#'));
  j.owner = owner;
  j.state = state;
  j.mechanism = "mps";
  j.attempts = state == "queued" ? 0 : 1;
  j.submitted_ms = kNow - 60'000;
  return j;
}

// Two GPUs; gpu0 runs two MPS clients (jobs 12 and 14), gpu1 a stranger's process.
TopInput example() {
  TopInput in;
  in.from_service = true;
  in.source = "colo serve at /tmp/colo.sock";
  ServiceSnapshot& s = in.snapshot;
  s.time_ms = kNow;
  s.service = {4242, "root", "box", kNow - 60'000, "sim", true, "mps", "auto", 7, "running",
               "",   "",     ""};
  DeviceSample d;
  d.device = 0;
  d.time_ms = kNow - 500;
  d.sm_active_pct = 45.0;
  d.memory_used_bytes = 30ull << 30;
  d.memory_total_bytes = 141ull << 30;
  d.power_w = 300;
  d.pcie_rx_mib_per_s = 120;
  d.pcie_tx_mib_per_s = 30;
  s.gpus.push_back({0, "NVIDIA H200", "GPU-0", 141ull << 30, 2, d, 700.0});
  DeviceSample idle = d;
  idle.device = 1;
  idle.sm_active_pct = 0;
  idle.memory_used_bytes = 1ull << 30;
  idle.power_w = 90;
  idle.pcie_rx_mib_per_s = 0;
  idle.pcie_tx_mib_per_s = 0;
  s.gpus.push_back({1, "NVIDIA H200", "GPU-1", 141ull << 30, 0, idle, 700.0});

  QueueJob a = job(12, "resnet26#1", "alice", "running");
  a.gpu = 0;
  a.epoch = 3;
  a.samples_per_s = 5000;
  a.solo_samples_per_s = 10000;
  a.mps_sm_share_pct = 50;
  a.mps_memory_limit_bytes = 20ull << 30;
  a.predicted_end_ms = kNow + 250'000;
  a.pid = 5001;
  QueueJob b = job(14, "vit#1", "bob", "running");
  b.gpu = 0;
  b.epoch = 1;
  b.samples_per_s = 12000;
  b.pid = 5002;
  QueueJob c = job(15, "cait#1", "alice", "queued");
  QueueJob d_ended = job(9, "dlrm#1", "bob", "failed");
  d_ended.reason = "exit code 1";
  d_ended.ended_ms = kNow - 5'000;
  s.jobs = {a, b, c, d_ended};
  s.processes.push_back({0, 5001, 12, 9ull << 30, std::nullopt, true, "", "python3"});
  s.processes.push_back({0, 5002, 14, 15ull << 30, std::nullopt, true, "", "python3"});
  s.processes.push_back({1, 777, std::nullopt, 1ull << 30, 3.0, false, "carol", "blender"});
  return in;
}

std::string text(const TopInput& in, const TopState& state = {}, int width = 160, int height = 40) {
  return plain_text(render_top(in, state, width, height, kNow));
}

std::vector<int64_t> ids(const TopInput& in, const TopState& state) {
  std::vector<int64_t> out;
  for (const QueueJob* j : visible_jobs(in, state)) out.push_back(j->id);
  return out;
}

TEST(TopRender, BarsShowSmActivityMemoryAndPowerAgainstTheLimit) {
  const std::string screen = text(example());
  EXPECT_THAT(screen, HasSubstr("gpu0 NVIDIA H200"));
  EXPECT_THAT(screen, HasSubstr("45%]"));
  EXPECT_THAT(screen, HasSubstr("30G/141G]"));
  EXPECT_THAT(screen, HasSubstr("300/700W]"));
  EXPECT_THAT(screen, HasSubstr("PCIe rx 120 tx 30 MiB/s"));
  EXPECT_THAT(screen, HasSubstr("SIMULATED"));
  // The SM bar is 45% filled: count the '|' in the first bar of gpu0's line.
  const size_t at = screen.find("SM[");
  const size_t end = screen.find(']', at);
  const std::string bar = screen.substr(at + 3, end - at - 3);
  const auto filled = std::count(bar.begin(), bar.end(), '|');
  EXPECT_NEAR(static_cast<double>(filled) / static_cast<double>(bar.size()), 0.45, 0.06) << bar;
}

TEST(TopRender, ListsMpsClientsOneByOneWithTheirMemoryAndJob) {
  const std::string screen = text(example());
  EXPECT_THAT(screen,
              HasSubstr("5001 MPS client   9.0G         alice     job 12 resnet26#1 (python3)"));
  EXPECT_THAT(screen, HasSubstr("5002 MPS client    15G         bob       job 14 vit#1 (python3)"));
  EXPECT_THAT(screen, HasSubstr("777 process      1.0G SM   3% carol     blender"));
}

TEST(TopRender, JobRowsShowEpochRateSlowdownMemoryLimitsAndEnd) {
  const std::string screen = text(example());
  EXPECT_THAT(screen, HasSubstr("ID OWNER     NAME       STATE       GPU MECH      EPOCH     RATE  "
                                "SLOW    MEM SHARE      END        NOTE"));
  // Memory: its processes now (9 GiB), not its peak; limits: SM share and pinned memory.
  EXPECT_THAT(screen, HasSubstr("12 alice     resnet26#1 running       0 mps           3   5000/s "
                                "2.00x   9.0G 50% 20G    in 4m10s"));
  EXPECT_THAT(screen, HasSubstr("14 bob       vit#1      running       0 mps           1  12.0k/s "
                                "    -    15G -          -"));
  EXPECT_THAT(screen, HasSubstr("failed        - mps           -        -     -      - -          "
                                "5.0s ago   exit code 1"));
  EXPECT_THAT(screen, HasSubstr("5.0s ago"));
}

// Issue 56, item 6: with a job of another class than normal, a QOS column
// after SLOW marks each: a protected job's floor|speed of solo and share
// below the floor, "opp" for an opportunistic one, nothing for normal ones.
// Without one, the table is as before (no QOS column).
TEST(TopRender, AQosColumnMarksProtectedAndOpportunisticJobs) {
  EXPECT_THAT(text(example()), Not(HasSubstr("QOS")));
  TopInput in = example();
  QueueJob& main = in.snapshot.jobs[0];
  main.qos = "protected";
  main.min_speed = 0.9;
  main.speed_of_solo = 0.84;
  main.below_floor_share = 0.12;
  in.snapshot.jobs[1].qos = "opportunistic";
  const std::string screen = text(in);
  EXPECT_THAT(screen, HasSubstr("ID OWNER     NAME       STATE       GPU MECH      EPOCH     RATE  "
                                "SLOW QOS                MEM SHARE      END        NOTE"));
  EXPECT_THAT(screen, HasSubstr("12 alice     resnet26#1 running       0 mps           3   5000/s "
                                "2.00x P 0.90|0.84 12%   9.0G 50% 20G    in 4m10s"));
  EXPECT_THAT(screen, HasSubstr("14 bob       vit#1      running       0 mps           1  12.0k/s "
                                "    - opp                15G -          -"));
  EXPECT_THAT(screen, HasSubstr("15 alice     cait#1     queued        - mps           -        - "
                                "    -                      - -          -"));
}

// Issue 33, item 10: a service that stopped answering is not shown as live:
// the title says so and gives the time of its last answer, not a ticking clock.
TEST(TopRender, AServiceThatStoppedAnsweringIsShownAsLostNotLive) {
  TopInput in = example();
  EXPECT_EQ(text(in).find("LOST THE SERVICE"), std::string::npos);
  in.error = "colo serve at /tmp/colo.sock: no colo serve listens on /tmp/colo.sock";
  in.snapshot.time_ms = kNow - 90'000;
  const std::string shown = text(in);
  EXPECT_THAT(shown, HasSubstr("LOST THE SERVICE: as it was at "));
  EXPECT_THAT(shown, HasSubstr("not live"));
  EXPECT_THAT(shown, HasSubstr("no colo serve listens"));
}

TEST(TopRender, EveryLineFitsTheTerminalAtAnySize) {
  for (int width : {20, 40, 80, 120, 300}) {
    for (int height : {3, 8, 24, 60}) {
      std::vector<TopLine> lines = render_top(example(), {}, width, height, kNow);
      EXPECT_LE(static_cast<int>(lines.size()), height) << width << "x" << height;
      for (const TopLine& line : lines) {
        size_t n = 0;
        for (const TopSpan& s : line) n += s.text.size();
        EXPECT_LE(static_cast<int>(n), width) << width << "x" << height;
      }
      // The keys are always on the last line.
      EXPECT_THAT(plain_text({lines.back()}), HasSubstr(width >= 40 ? "s: sort" : "s: s"));
    }
  }
}

TEST(TopRender, NarrowTerminalsPutTheBarsOnTheirOwnLine) {
  const std::string wide = text(example(), {}, 160);
  const std::string narrow = text(example(), {}, 70);
  auto line_of = [](const std::string& screen, const std::string& what) {
    const size_t at = screen.find(what);
    return screen.substr(screen.rfind('\n', at) + 1,
                         screen.find('\n', at) - screen.rfind('\n', at) - 1);
  };
  EXPECT_THAT(line_of(wide, "gpu0"), HasSubstr("SM["));
  EXPECT_THAT(line_of(narrow, "gpu0"), Not(HasSubstr("SM[")));
  EXPECT_THAT(narrow, HasSubstr("SM["));
}

TEST(TopRender, ProcessesGiveWayToTheJobTableOnShortTerminals) {
  TopInput in = example();
  for (int i = 0; i < 40; ++i)
    in.snapshot.processes.push_back({0, static_cast<uint32_t>(6000 + i), std::nullopt, 1ull << 30,
                                     std::nullopt, true, "", "python3"});
  const std::string screen = text(in, {}, 160, 24);
  EXPECT_THAT(screen, HasSubstr("more processes"));
  EXPECT_THAT(screen, HasSubstr("resnet26#1"));  // the table is still there
  EXPECT_THAT(screen, HasSubstr("cait#1"));
}

TEST(TopRender, WithoutAServiceShowsTheLocalGpusAndTheirProcessesOnly) {
  TopInput in = example();
  in.from_service = false;
  in.source = "local GPUs (simulated H200)";
  in.snapshot.jobs.clear();
  for (ProcessView& p : in.snapshot.processes) {
    p.job.reset();
    p.user = "dave";
  }
  const std::string screen = text(in);
  EXPECT_THAT(screen, HasSubstr("local GPUs (simulated H200): no colo serve answers"));
  EXPECT_THAT(screen, HasSubstr("5001 MPS client   9.0G         dave      python3"));
  EXPECT_THAT(screen, Not(HasSubstr("EPOCH")));
}

TEST(TopRender, LongNamesAreCutToKeepTheColumnsAligned) {
  TopInput in = example();
  in.snapshot.jobs[0].name = std::string(40, 'n');
  const std::string screen = text(in);
  EXPECT_THAT(screen, HasSubstr(std::string(27, 'n') + "~ running"));
  EXPECT_THAT(screen, HasSubstr("vit#1                        running"));
}

// Issue 58, item 14: two submissions' jobs of one name are listed after
// their submissions, as colo queue and the dashboard list them
// (listed_names()); the column widens to hold them.
TEST(TopRender, TwoSubmissionsJobsOfOneNameAreListedByTheirSubmission) {
  TopInput in = example();
  QueueJob& first = in.snapshot.jobs[2];  // cait#1, queued
  first.submission_id = 3;
  first.submission_run_id = 7;
  QueueJob again = first;
  again.id = 16;
  again.submission_id = 5;
  again.submission_name = "lr-b";
  in.snapshot.jobs.push_back(again);
  const std::string screen = text(in);
  EXPECT_THAT(screen, HasSubstr("15 alice     #7/3: cait#1      queued"));
  EXPECT_THAT(screen, HasSubstr("16 alice     #7/5 lr-b: cait#1 queued"));
  EXPECT_THAT(screen, HasSubstr("12 alice     resnet26#1        running"));
}

TEST(TopRender, NamesAreAsciiOnlySoWidthsHold) {
  TopInput in = example();
  in.snapshot.jobs[0].name = "r\xc3\xa9snet\x1b[31m";
  const std::string screen = text(in);
  EXPECT_THAT(screen, HasSubstr("r??snet?[31m"));
  EXPECT_THAT(screen, Not(HasSubstr("\x1b")));
}

struct SortCase {
  TopSort sort;
  bool descending;
  std::vector<int64_t> expected;
};

class TopSorting : public ::testing::TestWithParam<SortCase> {};

TEST_P(TopSorting, OrdersJobsWithAbsentValuesLast) {
  TopState state;
  state.sort = GetParam().sort;
  state.descending = GetParam().descending;
  EXPECT_EQ(ids(example(), state), GetParam().expected) << to_string(GetParam().sort);
}

INSTANTIATE_TEST_SUITE_P(Keys, TopSorting,
                         ::testing::Values(SortCase{TopSort::kQueue, false, {12, 14, 15, 9}},
                                           SortCase{TopSort::kQueue, true, {9, 15, 14, 12}},
                                           SortCase{TopSort::kId, false, {9, 12, 14, 15}},
                                           SortCase{TopSort::kId, true, {15, 14, 12, 9}},
                                           SortCase{TopSort::kOwner, false, {12, 15, 14, 9}},
                                           SortCase{TopSort::kRate, true, {14, 12, 15, 9}},
                                           SortCase{TopSort::kRate, false, {12, 14, 15, 9}},
                                           SortCase{TopSort::kEpoch, true, {12, 14, 15, 9}},
                                           SortCase{TopSort::kSlowdown, true, {12, 14, 15, 9}},
                                           SortCase{TopSort::kMemory, true, {14, 12, 15, 9}},
                                           SortCase{TopSort::kName, false, {15, 9, 12, 14}}));

TEST(TopKeys, SortCyclesThroughTheColumnsAndReverses) {
  TopInput in = example();
  TopState state;
  EXPECT_EQ(handle_key(state, 's', in).kind, TopCommand::Kind::kNone);
  EXPECT_EQ(state.sort, TopSort::kId);
  EXPECT_THAT(state.message, HasSubstr("sorted by id"));
  handle_key(state, 'r', in);
  EXPECT_EQ(ids(in, state), (std::vector<int64_t>{15, 14, 12, 9}));
  handle_key(state, '<', in);
  EXPECT_EQ(state.sort, TopSort::kQueue);
  EXPECT_THAT(text(in, state), HasSubstr("s: sort (queue, descending)"));
}

TEST(TopKeys, FilterMatchesNameOwnerStateOrIdAndEscapeClearsIt) {
  TopInput in = example();
  TopState state;
  handle_key(state, '/', in);
  EXPECT_EQ(state.mode, TopMode::kFilter);
  for (char c : std::string("bobx")) handle_key(state, c, in);
  handle_key(state, kTopKeyBackspace, in);
  EXPECT_THAT(text(in, state), HasSubstr("filter: bob_"));
  handle_key(state, kTopKeyEnter, in);
  EXPECT_EQ(ids(in, state), (std::vector<int64_t>{14, 9}));
  EXPECT_THAT(text(in, state), HasSubstr("[bob]"));
  handle_key(state, '/', in);
  handle_key(state, kTopKeyEscape, in);
  EXPECT_EQ(ids(in, state).size(), 4u);
  state.filter = "queued";
  EXPECT_EQ(ids(in, state), (std::vector<int64_t>{15}));
  state.filter = "14";
  EXPECT_EQ(ids(in, state), (std::vector<int64_t>{14}));
  state.filter = "nobody";
  EXPECT_THAT(text(in, state), HasSubstr("no job matches the filter"));
}

TEST(TopKeys, SelectThenCancelAsksFirstAndNamesTheJob) {
  TopInput in = example();
  TopState state;
  handle_key(state, kTopKeyDown, in);
  EXPECT_EQ(state.selected, 14);
  handle_key(state, kTopKeyDown, in);
  handle_key(state, kTopKeyDown, in);
  handle_key(state, kTopKeyDown, in);  // stays on the last
  EXPECT_EQ(state.selected, 9);
  handle_key(state, kTopKeyUp, in);
  EXPECT_EQ(state.selected, 15);
  EXPECT_EQ(handle_key(state, 'c', in).kind, TopCommand::Kind::kNone);
  EXPECT_EQ(state.mode, TopMode::kConfirmCancel);
  EXPECT_THAT(text(in, state), HasSubstr("cancel job 15? y: yes"));
  TopCommand command = handle_key(state, 'y', in);
  EXPECT_EQ(command.kind, TopCommand::Kind::kCancel);
  EXPECT_EQ(command.job, 15);
  EXPECT_EQ(state.mode, TopMode::kTable);
  // Any other key says no.
  handle_key(state, 'c', in);
  EXPECT_EQ(handle_key(state, 'n', in).kind, TopCommand::Kind::kNone);
  EXPECT_EQ(state.message, "not cancelled");
}

TEST(TopKeys, ASelectionTheFilterHidesFallsToTheFirstJobShown) {
  TopInput in = example();
  TopState state;
  handle_key(state, kTopKeyEnd, in);
  EXPECT_EQ(state.selected, 9);
  handle_key(state, '/', in);
  for (char c : std::string("alice")) handle_key(state, c, in);
  handle_key(state, kTopKeyEnter, in);
  EXPECT_EQ(state.filter, "alice");
  handle_key(state, 'c', in);
  EXPECT_EQ(state.mode, TopMode::kConfirmCancel);
  EXPECT_EQ(handle_key(state, 'y', in).job, 12) << "never a job the table does not show";
}

TEST(TopKeys, AnEndedJobCannotBeCancelledAndTheSelectionShowsInTheTable) {
  TopInput in = example();
  TopState state;
  handle_key(state, kTopKeyEnd, in);
  EXPECT_EQ(state.selected, 9);
  EXPECT_EQ(handle_key(state, 'c', in).kind, TopCommand::Kind::kNone);
  EXPECT_EQ(state.mode, TopMode::kTable);
  EXPECT_THAT(state.message, HasSubstr("job 9 has already ended (failed)"));
  std::vector<TopLine> lines = render_top(in, state, 160, 40, kNow);
  bool found = false;
  for (const TopLine& line : lines) {
    if (!line.empty() && line[0].style == TopStyle::kSelected) {
      EXPECT_THAT(line[0].text, HasSubstr("dlrm#1"));
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(TopKeys, WithoutAServiceThereIsNothingToCancelOrFollow) {
  TopInput in = example();
  in.from_service = false;
  in.snapshot.jobs.clear();
  TopState state;
  EXPECT_EQ(handle_key(state, 'c', in).kind, TopCommand::Kind::kNone);
  EXPECT_THAT(state.message, HasSubstr("no colo serve runs"));
  EXPECT_EQ(handle_key(state, 'l', in).kind, TopCommand::Kind::kNone);
  EXPECT_EQ(handle_key(state, 'q', in).kind, TopCommand::Kind::kQuit);
}

TEST(TopKeys, FollowingALogShowsItsTailAndQGoesBack) {
  TopInput in = example();
  TopState state;
  TopCommand command = handle_key(state, 'l', in);
  EXPECT_EQ(command.kind, TopCommand::Kind::kFollowLog);
  EXPECT_EQ(command.job, 12);
  std::string log;
  for (int i = 1; i <= 100; ++i) log += "epoch " + std::to_string(i) + "\n";
  append_log(state, "/logs/12-resnet26_1.log", log, log.size(), false);
  const std::string screen = text(in, state, 80, 10);
  EXPECT_THAT(screen, HasSubstr("log of job 12 (resnet26#1)"));
  EXPECT_THAT(screen, HasSubstr("epoch 100\n"));
  EXPECT_THAT(screen, Not(HasSubstr("epoch 90\n")));
  EXPECT_THAT(screen, HasSubstr("[following]"));
  append_log(state, "/logs/12-resnet26_1.attempt2.log", "again\n", 6, true);
  EXPECT_THAT(text(in, state, 80, 10),
              HasSubstr("---- a new attempt: /logs/12-resnet26_1.attempt2.log"));
  EXPECT_THAT(text(in, state, 80, 10), HasSubstr("[ended]"));
  command = handle_key(state, 'q', in);
  EXPECT_EQ(command.kind, TopCommand::Kind::kStopLog);
  EXPECT_EQ(state.mode, TopMode::kTable);
}

// Issue 58, item 15: a queued job's log pane says it has no log yet and
// what the job waits for (it was empty).
TEST(TopKeys, AQueuedJobsLogSaysWhatItWaitsFor) {
  TopInput in = example();
  in.snapshot.jobs[2].reason = "fair share: alice used 2h";  // job 15, queued
  TopState state;
  handle_key(state, kTopKeyDown, in);
  handle_key(state, kTopKeyDown, in);
  ASSERT_EQ(state.selected, 15);
  TopCommand command = handle_key(state, 'l', in);
  ASSERT_EQ(command.kind, TopCommand::Kind::kFollowLog);
  append_log(state, "", "", 0, false);  // the service's answer for a job not started
  EXPECT_THAT(text(in, state, 100, 10),
              HasSubstr("queued: no log yet (waits for: fair share: alice used 2h)"));
  // Once it runs, its log replaces the note.
  in.snapshot.jobs[2].state = "running";
  append_log(state, "/logs/15.log", "epoch 1\n", 8, false);
  EXPECT_THAT(text(in, state, 100, 10), Not(HasSubstr("no log yet")));
  EXPECT_THAT(text(in, state, 100, 10), HasSubstr("epoch 1"));
}

// The selected job's row in the rendered table ("" when none is selected).
std::string selected_row(const TopInput& in, const TopState& state) {
  for (const TopLine& line : render_top(in, state, 160, 40, kNow)) {
    if (!line.empty() && line[0].style == TopStyle::kSelected) return line[0].text;
  }
  return "";
}

// Issue 58, item 15: after a cancel the selection stays on the job cancelled
// while the table shows it, and goes to the next row when it left the table
// (here a state filter of "queued" no longer matches it); it jumped to the
// first row.
TEST(TopKeys, AfterACancelTheSelectionStaysOnTheJobOrGoesToTheNextRow) {
  TopInput in = example();
  in.snapshot.jobs.push_back(job(16, "bert#1", "alice", "queued"));
  in.snapshot.jobs.push_back(job(17, "gpt#1", "alice", "queued"));
  TopState state;
  handle_key(state, '/', in);
  for (char c : std::string("queued")) handle_key(state, c, in);
  handle_key(state, kTopKeyEnter, in);
  ASSERT_EQ(ids(in, state), (std::vector<int64_t>{15, 16, 17}));
  handle_key(state, kTopKeyDown, in);
  ASSERT_EQ(state.selected, 16);
  handle_key(state, 'c', in);
  ASSERT_EQ(handle_key(state, 'y', in).job, 16);

  // The refresh after it: job 16 cancelled, no longer "queued".
  in.snapshot.jobs[4].state = "cancelled";
  follow_selection(state, in);
  EXPECT_EQ(state.selected, 17) << "the next row, not the first";
  EXPECT_THAT(selected_row(in, state), HasSubstr("gpt#1"));
  handle_key(state, kTopKeyUp, in);
  EXPECT_EQ(state.selected, 15);

  // Unfiltered, a cancelled job stays in the table: the selection stays on it.
  TopState plain;
  handle_key(plain, kTopKeyEnd, in);
  handle_key(plain, kTopKeyUp, in);
  const int64_t on = *plain.selected;
  for (QueueJob& j : in.snapshot.jobs) {
    if (j.id == on) j.state = "cancelled";
  }
  follow_selection(plain, in);
  EXPECT_EQ(plain.selected, on);

  // A job that left the list altogether: the job now in its row.
  TopState gone;
  handle_key(gone, kTopKeyDown, in);
  const std::vector<int64_t> before = ids(in, gone);
  ASSERT_EQ(gone.selected, before[1]);
  in.snapshot.jobs.erase(std::find_if(in.snapshot.jobs.begin(), in.snapshot.jobs.end(),
                                      [&](const QueueJob& j) { return j.id == before[1]; }));
  follow_selection(gone, in);
  EXPECT_EQ(gone.selected, before[2]);
  // The last row, when the table got shorter than it.
  TopState last;
  handle_key(last, kTopKeyEnd, in);
  in.snapshot.jobs.erase(std::find_if(in.snapshot.jobs.begin(), in.snapshot.jobs.end(),
                                      [&](const QueueJob& j) { return j.id == *last.selected; }));
  follow_selection(last, in);
  EXPECT_EQ(last.selected, ids(in, last).back());
}

TEST(TopKeys, TheKeptLogIsBounded) {
  TopState state;
  const std::string chunk(100'000, 'x');
  for (int i = 0; i < 5; ++i) append_log(state, "/l", chunk + "\n", 0, false);
  EXPECT_EQ(state.log_text.size(), kLogKeptBytes);
}

TEST(TopKeys, HelpShowsEveryKeyAndAnyKeyLeavesIt) {
  TopInput in = example();
  TopState state;
  handle_key(state, 'h', in);
  const std::string screen = text(in, state);
  for (const char* key : {"sort", "reverse", "filter", "log", "cancel", "quit"})
    EXPECT_THAT(screen, HasSubstr(key));
  handle_key(state, 'x', in);
  EXPECT_EQ(state.mode, TopMode::kTable);
}

TEST(TopKeys, TheTableScrollsToKeepTheSelectedJobVisible) {
  TopInput in = example();
  for (int i = 0; i < 50; ++i) {
    QueueJob q = job(100 + i, "sweep#" + std::to_string(i), "alice", "queued");
    in.snapshot.jobs.push_back(q);
  }
  TopState state;
  handle_key(state, kTopKeyEnd, in);
  const std::string screen = text(in, state, 160, 20);
  EXPECT_THAT(screen, HasSubstr("sweep#49"));
  EXPECT_THAT(screen, Not(HasSubstr("   12 alice     running")));
}

}  // namespace
}  // namespace colo
