#include "monitor/gpu_sampler.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

namespace colo {
namespace {

// Errors kept between drains; a backend failing on every tick must not grow
// memory without bound when the owner drains late.
constexpr size_t kMaxPendingErrors = 1000;
// Xid events kept between drains: the first ones, which name the fault; later
// ones are counted.
constexpr size_t kMaxPendingXidEvents = 1000;
// How far JobAttributor follows parents before giving up.
constexpr int kMaxAncestorDepth = 64;

// CPU time of the calling thread.
int64_t calling_thread_cpu_ms() {
  timespec cpu{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) != 0) return 0;
  return static_cast<int64_t>(cpu.tv_sec) * 1000 + cpu.tv_nsec / 1'000'000;
}

// The next due time after `due`, skipping ticks missed while the thread was
// busy instead of sampling them in a burst.
int64_t next_due(int64_t due, int64_t period_ms, int64_t now_ms) {
  due += period_ms;
  return due <= now_ms ? now_ms + period_ms : due;
}

void add_error(SamplerBatch& batch, std::string error) {
  if (batch.errors.size() < kMaxPendingErrors) {
    batch.errors.push_back(std::move(error));
  } else if (batch.errors.size() == kMaxPendingErrors) {
    batch.errors.push_back("more sampling errors dropped until the next drain");
  }
}

}  // namespace

GpuSampler::GpuSampler(GpuBackend& backend, Clock& clock, std::vector<int> devices,
                       SamplerOptions options)
    : backend_(backend), clock_(clock), devices_(std::move(devices)), options_(options) {
  options_.period_ms = std::max<int64_t>(1, options_.period_ms);
}

GpuSampler::~GpuSampler() { stop(); }

void GpuSampler::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
    thread_started_ = true;
    started_monotonic_ms_ = clock_.monotonic_ms();
    stopped_monotonic_ms_.reset();
  }
  thread_ = std::thread(&GpuSampler::loop, this);
}

void GpuSampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  std::lock_guard lock(mu_);
  stopped_monotonic_ms_ = clock_.monotonic_ms();
}

SamplerBatch GpuSampler::drain() {
  std::lock_guard lock(mu_);
  SamplerBatch batch = std::move(pending_);
  pending_ = SamplerBatch{};
  return batch;
}

SamplerStats GpuSampler::stats() const {
  std::lock_guard lock(mu_);
  SamplerStats stats = stats_;
  if (thread_started_) {
    stats.wall_ms = stopped_monotonic_ms_.value_or(clock_.monotonic_ms()) - started_monotonic_ms_;
  }
  return stats;
}

void GpuSampler::loop() {
  int64_t next_device_ms = clock_.monotonic_ms();
  int64_t next_process_ms = next_device_ms;
  const bool sample_processes = options_.process_period_ms > 0;

  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    SamplerBatch batch;
    const int64_t now_ms = clock_.monotonic_ms();
    if (now_ms >= next_device_ms) {
      for (int device : devices_) {
        auto sample = backend_.sample_device(device);
        if (sample.ok()) {
          batch.devices.push_back(std::move(sample).value());
        } else {
          add_error(batch, sample.error().message());  // names the GPU itself
        }
      }
      batch.xid_events = backend_.poll_xid_events();
      next_device_ms = next_due(next_device_ms, options_.period_ms, now_ms);
    }
    if (sample_processes && now_ms >= next_process_ms) {
      for (int device : devices_) {
        auto processes = backend_.sample_processes(device);
        if (processes.ok()) {
          batch.latest_process_lists[device] = *processes;
          batch.processes.insert(batch.processes.end(), processes->begin(), processes->end());
        } else {
          add_error(batch, processes.error().message());
        }
      }
      next_process_ms = next_due(next_process_ms, options_.process_period_ms, now_ms);
    }
    const int64_t cpu_ms = calling_thread_cpu_ms();

    lock.lock();
    stats_.device_samples += static_cast<int64_t>(batch.devices.size());
    stats_.process_samples += static_cast<int64_t>(batch.processes.size());
    stats_.errors += static_cast<int64_t>(batch.errors.size());
    stats_.thread_cpu_ms = cpu_ms;
    std::move(batch.devices.begin(), batch.devices.end(), std::back_inserter(pending_.devices));
    std::move(batch.processes.begin(), batch.processes.end(),
              std::back_inserter(pending_.processes));
    for (auto& [device, list] : batch.latest_process_lists)
      pending_.latest_process_lists[device] = std::move(list);
    for (std::string& error : batch.errors) add_error(pending_, std::move(error));
    stats_.xid_events += static_cast<int64_t>(batch.xid_events.size());
    for (const XidEvent& event : batch.xid_events) {
      if (pending_.xid_events.size() < kMaxPendingXidEvents) {
        pending_.xid_events.push_back(event);
      } else {
        ++pending_.xid_events_dropped;
        ++stats_.xid_events_dropped;
      }
    }

    // Sleep on the condition variable (real time) for as long as the clock
    // says is left, so stop() is prompt and a FakeClock that stands still
    // costs one wait per period instead of a spin.
    const int64_t due_ms =
        sample_processes ? std::min(next_device_ms, next_process_ms) : next_device_ms;
    const int64_t wait_ms = std::max<int64_t>(1, due_ms - clock_.monotonic_ms());
    wake_.wait_for(lock, std::chrono::milliseconds(wait_ms), [this] { return stopping_; });
  }
}

std::optional<pid_t> ProcfsProcessTable::parent_of(pid_t pid) const {
  std::ifstream file(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  if (!file || !std::getline(file, stat)) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
  // the fields start after the last ')'.
  const size_t comm_end = stat.rfind(')');
  if (comm_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(comm_end + 1));
  char state = 0;
  long long ppid = -1;
  if (!(fields >> state >> ppid) || ppid < 0) return std::nullopt;
  return static_cast<pid_t>(ppid);
}

void JobAttributor::add_job(pid_t root_pid, int64_t job_id) { roots_[root_pid] = job_id; }

void JobAttributor::remove_job(pid_t root_pid) { roots_.erase(root_pid); }

std::optional<int64_t> JobAttributor::job_for(pid_t pid) const {
  pid_t current = pid;
  for (int depth = 0; depth <= kMaxAncestorDepth && current > 0; ++depth) {
    if (auto it = roots_.find(current); it != roots_.end()) return it->second;
    std::optional<pid_t> parent = table_.parent_of(current);
    if (!parent || *parent == current) return std::nullopt;
    current = *parent;
  }
  return std::nullopt;
}

}  // namespace colo
