// RunSamples: the GPU sampler of one run, and what its readings mean for the
// run's jobs. Each collect() takes the sampler's readings (device samples,
// process lists, the GPU faults the backend reported), attributes every
// GPU process to the job whose process tree holds it (while that tree still
// exists: a job reaped since the last collect() is forgotten only
// afterwards), keeps the readings for the store until take_rows(), and the
// latest ones for readers (the service's snapshot, colo top).
//
// Not thread-safe: the engine's thread owns it (the sampler has a thread of
// its own). Borrows the backend and the clock.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "gpu/gpu_backend.h"
#include "monitor/gpu_sampler.h"
#include "store/rows.h"

namespace colo {

// A GPU process as the sampler last listed it, with the job it belongs to.
struct EngineProcess {
  ProcessSample sample;
  std::optional<int64_t> job_id;  // its row in the jobs table, when it is a job's
};

// What one collect() saw of a job's processes: the largest sum of their
// memory at one sample time, and the time of its latest sample.
struct JobMemory {
  uint64_t peak_bytes = 0;
  UnixMillis sampled_ms = 0;
};

struct SampleBatch {
  std::vector<DeviceSample> devices;
  std::map<int64_t, JobMemory> memory;  // by job id
  std::vector<std::string> errors;      // the sampler's, at most five per run
  // GPU faults the backend reported (Xid events) since the last collect(), in
  // arrival order. At most 1000 are kept between two collect()s (the first
  // ones); xid_events_dropped counts those that arrived after.
  std::vector<XidEvent> xid_events;
  int64_t xid_events_dropped = 0;
};

class RunSamples {
 public:
  RunSamples(GpuBackend& backend, Clock& clock, const std::vector<DeviceInfo>& devices,
             int64_t period_ms, size_t recent_per_gpu);

  void start() { sampler_.start(); }
  void stop() { sampler_.stop(); }
  SamplerStats stats() const { return sampler_.stats(); }

  // The processes of the tree rooted at `pid` belong to job `job_id` from now on.
  void add_job(pid_t pid, int64_t job_id) { attributor_.add_job(pid, job_id); }
  // The job of `pid` ended; it is forgotten after the next collect().
  void retire(pid_t pid) { retired_.push_back(pid); }

  SampleBatch collect();
  // The readings collected since the last call, for the store.
  std::vector<DeviceSample> take_devices() { return std::exchange(devices_, {}); }
  std::vector<ProcessSampleRow> take_processes() { return std::exchange(processes_, {}); }

  // Per GPU, its latest device samples, oldest first.
  const std::map<int, std::deque<DeviceSample>>& recent() const { return recent_; }
  // Per GPU, the processes of its latest process sample (MPS clients one by one).
  const std::map<int, std::vector<EngineProcess>>& latest_processes() const { return latest_; }

 private:
  GpuSampler sampler_;
  ProcfsProcessTable process_table_;
  JobAttributor attributor_;
  size_t recent_per_gpu_;
  std::vector<pid_t> retired_;
  std::vector<DeviceSample> devices_;
  std::vector<ProcessSampleRow> processes_;
  std::map<int, std::deque<DeviceSample>> recent_;
  std::map<int, std::vector<EngineProcess>> latest_;
  int errors_shown_ = 0;
};

}  // namespace colo
