#include "sched/job_queue.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"

namespace colo {

JobQueue::JobQueue(const std::vector<DeviceSlots>& devices, QosShare qos_share)
    : qos_share_(qos_share) {
  for (const DeviceSlots& d : devices) devices_.push_back(Device{d});
}

void JobQueue::set_qos(const QosTenant& qos) {
  if (qos.qos == QosClass::kNormal) return;
  if (!any_qos_) {
    // From here on every device knows its jobs' classes: those running now are normal.
    any_qos_ = true;
    for (const auto& [job, p] : running_) devices_[p.device_pos].tenants.push_back(QosTenant{job});
  }
  qos_[qos.job] = qos;
}

QosTenant JobQueue::qos_of(size_t job) const {
  auto it = qos_.find(job);
  return it != qos_.end() ? it->second : QosTenant{job};
}

QosJoin JobQueue::qos_join_at(size_t job, size_t pos) const {
  const Device& d = devices_[pos];
  return qos_join(d.slots.device, d.tenants, qos_of(job), qos_share_);
}

void JobQueue::place_classed(QosClass qos, Reserved& reserved, std::vector<Assignment>& placed) {
  for (auto it = qos_queued_.begin(); it != qos_queued_.end();) {
    if (qos_of(it->job).qos != qos) {
      ++it;
      continue;
    }
    if (std::optional<size_t> pos = best_device_for(*it, reserved)) {
      qos_waits_.erase(it->job);
      const Entry entry = *it;
      it = qos_queued_.erase(it);
      place(entry, *pos, placed);
      continue;
    }
    // Why: the first device whose classes refuse it, unless one admits it.
    std::optional<WaitingReason> why;
    for (size_t pos = 0; pos < devices_.size(); ++pos) {
      QosJoin q = qos_join_at(it->job, pos);
      if (q.admitted) {
        why.reset();
        break;
      }
      if (!why) why = std::move(q.why);
    }
    if (why) {
      qos_waits_[it->job] = *why;
    } else {
      qos_waits_.erase(it->job);
    }
    if (qos == QosClass::kProtected) {
      // Keep it the device with the fewest jobs and no protected job: it drains.
      std::optional<size_t> drain;
      for (size_t i = 0; i < devices_.size(); ++i) {
        if (devices_[i].protected_jobs > 0 || reserved[i]) continue;
        if (!drain || devices_[i].jobs < devices_[*drain].jobs) drain = i;
      }
      if (drain) reserved[*drain] = 1;
    }
    ++it;
  }
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
  } else if (any_qos_ && qos_of(job).qos != QosClass::kNormal) {
    qos_queued_.push_back(Entry{job, memory_bytes, next_seq_++, {}});
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
                                                const Reserved& reserved) const {
  std::optional<size_t> best;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    if (reserved[i]) continue;
    if (d.jobs >= d.limit()) continue;
    if (entry.max_neighbours && d.jobs > *entry.max_neighbours) continue;
    if (entry.memory_bytes && *entry.memory_bytes > d.free_bytes()) continue;
    if (any_qos_ && !qos_join_at(entry.job, i).admitted) continue;
    if (kept_ && i == kept_->pos && entry.job != kept_->job &&
        !kept_->backfills(entry.memory_bytes.value_or(0), d.slots.memory_total_bytes))
      continue;
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
  auto [it, added] = running_.try_emplace(entry.job);
  // A job placed again while running (no caller does) is taken by keep_for()
  // at its new place alone, as running_ holds it.
  if (!added) devices_[it->second.device_pos].oldest_first.erase({it->second.order, entry.job});
  it->second = Placed{pos, entry.memory_bytes.value_or(0), entry.max_neighbours, placements_};
  d.oldest_first.emplace(placements_++, entry.job);
  placed.push_back(Assignment{entry.job, d.slots.device});
  if (any_qos_) {
    const QosJoin q = qos_join_at(entry.job, pos);
    placed.back().opportunistic = q.opportunistic;
    placed.back().thread_pct = q.thread_pct;
    QosTenant t = qos_of(entry.job);
    t.thread_pct = q.thread_pct.value_or(100);
    d.tenants.push_back(t);
    if (t.qos == QosClass::kProtected) ++d.protected_jobs;
  }
  if (kept_ && pos == kept_->pos && entry.job != kept_->job) {
    kept_->jobs_after += 1;
    kept_->claimed_after += entry.memory_bytes.value_or(0);
  }
}

std::optional<JobQueue::Kept> JobQueue::keep_for(const Entry& head,
                                                 const Reserved& reserved) const {
  const uint64_t need = head.memory_bytes.value_or(0);
  std::optional<Kept> best;
  for (size_t pos = 0; pos < devices_.size(); ++pos) {
    const Device& d = devices_[pos];
    if (reserved[pos] || need > d.slots.memory_total_bytes) continue;
    // No device where fewer jobs end: the first found where one does is kept.
    if (best && best->ending.size() <= 1) break;
    Kept k{head.job, need, pos, {}, d.jobs, d.claimed_bytes, d.slots.max_jobs};
    std::multiset<int> limits = d.neighbour_limits;
    for (const auto& [order, job] : d.oldest_first) {
      if (best && k.ending.size() + 1 >= best->ending.size()) break;  // no better
      const Placed& p = running_.at(job);
      k.ending.push_back(job);
      k.jobs_after -= 1;
      k.claimed_after -= p.memory_bytes;
      if (p.max_neighbours) limits.erase(limits.find(*p.max_neighbours));
      k.limit_after =
          limits.empty() ? d.slots.max_jobs : std::min(d.slots.max_jobs, *limits.begin() + 1);
      if (k.jobs_after + 1 <= k.limit_after &&
          k.claimed_after + need <= d.slots.memory_total_bytes) {
        best = k;
        break;
      }
    }
  }
  return best;
}

std::optional<WaitingReason> JobQueue::waiting_reason(size_t job) const {
  if (auto qos = qos_waits_.find(job); qos != qos_waits_.end()) return qos->second;
  if (!kept_ && any_qos_) {
    // No head is kept a device: a protected job's device that refuses it, if any.
    for (size_t pos = 0; pos < devices_.size(); ++pos) {
      if (devices_[pos].protected_jobs == 0) continue;
      if (std::optional<WaitingReason> why = qos_join_at(job, pos).why) return why;
    }
  }
  if (!kept_) return std::nullopt;
  WaitingReason why;
  why.kind = job == kept_->job ? WaitingReason::Kind::kReserved : WaitingReason::Kind::kBackfill;
  why.head = kept_->job;
  why.device = devices_[kept_->pos].slots.device;
  why.jobs_to_end = static_cast<int>(kept_->ending.size());
  return why;
}

std::vector<Assignment> JobQueue::schedule() {
  std::vector<Assignment> placed;
  kept_.reset();  // found again below, once the retries went first
  // Retries first. One that does not fit reserves the device with the
  // fewest jobs (among those not yet reserved): it takes no new job. The
  // devices kept for a gang take none either.
  Reserved reserved(devices_.size(), 0);
  for (size_t pos : gang_reserved_) reserved[pos] = 1;
  if (!qos_queued_.empty()) place_classed(QosClass::kProtected, reserved, placed);
  Reserved opportunistic_reserved = reserved;  // they may join a protected job
  // Normal jobs never join a protected job's device (best_device_for()):
  // the walk below leaves such devices out, so that capacity it sees is
  // capacity they may take.
  for (size_t i = 0; any_qos_ && qos_share_ != QosShare::kInstance && i < devices_.size(); ++i) {
    if (devices_[i].protected_jobs > 0) reserved[i] = 1;
  }
  for (auto it = retries_.begin(); it != retries_.end();) {
    if (std::optional<size_t> pos = best_device_for(*it, reserved)) {
      place(*it, *pos, placed);
      it = retries_.erase(it);
      continue;
    }
    if (it->max_neighbours) {
      std::optional<size_t> drain;
      for (size_t i = 0; i < devices_.size(); ++i) {
        if (reserved[i]) continue;
        if (!drain || devices_[i].jobs < devices_[*drain].jobs) drain = i;
      }
      if (drain) reserved[*drain] = 1;
    }
    ++it;
  }

  // Then the queue. Placing a job only takes capacity, so a job that did not
  // fit earlier in this call cannot fit later: the oldest job that fits,
  // again and again, is the queue walked once in order; the first time the
  // oldest does not fit, it is the head, kept a device.
  bool head_sought = false;
  while (queued_count_ > 0) {
    if (!head_sought) {
      const Entry* first = nullptr;
      for (const auto& [hint, group] : queued_) {
        if (!group.empty() && (first == nullptr || group.front().seq < first->seq))
          first = &group.front();
      }
      if (first != nullptr && !best_device_for(*first, reserved)) {
        head_sought = true;
        kept_ = keep_for(*first, reserved);
      }
    }
    std::optional<uint64_t> most_free;  // among usable devices with a free slot
    for (size_t i = 0; i < devices_.size(); ++i) {
      const Device& d = devices_[i];
      if (d.jobs >= d.limit() || reserved[i]) continue;
      uint64_t free = d.free_bytes();
      if (kept_ && i == kept_->pos) {  // what a job beside the head may take
        if (!kept_->backfills(0, d.slots.memory_total_bytes)) continue;
        free =
            std::min(free, d.slots.memory_total_bytes - kept_->claimed_after - kept_->memory_bytes);
      }
      most_free = std::max(most_free.value_or(0), free);
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
    if (!pos) break;  // cannot happen: the device with most_free fits it (the head fits none)
    oldest->pop_front();
    if (oldest->empty()) queued_.erase(entry.memory_bytes.value_or(0));
    --queued_count_;
    place(entry, *pos, placed);
  }
  if (!qos_queued_.empty()) place_classed(QosClass::kOpportunistic, opportunistic_reserved, placed);
  return placed;
}

void JobQueue::finished(size_t job) {
  auto it = running_.find(job);
  if (it == running_.end()) return;
  Device& d = devices_[it->second.device_pos];
  d.jobs -= 1;
  d.claimed_bytes -= it->second.memory_bytes;
  if (auto t = std::find_if(d.tenants.begin(), d.tenants.end(),
                            [&](const QosTenant& q) { return q.job == job; });
      t != d.tenants.end()) {
    if (t->qos == QosClass::kProtected) --d.protected_jobs;
    d.tenants.erase(t);
  }
  if (it->second.max_neighbours)
    d.neighbour_limits.erase(d.neighbour_limits.find(*it->second.max_neighbours));
  d.oldest_first.erase({it->second.order, job});
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
  kept_.reset();
  std::vector<Entry> all;
  for (auto& [hint, group] : queued_) all.insert(all.end(), group.begin(), group.end());
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.seq < b.seq; });
  std::vector<size_t> jobs;
  for (const Entry& e : retries_) jobs.push_back(e.job);
  for (const Entry& e : all) jobs.push_back(e.job);
  for (const Entry& e : qos_queued_) jobs.push_back(e.job);
  qos_queued_.clear();
  qos_waits_.clear();
  retries_.clear();
  queued_.clear();
  queued_count_ = 0;
  return jobs;
}

bool JobQueue::remove(size_t job) {
  if (kept_ && kept_->job == job) kept_.reset();
  auto is_job = [&](const Entry& e) { return e.job == job; };
  if (auto it = std::find_if(retries_.begin(), retries_.end(), is_job); it != retries_.end()) {
    retries_.erase(it);
    return true;
  }
  if (auto it = std::find_if(qos_queued_.begin(), qos_queued_.end(), is_job);
      it != qos_queued_.end()) {
    qos_queued_.erase(it);
    qos_waits_.erase(job);
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
