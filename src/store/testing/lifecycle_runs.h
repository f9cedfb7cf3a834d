// What the store's and the analysis' tests share: a fresh store in memory, a
// dead pid, rows made the way colo makes them, and LifecycleTest, a fixture that
// writes a collocated run and an exclusive run of the same jobs with numbers
// worked out by hand. Tests only.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/units.h"
#include "store/run_store.h"

namespace colo {

inline constexpr UnixMillis kT0 = 1'700'000'000'000;

// A pid that no process has: a child that has exited and been reaped.
inline pid_t dead_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

inline std::unique_ptr<RunStore> open_memory() {
  auto store = RunStore::open(":memory:");
  EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message());
  return store.ok() ? std::move(store).value() : nullptr;
}

inline JobSpec make_job(const std::string& name, std::vector<std::string> command,
                        std::map<std::string, std::string> env = {}) {
  JobSpec job;
  job.name = name;
  job.group = name;
  job.command = std::move(command);
  job.working_dir = "/data/sweep";
  job.env = std::move(env);
  return job;
}

inline NewRun make_run(const std::string& mechanism, UnixMillis started_ms, bool simulated = true) {
  NewRun run;
  run.started_ms = started_ms;
  run.mechanism = mechanism;
  run.backend = simulated ? "sim" : "nvml";
  run.simulated = simulated;
  run.job_file = "sweep.toml";
  run.command_line = "colo run sweep.toml";
  run.host = "test-host";
  run.colo_pid = 4242;
  return run;
}

inline ProgressEvent epoch_end(UnixMillis time_ms, int64_t epoch, std::optional<int64_t> samples) {
  ProgressEvent event;
  event.time_ms = time_ms;
  event.kind = "epoch_end";
  event.epoch = epoch;
  event.samples = samples;
  return event;
}

inline ProcessSampleRow process(UnixMillis time_ms, uint32_t pid, std::optional<int64_t> job_id,
                                uint64_t memory_bytes) {
  ProcessSampleRow row;
  row.sample.time_ms = time_ms;
  row.sample.device = 0;
  row.sample.pid = pid;
  row.sample.used_memory_bytes = memory_bytes;
  row.job_id = job_id;
  return row;
}

inline JobExit exit_with(JobState state, std::optional<int> code, std::string reason = "") {
  JobExit exit;
  exit.state = state;
  exit.exit_code = code;
  exit.reason = std::move(reason);
  return exit;
}

// A run of three jobs under MPS on device 0, with numbers worked out by hand:
//   A: runs 1000..11000 (10 s), epoch ends at 4000, 7000, 11000 with 1000
//      samples each. Mean epoch over epochs 2..3 = (3000 + 4000) / 2 = 3500.
//      Throughput 3000 / 10 s = 300/s. Process memory: at 2000 two processes
//      1 GiB + 0.5 GiB = 1.5 GiB; at 5000 1.2 GiB + 0.2 GiB = 1.4 GiB. Peak
//      1.5 GiB (not the largest single process, not the sum of maxima).
//   B: runs 3000..9000 (6 s), one epoch end at 8000 with 600 samples: mean
//      epoch 5000 (from its start), throughput 100/s, peak 2 GiB.
//   C: failed to start (no start time).
// Device 0 samples every second k = 0..12: energy 100000 + 1000k mJ
// (1 J/s), SM active 0.5 k^2 %, memory k GiB. Device 1: energy
// 50000 + 500k mJ, SM 0 %, no memory reading.
//   A's energy: 10 intervals of 1 J inside 1000..11000; B runs during 6 of
//   them (midpoints 3500..8500), so A gets 4 * 1 + 6 * 0.5 = 7 J, B 3 J.
//   A's mean SM: mean of 0.5 k^2 for k = 1..11 = 23; B's (k = 3..9) = 20.
// Run: makespan 10 s, 3600 samples, 360/s, energy 12 J + 6 J = 18 J,
//   mean SM over both devices = (0.5 * 650 + 0) / 26 = 12.5, peak 12 GiB.
class LifecycleTest : public ::testing::Test {
 protected:
  struct Ids {
    int64_t run = 0;
    std::vector<int64_t> jobs;
  };

  static std::vector<JobSpec> sweep_jobs() {
    return {make_job("A", {"python", "a.py"}), make_job("B", {"python", "b.py"}),
            make_job("C", {"/no/such/binary"})};
  }

  Ids record_collocated_run(RunStore& store, const std::string& mechanism, UnixMillis t0) {
    Ids ids;
    auto run = store.begin_run(make_run(mechanism, t0));
    EXPECT_TRUE(run.ok()) << run.error().message();
    ids.run = *run;
    auto jobs = store.add_jobs(ids.run, sweep_jobs(), {"a.log", "b.log", "c.log"}, t0);
    EXPECT_TRUE(jobs.ok()) << jobs.error().message();
    ids.jobs = *jobs;
    const int64_t a = ids.jobs[0];
    const int64_t b = ids.jobs[1];
    const int64_t c = ids.jobs[2];

    EXPECT_TRUE(store
                    .job_finished(c,
                                  exit_with(JobState::kFailed, std::nullopt,
                                            "could not start: /no/such/binary not found"),
                                  t0 + 500, 0)
                    .ok());
    EXPECT_TRUE(store.job_started(a, 100, 0, t0 + 1000).ok());
    EXPECT_TRUE(store.job_started(b, 200, 0, t0 + 3000).ok());

    std::vector<DeviceSample> devices;
    for (int k = 0; k <= 12; ++k) {
      DeviceSample d0;
      d0.time_ms = t0 + 1000 * k;
      d0.device = 0;
      d0.sm_active_pct = 0.5 * k * k;
      d0.memory_used_bytes = static_cast<uint64_t>(k) * kGiB;
      d0.memory_total_bytes = 141 * kGiB;
      d0.energy_mj = 100000 + 1000 * static_cast<uint64_t>(k);
      d0.power_w = 100;
      devices.push_back(d0);
      DeviceSample d1;
      d1.time_ms = t0 + 1000 * k;
      d1.device = 1;
      d1.sm_active_pct = 0;
      d1.energy_mj = 50000 + 500 * static_cast<uint64_t>(k);
      devices.push_back(d1);
    }
    std::vector<ProcessSampleRow> processes = {
        process(t0 + 2000, 100, a, kGiB),
        process(t0 + 2000, 101, a, kGiB / 2),
        process(t0 + 5000, 100, a, kGiB * 12 / 10),
        process(t0 + 5000, 101, a, kGiB * 2 / 10),
        process(t0 + 5000, 200, b, 2 * kGiB),
        process(t0 + 5000, 999, std::nullopt, 30 * kGiB),  // not a job's process
    };
    EXPECT_TRUE(store.add_samples(ids.run, devices, processes).ok());

    ProgressEvent step;
    step.time_ms = t0 + 2500;
    step.kind = "step";
    step.step = 10;
    step.samples = 77;  // not an epoch end: does not count
    step.metrics = {{"loss", 0.5}};
    EXPECT_TRUE(store
                    .add_job_events({{a, epoch_end(t0 + 4000, 1, 1000)},
                                     {a, step},
                                     {a, epoch_end(t0 + 7000, 2, 1000)},
                                     {b, epoch_end(t0 + 8000, 1, 600)},
                                     {a, epoch_end(t0 + 11000, 3, 1000)}})
                    .ok());
    EXPECT_TRUE(store.job_finished(b, exit_with(JobState::kOk, 0), t0 + 9000, 0).ok());
    EXPECT_TRUE(store.job_finished(a, exit_with(JobState::kOk, 0), t0 + 11000, 2).ok());
    EXPECT_TRUE(store.end_run(ids.run, RunState::kOk, t0 + 12000).ok());
    return ids;
  }

  // The same jobs one at a time: A 0..15000, B 15000..24000 (C fails again),
  // 3600 samples in 24 s = 150/s. No GPU samples.
  int64_t record_exclusive_run(RunStore& store, UnixMillis t0, RunState end_state = RunState::kOk,
                               bool simulated = true, std::vector<JobSpec> jobs = sweep_jobs()) {
    auto run = store.begin_run(make_run("exclusive", t0, simulated));
    EXPECT_TRUE(run.ok());
    std::reverse(jobs.begin(), jobs.end());  // file order does not matter
    auto ids = store.add_jobs(*run, jobs, {}, t0);
    EXPECT_TRUE(ids.ok());
    for (size_t i = 0; i < ids->size(); ++i) {
      const std::string& name = jobs[i].name;
      const int64_t id = (*ids)[i];
      if (name == "A") {
        EXPECT_TRUE(store.job_started(id, 300, 0, t0).ok());
        EXPECT_TRUE(store
                        .add_job_events({{id, epoch_end(t0 + 5000, 1, 1000)},
                                         {id, epoch_end(t0 + 10000, 2, 1000)},
                                         {id, epoch_end(t0 + 15000, 3, 1000)}})
                        .ok());
        EXPECT_TRUE(store.job_finished(id, exit_with(JobState::kOk, 0), t0 + 15000, 0).ok());
      } else if (name == "B") {
        EXPECT_TRUE(store.job_started(id, 301, 0, t0 + 15000).ok());
        EXPECT_TRUE(store.add_job_events({{id, epoch_end(t0 + 24000, 1, 600)}}).ok());
        EXPECT_TRUE(store.job_finished(id, exit_with(JobState::kOk, 0), t0 + 24000, 0).ok());
      } else {
        EXPECT_TRUE(
            store.job_finished(id, exit_with(JobState::kFailed, std::nullopt, "not found"), t0, 0)
                .ok());
      }
    }
    EXPECT_TRUE(store.end_run(*run, end_state, t0 + 24000).ok());
    return *run;
  }
};

}  // namespace colo
