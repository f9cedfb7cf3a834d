#include "sched/gang_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/units.h"

namespace colo {
namespace {

// The key one rank of a gang occupies its GPU by (jobs have at most 64 GPUs).
size_t rank_key(size_t job, size_t rank) { return (job << 6) | rank; }

std::string gpu_list(const std::vector<int>& devices) {
  std::string out;
  for (int d : devices) out += fmt::format("{}gpu{}", out.empty() ? "" : ", ", d);
  return out;
}

}  // namespace

GangScheduler::GangScheduler(std::unique_ptr<Scheduler> policy, int max_retries, bool memory_limits)
    : ForwardingScheduler(std::move(policy)),
      max_retries_(max_retries),
      memory_limits_(memory_limits) {}

void GangScheduler::introduce(const std::string& signature, const SignatureFacts& facts) {
  // Its labels, profiles and priors are read for gangs only: of a signature
  // whose jobs need one GPU (SignatureFacts::gpus), only the policy keeps any.
  if (facts.gpus == 1) {
    policy().introduce(signature, facts);
    return;
  }
  labels_[signature] = facts.label;
  if (facts.profile) profiles_[signature] = *facts.profile;
  if (facts.prior && facts.prior->admissible()) priors_[signature] = *facts.prior;
  policy().introduce(signature, facts);
}

void GangScheduler::enqueue(const SchedJob& job) {
  if (job.gpus <= 1) {
    policy().enqueue(job);
    return;
  }
  gangs_.push_back(Gang{job});
}

std::optional<uint64_t> GangScheduler::claim(const Gang& g) const {
  std::optional<uint64_t> need = g.memory_override ? g.memory_override : g.job.memory_hint;
  if (!need) {
    auto p = profiles_.find(g.job.signature);
    if (p != profiles_.end()) need = p->second.peak_memory_bytes;
  }
  if (!need && !g.whole_gpus && memory_limits_) {
    // A newcomer, contained by its limit: its prior's peak.
    auto prior = priors_.find(g.job.signature);
    if (prior != priors_.end()) need = prior->second.peak_memory_bytes;
  }
  if (!need || g.whole_gpus) return std::nullopt;
  return *need + static_cast<uint64_t>(kMemoryMargin * static_cast<double>(*need));
}

bool GangScheduler::newcomer(const Gang& g) const {
  return !g.memory_override && !g.job.memory_hint && !profiles_.contains(g.job.signature);
}

double GangScheduler::sm_of(const Gang& g) const {
  if (g.job.sm_active_pct) return *g.job.sm_active_pct;
  auto p = profiles_.find(g.job.signature);
  if (p != profiles_.end() && p->second.sm_active_pct) return *p->second.sm_active_pct;
  // Its prior's, when nothing measured it (a gang never runs alone beside
  // others, so the store may know its memory but not its SM activity).
  if (auto prior = priors_.find(g.job.signature); prior != priors_.end())
    return *prior->second.sm_active_pct;
  return 100.0;  // unknown: as busy as a GPU gets
}

std::optional<std::vector<int>> GangScheduler::fit(const Gang& g,
                                                   const std::vector<DeviceRoom>& rooms,
                                                   const std::vector<int>& excluded) const {
  const std::optional<uint64_t> need = claim(g);
  std::vector<const DeviceRoom*> fitting;
  for (const DeviceRoom& r : rooms) {
    if (std::find(excluded.begin(), excluded.end(), r.device) != excluded.end()) continue;
    if (r.slots_free < 1) continue;
    // Unknown memory: GPUs of its own.
    if (need ? *need > r.memory_free_bytes : r.jobs > 0) continue;
    fitting.push_back(&r);
  }
  if (fitting.size() < static_cast<size_t>(g.job.gpus)) return std::nullopt;
  std::stable_sort(fitting.begin(), fitting.end(), [](const DeviceRoom* a, const DeviceRoom* b) {
    return a->jobs != b->jobs ? a->jobs < b->jobs : a->memory_free_bytes > b->memory_free_bytes;
  });
  std::vector<int> devices;
  for (int i = 0; i < g.job.gpus; ++i) devices.push_back(fitting[static_cast<size_t>(i)]->device);
  return devices;
}

std::pair<std::vector<int>, std::optional<int64_t>> GangScheduler::to_keep(
    const Gang& g, const std::vector<DeviceRoom>& rooms) const {
  std::vector<const DeviceRoom*> order;
  for (const DeviceRoom& r : rooms) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const DeviceRoom* a, const DeviceRoom* b) {
    if (a->drained_ms.has_value() != b->drained_ms.has_value()) return a->drained_ms.has_value();
    if (a->drained_ms && *a->drained_ms != *b->drained_ms) return *a->drained_ms < *b->drained_ms;
    return a->jobs < b->jobs;
  });
  std::vector<int> devices;
  std::optional<int64_t> until = INT64_MIN;
  for (int i = 0; i < g.job.gpus && i < static_cast<int>(order.size()); ++i) {
    const DeviceRoom& r = *order[static_cast<size_t>(i)];
    devices.push_back(r.device);
    until = until && r.drained_ms ? std::optional(std::max(*until, *r.drained_ms)) : std::nullopt;
  }
  return {devices, until};
}

void GangScheduler::start(Gang& g, const std::vector<int>& devices, int64_t now_ms,
                          std::vector<Decision>& out) {
  std::optional<uint64_t> need = claim(g);
  const std::vector<DeviceRoom> rooms = policy().rooms(now_ms);
  std::vector<const DeviceRoom*> mine;  // the rooms of `devices`, in their order
  for (int d : devices) {
    auto room = std::find_if(rooms.begin(), rooms.end(),
                             [&](const DeviceRoom& r) { return r.device == d; });
    mine.push_back(room != rooms.end() ? &*room : nullptr);
  }
  const bool contained_newcomer = need && newcomer(g);
  int beside = 0;  // jobs already on its GPUs
  if (contained_newcomer) {
    // As a one-GPU newcomer: at least half of what its emptiest GPU can
    // spare, so that a prior too small rarely fails it.
    uint64_t spare = UINT64_MAX;
    for (const DeviceRoom* r : mine) {
      if (r == nullptr) continue;
      spare = std::min(spare, r->memory_free_bytes);
      beside += r->jobs;
    }
    if (spare != UINT64_MAX) need = std::max(*need, spare / 2);
  }
  for (size_t rank = 0; rank < devices.size(); ++rank) {
    policy().occupy(rank_key(g.job.job, rank), devices[rank],
                    need.value_or(mine[rank] != nullptr ? mine[rank]->memory_free_bytes : 0),
                    sm_of(g));
  }
  Decision decision{g.job.job, devices.front()};
  decision.memory_limit_bytes = need;
  decision.gang_devices = devices;
  if (!need) {
    notes_.push_back(
        fmt::format("{}: a gang never measured; starting it on idle {}, "
                    "which it has to itself until it is measured",
                    labels_[g.job.signature], gpu_list(devices)));
  } else if (contained_newcomer) {
    const JobProfile& prior = priors_.at(g.job.signature);
    decision.estimate = prior;
    notes_.push_back(fmt::format(
        "{}: a gang never measured; {}; starting it on {}{}, memory limit {} per GPU, measured "
        "there (one-GPU jobs start beside it)",
        labels_[g.job.signature], prior.source, gpu_list(devices),
        beside > 0 ? fmt::format(" beside {}", count_of(beside, "running job")) : std::string(),
        format_bytes(*need)));
  }
  out.push_back(decision);
  if (reserved_for_ == g.job.job) release_reservation();
  keeps_none_until_.erase(g.job.job);
  running_[g.job.job] = Running{g, devices, now_ms, need};
}

void GangScheduler::release_reservation() {
  reserved_.clear();
  reserved_for_ = SIZE_MAX;
  reserved_until_.reset();
}

bool GangScheduler::place_gangs(int64_t now_ms, std::vector<Decision>& out) {
  bool kept = false;
  for (auto it = gangs_.begin(); it != gangs_.end();) {
    // The GPUs kept for the oldest waiting gang are its own; others start elsewhere.
    const bool others = reserved_for_ != SIZE_MAX && reserved_for_ != it->job.job;
    std::optional<std::vector<int>> devices =
        fit(*it, policy().rooms(now_ms), others ? reserved_ : std::vector<int>{});
    if (devices) {
      start(*it, *devices, now_ms, out);
      it = gangs_.erase(it);
      continue;
    }
    if (auto none = keeps_none_until_.find(it->job.job);
        none != keeps_none_until_.end() && now_ms < none->second) {
      ++it;  // its reservation expired: it waits without one for now
      continue;
    }
    if (reserved_for_ == it->job.job && now_ms - reserved_since_ms_ > kReservationBoundMs) {
      notes_.push_back(fmt::format(
          "{} (a gang of {} GPUs) could not start in {} of keeping {}{}; they are open to every "
          "job again, and it waits on, starting when {} GPUs are free, keeping none for {}",
          labels_[it->job.signature], it->job.gpus, format_duration_ms(kReservationBoundMs),
          gpu_list(reserved_),
          reserved_until_ && *reserved_until_ < now_ms
              ? fmt::format(" (expected free {} ago)",
                            format_duration_ms(now_ms - *reserved_until_))
              : std::string(),
          it->job.gpus, format_duration_ms(kReservationBoundMs)));
      keeps_none_until_[it->job.job] = now_ms + kReservationBoundMs;
      release_reservation();
      ++it;
      continue;
    }
    if (!kept) {
      kept = true;
      if (reserved_for_ != it->job.job) {
        auto [keep, expected] = to_keep(*it, policy().rooms(now_ms));
        reserved_ = keep;
        reserved_for_ = it->job.job;
        reserved_until_ = expected;
        reserved_since_ms_ = now_ms;
        notes_.push_back(fmt::format(
            "{} (a gang of {} GPUs) waits; {} kept for it{}", labels_[it->job.signature],
            it->job.gpus, gpu_list(reserved_),
            expected ? fmt::format(", expected free in {}",
                                   format_duration_ms(std::max<int64_t>(0, *expected - now_ms)))
                     : std::string(": nothing new starts there")));
      }
    }
    ++it;
  }
  return kept;
}

std::optional<int64_t> GangScheduler::next_check_ms(int64_t now_ms) const {
  std::optional<int64_t> next = policy().next_check_ms(now_ms);
  auto consider = [&](int64_t at) {
    if (at > now_ms && (!next || at < *next)) next = at;
  };
  if (reserved_for_ != SIZE_MAX) consider(reserved_since_ms_ + kReservationBoundMs + 1);
  for (const auto& [job, until] : keeps_none_until_) consider(until);
  return next;
}

std::vector<Decision> GangScheduler::schedule(int64_t now_ms) {
  // Without gangs this is the policy's event alone: nothing added to it.
  if (gangs_.empty() && running_.empty() && !policy_reserves_) return policy().schedule(now_ms);
  std::vector<Decision> out;
  const std::vector<DeviceRoom> all =
      gangs_.empty() ? std::vector<DeviceRoom>{} : policy().rooms(now_ms);
  const int devices = static_cast<int>(all.size());
  for (auto it = gangs_.begin(); it != gangs_.end();) {
    // What it needs per GPU (its hint or profile, no margin): a gang that no
    // set of this machine's GPUs could ever hold fails now, never waits.
    std::optional<uint64_t> need = it->job.memory_hint;
    if (auto p = profiles_.find(it->job.signature); !need && p != profiles_.end())
      need = p->second.peak_memory_bytes;
    const int big_enough =
        static_cast<int>(std::count_if(all.begin(), all.end(), [&](const DeviceRoom& r) {
          return !need || r.memory_total_bytes == 0 || r.memory_total_bytes >= *need;
        }));
    if (it->job.gpus > devices) {
      unplaceable_.push_back(
          {it->job.job, fmt::format("needs {} GPUs at once, on one machine; this one has {} for "
                                    "colo (lower gpus, or run it where there are more)",
                                    it->job.gpus, devices)});
    } else if (it->job.gpus > big_enough) {
      unplaceable_.push_back(
          {it->job.job,
           fmt::format("needs {} GPUs of {} each at once (its gpu_memory hint or profile); this "
                       "machine has {} such GPU{} (lower gpu_memory, or spread it over more GPUs)",
                       it->job.gpus, format_bytes(*need), big_enough, big_enough == 1 ? "" : "s")});
    } else {
      ++it;
      continue;
    }
    if (reserved_for_ == it->job.job) release_reservation();
    it = gangs_.erase(it);
  }
  // Gangs first (the oldest that cannot start keeps its GPUs), then the
  // policy's jobs.
  if (!place_gangs(now_ms, out)) release_reservation();
  // A gang that does not know its memory has its GPUs to itself.
  std::vector<int> closed = reserved_;
  for (const auto& [job, r] : running_) {
    if (!r.claim) closed.insert(closed.end(), r.devices.begin(), r.devices.end());
  }
  policy().reserve(closed, closed.size() == reserved_.size() ? reserved_until_ : std::nullopt);
  policy_reserves_ = !closed.empty();
  for (Decision& d : policy().schedule(now_ms)) out.push_back(std::move(d));
  return out;
}

EndVerdict GangScheduler::finished(size_t job, JobEnd end, int64_t now_ms) {
  auto it = running_.find(job);
  if (it == running_.end()) return policy().finished(job, end, now_ms);
  Running r = std::move(it->second);
  running_.erase(it);
  for (size_t rank = 0; rank < r.devices.size(); ++rank)
    policy().vacate(rank_key(job, rank), now_ms);
  if (end != JobEnd::kOutOfMemory) return {};
  Gang g = r.gang;
  if (g.attempt > max_retries_) {
    return {false, fmt::format("out of GPU memory on each of {} attempts; giving up", g.attempt)};
  }
  if (g.whole_gpus) {
    return {false, fmt::format("out of GPU memory with {} to itself; it does not fit them",
                               gpu_list(r.devices))};
  }
  const std::optional<uint64_t> had = r.claim;
  g.attempt += 1;
  g.whole_gpus = !had || g.attempt > max_retries_;
  if (had) g.memory_override = 2 * *had;
  gangs_.push_front(g);
  return {true, fmt::format("out of GPU memory on one of {}; the whole gang is requeued {} "
                            "(attempt {} of {})",
                            gpu_list(r.devices),
                            g.whole_gpus
                                ? std::string("to have its GPUs to itself")
                                : fmt::format("with {} per GPU", format_bytes(*g.memory_override)),
                            g.attempt, max_retries_ + 1)};
}

void GangScheduler::observe_rate(size_t job, double samples_per_s, int64_t now_ms) {
  if (!running_.contains(job)) policy().observe_rate(job, samples_per_s, now_ms);
}

void GangScheduler::measured(size_t job, const JobProfile& profile) {
  auto it = running_.find(job);
  if (it == running_.end()) {
    policy().measured(job, profile);
    return;
  }
  // What its processes took, summed over its GPUs: per GPU, an equal share
  // (data-parallel ranks are alike).
  JobProfile per_gpu = profile;
  if (per_gpu.peak_memory_bytes)
    *per_gpu.peak_memory_bytes /= static_cast<uint64_t>(it->second.devices.size());
  JobProfile& known = profiles_[it->second.gang.job.signature];
  known = merge_profiles(per_gpu, known);
}

std::vector<size_t> GangScheduler::drain_queued() {
  std::vector<size_t> jobs = policy().drain_queued();
  for (const Gang& g : gangs_) jobs.push_back(g.job.job);
  gangs_.clear();
  release_reservation();
  return jobs;
}

bool GangScheduler::remove_queued(size_t job) {
  auto it =
      std::find_if(gangs_.begin(), gangs_.end(), [&](const Gang& g) { return g.job.job == job; });
  if (it == gangs_.end()) return policy().remove_queued(job);
  gangs_.erase(it);
  keeps_none_until_.erase(job);
  if (reserved_for_ == job) release_reservation();
  return true;
}

std::optional<int64_t> GangScheduler::expected_end_ms(size_t job, int64_t now_ms) const {
  auto it = running_.find(job);
  if (it == running_.end()) return policy().expected_end_ms(job, now_ms);
  std::optional<int64_t> solo = it->second.gang.job.solo_time_ms;
  if (auto p = profiles_.find(it->second.gang.job.signature); !solo && p != profiles_.end())
    solo = p->second.solo_ms;
  if (!solo) return std::nullopt;
  return it->second.started_ms + *solo;
}

std::optional<WaitingReason> GangScheduler::waiting_reason(size_t job) const {
  if (std::any_of(gangs_.begin(), gangs_.end(), [&](const Gang& g) { return g.job.job == job; }))
    return std::nullopt;
  return policy().waiting_reason(job);
}

std::vector<Unplaceable> GangScheduler::take_unplaceable() {
  std::vector<Unplaceable> out = std::exchange(unplaceable_, {});
  for (Unplaceable& u : policy().take_unplaceable()) out.push_back(std::move(u));
  return out;
}

std::vector<std::string> GangScheduler::take_notes() {
  std::vector<std::string> out = std::exchange(notes_, {});
  for (std::string& n : policy().take_notes()) out.push_back(std::move(n));
  return out;
}

}  // namespace colo
