#include "sched/class_queue.h"

#include <algorithm>

namespace colo {

void ClassQueue::push(QueuedJob job) {
  job.seq = next_seq_++;
  prioritised_ = prioritised_ || job.priority != 0;
  auto [it, inserted] = classes_.try_emplace(job.signature);
  if (!job.family.empty()) {
    FamilyCount& n = in_family_[job.family];
    ++n.jobs;
    ++n.classes[&*it];
  }
  std::deque<QueuedJob>& q = it->second;
  if (q.empty()) {
    heads_.emplace(job.seq, &*it);
    ++changes_;
  }
  q.push_back(std::move(job));
  ++size_;
}

void ClassQueue::push_retry(QueuedJob job) {
  retries_.push_back(std::move(job));
  ++size_;
}

void ClassQueue::start_retries(const std::function<bool(const QueuedJob&)>& start) {
  for (auto it = retries_.begin(); it != retries_.end();) {
    if (start(*it)) {
      it = retries_.erase(it);
      --size_;
    } else {
      ++it;
    }
  }
}

void ClassQueue::pop_head(Class& cls) {
  std::deque<QueuedJob>& q = cls.second;
  if (q.empty()) return;
  heads_.erase(q.front().seq);
  uncount(q.front(), cls);
  // An emptied class stays (signatures are few): destroying a deque that
  // held tens of thousands of jobs returns their memory at once, which took
  // 2 ms in one event.
  q.pop_front();
  if (!q.empty()) heads_.emplace(q.front().seq, &cls);
  ++changes_;
  --size_;
}

std::deque<QueuedJob> ClassQueue::take_class(const std::string& signature) {
  auto q = classes_.find(signature);
  if (q == classes_.end()) return {};
  for (const QueuedJob& job : q->second) uncount(job, *q);
  std::deque<QueuedJob> jobs = std::move(q->second);
  classes_.erase(q);
  if (jobs.empty()) return jobs;
  heads_.erase(jobs.front().seq);
  ++changes_;
  size_ -= jobs.size();
  return jobs;
}

std::vector<size_t> ClassQueue::drain() {
  std::vector<std::pair<uint64_t, size_t>> all;
  for (const QueuedJob& job : retries_) all.emplace_back(job.seq, job.job);
  for (const auto& [signature, q] : classes_) {
    for (const QueuedJob& job : q) all.emplace_back(job.seq, job.job);
  }
  std::sort(all.begin(), all.end());
  retries_.clear();
  classes_.clear();
  in_family_.clear();
  heads_.clear();
  ++changes_;
  size_ = 0;
  std::vector<size_t> jobs;
  jobs.reserve(all.size());
  for (const auto& [seq, job] : all) jobs.push_back(job);
  return jobs;
}

bool ClassQueue::remove(size_t job) {
  auto is_job = [&](const QueuedJob& q) { return q.job == job; };
  auto retry = std::find_if(retries_.begin(), retries_.end(), is_job);
  if (retry != retries_.end()) {
    retries_.erase(retry);
    --size_;
    return true;
  }
  for (Class& cls : classes_) {
    std::deque<QueuedJob>& q = cls.second;
    auto it = std::find_if(q.begin(), q.end(), is_job);
    if (it == q.end()) continue;
    const bool head = it == q.begin();
    if (head) heads_.erase(it->seq);
    uncount(*it, cls);
    q.erase(it);
    if (head && !q.empty()) heads_.emplace(q.front().seq, &cls);
    if (head) ++changes_;
    --size_;
    return true;
  }
  return false;
}

size_t ClassQueue::in_class(const std::string& signature) const {
  auto q = classes_.find(signature);
  return q != classes_.end() ? q->second.size() : 0;
}

size_t ClassQueue::in_family(const std::string& family) const {
  auto n = in_family_.find(family);
  return n != in_family_.end() ? n->second.jobs : 0;
}

std::vector<const std::string*> ClassQueue::classes_in_family(const std::string& family) const {
  std::vector<const std::string*> out;
  auto n = in_family_.find(family);
  if (n == in_family_.end()) return out;
  out.reserve(n->second.classes.size());
  for (const auto& [cls, jobs] : n->second.classes) out.push_back(&cls->first);
  return out;
}

void ClassQueue::uncount(const QueuedJob& job, const Class& cls) {
  if (job.family.empty()) return;
  auto n = in_family_.find(job.family);
  if (n == in_family_.end()) return;
  if (auto c = n->second.classes.find(&cls); c != n->second.classes.end() && --c->second == 0)
    n->second.classes.erase(c);
  if (--n->second.jobs == 0) in_family_.erase(n);
}

void ClassQueue::order(const std::function<bool(const std::string&)>& first,
                       uint64_t* backfill_next, std::vector<Head>& heads) const {
  const size_t depth = queue_depth_;
  const size_t window = backfill_depth_;
  const bool bounded = walk_is_bounded();
  heads.clear();
  // The backfill window: from the first class at or after backfill_from_ in
  // [begin, end) (the classes beyond the depth, by seq), wrapping round.
  // `next`: where the window after it starts.
  auto take_window = [&](auto begin, auto end, auto from, uint64_t& next) {
    for (size_t i = 0; i < window; ++i, ++from) {
      if (from == end) from = begin;
      heads.push_back(*from);
    }
    next = from == end ? 0 : from->first;
  };
  if (!first && !prioritised_ && usage_.empty()) {
    // In arrival order, which is heads_'s: no sort of a long queue.
    if (!bounded) {
      heads.assign(heads_.begin(), heads_.end());
      return;
    }
    // Listed already at these heads and this window's start: the same.
    if (listing_.changes == changes_ && listing_.from == backfill_from_) {
      heads.assign(listing_.heads.begin(), listing_.heads.end());
      if (backfill_next != nullptr) *backfill_next = listing_.next;
      return;
    }
    heads.reserve(depth + window);
    auto rest = heads_.begin();
    for (size_t i = 0; i < depth; ++i, ++rest) heads.push_back(*rest);
    uint64_t next = 0;
    take_window(rest, heads_.end(), heads_.lower_bound(std::max(backfill_from_, rest->first)),
                next);
    listing_.changes = changes_;
    listing_.from = backfill_from_;
    listing_.next = next;
    listing_.heads.assign(heads.begin(), heads.end());
    if (backfill_next != nullptr) *backfill_next = next;
    return;
  }
  heads.assign(heads_.begin(), heads_.end());
  if (first) {
    std::stable_partition(heads.begin(), heads.end(),
                          [&](const Head& head) { return first(head.second->first); });
  }
  if (prioritised_ || !usage_.empty()) {
    auto used = [&](uint32_t owner) {
      auto it = usage_.find(owner);
      return it == usage_.end() ? 0.0 : it->second;
    };
    std::stable_sort(heads.begin(), heads.end(), [&](const Head& a, const Head& b) {
      const QueuedJob& x = a.second->second.front();
      const QueuedJob& y = b.second->second.front();
      if (x.priority != y.priority) return x.priority > y.priority;
      return used(x.owner) < used(y.owner);
    });
  }
  if (!bounded) return;
  std::vector<Head> rest(heads.begin() + static_cast<std::ptrdiff_t>(depth), heads.end());
  auto by_seq = [](const Head& a, const Head& b) { return a.first < b.first; };
  std::sort(rest.begin(), rest.end(), by_seq);
  heads.resize(depth);
  uint64_t next = 0;
  take_window(rest.begin(), rest.end(),
              std::lower_bound(rest.begin(), rest.end(), Head{backfill_from_, nullptr}, by_seq),
              next);
  if (backfill_next != nullptr) *backfill_next = next;
}

}  // namespace colo
