#include "sched/job_queue.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"

namespace colo {

JobQueue::JobQueue(std::vector<DeviceSlots> devices) : devices_(std::move(devices)) {}

void JobQueue::enqueue(size_t job, std::optional<uint64_t> memory_bytes) {
  uint64_t largest = 0;
  for (const DeviceSlots& d : devices_) largest = std::max(largest, d.memory_total_bytes);
  if (devices_.empty()) {
    unplaceable_.push_back({job, "no GPU to run on"});
  } else if (memory_bytes && *memory_bytes > largest) {
    unplaceable_.push_back(
        {job, fmt::format("needs {} of GPU memory (its gpu_memory hint); the largest GPU has {}",
                          format_bytes(*memory_bytes), format_bytes(largest))});
  } else {
    queue_.push_back(Entry{job, memory_bytes, std::nullopt});
  }
}

void JobQueue::enqueue_front(size_t job, std::optional<uint64_t> memory_bytes,
                             std::optional<int> max_neighbours) {
  queue_.push_front(Entry{job, memory_bytes, max_neighbours});
}

int JobQueue::limit_of(const DeviceSlots& d) const {
  int limit = d.max_jobs;
  for (const Placed& p : running_) {
    if (p.device == d.device && p.entry.max_neighbours)
      limit = std::min(limit, *p.entry.max_neighbours + 1);
  }
  return limit;
}

int JobQueue::running_on(int device) const {
  return static_cast<int>(std::count_if(running_.begin(), running_.end(),
                                        [&](const Placed& p) { return p.device == device; }));
}

uint64_t JobQueue::claimed_memory(int device) const {
  uint64_t sum = 0;
  for (const Placed& p : running_) {
    if (p.device == device) sum += p.entry.memory_bytes.value_or(0);
  }
  return sum;
}

std::optional<int> JobQueue::best_device_for(const Entry& entry,
                                             const std::vector<int>& reserved) const {
  std::optional<int> best;
  int best_jobs = 0;
  uint64_t best_free = 0;
  for (const DeviceSlots& d : devices_) {
    if (std::find(reserved.begin(), reserved.end(), d.device) != reserved.end()) continue;
    int jobs = running_on(d.device);
    if (jobs >= limit_of(d)) continue;
    if (entry.max_neighbours && jobs > *entry.max_neighbours) continue;
    uint64_t claimed = claimed_memory(d.device);
    uint64_t free = d.memory_total_bytes > claimed ? d.memory_total_bytes - claimed : 0;
    if (entry.memory_bytes && *entry.memory_bytes > free) continue;
    if (!best || jobs < best_jobs || (jobs == best_jobs && free > best_free)) {
      best = d.device;
      best_jobs = jobs;
      best_free = free;
    }
  }
  return best;
}

std::vector<Assignment> JobQueue::schedule() {
  std::vector<Assignment> placed;
  std::vector<int> reserved;  // devices draining for a retry that waits for fewer neighbours
  for (auto it = queue_.begin(); it != queue_.end() && has_free_slot();) {
    std::optional<int> device = best_device_for(*it, reserved);
    if (device) {
      running_.push_back(Placed{*it, *device});
      placed.push_back(Assignment{it->job, *device});
      it = queue_.erase(it);
      continue;
    }
    if (it->max_neighbours) {
      // The device with the fewest jobs takes no others until the retry fits there.
      std::optional<int> drain;
      for (const DeviceSlots& d : devices_) {
        if (std::find(reserved.begin(), reserved.end(), d.device) != reserved.end()) continue;
        if (!drain || running_on(d.device) < running_on(*drain)) drain = d.device;
      }
      if (drain) reserved.push_back(*drain);
    }
    ++it;
  }
  return placed;
}

bool JobQueue::has_free_slot() const {
  return std::any_of(devices_.begin(), devices_.end(),
                     [&](const DeviceSlots& d) { return running_on(d.device) < limit_of(d); });
}

void JobQueue::finished(size_t job) {
  std::erase_if(running_, [&](const Placed& p) { return p.entry.job == job; });
}

std::vector<size_t> JobQueue::drain_queued() {
  std::vector<size_t> jobs;
  for (const Entry& e : queue_) jobs.push_back(e.job);
  queue_.clear();
  return jobs;
}

bool JobQueue::remove(size_t job) {
  auto it =
      std::find_if(queue_.begin(), queue_.end(), [&](const Entry& e) { return e.job == job; });
  if (it == queue_.end()) return false;
  queue_.erase(it);
  return true;
}

std::optional<int> JobQueue::device_of(size_t job) const {
  for (const Placed& p : running_) {
    if (p.entry.job == job) return p.device;
  }
  return std::nullopt;
}

int JobQueue::neighbours_of(size_t job) const {
  std::optional<int> device = device_of(job);
  return device ? running_on(*device) - 1 : 0;
}

std::vector<Unplaceable> JobQueue::take_unplaceable() { return std::exchange(unplaceable_, {}); }

}  // namespace colo
