#include "report/text_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <sstream>

#include "common/units.h"

namespace colo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 2023-11-14 22:13:20 UTC.
constexpr UnixMillis kT0 = 1'700'000'000'000;

// Local times in these tests are UTC.
class TextReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The line that starts with `prefix`, or "" when none does.
std::string line_starting(const std::string& text, const std::string& prefix) {
  for (const std::string& line : lines_of(text)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

// Splits a table row into its cells (columns are two or more spaces apart).
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  size_t spaces = 0;
  for (char c : line) {
    if (c == ' ') {
      ++spaces;
      continue;
    }
    if (spaces >= 2 && !cell.empty()) {
      cells.push_back(cell);
      cell.clear();
    } else if (spaces == 1 && !cell.empty()) {
      cell += ' ';
    }
    spaces = 0;
    cell += c;
  }
  if (!cell.empty()) cells.push_back(cell);
  return cells;
}

RunRow make_run_row(int64_t id, const std::string& mechanism, bool simulated) {
  RunRow run;
  run.id = id;
  run.started_ms = kT0;
  run.ended_ms = kT0 + 12'000;
  run.state = RunState::kOk;
  run.mechanism = mechanism;
  run.backend = simulated ? "sim" : "nvml";
  run.simulated = simulated;
  run.job_file = "sweep.toml";
  run.job_count = 2;
  return run;
}

RunSummary make_summary(const std::string& mechanism, bool simulated) {
  RunSummary s;
  s.run = make_run_row(7, mechanism, simulated);
  JobSummary a;
  a.id = 1;
  a.name = "resnet[lr=0.1]";
  a.state = JobState::kOk;
  a.device = 0;
  a.started_ms = kT0 + 1000;
  a.ended_ms = kT0 + 11'000;
  a.duration_ms = 10'000;
  a.epochs = 3;
  a.mean_epoch_ms = 3500;
  a.samples = 3000;
  a.throughput_per_s = 300;
  a.peak_memory_bytes = kGiB + kGiB / 2;
  a.mean_sm_active_pct = 23;
  a.energy_j = 7;
  a.usage.cpu_ms = 4200;
  a.usage.memory_peak_bytes = 512ULL << 20;
  JobSummary b;
  b.id = 2;
  b.name = "broken";
  b.state = JobState::kFailed;
  b.reason = "could not start: /no/such/binary not found";
  b.malformed_progress_lines = 2;
  s.jobs = {a, b};
  s.makespan_ms = 10'000;
  s.total_samples = 3600;
  s.throughput_per_s = 360;
  s.mean_sm_active_pct = 12.5;
  s.peak_memory_used_bytes = 12 * kGiB;
  s.energy_j = 18;
  s.device_samples = 26;
  return s;
}

TEST_F(TextReportTest, RunsTableHasOneRowPerRun) {
  RunRow sim = make_run_row(12, "mps", true);
  RunRow real = make_run_row(3, "exclusive", false);
  real.state = RunState::kInterrupted;
  real.job_file = "";
  real.jobs_not_ok = 1;  // issue 33 (5): a run's state says nothing of its jobs'
  std::string text = format_runs_table({sim, real});
  std::vector<std::string> lines = lines_of(text);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(cells_of(lines[0]), (std::vector<std::string>{"ID", "STARTED", "STATE", "MECHANISM",
                                                          "BACKEND", "JOBS", "JOB FILE"}));
  EXPECT_EQ(cells_of(lines[1]), (std::vector<std::string>{"12", "2023-11-14 22:13", "ok", "mps",
                                                          "sim (simulated)", "2", "sweep.toml"}));
  EXPECT_EQ(cells_of(lines[2]),
            (std::vector<std::string>{"3", "2023-11-14 22:13", "interrupted", "exclusive", "nvml",
                                      "2 (1 not ok)", "-"}));
  // Columns line up: the state column starts at the same offset on every row.
  EXPECT_EQ(lines[1].find("ok"), lines[0].find("STATE"));
  EXPECT_EQ(lines[2].find("interrupted"), lines[0].find("STATE"));
  for (const std::string& line : lines) EXPECT_NE(line.back(), ' ');
}

// Issue 58 (9): the runs list names each attempt's lineage, as `colo show` does.
TEST_F(TextReportTest, RunsTableNamesWhatEachRunResumesAndWhatResumedIt) {
  RunRow first = make_run_row(4, "mps", true);
  first.label.name = "resnet";
  first.resumed_by = 5;
  RunRow second = make_run_row(5, "mps", true);
  second.label.name = "resnet";
  second.resumes_run = 4;
  RunRow service = make_run_row(7, "mps", true);
  SubmissionRow a;
  a.id = 1;
  a.owner_name = "bob";
  a.jobs = 2;
  a.resumed_by = SubmissionRef{7, 2};
  SubmissionRow b = a;
  b.id = 2;
  b.resumed_by.reset();
  b.resumes_submission = SubmissionRef{7, 1};
  const std::vector<std::string> lines =
      lines_of(format_runs_table({first, second, service}, {{7, {a, b}}}));
  ASSERT_EQ(lines.size(), 6U);
  EXPECT_EQ(cells_of(lines[1])[1], "resnet (resumed by run 5)");
  EXPECT_EQ(cells_of(lines[2])[1], "resnet (resumes run 4)");
  EXPECT_EQ(cells_of(lines[4])[0], "7/1");
  EXPECT_EQ(cells_of(lines[4])[1], "(resumed by 7/2)");
  EXPECT_EQ(cells_of(lines[5])[1], "(resumes 7/1)");
}

TEST_F(TextReportTest, EmptyRunsTableSaysHowToStart) {
  EXPECT_THAT(format_runs_table({}), HasSubstr("colo run"));
}

TEST_F(TextReportTest, SummaryShowsHeaderJobsAndTotals) {
  RunSummary s = make_summary("mps", false);
  s.baseline_run_id = 3;
  s.speedup_vs_exclusive = 5.1234;
  s.steady_speedup_vs_exclusive = 6.4;
  s.solo_source = "exclusive run #3";
  s.steady_throughput_per_s = 7000.0;
  s.together = TogetherWindow{kT0 + 4000, kT0 + 11'000};
  s.jobs[0].slowdown = 1.09;
  std::string text = format_run_summary(s);

  EXPECT_EQ(lines_of(text)[0],
            "Run #7  ok  mechanism mps  backend nvml  started 2023-11-14 22:13:20  job file "
            "sweep.toml");
  EXPECT_THAT(text, Not(HasSubstr("SIMULATED")));

  EXPECT_EQ(cells_of(line_starting(text, "JOB")),
            (std::vector<std::string>{"JOB", "STATE", "GPU", "START", "DURATION", "EPOCHS",
                                      "EPOCH TIME", "SAMPLES/S", "PEAK MEM", "SM %", "ENERGY J",
                                      "HOST CPU", "HOST MEM", "SLOWDOWN", "REASON"}));
  EXPECT_EQ(
      cells_of(line_starting(text, "resnet")),
      (std::vector<std::string>{"resnet[lr=0.1]", "ok", "0", "22:13:21", format_duration_ms(10'000),
                                "3", format_duration_ms(3500), "300.0", "1.5 GiB", "23.0", "7.0",
                                "4.2s", "512 MiB", "1.09x"}));
  // Absent values of a job that never ran are "-"; its reason is shown.
  EXPECT_EQ(
      cells_of(line_starting(text, "broken")),
      (std::vector<std::string>{"broken", "failed", "-", "-", "-", "-", "-", "-", "-", "-", "-",
                                "-", "-", "-", "could not start: /no/such/binary not found"}));
  EXPECT_THAT(text, HasSubstr("note: broken ignored 2 malformed progress lines"));

  EXPECT_EQ(line_starting(text, "makespan:"), "makespan:           " + format_duration_ms(10'000));
  EXPECT_EQ(line_starting(text, "throughput:"),
            "throughput:         360.0 samples/s (3600 samples)");
  EXPECT_EQ(line_starting(text, "mean SM activity:"), "mean SM activity:   12.5 %");
  EXPECT_EQ(line_starting(text, "peak GPU memory:"), "peak GPU memory:    12.0 GiB");
  EXPECT_EQ(line_starting(text, "energy:"), "energy:             18.0 J");
  EXPECT_EQ(line_starting(text, "speed-up end to end"),
            "speed-up end to end: 5.12x over exclusive run #3 of the same jobs");
  EXPECT_EQ(line_starting(text, "speed-up steady"),
            "speed-up steady:     6.40x (the jobs' rates while they ran together over their solo "
            "rates, per GPU; solo rates from exclusive run #3)");
  EXPECT_EQ(line_starting(text, "steady throughput"),
            "steady throughput:  7000.0 samples/s (while the jobs ran together: 7.0 s from "
            "22:13:24, start-up excluded)");
}

// Every part of the summary at once: a submission of a service's run in a
// Slurm job, on MIG instances, with a note, a throttled job and a
// normalized throughput.
TEST_F(TextReportTest, TheWholeSummaryOfASubmissionOnMigInstances) {
  RunSummary s = make_summary("mig", false);
  s.run.slurm = {"1234_5", "batch", "node7", 2};
  s.submission = SubmissionRow{};
  s.submission->id = 4;
  s.submission->submitted_ms = kT0 - 60'000;
  s.submission->owner_name = "ana";
  s.submission->job_file = "mine.toml";
  s.submission->label = {"lr-a", {{"model", "r26"}}, "first try"};
  s.jobs[0].instance = "3g.71gb gi1 ci0 MIG-0a1b";
  s.jobs[0].gpus = "0";
  s.jobs[0].attempts = 2;
  s.jobs[0].progress_throttled = ThrottleCounts{};
  s.jobs[0].progress_throttled->dropped_events = 3;
  s.instances = {{"3g.71gb gi1 ci0 MIG-0a1b", 1, 10'000, 0},
                 {"3g.71gb gi2 ci0 MIG-2c3d", 0, 0, 10'000}};
  s.idle_instance_ms = 10'000;
  s.normalized_throughput.value = 1.5;
  s.normalized_throughput.shared_ms = 7'000;
  s.solo_source = "the profiles";
  EXPECT_EQ(
      format_run_summary(s),
      "Run #7  ok  mechanism mig  backend nvml  started 2023-11-14 22:13:20  job file sweep.toml\n"
      "Submission 7/4  by ana  submitted 2023-11-14 22:12:20  job file mine.toml: its 2 jobs here "
      "(a service's run holds every submission; `colo show 7` for all of them)\n"
      "Name lr-a model=r26\n"
      "Note first try\n"
      "Slurm job 1234_5 step batch on node7 (requeued 2 times before)\n"
      "\n"
      "JOB             STATE   GPU  START     DURATION  EPOCHS  EPOCH TIME  SAMPLES/S  PEAK MEM  "
      "SM %  ENERGY J  HOST CPU  HOST MEM  SLOWDOWN  REASON\n"
      "resnet[lr=0.1]  ok        0  22:13:21     10.0s       3        3.5s      300.0   1.5 GiB  "
      "23.0       7.0      4.2s   512 MiB         -  on attempt 2\n"
      "broken          failed    -  -                -       -           -          -         -    "
      " -         -         -         -         -  could not start: /no/such/binary not found\n"
      "note: resnet[lr=0.1]'s progress was throttled: 3 events dropped (see docs/job-file.md)\n"
      "note: broken ignored 2 malformed progress lines\n"
      "\n"
      "makespan:           10.0s\n"
      "throughput:         360.0 samples/s (3600 samples)\n"
      "steady throughput:  -\n"
      "mean SM activity:   12.5 %\n"
      "peak GPU memory:    12.0 GiB\n"
      "energy:             18.0 J\n"
      "idle MIG instances: 10.0 instance-seconds of 20.0 (50%) had no job running\n"
      "MIG INSTANCE     JOBS   BUSY   IDLE\n"
      "3g.71gb gi1 ci0     1  10.0s    0ms\n"
      "3g.71gb gi2 ci0     0    0ms  10.0s\n"
      "speed-up end to end: - (no exclusive run of the same jobs in the store: run them with "
      "--mechanism exclusive to compare)\n"
      "speed-up steady:     - (not measured)\n"
      "normalized throughput: 1.50x per GPU (summed rate over solo rate while two or more jobs "
      "were in their steady epochs on a GPU, 7.0s of it; solo rates from the profiles)\n");
}

TEST_F(TextReportTest, SimulatedRunCarriesABanner) {
  std::string text = format_run_summary(make_summary("mps", true));
  EXPECT_THAT(lines_of(text)[0], HasSubstr("backend sim (simulated)"));
  EXPECT_THAT(lines_of(text)[1], HasSubstr("SIMULATED"));
}

TEST_F(TextReportTest, SaysHowToGetABaselineWhenThereIsNone) {
  std::string text = format_run_summary(make_summary("naive", false));
  EXPECT_EQ(line_starting(text, "speed-up end to end"),
            "speed-up end to end: - (no exclusive run of the same jobs in the store: run them with "
            "--mechanism exclusive to compare)");
  std::string exclusive = format_run_summary(make_summary("exclusive", false));
  EXPECT_THAT(line_starting(exclusive, "speed-up"), HasSubstr("this run is exclusive"));
}

TEST_F(TextReportTest, AbsentRunTotalsAreDashes) {
  RunSummary s;
  s.run = make_run_row(9, "mps", false);
  s.run.state = RunState::kRunning;
  s.run.ended_ms.reset();
  s.baseline_run_id = 4;  // found, but nothing to compare
  std::string text = format_run_summary(s);
  EXPECT_THAT(text, HasSubstr("no jobs recorded"));
  EXPECT_EQ(line_starting(text, "makespan:"), "makespan:           -");
  EXPECT_EQ(line_starting(text, "throughput:"), "throughput:         -");
  EXPECT_EQ(line_starting(text, "mean SM activity:"), "mean SM activity:   -");
  EXPECT_EQ(line_starting(text, "peak GPU memory:"), "peak GPU memory:    -");
  EXPECT_EQ(line_starting(text, "energy:"), "energy:             -");
  EXPECT_EQ(line_starting(text, "speed-up end to end"),
            "speed-up end to end: - over exclusive run #4 of the same jobs");
  EXPECT_EQ(line_starting(text, "speed-up steady"), "speed-up steady:     - (not measured)");
  EXPECT_EQ(line_starting(text, "steady throughput"), "steady throughput:  -");
}

TEST_F(TextReportTest, JsonHasEveryFieldWithNullsForAbsent) {
  RunSummary s = make_summary("mps", true);
  s.baseline_run_id = 3;
  s.speedup_vs_exclusive = 2.4;
  nlohmann::json j = to_json(s);
  EXPECT_EQ(j["run"]["id"], 7);
  EXPECT_EQ(j["run"]["state"], "ok");
  EXPECT_EQ(j["run"]["simulated"], true);
  EXPECT_EQ(j["run"]["ended_ms"], kT0 + 12'000);
  ASSERT_EQ(j["jobs"].size(), 2U);
  EXPECT_EQ(j["jobs"][0]["name"], "resnet[lr=0.1]");
  EXPECT_EQ(j["jobs"][0]["peak_memory_bytes"], kGiB + kGiB / 2);
  EXPECT_DOUBLE_EQ(j["jobs"][0]["mean_epoch_ms"].get<double>(), 3500.0);
  EXPECT_EQ(j["jobs"][1]["state"], "failed");
  EXPECT_TRUE(j["jobs"][1]["device"].is_null());
  EXPECT_TRUE(j["jobs"][1]["throughput_per_s"].is_null());
  EXPECT_EQ(j["jobs"][1]["malformed_progress_lines"], 2);
  EXPECT_EQ(j["makespan_ms"], 10'000);
  EXPECT_DOUBLE_EQ(j["energy_j"].get<double>(), 18.0);
  EXPECT_EQ(j["baseline_run_id"], 3);
  EXPECT_DOUBLE_EQ(j["speedup_vs_exclusive"].get<double>(), 2.4);
  EXPECT_TRUE(j["steady_speedup_vs_exclusive"].is_null());
  EXPECT_TRUE(j["together_start_ms"].is_null());
  EXPECT_TRUE(j["jobs"][0]["slowdown"].is_null());

  RunSummary empty;
  nlohmann::json e = to_json(empty);
  EXPECT_TRUE(e["makespan_ms"].is_null());
  EXPECT_TRUE(e["baseline_run_id"].is_null());
  EXPECT_TRUE(e["run"]["ended_ms"].is_null());
  EXPECT_TRUE(e["jobs"].is_array());
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// Two grid instances that reported a loss, one job that reported nothing.
RunSummary learned_summary() {
  RunSummary s;
  s.run.id = 3;
  for (int i = 0; i < 2; ++i) {
    JobSummary j;
    j.id = i + 1;
    j.name = i == 0 ? "toy[lr=0.1]" : "toy[lr=0.01]";
    j.state = JobState::kOk;
    j.params["lr"] = i == 0 ? "0.1" : "0.01";
    std::vector<ProgressEvent> events(2);
    events[0].kind = events[1].kind = "epoch_end";
    events[0].time_ms = 1'000;
    events[0].epoch = 1;
    events[0].metrics["loss"] = i == 0 ? 0.9 : 0.5;
    events[1].time_ms = 2'000;
    events[1].epoch = 2;
    events[1].metrics["loss"] = i == 0 ? 1.2 : 0.25;  // the first job diverged
    j.metrics = training_metrics(events, std::nullopt);
    s.jobs.push_back(j);
  }
  JobSummary quiet;
  quiet.id = 3;
  quiet.name = "quiet, \"odd\" name";
  quiet.state = JobState::kFailed;
  quiet.reason = "exit code 1";
  s.jobs.push_back(quiet);
  return s;
}

TEST(LearningTable, ShowsParametersAndEachMetricsLastAndBest) {
  const std::string text = format_learning_table(learned_summary());
  EXPECT_THAT(text, HasSubstr("What the jobs learned"));
  EXPECT_THAT(text, HasSubstr("lr"));
  EXPECT_THAT(text, HasSubstr("loss last"));
  EXPECT_THAT(text, HasSubstr("loss best"));
  EXPECT_THAT(text, ::testing::ContainsRegex("toy\\[lr=0\\.1\\] +ok +0\\.1 +1\\.2 +0\\.9"));
  EXPECT_THAT(text, ::testing::ContainsRegex("toy\\[lr=0\\.01\\] +ok +0\\.01 +0\\.25 +0\\.25"));
  EXPECT_THAT(text, ::testing::ContainsRegex("odd\" name +failed"))
      << "the learned table says each job's state";
  EXPECT_THAT(format_run_summary(learned_summary()), HasSubstr("What the jobs learned"));
  RunSummary plain = make_summary("mps", false);
  EXPECT_EQ(format_learning_table(plain), "") << "nothing learned, no table";
}

TEST(LearningTable, ShowRepeatsTheWarningOfAnObjectiveAJobNeverReported) {
  struct Case {
    const char* name;
    std::string objective;
    bool warned;
  };
  for (const Case& c :
       {Case{"reports loss, not val_acc", "val_acc", true},
        Case{"reports its objective", "loss", false}, Case{"declares none", "", false}}) {
    SCOPED_TRACE(c.name);
    RunSummary s = learned_summary();
    for (JobSummary& job : s.jobs) job.objective = c.objective;
    const std::string text = format_run_summary(s);
    EXPECT_EQ(text.find("warning: objective 'val_acc' not reported by toy[lr=0.1]: it reports "
                        "loss; early stopping cannot judge it, nor colo show rank by it\n") !=
                  std::string::npos,
              c.warned)
        << text;
    EXPECT_THAT(text, Not(HasSubstr("not reported by quiet"))) << "it reported nothing";
  }
}

TEST(LearningTable, CsvHasOneRowPerJobWithParametersAndMetricsQuotedWhereNeeded) {
  const std::string csv = format_jobs_csv(learned_summary());
  std::vector<std::string> lines;
  for (size_t at = 0, end; at < csv.size(); at = end + 1) {
    end = csv.find('\n', at);
    lines.push_back(csv.substr(at, end - at));
  }
  ASSERT_EQ(lines.size(), 4u) << csv;
  EXPECT_THAT(lines[0], HasSubstr(",attempts,reason,diverged,lr,loss_last,loss_best"));
  EXPECT_THAT(lines[1], ::testing::EndsWith(",0.1,1.2,0.9"));
  EXPECT_THAT(lines[2], ::testing::EndsWith(",0.01,0.25,0.25"));
  EXPECT_THAT(lines[3], HasSubstr("\"quiet, \"\"odd\"\" name\""));
  EXPECT_THAT(lines[3], ::testing::EndsWith(",exit code 1,false,,,"));
}

TEST(LearningTable, JsonCarriesParametersAndMetrics) {
  nlohmann::json j = to_json(learned_summary());
  EXPECT_EQ(j["jobs"][1]["params"]["lr"], 0.01);  // a number, as the job file gave it
  EXPECT_DOUBLE_EQ(j["jobs"][0]["metrics"]["loss"]["best"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(j["jobs"][0]["metrics"]["loss"]["last"].get<double>(), 1.2);
  EXPECT_EQ(j["jobs"][0]["metrics"]["loss"]["lower_is_better"], true);
  EXPECT_EQ(j["jobs"][0]["metrics"]["loss"]["points"], 2);
  EXPECT_TRUE(j["jobs"][2]["metrics"].empty());
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// A protected job whose steady epochs ran at `speeds` of its solo rate (1000
// samples/s), 10 s each; no floor history without a solo rate.
JobSummary protected_job(const std::vector<double>& speeds, bool solo_known = true) {
  JobSummary j;
  j.id = 12;
  j.name = "main";
  j.state = JobState::kOk;
  j.qos = QosClass::kProtected;
  j.min_speed = 0.9;
  UnixMillis t = 1'000'000;
  for (double speed : speeds) {
    t += 10'000;
    j.epoch_rates.push_back({t, 10'000, speed * 1000, true, 1});
  }
  if (solo_known) j.floor = floor_history(j.epoch_rates, j.min_speed, 1000);
  return j;
}

struct FloorNoteCase {
  std::string name;
  JobSummary job;
  std::vector<std::string> says;  // each a substring of the note
  std::string not_said;           // "" when nothing
};

TEST(FloorNote, SaysTheFloorTheSpeedOfSoloAndTheShareBelow) {
  std::vector<double> many;
  for (int i = 0; i < 14; ++i) many.push_back(i < 13 ? 0.95 : 0.84);
  JobSummary normal;
  normal.name = "side";
  normal.qos = QosClass::kOpportunistic;
  const std::vector<FloorNoteCase> cases = {
      {"Measured",
       protected_job({0.95, 0.84, 0.93, 0.94}),
       {"note: main is protected: its floor is 0.90 of its solo speed; over 4 steady epochs "
        "(40.0s) it ran at 0.93 of solo (median; lowest 0.84, latest 0.94) and spent 25% of that "
        "time below its floor (10.0s)\n",
        "note: main's speed of solo by steady epoch: 0.95 0.84 0.93 0.94\n"},
       "the last"},
      {"OnlyTheLatestEpochsAreListed",
       protected_job(many),
       {"over 14 steady epochs", "7% of that time below its floor",
        "by steady epoch (the last 12 of 14): 0.95 0.95 0.95 0.95 0.95 0.95 0.95 0.95 0.95 0.95 "
        "0.95 0.84\n"},
       ""},
      {"NoSoloRate",
       protected_job({0.5}, false),
       {"its floor is 0.90 of its solo speed; no solo rate is known to judge it against\n"},
       "steady epoch"},
      {"NoSteadyEpochYet",
       protected_job({}),
       {"its floor is 0.90 of its solo speed; no steady epoch measured against it yet\n"},
       "by steady epoch"},
  };
  for (const FloorNoteCase& c : cases) {
    const std::string note = format_floor_note(c.job);
    for (const std::string& s : c.says) EXPECT_THAT(note, HasSubstr(s)) << c.name;
    if (!c.not_said.empty()) {
      EXPECT_THAT(note, Not(HasSubstr(c.not_said))) << c.name;
    }
  }
  EXPECT_EQ(format_floor_note(normal), "");
}

TEST(FloorNote, ShowIncludesItAndJsonCarriesTheFloorAndTheSeries) {
  RunSummary s;
  s.run.id = 4;
  s.jobs.push_back(protected_job({0.95, 0.84}));
  JobSummary side;
  side.id = 13;
  side.name = "side";
  side.qos = QosClass::kOpportunistic;
  s.jobs.push_back(side);
  EXPECT_THAT(format_run_summary(s), HasSubstr("note: main's speed of solo by steady epoch: "
                                               "0.95 0.84\n"));
  EXPECT_THAT(format_run_summary(s), HasSubstr("note: side is opportunistic"));
  const nlohmann::json j = to_json(s);
  const nlohmann::json& main = j["jobs"][0];
  EXPECT_EQ(main["qos"], "protected");
  EXPECT_DOUBLE_EQ(main["min_speed"].get<double>(), 0.9);
  EXPECT_NEAR(main["speed_of_solo"].get<double>(), 0.84, 1e-9);
  EXPECT_NEAR(main["speed_of_solo_median"].get<double>(), 0.84, 1e-9);
  EXPECT_DOUBLE_EQ(main["below_floor_share"].get<double>(), 0.5);
  EXPECT_EQ(main["below_floor_ms"], 10'000);
  EXPECT_EQ(main["steady_ms"], 20'000);
  ASSERT_EQ(main["speed_of_solo_series"].size(), 2U);
  EXPECT_EQ(main["speed_of_solo_series"][1]["ended_ms"], 1'020'000);
  EXPECT_EQ(main["speed_of_solo_series"][1]["attempt"], 1);
  EXPECT_EQ(main["speed_of_solo_series"][1]["epoch_ms"], 10'000);
  EXPECT_NEAR(main["speed_of_solo_series"][0]["speed_of_solo"].get<double>(), 0.95, 1e-9);
  const nlohmann::json& other = j["jobs"][1];
  for (const char* key : {"min_speed", "speed_of_solo", "speed_of_solo_median", "below_floor_share",
                          "below_floor_ms", "steady_ms"})
    EXPECT_TRUE(other[key].is_null()) << key;
  EXPECT_TRUE(other["speed_of_solo_series"].is_array() && other["speed_of_solo_series"].empty());
}

}  // namespace
}  // namespace colo
