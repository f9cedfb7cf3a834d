// JobQueue: which queued job starts on which GPU, and when.
//
// First-in first-out with backfill: whenever capacity frees, the queue is
// walked in order and every job that fits somewhere now is placed; a job that
// does not fit yet waits without holding back smaller jobs behind it. A job
// fits a device when the device has a free slot (its per-device job limit)
// and, if the job gives a memory hint, the hints of the jobs already there
// plus its own stay within the device's memory. Among devices that fit, the
// one with the fewest jobs wins, then the one with the most unclaimed memory,
// then the lowest index.
//
// The queue only decides; it never starts processes (the run controller
// does). Placing a job costs O(devices + distinct memory hints), whatever the
// length of the queue. Pure and deterministic: driven by table tests and by a simulated
// clock alike. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace colo {

struct DeviceSlots {
  int device = 0;
  uint64_t memory_total_bytes = 0;
  int max_jobs = 1;
};

struct Assignment {
  size_t job = 0;  // the caller's job index
  int device = 0;
  bool operator==(const Assignment&) const = default;
};

struct Unplaceable {
  size_t job = 0;
  std::string reason;  // "needs 90.0 GiB of GPU memory; the largest GPU has 80.0 GiB"
};

class JobQueue {
 public:
  explicit JobQueue(const std::vector<DeviceSlots>& devices);

  // Adds a job at the back. `memory_bytes` is its peak GPU memory hint. A job
  // that can never fit (no device, or more memory than the largest has) is
  // reported through take_unplaceable() instead.
  void enqueue(size_t job, std::optional<uint64_t> memory_bytes);

  // Places every queued job that fits now, in queue order, and returns the
  // placements (the jobs count as running from here on). Stops walking the
  // queue once every device is full.
  std::vector<Assignment> schedule();

  // The job's process ended: its slot and memory are free again.
  void finished(size_t job);

  // Removes every queued job (for cancellation) and returns them in order.
  std::vector<size_t> drain_queued();

  std::vector<Unplaceable> take_unplaceable();

  size_t queued() const { return queued_count_; }
  size_t running() const { return running_.size(); }
  int running_on(int device) const;

 private:
  struct Entry {
    size_t job = 0;
    std::optional<uint64_t> memory_bytes;
    uint64_t seq = 0;  // queue order
  };
  struct Device {
    DeviceSlots slots;
    int jobs = 0;
    uint64_t claimed_bytes = 0;  // memory hints of its jobs
    uint64_t free_bytes() const {
      return slots.memory_total_bytes > claimed_bytes ? slots.memory_total_bytes - claimed_bytes
                                                      : 0;
    }
  };
  struct Placed {
    size_t device_pos = 0;  // into devices_
    uint64_t memory_bytes = 0;
  };
  std::optional<size_t> best_device_for(const Entry& entry) const;

  std::vector<Device> devices_;
  // Queued jobs grouped by memory hint (0: none), each group in queue order:
  // the oldest job that fits is the oldest front among the groups whose hint
  // fits, so a placement costs O(devices + distinct hints), not O(queue).
  std::map<uint64_t, std::deque<Entry>> queued_;
  size_t queued_count_ = 0;
  uint64_t next_seq_ = 0;
  std::unordered_map<size_t, Placed> running_;  // by job
  std::vector<Unplaceable> unplaceable_;
};

}  // namespace colo
