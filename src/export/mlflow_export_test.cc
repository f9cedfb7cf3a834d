#include "export/mlflow_export.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "export/mlflow_format.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::kFakeT0;

constexpr UnixMillis kT0 = kFakeT0;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every file below `root` (relative path -> content) and every folder
// (relative path + "/" -> "").
std::map<std::string, std::string> tree(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(root)) {
    const std::string rel = fs::relative(e.path(), root).string();
    if (e.is_directory()) {
      out[rel + "/"] = "";
    } else {
      out[rel] = read(e.path());
    }
  }
  return out;
}

// The keys of a meta.yaml, in order.
std::vector<std::string> yaml_keys(const std::string& text) {
  std::vector<std::string> keys;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) keys.push_back(line.substr(0, line.find(':')));
  return keys;
}

// The value text of `key` in a meta.yaml.
std::string yaml_value(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(key + ": ")) return line.substr(key.size() + 2);
  }
  return "<absent>";
}

// The most recent run, as `colo export mlflow last` names it.
std::vector<MlflowTarget> latest_run() { return {MlflowTarget{}}; }

const char* const kOddName = "odd \"name\": #2";
const char* const kOddValue = "value: with 'quotes'\nand a newline";

// A run of three jobs on two GPUs: one ok that reported steps and epochs,
// one out of memory with an odd name, one cancelled before it started.
struct SweepRun {
  int64_t run_id = 0;
  int64_t ok_job = 0, oom_job = 0, cancelled_job = 0;
};

// A run of `colo run --mechanism exclusive` on one simulated H200, begun at `started_ms`.
NewRun exclusive_run(UnixMillis started_ms) {
  NewRun run;
  run.started_ms = started_ms;
  run.mechanism = "exclusive";
  run.backend = "sim";
  run.host = "fake-host";
  run.colo_pid = 1;
  run.devices_json = R"([{"index":0,"name":"NVIDIA H200","uuid":"GPU-a"}])";
  return run;
}

SweepRun add_sweep_run(RunStore& store) {
  SweepRun out;
  NewRun run;
  run.started_ms = kT0 - 100;
  run.mechanism = "mps";
  run.backend = "sim";
  run.simulated = true;
  run.job_file = "sweep.toml";
  run.host = "fake-host";
  run.colo_pid = 1;
  run.devices_json =
      R"([{"index":0,"name":"NVIDIA H200","uuid":"GPU-a","memory_total_bytes":150000000000},)"
      R"({"index":1,"name":"NVIDIA H100","uuid":"GPU-b","memory_total_bytes":80000000000}])";
  out.run_id = *store.begin_run(run);
  std::vector<JobSpec> jobs(3);
  jobs[0].name = "train[lr=0.1]";
  jobs[0].group = "train";
  jobs[0].command = {"python3", "train.py", "--lr", "0.1"};
  jobs[0].params = {{"lr", "0.1"}, {"weird key@1", kOddValue}};
  jobs[1].name = kOddName;
  jobs[1].group = "odd";
  jobs[1].command = {"python3", "odd.py"};
  jobs[1].params = {{"lr", "0.01"}};
  jobs[2].name = "never";
  jobs[2].command = {"true"};
  std::vector<int64_t> ids =
      *store.add_jobs(out.run_id, jobs, {"/tmp/a.log", "/tmp/b.log", ""}, run.started_ms);
  out.ok_job = ids[0];
  out.oom_job = ids[1];
  out.cancelled_job = ids[2];
  EXPECT_TRUE(store.job_started(out.ok_job, 100, 0, kT0).ok());
  EXPECT_TRUE(store.job_started(out.oom_job, 200, 1, kT0).ok());

  std::vector<std::pair<int64_t, ProgressEvent>> events;
  const auto event = [&](int64_t job, UnixMillis t, const char* kind, std::optional<int64_t> step,
                         std::optional<int64_t> epoch, std::map<std::string, double> metrics) {
    ProgressEvent e;
    e.time_ms = t;
    e.kind = kind;
    e.step = step;
    e.epoch = epoch;
    if (epoch) e.samples = 1000;
    e.metrics = std::move(metrics);
    events.emplace_back(job, e);
  };
  event(out.ok_job, kT0 + 1000, "step", 10, std::nullopt, {{"loss", 2.5}});
  event(out.ok_job, kT0 + 2000, "step", 20, std::nullopt, {{"loss", 2.0}});
  event(out.ok_job, kT0 + 3000, "epoch_end", std::nullopt, 1, {{"loss", 1.5}, {"val/acc", 0.5}});
  event(out.ok_job, kT0 + 4000, "metric", std::nullopt, std::nullopt, {{"lr_now", 0.001}});
  event(out.ok_job, kT0 + 5000, "epoch_end", std::nullopt, 2,
        {{"loss", 1.0}, {"val/acc", 0.75}, {"system/gpu_0_utilization_percentage", 99}});
  ThrottleCounts throttled;
  throttled.dropped_events = 7;
  events.emplace_back(out.ok_job, throttled.to_event(kT0 + 5500));  // colo's, not the job's
  event(out.oom_job, kT0 + 1500, "epoch_end", std::nullopt, 1, {{"loss", 3.0}});
  EXPECT_TRUE(store.add_job_events(events).ok());

  std::vector<DeviceSample> samples;
  std::vector<ProcessSampleRow> processes;
  for (UnixMillis t = kT0; t <= kT0 + 6000; t += 500) {
    DeviceSample s;
    s.time_ms = t;
    s.device = 0;
    s.gpu_util_pct = (t - kT0) % 1000 == 0 ? 40 : 60;  // 50 over every second
    s.sm_active_pct = 35;
    s.memory_used_bytes = 3'000'000'000;
    s.memory_total_bytes = 150'000'000'000;
    s.power_w = 300;
    samples.push_back(s);
    if (t <= kT0 + 2000) {
      DeviceSample other = s;
      other.device = 1;
      other.gpu_util_pct = 90;
      other.memory_total_bytes.reset();  // from the device list: 80 GB
      samples.push_back(other);
    }
    if ((t - kT0) % 1000 == 0) {
      for (uint32_t pid : {100u, 101u}) {
        ProcessSampleRow p;
        p.sample.time_ms = t;
        p.sample.device = 0;
        p.sample.pid = pid;
        p.sample.used_memory_bytes = pid == 100 ? 2'000'000'000 : 1'000'000'000;
        p.job_id = out.ok_job;
        processes.push_back(p);
      }
    }
  }
  EXPECT_TRUE(store.add_samples(out.run_id, samples, processes).ok());
  JobExit ok{JobState::kOk, 0};
  EXPECT_TRUE(store.job_finished(out.ok_job, ok, kT0 + 6000, 0).ok());
  JobExit oom{JobState::kOutOfMemory, 1};
  oom.reason = "CUDA out of memory (log line 88)";
  EXPECT_TRUE(store.job_finished(out.oom_job, oom, kT0 + 2000, 0).ok());
  JobExit cancelled{JobState::kCancelled};
  cancelled.reason = "cancelled before it started";
  EXPECT_TRUE(store.job_finished(out.cancelled_job, cancelled, kT0 + 6500, 0).ok());
  EXPECT_TRUE(store.end_run(out.run_id, RunState::kFailed, kT0 + 7000).ok());
  return out;
}

class MlflowExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    store_ = testing::open_memory_store();
    dir_ = tmp_.path() + "/mlruns";
  }

  MlflowExportOptions options() const {
    MlflowExportOptions o;
    o.dir = dir_;
    o.user = "alice";
    o.now_ms = kT0 + 100'000;
    o.system_interval_ms = 1000;
    return o;
  }

  // The folder of the run the job with this name became, in the only experiment.
  fs::path run_folder(const MlflowExportOutcome& outcome, const std::string& job_name) const {
    for (const fs::directory_entry& e : fs::directory_iterator(outcome.experiments.at(0).path)) {
      if (!e.is_directory() || e.path().filename() == "tags") continue;
      if (read(e.path() / "tags" / "mlflow.runName") == job_name) return e.path();
    }
    ADD_FAILURE() << "no run named " << job_name;
    return {};
  }

  testing::TempDir tmp_{"colo_export_test"};
  std::unique_ptr<RunStore> store_;
  std::string dir_;
};

TEST(ParseMlflowTarget, TakesRunsAndExperiments) {
  const struct {
    std::string text;
    MlflowTarget::Kind kind;
    int64_t id;
  } cases[] = {
      {"12", MlflowTarget::Kind::kRun, 12},
      {"run:7", MlflowTarget::Kind::kRun, 7},
      {"exp:3", MlflowTarget::Kind::kExperiment, 3},
      {"last", MlflowTarget::Kind::kRun, 0},
      {"last-run", MlflowTarget::Kind::kRun, 0},
      {"last-exp", MlflowTarget::Kind::kExperiment, 0},
  };
  for (const auto& c : cases) {
    Result<MlflowTarget> t = parse_mlflow_target(c.text);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.error().message();
    EXPECT_EQ(t->kind, c.kind) << c.text;
    EXPECT_EQ(t->id, c.id) << c.text;
  }
  for (const char* bad : {"", "0", "-1", "exp:", "run:x", "12x", "experiment:3"}) {
    Result<MlflowTarget> t = parse_mlflow_target(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_THAT(t.error().message(), HasSubstr("exp:ID")) << bad;
  }
}

TEST_F(MlflowExportTest, ANamedRunGivesTheExperimentItsNameNoteAndTags) {
  const SweepRun sweep = add_sweep_run(*store_);
  ASSERT_TRUE(store_->set_label(sweep.run_id, {"lr-a", {{"model", "r26"}}, "first try"}).ok());
  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  const MlflowExportedExperiment& e = outcome->experiments.at(0);
  EXPECT_EQ(e.name, fmt::format("colo run {}: lr-a", sweep.run_id));
  EXPECT_THAT(read(fs::path(e.path) / "tags" / "mlflow.note.content"),
              ::testing::StartsWith("first try\n\n"));
  const fs::path job = run_folder(*outcome, "train[lr=0.1]");
  EXPECT_EQ(read(job / "tags" / "colo.run_name"), "lr-a");
  EXPECT_EQ(read(job / "tags" / "model"), "r26");
}

TEST_F(MlflowExportTest, WritesTheFileStoreLayout) {
  const SweepRun sweep = add_sweep_run(*store_);
  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  ASSERT_EQ(outcome->experiments.size(), 1u);
  const MlflowExportedExperiment& e = outcome->experiments[0];
  EXPECT_EQ(outcome->runs, 3);
  EXPECT_EQ(e.jobs, 3);
  EXPECT_EQ(e.name, fmt::format("colo run {}: sweep.toml", sweep.run_id));
  EXPECT_EQ(e.path, dir_ + "/" + e.id);
  EXPECT_FALSE(e.replaces);

  // The store's root: the Default experiment and .trash, as MLflow makes them.
  const std::map<std::string, std::string> root = tree(dir_);
  EXPECT_TRUE(root.contains(".trash/"));
  EXPECT_EQ(root.at("0/meta.yaml"), fmt::format("artifact_location: file://{}/0\n"
                                                "creation_time: {}\n"
                                                "experiment_id: '0'\n"
                                                "last_update_time: {}\n"
                                                "lifecycle_stage: active\n"
                                                "name: Default\n",
                                                dir_, kT0 + 100'000, kT0 + 100'000));
  EXPECT_EQ(root.at(e.id + "/meta.yaml"),
            fmt::format("artifact_location: file://{}/{}\n"
                        "creation_time: {}\n"
                        "experiment_id: '{}'\n"
                        "last_update_time: {}\n"
                        "lifecycle_stage: active\n"
                        "name: 'colo run {}: sweep.toml'\n",
                        dir_, e.id, kT0 - 100, e.id, kT0 + 7000, sweep.run_id));
  EXPECT_EQ(root.at(e.id + "/tags/colo.source"), e.source);
  EXPECT_THAT(root.at(e.id + "/tags/mlflow.note.content"), HasSubstr("colo export mlflow"));

  // Every metric line is "<timestamp> <value> <step>", and they add up to what was said.
  int64_t lines = 0;
  const std::regex line_format(R"(\d+ -?[0-9.e+-]+ -?\d+)");
  for (const auto& [path, content] : root) {
    if (path.find("/metrics/") == std::string::npos || path.back() == '/') continue;
    std::istringstream in(content);
    for (std::string line; std::getline(in, line); ++lines) {
      EXPECT_TRUE(std::regex_match(line, line_format)) << path << ": " << line;
    }
    EXPECT_EQ(content.back(), '\n') << path;
  }
  EXPECT_EQ(lines, outcome->metric_points);
}

TEST_F(MlflowExportTest, OneRunPerJobWithParamsTagsAndMetrics) {
  const SweepRun sweep = add_sweep_run(*store_);
  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  const std::string& experiment_id = outcome->experiments[0].id;
  const fs::path run = run_folder(*outcome, "train[lr=0.1]");
  ASSERT_FALSE(run.empty());
  const std::map<std::string, std::string> files = tree(run);
  const std::string run_id = run.filename().string();

  // meta.yaml: MLflow's fields in MLflow's order.
  const std::string meta = files.at("meta.yaml");
  EXPECT_EQ(yaml_keys(meta),
            (std::vector<std::string>{"artifact_uri", "end_time", "entry_point_name",
                                      "experiment_id", "lifecycle_stage", "run_id", "run_name",
                                      "run_uuid", "source_name", "source_type", "source_version",
                                      "start_time", "status", "tags", "user_id"}));
  EXPECT_EQ(yaml_value(meta, "artifact_uri"),
            fmt::format("file://{}/{}/{}/artifacts", dir_, experiment_id, run_id));
  EXPECT_EQ(yaml_value(meta, "experiment_id"), "'" + experiment_id + "'");
  EXPECT_EQ(yaml_value(meta, "run_name"), "'train[lr=0.1]'");
  EXPECT_EQ(yaml_value(meta, "start_time"), std::to_string(kT0));
  EXPECT_EQ(yaml_value(meta, "end_time"), std::to_string(kT0 + 6000));
  EXPECT_EQ(yaml_value(meta, "status"), "3");
  EXPECT_EQ(yaml_value(meta, "source_type"), "4");
  EXPECT_EQ(yaml_value(meta, "user_id"), "alice");
  EXPECT_TRUE(files.contains("artifacts/"));

  // Params: the grid values, names made valid, values as they are.
  EXPECT_EQ(files.at("params/lr"), "0.1");
  EXPECT_EQ(files.at("params/weird key_1"), kOddValue);

  // Tags.
  EXPECT_EQ(files.at("tags/mlflow.runName"), "train[lr=0.1]");
  EXPECT_EQ(files.at("tags/mlflow.user"), "alice");
  EXPECT_EQ(files.at("tags/mlflow.source.name"), "sweep.toml");
  EXPECT_EQ(files.at("tags/colo.run_id"), std::to_string(sweep.run_id));
  EXPECT_EQ(files.at("tags/colo.job_id"), std::to_string(sweep.ok_job));
  EXPECT_EQ(files.at("tags/colo.state"), "ok");
  EXPECT_EQ(files.at("tags/colo.mechanism"), "mps");
  EXPECT_EQ(files.at("tags/colo.simulated"), "true");
  EXPECT_EQ(files.at("tags/colo.gpu"), "0");
  EXPECT_EQ(files.at("tags/colo.gpu_name"), "NVIDIA H200");
  EXPECT_EQ(files.at("tags/colo.command"), "python3 train.py --lr 0.1");
  EXPECT_EQ(files.at("tags/colo.attempts"), "1");

  // What the job reported (issue 33, item 4): a metric reported at steps over
  // its step numbers, and its values at epoch ends apart, as NAME_epoch over
  // epoch numbers (never two axes in one series); one reported only at epoch
  // ends over epochs; a plain metric at the latest epoch (or step). colo's
  // own events (throttled) are not the job's.
  EXPECT_EQ(files.at("metrics/loss"),
            fmt::format("{} 2.5 10\n{} 2.0 20\n", kT0 + 1000, kT0 + 2000));
  EXPECT_EQ(files.at("metrics/loss_epoch"),
            fmt::format("{} 1.5 1\n{} 1.0 2\n", kT0 + 3000, kT0 + 5000));
  EXPECT_EQ(files.at("metrics/val/acc"),
            fmt::format("{} 0.5 1\n{} 0.75 2\n", kT0 + 3000, kT0 + 5000));
  EXPECT_EQ(files.at("metrics/lr_now"), fmt::format("{} 0.001 1\n", kT0 + 4000));
  for (const auto& [path, content] : files) {
    EXPECT_EQ(path.find("dropped_events"), std::string::npos) << path;
  }
  // A job's metric under one of colo's names is the one renamed.
  EXPECT_EQ(files.at("metrics/system/gpu_0_utilization_percentage_2"),
            fmt::format("{} 99.0 2\n", kT0 + 5000));

  // GPU readings while it ran, averaged per second (the interval asked for):
  // each window's mean at its last reading, step = seconds since its start.
  const std::string utilization = files.at("metrics/system/gpu_0_utilization_percentage");
  EXPECT_THAT(utilization,
              ::testing::StartsWith(fmt::format("{} 50.0 0\n{} 50.0 1\n", kT0 + 500, kT0 + 1500)));
  EXPECT_THAT(utilization, ::testing::EndsWith(fmt::format("{} 40.0 6\n", kT0 + 6000)));
  EXPECT_THAT(files.at("metrics/system/gpu_0_memory_usage_megabytes"),
              ::testing::StartsWith(fmt::format("{} 3000.0 0\n", kT0 + 500)));
  EXPECT_THAT(files.at("metrics/system/gpu_0_memory_usage_percentage"),
              ::testing::StartsWith(fmt::format("{} 2.0 0\n", kT0 + 500)));
  EXPECT_THAT(files.at("metrics/system/gpu_0_power_usage_watts"),
              ::testing::StartsWith(fmt::format("{} 300.0 0\n", kT0 + 500)));
  EXPECT_THAT(files.at("metrics/system/gpu_0_sm_active_percentage"),
              ::testing::StartsWith(fmt::format("{} 35.0 0\n", kT0 + 500)));
  EXPECT_THAT(files.at("metrics/system/gpu_0_job_memory_usage_megabytes"),
              ::testing::StartsWith(fmt::format("{} 3000.0 0\n{} 3000.0 1\n", kT0, kT0 + 1000)));
  EXPECT_FALSE(files.contains("metrics/system/gpu_1_utilization_percentage"));

  // colo's summary: one point each, at step 0, at the job's end.
  EXPECT_EQ(files.at("metrics/colo/epochs"), fmt::format("{} 2.0 0\n", kT0 + 6000));
  EXPECT_EQ(files.at("metrics/colo/duration_seconds"), fmt::format("{} 6.0 0\n", kT0 + 6000));
  for (const auto& [path, content] : files) {
    if (!path.starts_with("metrics/colo/") || path.back() == '/') continue;
    EXPECT_TRUE(std::regex_match(content, std::regex(fmt::format(R"({} \S+ 0\n)", kT0 + 6000))))
        << path << ": " << content;
  }
}

TEST_F(MlflowExportTest, StatesNamesAndGpusOfTheOtherJobs) {
  add_sweep_run(*store_);
  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();

  const fs::path oom = run_folder(*outcome, kOddName);
  ASSERT_FALSE(oom.empty());
  const std::string meta = read(oom / "meta.yaml");
  EXPECT_EQ(yaml_value(meta, "run_name"), "'odd \"name\": #2'");
  EXPECT_EQ(yaml_value(meta, "status"), "4");
  EXPECT_EQ(yaml_value(meta, "end_time"), std::to_string(kT0 + 2000));
  EXPECT_EQ(read(oom / "tags" / "colo.state"), "oom");
  EXPECT_EQ(read(oom / "tags" / "colo.reason"), "CUDA out of memory (log line 88)");
  EXPECT_EQ(read(oom / "tags" / "colo.gpu"), "1");
  EXPECT_EQ(read(oom / "tags" / "colo.gpu_name"), "NVIDIA H100");
  EXPECT_EQ(read(oom / "metrics" / "loss"), fmt::format("{} 3.0 1\n", kT0 + 1500));
  // Its GPU's readings, the memory share from the device list (80 GB).
  EXPECT_THAT(read(oom / "metrics" / "system" / "gpu_1_utilization_percentage"),
              ::testing::StartsWith(fmt::format("{} 90.0 0\n", kT0 + 500)));
  EXPECT_THAT(read(oom / "metrics" / "system" / "gpu_1_memory_usage_percentage"),
              ::testing::StartsWith(fmt::format("{} 3.8 0\n", kT0 + 500)));
  EXPECT_FALSE(fs::exists(oom / "metrics" / "system" / "gpu_0_utilization_percentage"));

  // Cancelled before it started: no GPU, no readings; its start is the run's.
  const fs::path never = run_folder(*outcome, "never");
  ASSERT_FALSE(never.empty());
  const std::string never_meta = read(never / "meta.yaml");
  EXPECT_EQ(yaml_value(never_meta, "status"), "5");
  EXPECT_EQ(yaml_value(never_meta, "start_time"), std::to_string(kT0 - 100));
  EXPECT_EQ(yaml_value(never_meta, "end_time"), std::to_string(kT0 + 6500));
  EXPECT_FALSE(fs::exists(never / "tags" / "colo.gpu"));
  EXPECT_FALSE(fs::exists(never / "metrics" / "system"));
  EXPECT_TRUE(fs::is_directory(never / "params"));
  EXPECT_TRUE(fs::is_directory(never / "metrics"));
}

TEST_F(MlflowExportTest, ARequeuedJobsCurvesAreItsLastAttempts) {
  NewRun run = exclusive_run(kT0 - 100);
  const int64_t run_id = *store_->begin_run(run);
  JobSpec spec;
  spec.name = "retried";
  spec.command = {"python3", "big.py"};
  const int64_t job = store_->add_jobs(run_id, {spec}, {"/tmp/r.log"}, run.started_ms)->at(0);
  ProgressEvent first;
  first.kind = "step";
  first.step = 1;
  first.time_ms = kT0 + 500;
  first.metrics = {{"loss", 9.0}};
  ProgressEvent second = first;
  second.time_ms = kT0 + 2500;
  second.metrics = {{"loss", 4.0}};
  ASSERT_TRUE(store_->job_started(job, 100, 0, kT0).ok());
  ASSERT_TRUE(store_->add_job_events({{job, first}}).ok());
  ASSERT_TRUE(store_->job_requeued(job, "/tmp/r2.log", "out of memory", kT0 + 1000).ok());
  ASSERT_TRUE(store_->job_started(job, 101, 0, kT0 + 2000, 2).ok());
  ASSERT_TRUE(store_->add_job_events({{job, second}}).ok());
  ASSERT_TRUE(store_->job_finished(job, JobExit{JobState::kOk, 0}, kT0 + 3000, 0).ok());
  ASSERT_TRUE(store_->end_run(run_id, RunState::kOk, kT0 + 3500).ok());

  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_EQ(outcome->experiments[0].name, fmt::format("colo run {}", run_id));  // no job file
  const fs::path folder = run_folder(*outcome, "retried");
  ASSERT_FALSE(folder.empty());
  EXPECT_EQ(read(folder / "metrics" / "loss"), fmt::format("{} 4.0 1\n", kT0 + 2500));
  EXPECT_EQ(read(folder / "tags" / "colo.attempts"), "2");
  EXPECT_EQ(yaml_value(read(folder / "meta.yaml"), "start_time"), std::to_string(kT0));
  EXPECT_FALSE(fs::exists(folder / "tags" / "mlflow.source.name"));
}

TEST_F(MlflowExportTest, AStoppedTrialsCurvesEndAtItsStop) {
  NewRun run = exclusive_run(kT0 - 100);
  const int64_t run_id = *store_->begin_run(run);
  JobSpec spec;
  spec.name = "trial";
  spec.command = {"python3", "t.py"};
  const int64_t job = store_->add_jobs(run_id, {spec}, {"/tmp/t.log"}, run.started_ms)->at(0);
  ProgressEvent at_stop;
  at_stop.kind = "step";
  at_stop.step = 1;
  at_stop.time_ms = kT0 + 500;
  at_stop.metrics = {{"loss", 0.4441}};
  ProgressEvent stopped;
  stopped.kind = kEarlyStoppedEvent;
  stopped.time_ms = kT0 + 500;
  ProgressEvent in_its_grace = at_stop;
  in_its_grace.step = 2;
  in_its_grace.time_ms = kT0 + 900;
  in_its_grace.metrics = {{"loss", 0.1509}};
  ASSERT_TRUE(store_->job_started(job, 100, 0, kT0).ok());
  ASSERT_TRUE(store_->add_job_events({{job, at_stop}, {job, stopped}, {job, in_its_grace}}).ok());
  ASSERT_TRUE(store_->job_finished(job, JobExit{JobState::kStopped, 0}, kT0 + 1000, 0).ok());
  ASSERT_TRUE(store_->end_run(run_id, RunState::kOk, kT0 + 1500).ok());

  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  const fs::path folder = run_folder(*outcome, "trial");
  ASSERT_FALSE(folder.empty());
  EXPECT_EQ(read(folder / "metrics" / "loss"), fmt::format("{} 0.4441 1\n", kT0 + 500));
}

TEST_F(MlflowExportTest, EveryReadingAsAPointWithoutAnInterval) {
  add_sweep_run(*store_);
  MlflowExportOptions o = options();
  o.system_interval_ms = 0;
  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), o);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  const fs::path run = run_folder(*outcome, "train[lr=0.1]");
  EXPECT_THAT(read(run / "metrics" / "system" / "gpu_0_utilization_percentage"),
              ::testing::StartsWith(
                  fmt::format("{} 40.0 0\n{} 60.0 1\n{} 40.0 2\n", kT0, kT0 + 500, kT0 + 1000)));
}

TEST_F(MlflowExportTest, ExportingAgainGivesTheSameBytesAndReplacesTheOldExport) {
  add_sweep_run(*store_);
  Result<MlflowExportOutcome> first = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(first.ok()) << first.error().message();
  const std::map<std::string, std::string> before = tree(dir_);
  // Something the first export did not write, inside its experiment.
  std::ofstream(fs::path(first->experiments[0].path) / "stale-run-leftover") << "x";

  Result<MlflowExportOutcome> second = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_TRUE(second->experiments[0].replaces);
  EXPECT_EQ(second->experiments[0].id, first->experiments[0].id);
  EXPECT_EQ(second->metric_points, first->metric_points);
  EXPECT_EQ(tree(dir_), before);  // the leftover is gone, nothing else changed
}

TEST_F(MlflowExportTest, AddsToAnMlflowStoreAndKeepsItsExperiments) {
  const int64_t one = add_sweep_run(*store_).run_id;
  const int64_t two = add_sweep_run(*store_).run_id;
  // An MLflow store with an experiment of its own.
  ASSERT_TRUE(fs::create_directories(fs::path(dir_) / "0"));
  std::ofstream(fs::path(dir_) / "0" / "meta.yaml") << "name: Default\n";
  ASSERT_TRUE(fs::create_directories(fs::path(dir_) / "42"));
  std::ofstream(fs::path(dir_) / "42" / "meta.yaml") << "name: mine\n";

  Result<MlflowExportOutcome> outcome = export_mlflow(
      *store_, {{MlflowTarget::Kind::kRun, one}, {MlflowTarget::Kind::kRun, two}}, options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  ASSERT_EQ(outcome->experiments.size(), 2u);
  EXPECT_NE(outcome->experiments[0].id, outcome->experiments[1].id);
  EXPECT_EQ(outcome->runs, 6);
  EXPECT_EQ(read(fs::path(dir_) / "0" / "meta.yaml"), "name: Default\n");
  EXPECT_EQ(read(fs::path(dir_) / "42" / "meta.yaml"), "name: mine\n");
}

TEST_F(MlflowExportTest, RefusesAFolderOfTheSameIdThatHoldsAnotherExperiment) {
  add_sweep_run(*store_);
  Result<MlflowExportPlan> plan = plan_mlflow_export(*store_, latest_run(), options());
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  const fs::path other = plan->experiments.at(0).path;
  ASSERT_TRUE(fs::create_directories(other));
  std::ofstream(other / "meta.yaml") << "name: someone else's\n";
  ASSERT_TRUE(fs::create_directories(fs::path(dir_) / ".trash"));

  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_FALSE(outcome.ok());
  EXPECT_THAT(outcome.error().message(), HasSubstr("already holds another MLflow experiment"));
  EXPECT_THAT(outcome.error().message(), HasSubstr("someone else's"));
  EXPECT_THAT(outcome.error().message(), HasSubstr("nothing was written"));
  EXPECT_EQ(tree(other),
            (std::map<std::string, std::string>{{"meta.yaml", "name: someone else's\n"}}));
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "0"));
}

TEST_F(MlflowExportTest, RefusesWhatIsNotAnMlflowStore) {
  add_sweep_run(*store_);
  ASSERT_TRUE(fs::create_directories(dir_));
  std::ofstream(fs::path(dir_) / "notes.txt") << "mine";
  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_FALSE(outcome.ok());
  EXPECT_THAT(outcome.error().message(), HasSubstr("neither empty nor an MLflow file store"));
  EXPECT_EQ(tree(dir_).size(), 1u);

  MlflowExportOptions file = options();
  file.dir = dir_ + "/notes.txt";
  outcome = export_mlflow(*store_, latest_run(), file);
  ASSERT_FALSE(outcome.ok());
  EXPECT_THAT(outcome.error().message(), HasSubstr("is not a directory"));

  MlflowExportOptions none = options();
  none.dir = "";
  outcome = export_mlflow(*store_, latest_run(), none);
  ASSERT_FALSE(outcome.ok());
  EXPECT_THAT(outcome.error().message(), HasSubstr("--to DIR"));
}

TEST_F(MlflowExportTest, SaysWhichRunOrExperimentIsMissing) {
  add_sweep_run(*store_);
  Result<MlflowExportOutcome> outcome =
      export_mlflow(*store_, {{MlflowTarget::Kind::kRun, 99}}, options());
  ASSERT_FALSE(outcome.ok());
  EXPECT_THAT(outcome.error().message(), HasSubstr("no run #99"));
  outcome = export_mlflow(*store_, {{MlflowTarget::Kind::kExperiment, 5}}, options());
  ASSERT_FALSE(outcome.ok());
  EXPECT_THAT(outcome.error().message(), HasSubstr("no experiment 5"));
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(MlflowExportTest, SaysWhenTheDirectoryCannotBeWritten) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  add_sweep_run(*store_);
  ASSERT_TRUE(fs::create_directories(dir_));
  ASSERT_EQ(chmod(dir_.c_str(), 0500), 0);
  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  chmod(dir_.c_str(), 0700);
  ASSERT_FALSE(outcome.ok());
  EXPECT_THAT(outcome.error().message(), HasSubstr("is not writable"));
}

TEST_F(MlflowExportTest, AnExperimentIsOneMlflowExperimentOfAllItsCasesJobs) {
  const int64_t experiment = testing::add_fake_experiment(*store_);
  Result<std::vector<CaseRow>> cases = store_->experiment_cases(experiment);
  ASSERT_TRUE(cases.ok());
  int jobs = 0;
  for (const CaseRow& c : *cases) {
    if (c.run_id) jobs += static_cast<int>(store_->run_record(*c.run_id)->jobs.size());
  }
  ASSERT_GT(jobs, 0);

  Result<MlflowExportOutcome> outcome =
      export_mlflow(*store_, {{MlflowTarget::Kind::kExperiment, 0}}, options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  ASSERT_EQ(outcome->experiments.size(), 1u);
  EXPECT_EQ(outcome->experiments[0].name,
            fmt::format("colo experiment {}: paper-uniform", experiment));
  EXPECT_EQ(outcome->runs, jobs);
  std::set<std::string> case_names;
  for (const fs::directory_entry& e : fs::directory_iterator(outcome->experiments[0].path)) {
    if (!e.is_directory() || e.path().filename() == "tags") continue;
    EXPECT_EQ(read(e.path() / "tags" / "colo.experiment_id"), std::to_string(experiment));
    case_names.insert(read(e.path() / "tags" / "colo.case"));
  }
  EXPECT_TRUE(case_names.contains("small/resnet26/mps/x4/r2")) << case_names.size();
}

// Reads the export back as MLflow's FileStore does, with PyYAML
// (scripts/check-mlflow-store.py): every meta.yaml parses to the values
// written, keys and metric lines are what MLflow accepts.
TEST_F(MlflowExportTest, ReadsBackAsMlflowReadsIt) {
  if (std::system("python3 -c 'import yaml' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 with yaml (Debian's python3-yaml) is needed to read the export back";
  }
  const char* source = std::getenv("COLO_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "COLO_SOURCE_DIR is set by ctest";
  add_sweep_run(*store_);
  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();

  const std::string json_path = tmp_.path() + "/read.json";
  const std::string command = fmt::format(
      "python3 '{}/scripts/check-mlflow-store.py' '{}' --json > '{}'", source, dir_, json_path);
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const nlohmann::json read_back = nlohmann::json::parse(read(json_path));
  std::map<std::string, nlohmann::json> runs;
  std::set<std::string> experiment_names;
  for (const nlohmann::json& e : read_back["experiments"]) {
    experiment_names.insert(e["meta"]["name"].get<std::string>());
    for (const nlohmann::json& r : e["runs"]) runs[r["meta"]["run_name"].get<std::string>()] = r;
  }
  EXPECT_EQ(experiment_names, (std::set<std::string>{"Default", outcome->experiments[0].name}));
  ASSERT_EQ(runs.size(), 3u);
  ASSERT_TRUE(runs.contains(kOddName));
  EXPECT_EQ(runs[kOddName]["meta"]["status"], 4);
  EXPECT_EQ(runs[kOddName]["meta"]["experiment_id"], outcome->experiments[0].id);
  const nlohmann::json& train = runs["train[lr=0.1]"];
  EXPECT_EQ(train["meta"]["start_time"], kT0);
  EXPECT_EQ(train["meta"]["end_time"], kT0 + 6000);
  EXPECT_EQ(train["params"]["weird key_1"], kOddValue);
  EXPECT_EQ(train["metrics"]["loss"][0], nlohmann::json::array({kT0 + 1000, 2.5, 10}));
  EXPECT_TRUE(runs["never"]["meta"]["end_time"].is_number());
  // Step and epoch series apart (issue 33, item 4): MLflow's by-step chart of
  // each of the job's metrics is one axis, its steps never going back.
  EXPECT_EQ(train["metrics"]["loss"].size(), 2u);
  EXPECT_EQ(train["metrics"]["loss_epoch"],
            nlohmann::json::array({nlohmann::json::array({kT0 + 3000, 1.5, 1}),
                                   nlohmann::json::array({kT0 + 5000, 1.0, 2})}));
  for (const auto& [key, points] : train["metrics"].items()) {
    for (size_t i = 1; i < points.size(); ++i)
      EXPECT_LE(points[i - 1][2].get<int64_t>(), points[i][2].get<int64_t>()) << key;
  }
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// A run of one job "w" that reports `steps` (loss 1/step) and an epoch end
// after each, the epochs numbered from `first_epoch`; resuming `resumes`
// (its run and job) when given. Returns {run, job}.
std::pair<int64_t, int64_t> add_attempt_run(RunStore& store, UnixMillis t0,
                                            const std::vector<int64_t>& steps, int64_t first_epoch,
                                            std::optional<std::pair<int64_t, int64_t>> resumes) {
  NewRun run = exclusive_run(t0);
  if (resumes) run.resumes_run = resumes->first;
  const int64_t run_id = *store.begin_run(run);
  JobSpec spec;
  spec.name = "w";
  spec.command = {"python3", "w.py"};
  const int64_t job =
      store.add_jobs(run_id, {spec}, {""}, t0, {resumes ? resumes->second : 0})->at(0);
  EXPECT_TRUE(store.job_started(job, 100, 0, t0 + 10).ok());
  std::vector<std::pair<int64_t, ProgressEvent>> events;
  int64_t epoch = first_epoch;
  UnixMillis t = t0 + 100;
  for (int64_t step : steps) {
    ProgressEvent s;
    s.kind = "step";
    s.step = step;
    s.time_ms = t;
    s.metrics = {{"loss", static_cast<double>(step)}};
    ProgressEvent e;
    e.kind = "epoch_end";
    e.epoch = epoch++;
    e.time_ms = t + 10;
    e.metrics = {{"acc", static_cast<double>(*e.epoch) / 10}};
    events.push_back({job, s});
    events.push_back({job, e});
    t += 100;
  }
  EXPECT_TRUE(store.add_job_events(events).ok());
  EXPECT_TRUE(store.job_finished(job, JobExit{JobState::kFailed, 1}, t, 0).ok());
  EXPECT_TRUE(store.end_run(run_id, RunState::kFailed, t + 10).ok());
  return {run_id, job};
}

TEST_F(MlflowExportTest, AResumedJobsMetricsAreOneHistoryWithItsStepsContinuing) {
  const auto first = add_attempt_run(*store_, kT0, {10, 20}, 1, std::nullopt);
  // The script counted its steps from 0 again, its epochs on from the checkpoint.
  const auto second = add_attempt_run(*store_, kT0 + 10'000, {0, 10}, 3, first);
  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  const fs::path folder = run_folder(*outcome, "w");
  ASSERT_FALSE(folder.empty());
  EXPECT_EQ(read(folder / "metrics" / "loss"),
            fmt::format("{} 10.0 10\n{} 20.0 20\n{} 0.0 21\n{} 10.0 31\n", kT0 + 100, kT0 + 200,
                        kT0 + 10'100, kT0 + 10'200));
  EXPECT_EQ(read(folder / "metrics" / "acc"),
            fmt::format("{} 0.1 1\n{} 0.2 2\n{} 0.3 3\n{} 0.4 4\n", kT0 + 110, kT0 + 210,
                        kT0 + 10'110, kT0 + 10'210));
  EXPECT_EQ(read(folder / "tags" / "colo.resumes"),
            fmt::format("run {} job {}", first.first, first.second));
  EXPECT_EQ(read(folder / "tags" / "colo.run_id"), std::to_string(second.first));
}

TEST_F(MlflowExportTest, AServiceJobsUserIsItsSubmitterAndItsSubmissionATag) {
  NewRun run;
  run.started_ms = kT0;
  run.mechanism = "mps";
  run.backend = "sim";
  run.host = "fake-host";
  run.owner_uid = 0;
  run.owner_name = "root";  // the service's run
  const int64_t run_id = *store_->begin_run(run);
  NewServiceJob queued;
  queued.submitted_ms = kT0;
  queued.owner_uid = 1001;
  queued.owner_name = "bob";
  queued.job_file = "b.toml";
  queued.name = "b1";
  const int64_t service_job =
      store_->add_service_jobs({queued}, run_id, RunLabel{"sweep-b", {}, ""})->at(0);
  JobSpec spec;
  spec.name = "b1";
  spec.command = {"true"};
  const int64_t job = store_->add_jobs(run_id, {spec}, {""}, kT0)->at(0);
  // And a job of the run that no service job stands for: the run's owner's.
  spec.name = "local";
  store_->add_jobs(run_id, {spec}, {""}, kT0);
  ASSERT_TRUE(store_->job_started(job, 100, 0, kT0 + 10).ok());
  ASSERT_TRUE(store_->service_job_started(service_job, job, 0, kT0 + 10, "").ok());
  ASSERT_TRUE(store_->job_finished(job, JobExit{JobState::kOk, 0}, kT0 + 100, 0).ok());
  ASSERT_TRUE(store_->end_run(run_id, RunState::kOk, kT0 + 200).ok());
  Result<std::vector<ServiceJobRow>> rows = store_->service_jobs_by_id({service_job});
  ASSERT_TRUE(rows.ok() && rows->size() == 1 && rows->front().submission_id);
  const int64_t submission = *rows->front().submission_id;

  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), options());
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  const fs::path b1 = run_folder(*outcome, "b1");
  EXPECT_EQ(read(b1 / "tags" / "mlflow.user"), "bob");
  EXPECT_EQ(yaml_value(read(b1 / "meta.yaml"), "user_id"), "bob");
  EXPECT_EQ(read(b1 / "tags" / "colo.submission"), fmt::format("{}/{}", run_id, submission));
  EXPECT_EQ(read(b1 / "tags" / "colo.submission_name"), "sweep-b");
  const fs::path local = run_folder(*outcome, "local");
  EXPECT_EQ(read(local / "tags" / "mlflow.user"), "root");
  EXPECT_FALSE(fs::exists(local / "tags" / "colo.submission"));

  MlflowExportOptions given = options();
  given.user_override = "carol";  // --user
  outcome = export_mlflow(*store_, latest_run(), given);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_EQ(read(run_folder(*outcome, "b1") / "tags" / "mlflow.user"), "carol");
  EXPECT_EQ(read(run_folder(*outcome, "local") / "tags" / "mlflow.user"), "carol");
}

TEST_F(MlflowExportTest, AJobsLogIsCopiedIntoItsArtifactsBoundedAndNeverThroughALink) {
  const std::string logs = tmp_.path() + "/logs";
  fs::create_directories(logs);
  const auto write = [](const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  };
  write(logs + "/small.log", "epoch 1\nepoch 2\n");
  write(logs + "/big.log", "0123456789abcdefghijKLMNOPQRST");
  write(logs + "/secret", "another user's secret\n");
  fs::create_symlink(logs + "/secret", logs + "/linked.log");
  ASSERT_EQ(mkfifo((logs + "/fifo.log").c_str(), 0600), 0);
  const struct {
    const char* job;
    std::string log;
    // artifacts/log/ file name -> content; "" a file that must be absent
    std::map<std::string, std::string> files;
    std::string note_has;  // in the note beside it; "" for no note
  } cases[] = {
      {"small", logs + "/small.log", {{"small.log", "epoch 1\nepoch 2\n"}}, ""},
      {"big",
       logs + "/big.log",
       {{"big.log", "abcdefghijKLMNOPQRST"}},
       "its first 10 were left out"},
      {"linked", logs + "/linked.log", {{"linked.log", ""}}, "it is a symbolic link"},
      {"fifo", logs + "/fifo.log", {{"fifo.log", ""}}, "it is not a regular file"},
      {"gone", logs + "/gone.log", {{"gone.log", ""}}, ""},
  };
  NewRun run;
  run.started_ms = kT0;
  run.mechanism = "naive";
  run.backend = "sim";
  const int64_t run_id = *store_->begin_run(run);
  for (const auto& c : cases) {
    JobSpec spec;
    spec.name = c.job;
    spec.command = {"true"};
    const int64_t job = store_->add_jobs(run_id, {spec}, {c.log}, kT0)->at(0);
    ASSERT_TRUE(store_->job_started(job, 100, 0, kT0 + 10).ok());
    ASSERT_TRUE(store_->job_finished(job, JobExit{JobState::kOk, 0}, kT0 + 100, 0).ok());
  }
  ASSERT_TRUE(store_->end_run(run_id, RunState::kOk, kT0 + 200).ok());
  MlflowExportOptions o = options();
  o.max_log_bytes = 20;
  Result<MlflowExportOutcome> outcome = export_mlflow(*store_, latest_run(), o);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  for (const auto& c : cases) {
    const fs::path log_dir = run_folder(*outcome, c.job) / "artifacts" / "log";
    for (const auto& [name, content] : c.files) {
      if (content.empty()) {
        EXPECT_FALSE(fs::exists(log_dir / name)) << c.job;
      } else {
        EXPECT_EQ(read(log_dir / name), content) << c.job;
      }
      const fs::path note = log_dir / (name + ".note.txt");
      if (c.note_has.empty()) {
        EXPECT_FALSE(fs::exists(note)) << c.job;
      } else {
        EXPECT_THAT(read(note), HasSubstr(c.note_has)) << c.job;
      }
    }
  }
}

}  // namespace
}  // namespace colo
