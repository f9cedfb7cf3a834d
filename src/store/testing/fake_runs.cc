#include "store/testing/fake_runs.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace colo::testing {
namespace {

UnixMillis job_end_ms(const FakeRun& run, UnixMillis start_ms, int k) {
  return start_ms + run.warmup_ms + (run.epochs - 1) * run.epoch_ms + k * run.stagger_ms;
}

}  // namespace

UnixMillis fake_run_end_ms(const FakeRun& run, UnixMillis start_ms) {
  return job_end_ms(run, start_ms, run.degree - 1) + 1'000;
}

std::unique_ptr<RunStore> open_memory_store() {
  auto store = RunStore::open(":memory:");
  EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message());
  return std::move(store).value();
}

int64_t add_fake_run(RunStore& store, const FakeRun& run, UnixMillis start_ms) {
  NewRun new_run;
  new_run.started_ms = start_ms - 100;
  new_run.mechanism = run.mechanism;
  new_run.backend = run.simulated ? "sim" : "nvml";
  new_run.simulated = run.simulated;
  new_run.job_file = "fake.toml";
  new_run.host = "fake-host";  // another host: never marked interrupted
  new_run.colo_pid = 1;
  new_run.devices_json = R"([{"index":0,"name":"NVIDIA H200","uuid":"GPU-fake"}])";
  Result<int64_t> run_id = store.begin_run(new_run);
  EXPECT_TRUE(run_id.ok()) << run_id.error().message();
  std::vector<JobSpec> jobs;
  std::vector<std::string> logs;
  for (int k = 0; k < run.degree; ++k) {
    JobSpec job;
    job.name = run.model + "#" + std::to_string(k + 1);
    job.group = run.model;
    job.command = {"python3", "train.py", "--model", run.model};
    job.working_dir = "/work";
    job.repeat_index = k + 1;
    jobs.push_back(job);
    logs.push_back("/tmp/fake-" + job.name + ".log");
  }
  Result<std::vector<int64_t>> ids = store.add_jobs(*run_id, jobs, logs, new_run.started_ms);
  EXPECT_TRUE(ids.ok()) << ids.error().message();
  std::vector<std::pair<int64_t, ProgressEvent>> events;
  for (int k = 0; k < run.degree; ++k) {
    EXPECT_TRUE(store.job_started((*ids)[k], 1000 + k, 0, start_ms).ok());
    for (int e = 1; e <= run.epochs; ++e) {
      ProgressEvent event;
      event.kind = "epoch_end";
      event.epoch = e;
      event.samples = run.samples_per_epoch;
      event.time_ms = start_ms + run.warmup_ms + (e - 1) * run.epoch_ms + k * run.stagger_ms;
      events.emplace_back((*ids)[k], event);
    }
  }
  EXPECT_TRUE(store.add_job_events(events).ok());

  std::vector<DeviceSample> samples;
  std::vector<ProcessSampleRow> processes;
  const UnixMillis end = fake_run_end_ms(run, start_ms);
  for (UnixMillis t = new_run.started_ms; t <= end; t += 500) {
    DeviceSample s;
    s.time_ms = t;
    int running = 0;
    for (int k = 0; k < run.degree; ++k) {
      if (t >= start_ms && t <= job_end_ms(run, start_ms, k)) ++running;
    }
    const bool working = running > 0 && t >= start_ms + run.startup_idle_ms;
    s.sm_active_pct = working ? run.sm_active_pct : 0.0;
    s.gpu_util_pct = working ? run.gpu_util_pct : 0.0;
    s.power_w = run.power_w;
    s.pcie_rx_mib_per_s = run.pcie_rx_mib_per_s;
    s.memory_used_bytes = running * run.job_memory_bytes;
    s.memory_total_bytes = 141 * kFakeGiB;
    if (run.energy_counter_w) {
      s.energy_mj =
          static_cast<uint64_t>(5'000'000 + *run.energy_counter_w * (t - new_run.started_ms));
    }
    samples.push_back(s);
    for (int k = 0; k < run.degree; ++k) {
      if (t < start_ms || t > job_end_ms(run, start_ms, k)) continue;
      ProcessSampleRow p;
      p.sample.time_ms = t;
      p.sample.pid = static_cast<uint32_t>(1000 + k);
      p.sample.used_memory_bytes = run.job_memory_bytes;
      p.job_id = (*ids)[k];
      processes.push_back(p);
    }
  }
  EXPECT_TRUE(store.add_samples(*run_id, samples, processes).ok());
  for (int k = 0; k < run.degree; ++k) {
    JobExit exit;
    exit.state = JobState::kOk;
    exit.exit_code = 0;
    EXPECT_TRUE(store.job_finished((*ids)[k], exit, job_end_ms(run, start_ms, k), 0).ok());
  }
  EXPECT_TRUE(store.end_run(*run_id, RunState::kOk, end).ok());
  return *run_id;
}

int64_t add_fake_experiment(RunStore& store) {
  NewExperiment e;
  e.suite = "paper-uniform";
  e.started_ms = kFakeT0;
  e.simulated = true;
  e.backend = "sim";
  e.gpu_name = "Simulated NVIDIA H200";
  e.command_line = "colo bench --suite paper-uniform";
  Result<int64_t> id = store.begin_experiment(e);
  EXPECT_TRUE(id.ok()) << id.error().message();
  UnixMillis t = kFakeT0 + 1'000;

  auto add_case = [&](const std::string& workload, const std::string& models,
                      const std::string& mechanism, int degree, int repetition,
                      const std::string& status, const std::string& reason,
                      std::optional<FakeRun> run) {
    CaseRow c;
    c.name = fmt::format("{}/{}/{}/x{}/r{}", workload, models, mechanism, degree, repetition);
    c.workload = workload;
    c.models = models;
    c.mechanism = mechanism;
    c.degree = degree;
    c.repetition = repetition;
    Result<int64_t> case_id = store.add_case(*id, c);
    EXPECT_TRUE(case_id.ok()) << case_id.error().message();
    std::optional<int64_t> run_id;
    if (run) {
      run_id = add_fake_run(store, *run, t);
      t = fake_run_end_ms(*run, t) + 1'000;
    }
    EXPECT_TRUE(store.update_case(*case_id, run_id, status, reason).ok());
  };

  // small: one job alone keeps SM activity at 35%; collocation helps.
  for (int rep = 1; rep <= 2; ++rep) {
    const int64_t slower = rep == 2 ? 400 : 0;
    for (const std::string mechanism : {"exclusive", "naive", "mps"}) {
      for (int degree : {1, 2, 4}) {
        if (mechanism == "exclusive" && degree > 1) continue;
        FakeRun run;
        run.mechanism = mechanism;
        run.degree = degree;
        run.sm_active_pct = std::min(95.0, 35.0 * degree * (mechanism == "mps" ? 1.0 : 0.8));
        const double slowdown = degree == 1 ? 1.0 : (mechanism == "mps" ? 0.6 : 0.8) * degree;
        run.epoch_ms = static_cast<int64_t>(5'000 * slowdown) + slower;
        run.power_w = 200 + 40.0 * degree;
        run.pcie_rx_mib_per_s = 100.0 * degree * (mechanism == "mps" ? 1.5 : 1.0);
        add_case("small", "resnet26", mechanism, degree, rep, "ok", "", run);
      }
    }
  }
  // large: one job alone saturates the GPU; collocation barely helps.
  for (const std::string mechanism : {"naive", "mps"}) {
    for (int degree : {1, 2}) {
      FakeRun run;
      run.mechanism = mechanism;
      run.degree = degree;
      run.model = "cait";
      run.sm_active_pct = 95;
      run.epoch_ms = degree == 1 ? 8'000 : (mechanism == "mps" ? 15'000 : 16'400);
      run.job_memory_bytes = 40 * kFakeGiB;
      run.power_w = 600;
      add_case("large", "cait", mechanism, degree, 1, "ok", "", run);
    }
  }
  add_case("large", "cait", "mps", 4, 1, "does_not_fit", "4 x 40 GiB > 141 GiB", std::nullopt);
  add_case("large", "cait", "mig", 2, 1, "not_run", "MIG mode is disabled on GPU 0", std::nullopt);
  // mixed: S+M+M serial and collocated.
  for (const std::string mechanism : {"exclusive", "naive", "mps"}) {
    FakeRun run;
    run.mechanism = mechanism;
    run.degree = 3;
    run.model = "mix";
    run.stagger_ms = mechanism == "exclusive" ? 9'000 : 2'000;
    run.epoch_ms = mechanism == "exclusive" ? 3'000 : 6'000;
    add_case("mixed", "S+M+M", mechanism, 3, 1, "ok", "", run);
  }
  EXPECT_TRUE(store.end_experiment(*id, "ok", t).ok());
  return *id;
}

}  // namespace colo::testing
