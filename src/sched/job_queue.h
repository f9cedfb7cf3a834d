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
// Retries (enqueue_front) go ahead of the queue and may ask for fewer
// neighbours; while one waits, the device with the fewest jobs takes no new
// ones, so that it drains for the retry.
//
// Reservation. The oldest queued job that does not fit now (the head) is
// kept the device where the fewest running jobs must end for it to fit,
// taking them oldest first (the queue expects no ends), the first such
// device on a tie. A later job starts there only if the head still fits
// once those jobs ended, with it beside (Slurm's backfill rule, without
// expected ends): so the place that frees waits for the head, unless the
// device has room for both. Found again at each schedule().
//
// Classes (set_qos(); qos_placement.h says which may share a GPU). Protected
// and opportunistic jobs wait apart from the rest, each class in queue
// order: at each schedule() protected jobs are tried first (one that fits
// nowhere keeps the device with the fewest jobs among those without a
// protected job, which takes no new normal job meanwhile, so that it
// drains), then the normal jobs as above, on devices without a protected
// job, then the opportunistic ones, on any device qos_join() admits them
// to. Without set_qos() nothing of this is looked at.
//
// The queue only decides; it never starts processes (the run engine does).
// Placing a job costs O(devices + distinct memory hints + waiting retries),
// whatever the length of the queue, and finding the head's device once a
// call O(devices x the jobs that must end on the device kept), not of the
// running jobs on every device. Pure and deterministic: driven by table
// tests and by a simulated clock alike. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "sched/device_room.h"
#include "sched/qos_placement.h"
#include "sched/waiting_reason.h"

namespace colo {

struct DeviceSlots {
  int device = 0;
  uint64_t memory_total_bytes = 0;
  int max_jobs = 1;
};

struct Assignment {
  size_t job = 0;  // the caller's job index
  int device = 0;
  // Start as an opportunistic client, with this thread percentage (QosJoin).
  bool opportunistic = false;
  std::optional<int> thread_pct;
  bool operator==(const Assignment&) const = default;
};

struct Unplaceable {
  size_t job = 0;
  std::string reason;  // "needs 90.0 GiB of GPU memory; the largest GPU has 80.0 GiB"
};

class JobQueue {
 public:
  explicit JobQueue(const std::vector<DeviceSlots>& devices,
                    QosShare qos_share = QosShare::kPriority);

  // A job's class (its `job` is the job's index), before it is enqueued;
  // a job never given one is normal.
  void set_qos(const QosTenant& qos);

  // Adds a job at the back. `memory_bytes` is its peak GPU memory hint. A job
  // that can never fit (no device, or more memory than the largest has) is
  // reported through take_unplaceable() instead.
  void enqueue(size_t job, std::optional<uint64_t> memory_bytes);
  // Adds a job at the front (a retry). With `max_neighbours` set, it is
  // placed only where at most that many other jobs run, and while it runs
  // its device takes no more than that. While it waits, the device with the
  // fewest jobs takes no new ones, so that it drains for the retry.
  void enqueue_front(size_t job, std::optional<uint64_t> memory_bytes,
                     std::optional<int> max_neighbours);

  // Places every queued job that fits now, in queue order, and returns the
  // placements (the jobs count as running from here on). Stops walking the
  // queue once every device is full.
  std::vector<Assignment> schedule();

  // The job's process ended: its slot and memory are free again.
  void finished(size_t job);

  // Removes every queued job (for cancellation) and returns them in order.
  std::vector<size_t> drain_queued();
  // Removes one queued job; false when it is not queued.
  bool remove(size_t job);
  // The device of a running job and how many other jobs run there.
  std::optional<int> device_of(size_t job) const;
  int neighbours_of(size_t job) const;

  std::vector<Unplaceable> take_unplaceable();

  // Gangs (Scheduler::rooms, occupy, reserve): a gang's rank counts as a job
  // on `device` with its memory, as `key | kOccupantKey` (finished() frees
  // it); reserved devices take no new job. Without expected ends, a device
  // has a drained_ms only when idle.
  std::vector<DeviceRoom> rooms(int64_t now_ms) const;
  void occupy(size_t key, int device, uint64_t memory_bytes);
  void reserve(const std::vector<int>& devices);

  // The head (kReserved), or another queued job while a device is kept
  // for the head (kBackfill), as the last schedule() left them; a
  // protected or opportunistic job that every device's classes refused, or
  // (no head kept) a job a protected job's device refuses (kProtected); ask
  // it of queued jobs only.
  std::optional<WaitingReason> waiting_reason(size_t job) const;

  size_t queued() const { return queued_count_ + retries_.size() + qos_queued_.size(); }
  size_t running() const { return running_.size(); }
  int running_on(int device) const;

 private:
  struct Entry {
    size_t job = 0;
    std::optional<uint64_t> memory_bytes;
    uint64_t seq = 0;  // queue order
    std::optional<int> max_neighbours;
  };
  // The devices a schedule() call keeps from new jobs, a flag per device
  // (by position into devices_): asked of every device for every job tried.
  using Reserved = std::vector<char>;
  // set_qos()'s, else normal.
  QosTenant qos_of(size_t job) const;
  // qos_join() of `job` on devices_[pos].
  QosJoin qos_join_at(size_t job, size_t pos) const;
  // The protected (then the opportunistic) jobs of qos_queued_: each placed
  // where it fits; a protected one that fits nowhere keeps a device
  // (`reserved`); a job every device's classes refuse records why.
  void place_classed(QosClass qos, Reserved& reserved, std::vector<Assignment>& placed);
  struct Device {
    DeviceSlots slots;
    int jobs = 0;
    uint64_t claimed_bytes = 0;           // memory hints of its jobs
    std::multiset<int> neighbour_limits;  // max_neighbours of its jobs that set one
    std::vector<QosTenant> tenants;       // its jobs' classes, once any job has one
    int protected_jobs = 0;               // of them
    // Its running jobs (occupants included), oldest placement first:
    // (Placed::order, job), as keep_for() takes them.
    std::set<std::pair<uint64_t, size_t>> oldest_first;
    uint64_t free_bytes() const {
      return slots.memory_total_bytes > claimed_bytes ? slots.memory_total_bytes - claimed_bytes
                                                      : 0;
    }
    // Its job limit, lowered while a job with max_neighbours runs there.
    int limit() const {
      return neighbour_limits.empty() ? slots.max_jobs
                                      : std::min(slots.max_jobs, *neighbour_limits.begin() + 1);
    }
  };
  struct Placed {
    size_t device_pos = 0;  // into devices_
    uint64_t memory_bytes = 0;
    std::optional<int> max_neighbours;
    uint64_t order = 0;  // placements counted: the oldest is expected to end first
  };
  // The device kept for the head (Reservation, above), and what it holds
  // once `ending` (its jobs that must end first) ended.
  struct Kept {
    size_t job = 0;  // the head
    uint64_t memory_bytes = 0;
    size_t pos = 0;  // into devices_
    std::vector<size_t> ending;
    int jobs_after = 0;
    uint64_t claimed_after = 0;
    int limit_after = 0;
    // Whether a job of `memory_bytes` may start there beside the head (it
    // still fits once `ending` ended).
    bool backfills(uint64_t memory_bytes, uint64_t total_bytes) const {
      return jobs_after + 2 <= limit_after &&
             claimed_after + this->memory_bytes + memory_bytes <= total_bytes;
    }
  };
  // The device where `head` fits once the fewest jobs ended, among those not
  // `reserved`; nullopt when none.
  std::optional<Kept> keep_for(const Entry& head, const Reserved& reserved) const;
  // The best device for `entry` among those not `reserved` (positions into
  // devices_), where it does not delay the head (kept_).
  std::optional<size_t> best_device_for(const Entry& entry, const Reserved& reserved) const;
  void place(const Entry& entry, size_t pos, std::vector<Assignment>& placed);

  std::vector<Device> devices_;
  // Retries, newest first: walked before the rest.
  std::deque<Entry> retries_;
  // Queued jobs grouped by memory hint (0: none), each group in queue order:
  // the oldest job that fits is the oldest front among the groups whose hint
  // fits, so a placement costs O(devices + distinct hints), not O(queue).
  std::map<uint64_t, std::deque<Entry>> queued_;
  size_t queued_count_ = 0;
  uint64_t next_seq_ = 0;
  std::unordered_map<size_t, Placed> running_;  // by job
  std::vector<size_t> gang_reserved_;           // positions into devices_
  std::optional<Kept> kept_;                    // as the last schedule() left it
  uint64_t placements_ = 0;                     // Placed::order
  std::vector<Unplaceable> unplaceable_;
  QosShare qos_share_ = QosShare::kPriority;
  std::unordered_map<size_t, QosTenant> qos_;  // set_qos(), of protected and opportunistic jobs
  bool any_qos_ = false;                       // set_qos() named a class other than normal
  std::deque<Entry> qos_queued_;               // protected and opportunistic jobs, in queue order
  std::unordered_map<size_t, WaitingReason> qos_waits_;  // why they wait, as last tried
};

}  // namespace colo
