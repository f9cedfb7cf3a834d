// The auto policy's place for the head of the queue (Slurm's backfill rule):
// which job heads the queue once it fails to start, the GPU and moment it is
// expected to start on (the reservation), and whether a later job may start
// without delaying it. Members of AutoScheduler, in a file of their own; they
// run on its caller's thread, as every AutoScheduler member does.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "sched/auto_scheduler.h"

namespace colo {

bool AutoScheduler::may_start(const Gpu& g, const Waiting& w, int64_t now_ms) const {
  if (!reserved_.contains(g.slot.device)) return true;
  return reserved_until_ && ends_by(g, w, *reserved_until_, now_ms);
}

bool AutoScheduler::ends_by(const Gpu& g, const Waiting& w, int64_t until_ms,
                            int64_t now_ms) const {
  const JobProfile* p = usable_profile(w);
  if (p == nullptr || !p->solo_ms) return false;
  const int64_t sharers = static_cast<int64_t>(g.jobs.size()) + 1;
  return now_ms + *p->solo_ms * sharers <= until_ms;
}

bool AutoScheduler::backfills(const Gpu& g, const Waiting& w, const SoloLoad& load, uint64_t claim,
                              int64_t now_ms) const {
  if (!head_of_queue_.head || w.job == head_of_queue_.head->waiting.job) return true;
  const Reservation* r = reservation();
  if (r == nullptr || &g != &gpus_[r->gpu]) return true;
  if (r->start_ms && ends_by(g, w, *r->start_ms, now_ms)) return true;
  Running joining{w, static_cast<int>(r->gpu), claim, load, false};
  return admits(g, r->head, AsIf{std::nullopt, r->ending, &joining});
}

bool AutoScheduler::waits_for_room(const Waiting& w) {
  if (!host_fits(w.signature)) return false;
  if (usable_profile(w) != nullptr) return true;
  // A newcomer waits for its family's measurement, or starts beside it.
  if (w.after_measurement || probing_.contains(knowledge_.probe_key(w.signature))) return false;
  const FamilyMember* member = knowledge_.member(w.signature);
  return member == nullptr || knowledge_.family_size(w.signature).first == 0 ||
         probe_target(member->family) == w.signature;
}

std::optional<AutoScheduler::Reservation> AutoScheduler::reservation_for(const Waiting& w,
                                                                         int64_t now_ms) const {
  // Each GPU's jobs in the order they are expected to end.
  struct End {
    std::optional<int64_t> at;
    int64_t started_ms = 0;
    size_t job = 0;
  };
  auto sooner = [](const std::optional<int64_t>& a, const std::optional<int64_t>& b) {
    return a.has_value() != b.has_value() ? a.has_value() : a && *a < *b;
  };
  std::vector<std::pair<size_t, std::vector<End>>> gpus;  // (index into gpus_, ends)
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const Gpu& g = gpus_[i];
    if (g.jobs.empty() || reserved_.contains(g.slot.device)) continue;  // idle, or kept for a gang
    std::vector<End> ends;
    const double rate = predicted_rate(g);
    for (size_t j : g.jobs) {
      const Running& r = running_.at(j);
      ends.push_back({expected_end(r, rate, now_ms), r.started_ms, j});
    }
    std::sort(ends.begin(), ends.end(), [&](const End& a, const End& b) {
      if (a.at != b.at) return sooner(a.at, b.at);
      return a.started_ms != b.started_ms ? a.started_ms < b.started_ms : a.job < b.job;
    });
    gpus.emplace_back(i, std::move(ends));
  }
  // The soonest a GPU could take the head is its first end: GPUs in that
  // order, each searched only while it could still do better than the best
  // so far (the admission checks are what costs).
  std::stable_sort(gpus.begin(), gpus.end(), [&](const auto& a, const auto& b) {
    return sooner(a.second.front().at, b.second.front().at);
  });
  // Better: a known start before an unknown one, then the sooner, then the
  // fewer jobs to end, then the first GPU.
  auto better = [&](const Reservation& r, const std::optional<Reservation>& best) {
    if (!best) return true;
    if (r.start_ms != best->start_ms) return sooner(r.start_ms, best->start_ms);
    if (r.ending.size() != best->ending.size()) return r.ending.size() < best->ending.size();
    return r.gpu < best->gpu;
  };
  std::optional<Reservation> best;
  for (const auto& [i, ends] : gpus) {
    if (best && best->start_ms && sooner(best->start_ms, ends.front().at)) break;
    Reservation r{w, i, {}, true, now_ms};
    for (const End& e : ends) {
      r.ending.push_back(e.job);
      r.ends_known = r.ends_known && e.at.has_value();
      r.start_ms = r.ends_known ? std::optional(std::max(*r.start_ms, *e.at)) : std::nullopt;
      // More jobs to end, as late or later: no better than the best.
      if (best && !better(r, best)) break;
      if (admits(gpus_[i], w, AsIf{std::nullopt, r.ending, nullptr})) {
        best = std::move(r);
        break;
      }
    }
  }
  return best;
}

void AutoScheduler::failed(const Waiting& w, int64_t now_ms) {
  if (classes_.any) {
    // Every GPU's classes refuse it: the first refusal is why it waits.
    const JobProfile* p = usable_profile(w);
    const JobProfile prior = p != nullptr ? JobProfile{} : knowledge_.prior_of(w.signature);
    const JobProfile& known = p != nullptr ? *p : prior;
    const SoloLoad load{known.sm_active_pct.value_or(0), known.gpu_busy_pct()};
    std::optional<WaitingReason> why;
    for (const Gpu& g : gpus_) {
      QosJoin q = qos_join_on(g, w, load, AsIf{});
      if (q.admitted) {
        why.reset();
        break;
      }
      if (!why) why = std::move(q.why);
    }
    if (why) {
      classes_.waits[w.job] = *why;
    } else {
      classes_.waits.erase(w.job);
    }
  }
  if (head_of_queue_.sought || !waits_for_room(w)) return;
  head_of_queue_.sought = true;
  head_of_queue_.head = Head{w, now_ms};
}

const AutoScheduler::Reservation* AutoScheduler::reservation() const {
  if (!head_of_queue_.head) return nullptr;
  if (!head_of_queue_.reservation)
    head_of_queue_.reservation =
        reservation_for(head_of_queue_.head->waiting, head_of_queue_.head->found_ms);
  return *head_of_queue_.reservation ? &**head_of_queue_.reservation : nullptr;
}

void AutoScheduler::forget_head() {
  head_of_queue_.head.reset();
  head_of_queue_.reservation.reset();
}

}  // namespace colo
