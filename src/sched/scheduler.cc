#include "sched/scheduler.h"

#include <fmt/format.h>

namespace colo {

FixedScheduler::FixedScheduler(const std::vector<DeviceSlots>& devices, std::string description,
                               int max_retries, QosShare qos_share)
    : queue_(devices, qos_share), description_(std::move(description)), max_retries_(max_retries) {}

void FixedScheduler::introduce(const std::string& signature, const SignatureFacts& facts) {
  if (facts.profile && facts.profile->sm_active_pct) {
    sm_pct_[signature] = *facts.profile->sm_active_pct;
  } else if (facts.prior && facts.prior->sm_active_pct) {
    sm_pct_[signature] = *facts.prior->sm_active_pct;
  }
}

void FixedScheduler::enqueue(const SchedJob& job) {
  hints_[job.job] = job.memory_hint;
  if (job.qos != QosClass::kNormal) {
    // Its SM activity: its own hint, its signature's, else a busy GPU's (the safe guess).
    auto known = sm_pct_.find(job.signature);
    const double sm = job.sm_active_pct.value_or(known != sm_pct_.end() ? known->second : 100.0);
    queue_.set_qos({job.job, job.qos, job.min_speed, sm / 100.0, 100});
  }
  queue_.enqueue(job.job, job.memory_hint);
}

std::vector<Decision> FixedScheduler::schedule(int64_t /*now_ms*/) {
  std::vector<Decision> out;
  for (const Assignment& a : queue_.schedule()) {
    out.push_back(Decision{a.job, a.device, false, std::nullopt, std::nullopt});
    out.back().opportunistic = a.opportunistic;
    out.back().opportunistic_thread_pct = a.thread_pct;
  }
  return out;
}

EndVerdict FixedScheduler::finished(size_t job, JobEnd end, int64_t /*now_ms*/) {
  const std::optional<int> device = queue_.device_of(job);
  const int neighbours = queue_.neighbours_of(job);
  queue_.finished(job);
  if (end != JobEnd::kOutOfMemory || !device) return {};
  const int attempt = attempts_.count(job) > 0 ? attempts_[job] : 1;
  if (neighbours == 0) {
    return {false, fmt::format("out of GPU memory alone on gpu{}; it does not fit there", *device)};
  }
  if (attempt > max_retries_) {
    return {false, fmt::format("out of GPU memory on each of {} attempts; giving up", attempt)};
  }
  attempts_[job] = attempt + 1;
  const int allowed = attempt + 1 > max_retries_ ? 0 : neighbours / 2;
  queue_.enqueue_front(job, hints_[job], allowed);
  return {true, fmt::format("out of GPU memory on gpu{} ({} other jobs there); requeued to run "
                            "with at most {} other jobs (attempt {} of {})",
                            *device, neighbours, allowed, attempt + 1, max_retries_ + 1)};
}

}  // namespace colo
