// GpuSampler: the one thread that reads the GPU backend while a run goes on.
// Device metrics and the backend's Xid events every `period_ms` (default
// 500 ms), process lists every `process_period_ms`. Readings pile up in
// memory until the owner drains them (the run engine writes them to the store
// in batches), so the sampler never touches SQL.
//
// Threading: start()/stop()/drain()/stats() may be called from any one owner
// thread; the backend is used only from the sampling thread between start()
// and stop().
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "gpu/gpu_backend.h"

namespace colo {

struct SamplerOptions {
  int64_t period_ms = 500;           // device metrics
  int64_t process_period_ms = 1000;  // per-process lists
};

struct SamplerBatch {
  std::vector<DeviceSample> devices;
  std::vector<ProcessSample> processes;
  // Per GPU whose processes were listed, its newest listing (empty: none ran).
  std::map<int, std::vector<ProcessSample>> latest_process_lists;
  std::vector<std::string> errors;  // one line each; a failing read never stops sampling
  // GPU faults the backend reported, in arrival order; at most 1000 kept
  // between drains (the first ones), the rest counted here.
  std::vector<XidEvent> xid_events;
  int64_t xid_events_dropped = 0;
};

struct SamplerStats {
  int64_t device_samples = 0;
  int64_t process_samples = 0;
  int64_t errors = 0;
  int64_t xid_events = 0;          // received from the backend, kept or not
  int64_t xid_events_dropped = 0;  // of those, not kept because the owner drained late
  int64_t thread_cpu_ms = 0;       // CPU time the sampling thread used
  int64_t wall_ms = 0;             // time since start()
};

class GpuSampler {
 public:
  GpuSampler(GpuBackend& backend, Clock& clock, std::vector<int> devices,
             SamplerOptions options = {});
  ~GpuSampler();  // stops the thread
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  void start();
  void stop();
  SamplerBatch drain();
  SamplerStats stats() const;

 private:
  void loop();
  GpuBackend& backend_;
  Clock& clock_;
  std::vector<int> devices_;
  SamplerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;                        // guarded by mu_
  SamplerBatch pending_;                         // guarded by mu_
  SamplerStats stats_;                           // guarded by mu_
  int64_t started_monotonic_ms_ = 0;             // guarded by mu_
  std::optional<int64_t> stopped_monotonic_ms_;  // guarded by mu_; set by stop()
  bool thread_started_ = false;                  // guarded by mu_
  std::thread thread_;
};

// Reads a process's parent from /proc (a seam for tests).
class ProcessTable {
 public:
  virtual ~ProcessTable() = default;
  virtual std::optional<pid_t> parent_of(pid_t pid) const = 0;
};

// Reads /proc/PID/stat. Thread-safe; nullopt when the process is gone.
class ProcfsProcessTable final : public ProcessTable {
 public:
  std::optional<pid_t> parent_of(pid_t pid) const override;
};

// Maps GPU processes to the jobs that started them: a process belongs to a
// job when the job's root pid is the process or one of its ancestors (up to 64
// levels up). Not thread-safe; borrows the table, which must outlive it.
class JobAttributor {
 public:
  explicit JobAttributor(const ProcessTable& table) : table_(table) {}
  void add_job(pid_t root_pid, int64_t job_id);
  void remove_job(pid_t root_pid);
  std::optional<int64_t> job_for(pid_t pid) const;

 private:
  const ProcessTable& table_;
  std::map<pid_t, int64_t> roots_;
};

}  // namespace colo
