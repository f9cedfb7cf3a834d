#include "sched/job_queue.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"

namespace colo {

JobQueue::JobQueue(const std::vector<DeviceSlots>& devices) {
  for (const DeviceSlots& d : devices) devices_.push_back(Device{d, 0, 0, {}});
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
    queued_[memory_bytes.value_or(0)].push_back(Entry{job, memory_bytes, next_seq_++, {}});
    ++queued_count_;
  }
}

void JobQueue::enqueue_front(size_t job, std::optional<uint64_t> memory_bytes,
                             std::optional<int> max_neighbours) {
  retries_.push_front(Entry{job, memory_bytes, 0, max_neighbours});
}

int JobQueue::running_on(int device) const {
  for (const Device& d : devices_) {
    if (d.slots.device == device) return d.jobs;
  }
  return 0;
}

std::optional<size_t> JobQueue::best_device_for(const Entry& entry,
                                                const std::vector<size_t>& reserved) const {
  std::optional<size_t> best;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    if (std::find(reserved.begin(), reserved.end(), i) != reserved.end()) continue;
    if (d.jobs >= d.limit()) continue;
    if (entry.max_neighbours && d.jobs > *entry.max_neighbours) continue;
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

void JobQueue::place(const Entry& entry, size_t pos, std::vector<Assignment>& placed) {
  Device& d = devices_[pos];
  d.jobs += 1;
  d.claimed_bytes += entry.memory_bytes.value_or(0);
  if (entry.max_neighbours) d.neighbour_limits.insert(*entry.max_neighbours);
  running_[entry.job] = Placed{pos, entry.memory_bytes.value_or(0), entry.max_neighbours};
  placed.push_back(Assignment{entry.job, d.slots.device});
}

std::vector<Assignment> JobQueue::schedule() {
  std::vector<Assignment> placed;
  // Retries first. One that does not fit reserves the device with the
  // fewest jobs (among those not yet reserved): it takes no new job. The
  // devices kept for a gang take none either.
  std::vector<size_t> reserved = gang_reserved_;
  for (auto it = retries_.begin(); it != retries_.end();) {
    if (std::optional<size_t> pos = best_device_for(*it, reserved)) {
      place(*it, *pos, placed);
      it = retries_.erase(it);
      continue;
    }
    if (it->max_neighbours) {
      std::optional<size_t> drain;
      for (size_t i = 0; i < devices_.size(); ++i) {
        if (std::find(reserved.begin(), reserved.end(), i) != reserved.end()) continue;
        if (!drain || devices_[i].jobs < devices_[*drain].jobs) drain = i;
      }
      if (drain) reserved.push_back(*drain);
    }
    ++it;
  }

  // Then the queue. Placing a job only takes capacity, so a job that did not
  // fit earlier in this call cannot fit later: the oldest job that fits,
  // again and again, is the queue walked once in order.
  while (queued_count_ > 0) {
    std::optional<uint64_t> most_free;  // among usable devices with a free slot
    for (size_t i = 0; i < devices_.size(); ++i) {
      const Device& d = devices_[i];
      if (d.jobs < d.limit() && std::find(reserved.begin(), reserved.end(), i) == reserved.end())
        most_free = std::max(most_free.value_or(0), d.free_bytes());
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
    std::optional<size_t> pos = best_device_for(entry, reserved);
    if (!pos) break;  // cannot happen: the device with most_free fits it
    oldest->pop_front();
    if (oldest->empty()) queued_.erase(entry.memory_bytes.value_or(0));
    --queued_count_;
    place(entry, *pos, placed);
  }
  return placed;
}

void JobQueue::finished(size_t job) {
  auto it = running_.find(job);
  if (it == running_.end()) return;
  Device& d = devices_[it->second.device_pos];
  d.jobs -= 1;
  d.claimed_bytes -= it->second.memory_bytes;
  if (it->second.max_neighbours)
    d.neighbour_limits.erase(d.neighbour_limits.find(*it->second.max_neighbours));
  running_.erase(it);
}

std::vector<DeviceRoom> JobQueue::rooms(int64_t now_ms) const {
  std::vector<DeviceRoom> out;
  for (const Device& d : devices_) {
    DeviceRoom room{d.slots.device, d.jobs,       std::max(0, d.limit() - d.jobs),
                    d.free_bytes(), std::nullopt, d.slots.memory_total_bytes};
    if (d.jobs == 0) room.drained_ms = now_ms;
    out.push_back(room);
  }
  return out;
}

void JobQueue::occupy(size_t key, int device, uint64_t memory_bytes) {
  for (size_t pos = 0; pos < devices_.size(); ++pos) {
    if (devices_[pos].slots.device != device) continue;
    std::vector<Assignment> ignored;
    place(Entry{key | kOccupantKey, memory_bytes, 0, std::nullopt}, pos, ignored);
    return;
  }
}

void JobQueue::reserve(const std::vector<int>& devices) {
  gang_reserved_.clear();
  for (size_t pos = 0; pos < devices_.size(); ++pos) {
    if (std::find(devices.begin(), devices.end(), devices_[pos].slots.device) != devices.end())
      gang_reserved_.push_back(pos);
  }
}

std::vector<size_t> JobQueue::drain_queued() {
  std::vector<Entry> all;
  for (auto& [hint, group] : queued_) all.insert(all.end(), group.begin(), group.end());
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.seq < b.seq; });
  std::vector<size_t> jobs;
  for (const Entry& e : retries_) jobs.push_back(e.job);
  for (const Entry& e : all) jobs.push_back(e.job);
  retries_.clear();
  queued_.clear();
  queued_count_ = 0;
  return jobs;
}

bool JobQueue::remove(size_t job) {
  auto is_job = [&](const Entry& e) { return e.job == job; };
  if (auto it = std::find_if(retries_.begin(), retries_.end(), is_job); it != retries_.end()) {
    retries_.erase(it);
    return true;
  }
  for (auto group = queued_.begin(); group != queued_.end(); ++group) {
    auto it = std::find_if(group->second.begin(), group->second.end(), is_job);
    if (it == group->second.end()) continue;
    group->second.erase(it);
    if (group->second.empty()) queued_.erase(group);
    --queued_count_;
    return true;
  }
  return false;
}

std::optional<int> JobQueue::device_of(size_t job) const {
  auto it = running_.find(job);
  if (it == running_.end()) return std::nullopt;
  return devices_[it->second.device_pos].slots.device;
}

int JobQueue::neighbours_of(size_t job) const {
  auto it = running_.find(job);
  return it == running_.end() ? 0 : devices_[it->second.device_pos].jobs - 1;
}

std::vector<Unplaceable> JobQueue::take_unplaceable() { return std::exchange(unplaceable_, {}); }

}  // namespace colo
