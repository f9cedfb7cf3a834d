// Test data for the report tests: runs and experiments written into a real
// RunStore (":memory:" or a file) with known timings, so every measurement the
// report computes has a value the test can work out by hand.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "store/run_store.h"

namespace colo::testing {

inline constexpr UnixMillis kFakeT0 = 1'700'000'000'000;
inline constexpr uint64_t kFakeGiB = 1024ULL * 1024 * 1024;

// `degree` identical jobs started together at `start_ms`. Job k's epoch e
// ends at start + warmup_ms + (e - 1) * epoch_ms (+ k * stagger_ms); each
// epoch has samples_per_epoch samples. Device samples every 500 ms from the
// start to 1 s after the last job ends, with constant SM activity, GPU
// utilization, power and PCIe receive, memory degree * job_memory_bytes while
// jobs run; each job's process reports job_memory_bytes.
struct FakeRun {
  std::string mechanism = "naive";
  int degree = 1;
  int epochs = 3;
  int64_t warmup_ms = 10'000;
  int64_t epoch_ms = 5'000;
  int64_t stagger_ms = 0;
  int64_t samples_per_epoch = 80'000;
  double sm_active_pct = 40;
  double gpu_util_pct = 90;
  // The device idles (0% SM activity and utilization) for this long after
  // the jobs start, as it does while a real job imports and loads data.
  int64_t startup_idle_ms = 0;
  double power_w = 300;
  double pcie_rx_mib_per_s = 100;
  uint64_t job_memory_bytes = 2 * kFakeGiB;
  // When set, samples also carry the driver's energy counter, growing at
  // this many watts (it may differ from power_w, to tell the two apart).
  std::optional<double> energy_counter_w;
  bool simulated = true;
  std::string model = "resnet26";
};

// A fresh store in memory (fails the test if it cannot be opened).
std::unique_ptr<RunStore> open_memory_store();

// Writes the run and returns its id; `start_ms` is when its jobs start. The
// run's own start is 100 ms earlier.
int64_t add_fake_run(RunStore& store, const FakeRun& run, UnixMillis start_ms);

// When the run written by add_fake_run(run, start_ms) ends.
UnixMillis fake_run_end_ms(const FakeRun& run, UnixMillis start_ms);

// A small experiment in the shape of `colo bench --suite paper-uniform`:
// workload small (resnet26) under exclusive x1, naive x1/x2/x4, mps x1/x2/x4,
// two repetitions each (the second slightly slower); workload large (cait):
// naive and mps x1 and x2, mps x4 "does_not_fit"; mig x2 "not_run" (MIG
// mode off); a mixed workload S+M+M (exclusive serial, naive, mps). Returns
// the experiment id.
int64_t add_fake_experiment(RunStore& store);

// A fresh temporary directory, removed with everything in it on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "colo_report_test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Empty when the directory could not be made.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace colo::testing
