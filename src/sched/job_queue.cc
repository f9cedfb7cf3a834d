#include "sched/job_queue.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"

namespace colo {

JobQueue::JobQueue(const std::vector<DeviceSlots>& devices) {
  for (const DeviceSlots& d : devices) devices_.push_back(Device{d});
}

void JobQueue::enqueue(size_t job, std::optional<uint64_t> memory_bytes) {
  uint64_t largest = 0;
  for (const Device& d : devices_) largest = std::max(largest, d.slots.memory_total_bytes);
  if (devices_.empty()) {
    unplaceable_.push_back({job, "no GPU to run on"});
  } else if (memory_bytes && *memory_bytes > largest) {
    unplaceable_.push_back(
        {job, fmt::format("needs {} of GPU memory (its gpu_memory hint); the largest GPU has {}",
                          format_bytes(*memory_bytes), format_bytes(largest))});
  } else {
    queued_[memory_bytes.value_or(0)].push_back(Entry{job, memory_bytes, next_seq_++});
    ++queued_count_;
  }
}

int JobQueue::running_on(int device) const {
  for (const Device& d : devices_) {
    if (d.slots.device == device) return d.jobs;
  }
  return 0;
}

std::optional<size_t> JobQueue::best_device_for(const Entry& entry) const {
  std::optional<size_t> best;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    if (d.jobs >= d.slots.max_jobs) continue;
    if (entry.memory_bytes && *entry.memory_bytes > d.free_bytes()) continue;
    if (!best) {
      best = i;
      continue;
    }
    const Device& b = devices_[*best];
    if (d.jobs < b.jobs || (d.jobs == b.jobs && d.free_bytes() > b.free_bytes())) best = i;
  }
  return best;
}

std::vector<Assignment> JobQueue::schedule() {
  // Placing a job only takes capacity, so a job that did not fit earlier in
  // this call cannot fit later: the oldest job that fits, again and again, is
  // the queue walked once in order.
  std::vector<Assignment> placed;
  while (queued_count_ > 0) {
    std::optional<uint64_t> most_free;  // among devices with a free slot
    for (const Device& d : devices_) {
      if (d.jobs < d.slots.max_jobs) most_free = std::max(most_free.value_or(0), d.free_bytes());
    }
    if (!most_free) break;
    std::deque<Entry>* oldest = nullptr;
    for (auto& [hint, group] : queued_) {
      if (hint > *most_free) break;
      if (!group.empty() && (oldest == nullptr || group.front().seq < oldest->front().seq))
        oldest = &group;
    }
    if (oldest == nullptr) break;
    const Entry entry = oldest->front();
    std::optional<size_t> pos = best_device_for(entry);
    if (!pos) break;  // cannot happen: the device with most_free fits it
    oldest->pop_front();
    if (oldest->empty()) queued_.erase(entry.memory_bytes.value_or(0));
    --queued_count_;
    Device& d = devices_[*pos];
    d.jobs += 1;
    d.claimed_bytes += entry.memory_bytes.value_or(0);
    running_[entry.job] = Placed{*pos, entry.memory_bytes.value_or(0)};
    placed.push_back(Assignment{entry.job, d.slots.device});
  }
  return placed;
}

void JobQueue::finished(size_t job) {
  auto it = running_.find(job);
  if (it == running_.end()) return;
  Device& d = devices_[it->second.device_pos];
  d.jobs -= 1;
  d.claimed_bytes -= it->second.memory_bytes;
  running_.erase(it);
}

std::vector<size_t> JobQueue::drain_queued() {
  std::vector<Entry> all;
  for (auto& [hint, group] : queued_) all.insert(all.end(), group.begin(), group.end());
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.seq < b.seq; });
  queued_.clear();
  queued_count_ = 0;
  std::vector<size_t> jobs;
  for (const Entry& e : all) jobs.push_back(e.job);
  return jobs;
}

std::vector<Unplaceable> JobQueue::take_unplaceable() { return std::exchange(unplaceable_, {}); }

}  // namespace colo
