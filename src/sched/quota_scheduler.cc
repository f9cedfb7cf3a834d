#include "sched/quota_scheduler.h"

#include <utility>
#include <vector>

namespace colo {

bool QuotaScheduler::held(size_t job) const {
  return std::any_of(owners_.begin(), owners_.end(),
                     [&](const auto& o) { return o.second.waiting.contains(job); });
}

void QuotaScheduler::enqueue(const SchedJob& job) {
  Owner& o = owners_[job.owner];
  if (!left_.contains(job.owner) && !protected_left_.contains(job.owner) && o.waiting.empty()) {
    show(job);
    return;
  }
  o.waiting[job.job] = job;
  ++waiting_count_;
  rebalance(job.owner);
}

void QuotaScheduler::show(const SchedJob& job) {
  Owner& o = owners_[job.owner];
  o.shown.insert(job.job);
  o.shown_needs += needs(job);
  o.shown_protected += needs_protected(job);
  shown_[job.job] = job;
  policy().enqueue(job);
}

void QuotaScheduler::forget_shown(size_t job) {
  auto it = shown_.find(job);
  if (it == shown_.end()) return;
  Owner& o = owners_[it->second.owner];
  o.shown.erase(job);
  o.shown_needs -= needs(it->second);
  o.shown_protected -= needs_protected(it->second);
  shown_.erase(it);
}

std::vector<Decision> QuotaScheduler::schedule(int64_t now_ms) {
  std::vector<Decision> placed = policy().schedule(now_ms);
  for (const Decision& d : placed) {
    auto it = shown_.find(d.job);
    if (it == shown_.end()) continue;
    // Until the caller says again what is left, what started is taken from it.
    if (auto left = left_.find(it->second.owner); left != left_.end())
      left->second -= needs(it->second);
    if (auto left = protected_left_.find(it->second.owner); left != protected_left_.end())
      left->second -= needs_protected(it->second);
    forget_shown(d.job);
  }
  return placed;
}

std::vector<size_t> QuotaScheduler::drain_queued() {
  std::vector<size_t> out = policy().drain_queued();
  for (auto& [owner, o] : owners_) {
    for (const auto& [job, j] : o.waiting) out.push_back(job);
    o = Owner{};
  }
  shown_.clear();
  waiting_count_ = 0;
  return out;
}

bool QuotaScheduler::remove_queued(size_t job) {
  for (auto& [owner, o] : owners_) {
    if (o.waiting.erase(job) > 0) {
      --waiting_count_;
      return true;
    }
  }
  auto it = shown_.find(job);
  const std::optional<uint32_t> owner =
      it == shown_.end() ? std::nullopt : std::optional<uint32_t>(it->second.owner);
  forget_shown(job);
  const bool removed = policy().remove_queued(job);
  if (owner) rebalance(*owner);  // room for the owner's next one
  return removed;
}

std::vector<Unplaceable> QuotaScheduler::take_unplaceable() {
  std::vector<Unplaceable> out = policy().take_unplaceable();
  std::set<uint32_t> touched;
  for (const Unplaceable& u : out) {
    if (auto it = shown_.find(u.job); it != shown_.end()) touched.insert(it->second.owner);
    forget_shown(u.job);
  }
  for (uint32_t owner : touched) rebalance(owner);
  return out;
}

void QuotaScheduler::set_quota_left(const std::map<uint32_t, double>& gpus_left) {
  std::set<uint32_t> touched;
  for (const auto& [owner, left] : left_) touched.insert(owner);
  for (const auto& [owner, left] : gpus_left) touched.insert(owner);
  left_ = gpus_left;
  for (uint32_t owner : touched) rebalance(owner);
}

void QuotaScheduler::set_protected_left(const std::map<uint32_t, double>& gpus_left) {
  std::set<uint32_t> touched;
  for (const auto& [owner, left] : protected_left_) touched.insert(owner);
  for (const auto& [owner, left] : gpus_left) touched.insert(owner);
  protected_left_ = gpus_left;
  for (uint32_t owner : touched) rebalance(owner);
}

void QuotaScheduler::take_back(Owner& o, size_t job) {
  const SchedJob taken = shown_.at(job);
  forget_shown(job);
  if (policy().remove_queued(job)) {
    o.waiting[job] = taken;
    ++waiting_count_;
  }
}

void QuotaScheduler::rebalance(uint32_t owner) {
  Owner& o = owners_[owner];
  auto bound = left_.find(owner);
  auto guard = protected_left_.find(owner);
  constexpr double kSlack = 1e-9;  // shares summed in floating point
  if (bound != left_.end()) {
    // The newest shown first, while the shown need more than is left.
    while (!o.shown.empty() && o.shown_needs > bound->second + kSlack)
      take_back(o, *o.shown.rbegin());
  }
  if (guard != protected_left_.end()) {
    // The newest shown protected ones first, while they need more than is left.
    const std::vector<size_t> newest_first(o.shown.rbegin(), o.shown.rend());
    for (size_t job : newest_first) {
      if (o.shown_protected <= guard->second + kSlack) break;
      if (needs_protected(shown_.at(job)) > 0) take_back(o, job);
    }
  }
  for (auto it = o.waiting.begin(); it != o.waiting.end();) {
    const SchedJob job = it->second;
    if (bound != left_.end() && o.shown_needs + needs(job) > bound->second + kSlack) break;
    if (guard != protected_left_.end() && needs_protected(job) > 0 &&
        o.shown_protected + needs_protected(job) > guard->second + kSlack) {
      ++it;  // waits for protected GPUs; the owner's others go around it
      continue;
    }
    it = o.waiting.erase(it);
    --waiting_count_;
    show(job);
  }
}

}  // namespace colo
