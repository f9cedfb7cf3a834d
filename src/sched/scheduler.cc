#include "sched/scheduler.h"

namespace colo {

FixedScheduler::FixedScheduler(const std::vector<DeviceSlots>& devices, std::string description)
    : queue_(devices), description_(std::move(description)) {}

void FixedScheduler::enqueue(const SchedJob& job) { queue_.enqueue(job.job, job.memory_hint); }

std::vector<Decision> FixedScheduler::schedule(int64_t /*now_ms*/) {
  std::vector<Decision> out;
  for (const Assignment& a : queue_.schedule())
    out.push_back(Decision{a.job, a.device, false, std::nullopt, std::nullopt});
  return out;
}

EndVerdict FixedScheduler::finished(size_t job, JobEnd /*end*/, int64_t /*now_ms*/) {
  queue_.finished(job);
  return {};
}

}  // namespace colo
