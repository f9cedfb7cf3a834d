#include "run/run_samples.h"

#include <algorithm>
#include <iterator>

namespace colo {
namespace {

// Process lists cost more than device metrics (several NVML calls, more with
// more processes): read them every other device sample (about once a second
// by default), but no less often than every 200 ms so short jobs are seen.
int64_t process_period_ms(int64_t device_period_ms) {
  return std::max<int64_t>(2 * device_period_ms, 200);
}

std::vector<int> indices(const std::vector<DeviceInfo>& devices) {
  std::vector<int> out;
  for (const DeviceInfo& d : devices) out.push_back(d.index);
  return out;
}

}  // namespace

RunSamples::RunSamples(GpuBackend& backend, Clock& clock, const std::vector<DeviceInfo>& devices,
                       int64_t period_ms, size_t recent_per_gpu)
    : sampler_(backend, clock, indices(devices),
               SamplerOptions{period_ms, process_period_ms(period_ms)}),
      attributor_(process_table_),
      recent_per_gpu_(recent_per_gpu) {}

SampleBatch RunSamples::collect() {
  SamplerBatch batch = sampler_.drain();
  SampleBatch out;
  for (std::string& e : batch.errors) {
    if (errors_shown_ < 5) {
      ++errors_shown_;
      out.errors.push_back(std::move(e));
    }
  }
  for (const DeviceSample& d : batch.devices) {
    std::deque<DeviceSample>& recent = recent_[d.device];
    recent.push_back(d);
    while (recent.size() > recent_per_gpu_) recent.pop_front();
  }
  std::map<std::pair<int64_t, UnixMillis>, uint64_t> memory;  // (job id, time) -> bytes
  for (const ProcessSample& p : batch.processes) {
    std::optional<int64_t> job_id = attributor_.job_for(static_cast<pid_t>(p.pid));
    if (job_id && p.used_memory_bytes) memory[{*job_id, p.time_ms}] += *p.used_memory_bytes;
    processes_.push_back({p, job_id});
  }
  for (const auto& [device, list] : batch.latest_process_lists) {
    std::vector<EngineProcess>& latest = latest_[device];
    latest.clear();
    for (const ProcessSample& p : list)
      latest.push_back({p, attributor_.job_for(static_cast<pid_t>(p.pid))});
  }
  for (const auto& [key, bytes] : memory) {
    JobMemory& m = out.memory[key.first];
    m.peak_bytes = std::max(m.peak_bytes, bytes);
    m.sampled_ms = std::max(m.sampled_ms, key.second);
  }
  out.xid_events = std::move(batch.xid_events);
  out.xid_events_dropped = batch.xid_events_dropped;
  std::copy(batch.devices.begin(), batch.devices.end(), std::back_inserter(devices_));
  out.devices = std::move(batch.devices);
  for (pid_t pid : retired_) attributor_.remove_job(pid);
  retired_.clear();
  return out;
}

}  // namespace colo
