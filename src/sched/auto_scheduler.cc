#include "sched/auto_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/units.h"
#include "sched/prior.h"

namespace colo {
namespace {

// Combinations are judged only against solo rates known this well.
constexpr double kJudgedRateUncertainty = 0.1;
// How far below its own priority an opportunistic job is queued: below any
// normal job's (priorities are small: `colo submit --priority`).
constexpr int kOpportunisticDrop = 1 << 20;

uint64_t largest_of(const std::vector<GpuSlot>& gpus) {
  uint64_t largest = 0;
  for (const GpuSlot& g : gpus) largest = std::max(largest, g.memory_total_bytes);
  return largest;
}

}  // namespace

AutoScheduler::AutoScheduler(const std::vector<GpuSlot>& gpus, AutoOptions options,
                             InterferenceModel model)
    : options_(options),
      model_(std::move(model)),
      knowledge_(largest_of(gpus)),
      queue_(options.queue_depth, options.backfill_depth),
      host_(options.host_cpus, options.host_memory_bytes) {
  for (const GpuSlot& slot : gpus) {
    Gpu g;
    g.slot = slot;
    gpus_.push_back(std::move(g));
  }
}

void AutoScheduler::introduce(const std::string& signature, const SignatureFacts& facts) {
  set_label(signature, facts.label);
  if (facts.host_cost) set_host_cost(signature, *facts.host_cost);
  if (facts.family) {
    for (const FamilyInstance& i : facts.family_instances)
      add_family_instance(facts.family->family, i);
    set_family(signature, *facts.family);
  }
  if (facts.profile && profile(signature) == nullptr) set_profile(signature, *facts.profile);
  if (facts.prior) set_prior(signature, *facts.prior);
}

std::string AutoScheduler::describe() const {
  return fmt::format(
      "auto (SM activity cap {:.0f}%, up to {:.0f}% below the predicted peak, memory margin "
      "{:.0f}%, judged after {})",
      options_.sm_cap_pct, 100 * options_.saturated_loss, 100 * options_.memory_margin,
      format_duration_ms(options_.settle_ms));
}

std::string AutoScheduler::describe(const Combination& c) const {
  std::string out;
  for (const auto& [sig, n] : c)
    out += fmt::format("{}{} x{}", out.empty() ? "" : " + ", knowledge_.label(sig), n);
  return out;
}

uint64_t AutoScheduler::largest_memory() const {
  uint64_t largest = 0;
  for (const Gpu& g : gpus_) largest = std::max(largest, g.slot.memory_total_bytes);
  return largest;
}

void AutoScheduler::enqueue(const SchedJob& job) {
  if (gpus_.empty()) {
    unplaceable_.push_back({job.job, "no GPU to run on"});
    return;
  }
  const JobProfile* p = profile(job.signature);
  if (p != nullptr && p->peak_memory_bytes && *p->peak_memory_bytes > largest_memory()) {
    unplaceable_.push_back(
        {job.job, fmt::format("needs {} of GPU memory ({}); the largest GPU has {}",
                              format_bytes(*p->peak_memory_bytes), p->source,
                              format_bytes(largest_memory()))});
    return;
  }
  Waiting w;
  w.job = job.job;
  w.signature = job.signature;
  w.owner = job.owner;
  w.priority = job.priority;
  w.qos = job.qos;
  w.min_speed = job.min_speed;
  // Its floor is judged against its solo rate: without one (the store's or a
  // hint), it runs alone until it has measured one.
  w.solo_unknown = job.qos == QosClass::kProtected && (p == nullptr || !p->has_solo_rate());
  if (job.qos != QosClass::kNormal) classes_.any = true;
  // After every normal job, in queue order (ClassQueue orders by priority first).
  if (job.qos == QosClass::kOpportunistic) w.priority = job.priority - kOpportunisticDrop;
  if (const FamilyMember* m = knowledge_.member(w.signature); m != nullptr) w.family = m->family;
  queue_.push(std::move(w));
}

uint64_t AutoScheduler::estimate(const Waiting& w) const {
  if (w.memory_estimate) return *w.memory_estimate;
  const JobProfile* p = usable_profile(w);
  return p != nullptr ? p->peak_memory_bytes.value_or(0)
                      : knowledge_.prior_of(w.signature).peak_memory_bytes.value_or(0);
}

uint64_t AutoScheduler::claim_for(uint64_t estimate, double uncertainty) const {
  return static_cast<uint64_t>(static_cast<double>(estimate) *
                               (1.0 + options_.memory_margin + std::max(0.0, uncertainty))) +
         options_.memory_headroom_bytes;
}

const JobProfile* AutoScheduler::usable_profile(const Waiting& w) const {
  return knowledge_.usable(w.signature, w.lookups);
}

std::string AutoScheduler::name_of(const std::string& signature) const {
  const FamilyMember* member = knowledge_.member(signature);
  return member != nullptr ? member->name : knowledge_.label(signature);
}

std::string AutoScheduler::probe_target(const std::string& family) {
  return knowledge_.probe_target(
      family, [&](const std::string& signature) { return queue_.in_class(signature) > 0; },
      queue_.classes_in_family(family));
}

uint64_t AutoScheduler::usable_memory(const Gpu& g) const {
  const uint64_t total = g.slot.memory_total_bytes;
  return total > options_.memory_reserve_bytes ? total - options_.memory_reserve_bytes : 0;
}

std::vector<SoloLoad> AutoScheduler::loads(const Gpu& gpu) const {
  std::vector<SoloLoad> out;
  out.reserve(gpu.jobs.size());
  for (size_t j : gpu.jobs) out.push_back(running_.at(j).load);
  return out;
}

// The work the GPU's jobs did, measured: each job's observed rate over its
// solo rate, weighted by its solo load (InterferenceModel::weight), from
// rates observed at or after `fresh_since_ms`; nullopt when a job has no
// fresh rate or no solo rate.
std::optional<double> AutoScheduler::measured_work(const Gpu& gpu, int64_t fresh_since_ms) const {
  double sum = 0;
  for (size_t j : gpu.jobs) {
    const Running& r = running_.at(j);
    const JobProfile* p = usable_profile(r.waiting);
    if (r.rate_ms < fresh_since_ms || p == nullptr || !p->samples_per_s || *p->samples_per_s <= 0 ||
        p->rate_uncertainty > kJudgedRateUncertainty)
      return std::nullopt;
    sum += r.rate / *p->samples_per_s * InterferenceModel::weight(options_.mode, r.load);
  }
  return sum;
}

double AutoScheduler::work_of(ShareMode mode, std::span<const SoloLoad> jobs) const {
  if (mode == options_.mode) return model_.work(mode, jobs);
  const double rate = model_.rate_of_each(mode, jobs);
  double work = 0;
  for (const SoloLoad& job : jobs) work += rate * InterferenceModel::weight(options_.mode, job);
  return work;
}

double AutoScheduler::peak_work_of(ShareMode mode, std::span<const SoloLoad> jobs) const {
  if (mode == options_.mode) return model_.peak_work(mode, jobs);
  double peak = 0;
  for (size_t k = 1; k <= jobs.size(); ++k) peak = std::max(peak, work_of(mode, jobs.first(k)));
  return peak;
}

bool AutoScheduler::several_owners(const Gpu& g, std::optional<uint32_t> joining) const {
  if (!options_.owners_time_slice) return false;
  std::optional<uint32_t> first = joining;
  for (size_t j : g.jobs) {
    if ((j & kOccupantKey) != 0) continue;
    const uint32_t owner = running_.at(j).waiting.owner;
    if (!first) first = owner;
    if (owner != *first) return true;
  }
  return false;
}

bool AutoScheduler::Verdicts::is_bad(const Combination& c) const {
  return std::any_of(bad.begin(), bad.end(), [&](const Combination& b) {
    return std::all_of(b.begin(), b.end(), [&](const auto& entry) {
      auto it = c.find(entry.first);
      return it != c.end() && it->second >= entry.second;
    });
  });
}

void AutoScheduler::add(Gpu& gpu, Running r, int64_t now_ms, std::vector<Decision>& out,
                        std::optional<JobProfile> estimate) {
  if (gpu.changed_ms != now_ms) {
    // The first change at this instant: remember what the GPU did before it
    // (with at most one job: what the heaviest job would do alone, judge()).
    gpu.reference_alone = gpu.jobs.size() <= 1;
    gpu.reference = gpu.reference_alone ? std::nullopt
                                        : measured_work(gpu, gpu.changed_ms + options_.settle_ms);
    gpu.changed_ms = now_ms;
  }
  failed_alike_.clear();
  size_t job = r.waiting.job;
  ++gpu.version;
  gpu.jobs.push_back(job);
  gpu.combination[r.waiting.signature] += 1;
  gpu.claimed += r.claim;
  gpu.sm_sum += r.load.sm_active_pct;
  if (r.probe) ++gpu.measuring;
  // Another job joined a newcomer: the slowdown of the jobs there before is
  // no longer the newcomer's alone.
  if (gpu.check && gpu.check->newcomer != r.waiting.job) gpu.check.reset();
  if (r.waiting.solo_unknown) {  // learned meanwhile (another job of its signature)?
    const JobProfile* own = profile(r.waiting.signature);
    r.waiting.solo_unknown = own == nullptr || !own->has_solo_rate();
  }
  gpu.alone = gpu.alone || r.waiting.keeps_gpu();
  // Judged only when every job there has a solo rate to compare with (each
  // job's profile is its signature's, found through the job's own lookups:
  // no lookup by signature in tables of a sweep's thousands).
  gpu.judging = gpu.jobs.size() >= 2 && !verdicts_.good.contains(gpu.combination) &&
                std::all_of(gpu.jobs.begin(), gpu.jobs.end(), [&](size_t j) {
                  const JobProfile* p =
                      usable_profile(j == job ? r.waiting : running_.at(j).waiting);
                  return p != nullptr && p->samples_per_s && *p->samples_per_s > 0 &&
                         p->rate_uncertainty <= kJudgedRateUncertainty;
                });
  std::optional<uint64_t> limit;
  if (options_.memory_limits) limit = r.claim;
  out.push_back(Decision{job, gpu.slot.device, r.probe, limit, std::move(estimate), r.speculative});
  if (classes_.any) {
    gpu.jobs.pop_back();  // qos_join_on() judges the GPU without it
    const QosJoin q = qos_join_on(gpu, r.waiting, r.load, AsIf{});
    gpu.jobs.push_back(job);
    out.back().opportunistic = q.opportunistic;
    out.back().opportunistic_thread_pct = q.thread_pct;
    r.thread_pct = q.thread_pct.value_or(100);
    classes_.waits.erase(job);
  }
  host_.started(r.waiting.signature);
  running_.emplace(job, std::move(r));
}

size_t AutoScheduler::queued_with_key(const std::string& key) const {
  return key.starts_with("family:") ? queue_.in_family(key.substr(7)) : queue_.in_class(key);
}

bool AutoScheduler::place_speculative(const Waiting& w, const std::string& key,
                                      const JobProfile& prior, int64_t now_ms,
                                      std::vector<Decision>& out) {
  const uint64_t waiting = std::max<size_t>(1, queued_with_key(key));
  // At least its memory hint, and what its family's newcomer holds already
  // (with the margin): a smaller limit is sure to fail. (Not its prior's peak: on a fresh store
  // that is a quarter of the GPU, and a cold sweep of small jobs would start
  // one or two at a time.)
  auto probing = probing_.find(key);
  const uint64_t seen = probing != probing_.end() ? probing->second.memory_seen : 0;
  uint64_t least = std::max(options_.speculative_floor_bytes, claim_for(seen));
  if (const JobProfile* own = profile(w.signature); own != nullptr && own->peak_memory_bytes)
    least = std::max(least, claim_for(*own->peak_memory_bytes));  // its hint
  const SoloLoad load{*prior.sm_active_pct, prior.gpu_busy_pct()};
  // Its claim for a share: its limit, or without limits its prior's claim at most.
  auto claim_of = [&](uint64_t share) {
    return options_.memory_limits ? share : std::min(share, claim_for(*prior.peak_memory_bytes));
  };
  Gpu* best = nullptr;
  uint64_t best_share = 0;
  for (Gpu& g : gpus_) {
    // Beside the newcomer, or beside other work (an idle GPU measures
    // another instance instead: place_newcomer()).
    if ((!g.scouts.contains(key) && g.jobs.empty()) || g.held || g.alone || w.keeps_gpu() ||
        static_cast<int>(g.jobs.size()) >= options_.max_jobs_per_gpu || !may_start(g, w, now_ms))
      continue;
    if (classes_.any && !qos_join_on(g, w, load, AsIf{}).admitted) continue;
    if (several_owners(g, w.owner)) continue;  // unjudged, it would take turns with them
    const uint64_t usable = usable_memory(g);
    const uint64_t spare = usable - std::min(usable, g.claimed);
    // An equal share for each of the family's queued jobs (half the spare at
    // most: others may come), at least `least`; none wider than the room.
    const uint64_t share = std::max(least, std::min(spare / waiting, spare / 2));
    if (share > spare) continue;
    if (!verdicts_.bad.empty()) {
      Combination after = g.combination;
      after[w.signature] += 1;
      if (verdicts_.is_bad(after)) continue;
    }
    if (!backfills(g, w, load, claim_of(share), now_ms)) continue;
    if (best == nullptr || g.jobs.size() < best->jobs.size()) {  // the least crowded
      best = &g;
      best_share = share;
    }
  }
  if (best == nullptr) return false;
  Running r{w, static_cast<int>(best - gpus_.data()), claim_of(best_share), load, false};
  r.started_ms = now_ms;
  r.speculative = true;
  estimate_notes_[fmt::format("starting beside its family's newcomer while that is measured, "
                              "memory limit {} (start-ups overlap)",
                              format_bytes(r.claim))]
      .push_back(name_of(w.signature));
  add(*best, std::move(r), now_ms, out);
  return true;
}

bool AutoScheduler::place_newcomer(const Waiting& w, int64_t now_ms, std::vector<Decision>& out) {
  const std::string key = knowledge_.probe_key(w.signature);
  const FamilyMember* member = knowledge_.member(w.signature);
  const auto [measured, kinds] = knowledge_.family_size(w.signature);
  // A family measured already, but not enough for this instance: the queued
  // instance that teaches most is measured (perhaps another one).
  if (measured > 0 && probe_target(member->family) != w.signature) return false;
  const JobProfile prior = knowledge_.prior_of(w.signature);
  const SoloLoad load{*prior.sm_active_pct, prior.gpu_busy_pct()};
  // A retry claims what its last attempt took; a first attempt at least its
  // prior's peak (its uncertainty is what the limit contains).
  const uint64_t need = claim_for(w.memory_estimate.value_or(*prior.peak_memory_bytes));
  // What the loops here and in place_speculative() read of `w` and its
  // prior, for a failure (a job with no usable profile never starts on a
  // GPU kept for a gang: may_start()).
  const bool failed = alike_failed(w, 0, 0, [&] {
    return LikenessHash{}
        .add(kNewHash)
        .add(std::string_view(key))
        .add(need)
        .add(load.sm_active_pct)
        .add(load.gpu_busy_pct)
        .add(w.keeps_gpu())
        .add(static_cast<int64_t>(w.qos))  // its class decides where it may go
        .add(w.min_speed)
        .add(w.after_measurement)
        .add(options_.owners_time_slice ? int64_t{w.owner} : int64_t{-1})  // whom it joins
        .add(verdicts_.bad.empty() ? kNoSignatureHash : LikenessHash::of(w.signature));
  });
  if (failed) return false;
  Gpu* best = nullptr;
  uint64_t best_spare = 0;
  uint64_t best_claim = 0;
  for (Gpu& g : gpus_) {
    // Its family is measured already: measured here too only rather than idle.
    if (probing_.contains(key) && !g.jobs.empty()) continue;
    if (!may_start(g, w, now_ms)) continue;
    const uint64_t usable = usable_memory(g);
    const uint64_t claim = newcomer_claim(g, need, g.jobs.empty());
    if (!admission_gain(g, w, load, claim) || !backfills(g, w, load, claim, now_ms)) continue;
    const uint64_t spare = g.jobs.empty() ? usable : usable - std::min(usable, g.claimed);
    // An idle GPU first, then the one with the most to spare.
    const bool better = best == nullptr || (g.jobs.empty() && !best->jobs.empty()) ||
                        (g.jobs.empty() == best->jobs.empty() && spare > best_spare);
    if (!better) continue;
    best = &g;
    best_spare = spare;
    best_claim = g.jobs.empty() ? std::min(claim, usable) : claim;
  }
  if (best == nullptr) {
    // Its family's newcomer is measured: start beside it (unless it overran
    // that way already).
    if (probing_.contains(key) && !w.after_measurement &&
        place_speculative(w, key, prior, now_ms, out))
      return true;
    failed_alike_.insert(w.alike.hash);
    return false;
  }
  ++probing_[key].newcomers;
  ++best->scouts[key];
  // Under MPS it may take what the GPU can spare, which its limit contains:
  // half of it when others wait, so that they start up beside it.
  uint64_t claim = best_claim;
  if (options_.memory_limits) {
    claim = w.memory_estimate || queue_.size() <= 1
                ? best_spare
                : std::clamp(best_spare / 2, best_claim, best_spare);
  }
  const std::string name = name_of(w.signature);
  std::string where =
      best->jobs.empty()
          ? fmt::format("on idle gpu{}", best->slot.device)
          : fmt::format("on gpu{} beside {}", best->slot.device,
                        count_of(static_cast<int64_t>(best->jobs.size()), "running job"));
  if (options_.memory_limits) where += fmt::format(", memory limit {}", format_bytes(claim));
  std::string why = w.memory_estimate ? fmt::format("retried with {}", format_bytes(need))
                                      : fmt::format("never measured; {}", prior.source);
  if (measured > 0)
    why = fmt::format("its family's measurements do not cover it ({})",
                      knowledge_.missing(w.signature));
  std::string note = fmt::format("{}: {}; starting it {}, measured there", name, why, where);
  if (kinds > 1 && measured == 0)
    note += fmt::format(" for its family ({} other kinds of job, placed by its measurement)",
                        kinds - 1);
  notes_.push_back(std::move(note));
  Running r{w, static_cast<int>(best - gpus_.data()), claim, load, true};
  r.started_ms = now_ms;
  if (!best->jobs.empty() && best->measuring == 0) {
    Gpu::NeighbourCheck check;
    check.newcomer = w.job;
    for (size_t j : best->jobs) {
      const Running& n = running_.at(j);
      if (n.rate_ms >= 0 && n.rate > 0) check.before[j] = n.rate;
    }
    if (!check.before.empty()) best->check = std::move(check);
  }
  std::optional<JobProfile> placed_by;
  if (!w.memory_estimate) placed_by = prior;
  add(*best, std::move(r), now_ms, out, std::move(placed_by));
  return true;
}

void AutoScheduler::check_neighbours(Gpu& g, int64_t now_ms) {
  if (!g.check || g.check->from_ms < 0) return;
  const Gpu::NeighbourCheck& c = *g.check;
  double sum = 0;
  int seen = 0;
  bool waiting = false;
  for (const auto& [job, before] : c.before) {
    auto r = running_.find(job);
    if (r == running_.end()) continue;  // ended meanwhile: no verdict from it
    if (r->second.rate_ms < c.from_ms) {
      waiting = true;
      continue;
    }
    sum += r->second.rate / before;
    ++seen;
  }
  if (waiting && now_ms < c.from_ms + options_.settle_ms) return;  // rates still coming
  const double observed = seen > 0 ? sum / seen : 1.0;
  if (seen > 0 && observed < c.predicted * (1.0 - options_.newcomer_tolerance)) {
    verdicts_.bad.push_back(g.combination);
    g.held = true;
    auto newcomer = running_.find(c.newcomer);
    notes_.push_back(fmt::format(
        "gpu{}: {} slowed the jobs already there to {:.2f}x of their rates before it (the "
        "interference model predicted {:.2f}x); taking no more jobs there until one ends, and "
        "not forming {} again",
        g.slot.device,
        newcomer != running_.end() ? knowledge_.label(newcomer->second.waiting.signature)
                                   : "a newcomer",
        observed, c.predicted, describe(g.combination)));
  }
  g.check.reset();
}

std::optional<double> AutoScheduler::admission_gain(const Gpu& g, const Waiting& w,
                                                    const SoloLoad& load, uint64_t claim,
                                                    const AsIf& as_if) const {
  auto ended = [&](size_t j) {
    return !as_if.ended.empty() &&
           std::find(as_if.ended.begin(), as_if.ended.end(), j) != as_if.ended.end();
  };
  const Running* joining = as_if.joining;
  size_t jobs = g.jobs.size();
  uint64_t claimed = g.claimed;
  bool held = g.held;
  bool alone = g.alone;
  if (!as_if.ended.empty() || joining != nullptr) {
    held = held && as_if.ended.empty();  // until a job ends (finished())
    alone = joining != nullptr && joining->waiting.keeps_gpu();
    for (size_t j : g.jobs) {
      const Running& r = running_.at(j);
      if (ended(j)) {
        --jobs;
        claimed -= std::min(claimed, r.claim);
      } else {
        alone = alone || r.waiting.keeps_gpu();
      }
    }
    if (joining != nullptr) {
      ++jobs;
      claimed += joining->claim;
    }
  }
  if (held || alone) return std::nullopt;
  // Beside a protected job an opportunistic job starts capped at a thread
  // percentage: the model sees it use no more of the SMs than that.
  SoloLoad joining_load = load;
  if (classes_.any) {
    const QosJoin q = qos_join_on(g, w, load, as_if);
    if (!q.admitted) return std::nullopt;
    if (q.thread_pct) {
      const auto cap = static_cast<double>(*q.thread_pct);
      joining_load = {std::min(load.sm_active_pct, cap), std::min(load.gpu_busy_pct, cap)};
    }
  }
  // Jobs already replaced by an early start, and `leaving`, count as gone
  // (except for memory: they hold it until they end).
  auto gone = [&](size_t j, const Running& r) {
    return r.departing || (as_if.leaving && j == *as_if.leaving) || ended(j);
  };
  if (w.keeps_gpu() && jobs > 0) return std::nullopt;
  if (static_cast<int>(jobs) >= options_.max_jobs_per_gpu) return std::nullopt;
  const uint64_t total = g.slot.memory_total_bytes;
  if (jobs == 0) {
    if (estimate(w) > total) return std::nullopt;
  } else {
    // The leaving job still holds its memory while the new one starts.
    if (claimed + claim > usable_memory(g)) return std::nullopt;
  }
  // The staying jobs' loads, in a vector kept from call to call: an event's
  // walk asks thousands of times, each time for a few loads.
  std::vector<SoloLoad>& before = loads_scratch_;
  before.clear();
  double sm = 0;
  // Owners take turns (owners_time_slice): whether the staying jobs have
  // two or more owners (they share the GPU so now), and whether they and `w`
  // do (they would, with it).
  std::optional<uint32_t> staying_owner;
  bool mixed_before = false;
  bool mixed = false;
  auto note_owner = [&](size_t j, const Waiting& of) {
    if (!options_.owners_time_slice || (j & kOccupantKey) != 0) return;
    if (!staying_owner) staying_owner = of.owner;
    mixed_before = mixed_before || of.owner != *staying_owner;
    mixed = mixed || of.owner != w.owner;
  };
  for (size_t j : g.jobs) {
    const Running& r = running_.at(j);
    if (gone(j, r)) continue;
    before.push_back(r.load);
    sm += r.load.sm_active_pct;
    note_owner(j, r.waiting);
  }
  if (joining != nullptr) {
    before.push_back(joining->load);
    sm += joining->load.sm_active_pct;
    note_owner(joining->waiting.job, joining->waiting);
  }
  const ShareMode mode = mode_of(mixed);
  if (!before.empty() && sm + joining_load.sm_active_pct > options_.sm_cap_pct) return std::nullopt;
  if (!verdicts_.bad.empty()) {  // the combination is built only when there is one to compare with
    Combination after{{w.signature, 1}};
    for (size_t j : g.jobs) {
      const Running& r = running_.at(j);
      if (!gone(j, r)) after[r.waiting.signature] += 1;
    }
    if (joining != nullptr) after[joining->waiting.signature] += 1;
    if (verdicts_.is_bad(after)) return std::nullopt;
  }
  // The staying jobs' work as they share the GPU now; with `w`, as they
  // would (time sliced, where `w` makes them two owners' jobs). Without `w`
  // they do what they do now: the peak is never below it.
  const double work_before = work_of(mode_of(mixed_before), before);
  before.push_back(joining_load);
  const double work_after = work_of(mode, before);
  const double gain = work_after - work_before;
  const double peak = std::max(peak_work_of(mode, before), work_before);
  if (gain <= 1e-9 && work_after < (1.0 - options_.saturated_loss) * peak) return std::nullopt;
  return gain;
}

uint64_t AutoScheduler::placed_claim(const Gpu& g, uint64_t claim, bool empty) const {
  return empty ? std::min(claim, g.slot.memory_total_bytes) : claim;
}

uint64_t AutoScheduler::newcomer_claim(const Gpu& g, uint64_t need, bool empty) const {
  // Under naive sharing no limit contains it: room to spare beside others.
  if (empty || options_.memory_limits) return need;
  const uint64_t total = g.slot.memory_total_bytes;
  return need + std::max(options_.naive_headroom_bytes,
                         static_cast<uint64_t>(options_.naive_headroom_fraction *
                                               static_cast<double>(total)));
}

QosJoin AutoScheduler::qos_join_on(const Gpu& g, const Waiting& w, const SoloLoad& load,
                                   const AsIf& as_if) const {
  auto tenant = [](const Waiting& t, const SoloLoad& l, int thread_pct) {
    return QosTenant{t.job, t.qos, t.min_speed, l.sm_active_pct / 100.0, thread_pct};
  };
  std::vector<QosTenant> on_gpu;
  for (size_t j : g.jobs) {
    // A job replaced by an early start still counts: it runs on until it
    // ends, and beside a protected job an early start would be one
    // neighbour too many meanwhile.
    if (std::find(as_if.ended.begin(), as_if.ended.end(), j) != as_if.ended.end()) continue;
    const Running& r = running_.at(j);
    on_gpu.push_back(tenant(r.waiting, r.load, r.thread_pct));
  }
  if (as_if.joining != nullptr)
    on_gpu.push_back(
        tenant(as_if.joining->waiting, as_if.joining->load, as_if.joining->thread_pct));
  // Owners' MPS servers that take turns on the GPU (owners_time_slice): a
  // client's priority and thread percentage act only inside its own server,
  // so a GPU of two or more owners is judged as naive sharing is.
  QosShare share = options_.qos_share;
  const bool another_joining = as_if.joining != nullptr && as_if.joining->waiting.owner != w.owner;
  if (share == QosShare::kPriority && options_.owners_time_slice &&
      (another_joining || several_owners(g, w.owner)))
    share = QosShare::kNone;
  return qos_join(g.slot.device, on_gpu, tenant(w, load, 100), share);
}

bool AutoScheduler::admits(const Gpu& g, const Waiting& w, const AsIf& as_if) const {
  const bool empty = g.jobs.size() == as_if.ended.size() && as_if.joining == nullptr;
  if (const JobProfile* p = usable_profile(w); p != nullptr) {
    const uint64_t need = w.memory_estimate.value_or(p->peak_memory_bytes.value_or(0));
    const double uncertainty = w.memory_estimate ? 0.0 : p->memory_uncertainty;
    const SoloLoad load{*p->sm_active_pct, p->gpu_busy_pct()};
    return admission_gain(g, w, load, placed_claim(g, claim_for(need, uncertainty), empty), as_if)
        .has_value();
  }
  // A newcomer whose family is measured starts beside other work only as a
  // speculative sibling (place_speculative()).
  if (probing_.contains(knowledge_.probe_key(w.signature)) && !empty) return false;
  const JobProfile prior = knowledge_.prior_of(w.signature);
  const SoloLoad load{*prior.sm_active_pct, prior.gpu_busy_pct()};
  const uint64_t need = claim_for(w.memory_estimate.value_or(*prior.peak_memory_bytes));
  return admission_gain(g, w, load, newcomer_claim(g, need, empty), as_if).has_value();
}

std::optional<int64_t> AutoScheduler::expected_end(const Running& r, double gpu_rate,
                                                   int64_t now_ms) const {
  const JobProfile* p = usable_profile(r.waiting);
  if (p == nullptr || !p->solo_ms || r.probe) return std::nullopt;
  return expected_end_by(r, *p, gpu_rate, now_ms);
}

std::optional<int64_t> AutoScheduler::expected_end_by(const Running& r, const JobProfile& p,
                                                      double gpu_rate, int64_t now_ms) const {
  const int64_t startup = std::min(*p.solo_ms, p.startup_ms.value_or(0));
  const double work = static_cast<double>(*p.solo_ms - startup);
  const int64_t gpu_start = r.started_ms + startup;
  const double predicted = std::max(0.05, gpu_rate);
  if (now_ms <= gpu_start) return gpu_start + static_cast<int64_t>(work / predicted);
  // Work done: integrated from observed rates, else at the predicted rate.
  const bool observed = r.integrated_ms >= 0 && p.samples_per_s && *p.samples_per_s > 0;
  const double rate = std::max(0.05, observed ? r.rate / *p.samples_per_s : predicted);
  const double done = observed
                          ? r.work_done_ms + rate * static_cast<double>(now_ms - r.integrated_ms)
                          : predicted * static_cast<double>(now_ms - gpu_start);
  return now_ms + static_cast<int64_t>(std::max(0.0, work - done) / rate);
}

bool AutoScheduler::host_fits(const std::string& signature) const {
  return host_.fits(signature, running_.empty());
}

bool AutoScheduler::place(const Waiting& w, int64_t now_ms, std::vector<Decision>& out) {
  // Before any lookup: what follows would find the same likeness and fail.
  if (known_failed(w)) return false;
  if (!host_fits(w.signature)) return false;
  const JobProfile* p = usable_profile(w);
  if (p == nullptr) return place_newcomer(w, now_ms, out);

  const uint64_t need = w.memory_estimate.value_or(p->peak_memory_bytes.value_or(0));  // estimate()
  const double uncertainty = w.memory_estimate ? 0.0 : p->memory_uncertainty;
  const SoloLoad load{*p->sm_active_pct, p->gpu_busy_pct()};
  const int64_t startup = p->startup_ms.value_or(0);
  // What the loop below reads of `w` and its profile (may_start(): the solo
  // time; admission_gain(): the signature only to judge combinations).
  const bool failed = alike_failed(w, startup, knowledge_.usable_stamp(w.lookups), [&] {
    return LikenessHash{}
        .add(kPlacedHash)
        .add(need)
        .add(uncertainty)
        .add(load.sm_active_pct)
        .add(load.gpu_busy_pct)
        .add(startup)
        .add(p->solo_ms.value_or(-1))
        .add(w.keeps_gpu())
        .add(static_cast<int64_t>(w.qos))  // its class decides where it may go
        .add(w.min_speed)
        .add(options_.owners_time_slice ? int64_t{w.owner} : int64_t{-1})  // whom it joins
        .add(verdicts_.bad.empty() ? kNoSignatureHash : LikenessHash::of(w.signature));
  });
  if (failed) return false;
  Gpu* best = nullptr;
  double best_gain = 0;
  uint64_t best_free_after = 0;
  uint64_t best_claim = 0;
  std::optional<size_t> best_leaving;
  for (Gpu& g : gpus_) {
    if (!may_start(g, w, now_ms)) continue;
    const uint64_t total = g.slot.memory_total_bytes;
    const uint64_t claim = placed_claim(g, claim_for(need, uncertainty), g.jobs.empty());
    std::optional<size_t> leaving;
    std::optional<double> gain = admission_gain(g, w, load, claim);
    if (!gain && startup > 0 && !g.jobs.empty()) {
      // Early start in the place of the job expected to end first, if that
      // is within this job's start-up.
      std::optional<std::pair<int64_t, size_t>> first = first_to_end(g, now_ms);
      if (first && first->first <= now_ms + startup) {
        leaving = first->second;
        gain = admission_gain(g, w, load, claim, AsIf{leaving});
      }
    }
    if (!gain || !backfills(g, w, load, claim, now_ms)) continue;
    uint64_t free_after = total > g.claimed + claim ? total - g.claimed - claim : 0;
    if (best == nullptr || *gain > best_gain + 1e-9 ||
        (std::abs(*gain - best_gain) <= 1e-9 && free_after < best_free_after)) {
      best = &g;
      best_gain = *gain;
      best_free_after = free_after;
      best_claim = claim;
      best_leaving = leaving;
    }
  }
  if (best == nullptr) {
    failed_alike_.insert(w.alike.hash);
    return false;
  }
  if (best_leaving) running_.at(*best_leaving).departing = true;
  std::optional<JobProfile> from_family;
  if (knowledge_.estimated(w.signature, w.lookups)) {
    from_family = *p;
    if (knowledge_.announce(w.signature, w.lookups)) {
      auto pct = [](double u) { return u > 0 ? fmt::format(" (+-{:.0f}%)", 100 * u) : ""; };
      std::string what = fmt::format(
          "profile {}: {} peak{}, {:.0f}% SM activity{}, {}; memory claim {}", p->source,
          format_bytes(*p->peak_memory_bytes), pct(p->memory_uncertainty), *p->sm_active_pct,
          pct(p->sm_uncertainty),
          p->samples_per_s
              ? fmt::format("{:.0f} samples/s{}", *p->samples_per_s, pct(p->rate_uncertainty))
              : std::string("rate unknown"),
          format_bytes(best_claim));
      estimate_notes_[what].push_back(knowledge_.member(w.signature, w.lookups)->name);
    }
  }
  Running r{w, static_cast<int>(best - gpus_.data()), best_claim, load, false};
  r.started_ms = now_ms;
  add(*best, std::move(r), now_ms, out, std::move(from_family));
  return true;
}

std::optional<WaitingReason> AutoScheduler::waiting_reason(size_t job) const {
  if (auto qos = classes_.waits.find(job); qos != classes_.waits.end()) return qos->second;
  const Reservation* found = reservation();
  if (found == nullptr) return std::nullopt;
  const Reservation& r = *found;
  WaitingReason why;
  why.kind = job == r.head.job ? WaitingReason::Kind::kReserved : WaitingReason::Kind::kBackfill;
  why.head = r.head.job;
  why.device = gpus_[r.gpu].slot.device;
  why.jobs_to_end = static_cast<int>(r.ending.size());
  if (r.ends_known) why.ending = r.ending;
  why.start_ms = r.start_ms;
  return why;
}

std::vector<DeviceRoom> AutoScheduler::rooms(int64_t now_ms) {
  std::vector<DeviceRoom> out;
  for (Gpu& g : gpus_) {
    const uint64_t total = g.slot.memory_total_bytes;
    const uint64_t usable = usable_memory(g);
    DeviceRoom room{g.slot.device,
                    static_cast<int>(g.jobs.size()),
                    0,
                    g.jobs.empty() ? total : usable - std::min(usable, g.claimed),
                    std::nullopt,
                    total};
    if (!g.held && !g.alone) room.slots_free = std::max(0, options_.max_jobs_per_gpu - room.jobs);
    // Drained when the last of its jobs is expected to end, if each is.
    std::optional<int64_t> drained = now_ms;
    const double rate = predicted_rate(g);
    for (size_t j : g.jobs) {
      std::optional<int64_t> end = expected_end(running_.at(j), rate, now_ms);
      drained = end && drained ? std::optional(std::max(*drained, *end)) : std::nullopt;
    }
    room.drained_ms = drained;
    out.push_back(room);
  }
  return out;
}

void AutoScheduler::occupy(size_t key, int device, uint64_t memory_bytes, double sm_active_pct) {
  for (Gpu& g : gpus_) {
    if (g.slot.device != device) continue;
    Waiting w{.job = key | kOccupantKey, .signature = "gang"};
    knowledge_.set_label_if_none("gang", "a gang's rank");
    Running r{w, static_cast<int>(&g - gpus_.data()), memory_bytes,
              SoloLoad{sm_active_pct, sm_active_pct}, false};
    ++g.version;
    g.jobs.push_back(w.job);
    g.combination[w.signature] += 1;
    g.claimed += memory_bytes;
    g.sm_sum += sm_active_pct;
    g.judging = false;  // a gang's rank has no solo rate to judge by
    running_.emplace(w.job, std::move(r));
    return;
  }
}

void AutoScheduler::vacate(size_t key, int64_t now_ms) {
  (void)finished(key | kOccupantKey, JobEnd::kOk, now_ms);
}

void AutoScheduler::reserve(const std::vector<int>& devices, std::optional<int64_t> until_ms) {
  reserved_ = std::set<int>(devices.begin(), devices.end());
  reserved_until_ = until_ms;
}

std::optional<std::pair<int64_t, size_t>> AutoScheduler::first_to_end(Gpu& g, int64_t now_ms) {
  if (g.first_end.at_ms != now_ms || g.first_end.version != g.version) {
    g.first_end = {now_ms, g.version, std::nullopt, 0};
    const double rate = predicted_rate(g);
    for (size_t j : g.jobs) {
      const Running& r = running_.at(j);
      if (r.departing) continue;
      std::optional<int64_t> end = expected_end(r, rate, now_ms);
      if (end && (!g.first_end.end || *end < *g.first_end.end)) {
        g.first_end.end = end;
        g.first_end.job = j;
      }
    }
  }
  if (!g.first_end.end) return std::nullopt;
  return std::pair{*g.first_end.end, g.first_end.job};
}

double AutoScheduler::predicted_rate(const Gpu& gpu) const {
  std::vector<SoloLoad> current;
  for (size_t j : gpu.jobs) {
    if (!running_.at(j).departing) current.push_back(running_.at(j).load);
  }
  std::vector<double> rates = model_.rates(mode_of(gpu), current);
  return rates.empty() ? 1.0 : *std::min_element(rates.begin(), rates.end());
}

int64_t AutoScheduler::longest_queued_startup() const {
  LongestStartup& cached = longest_startup_;
  if (cached.knowledge == knowledge_.version() && cached.heads_changes == queue_.changes() &&
      cached.backfill_from == queue_.backfill_from())
    return cached.startup_ms;
  int64_t startup = 0;
  auto consider = [&](const ClassQueue::Class* cls) {
    const Waiting& w = cls->second.front();
    // Its likeness holds (this event's walk, or an earlier one, found it
    // from a profile unchanged since): its profile's start-up with it.
    if (alike_holds(w)) {
      startup = std::max(startup, w.alike.startup);
      return;
    }
    const JobProfile* p = usable_profile(w);
    if (p != nullptr) startup = std::max(startup, p->startup_ms.value_or(0));
  };
  // A bounded walk tries some classes (heads_to_try()); otherwise every
  // class is tried, walked in place (no copy, no ordering needed).
  if (queue_.walk_is_bounded()) {
    for (const auto& head : heads_to_try()) consider(head.second);
  } else {
    for (const auto& head : queue_.heads()) consider(head.second);
  }
  cached = {knowledge_.version(), queue_.changes(), queue_.backfill_from(), startup};
  return startup;
}

int64_t AutoScheduler::longest_queued_startup_afresh() const {
  int64_t startup = 0;
  // Always with a `first` (false for every class without shared loaders),
  // which the queue orders afresh: it keeps no listing of that kind.
  std::vector<ClassQueue::Head> heads;
  queue_.heads_to_try(
      [&](const std::string& signature) { return host_.any_cost() && host_.read(signature); },
      heads);
  for (const auto& [seq, cls] : heads) {
    const JobProfile* p = knowledge_.usable(cls->first);
    if (p != nullptr) startup = std::max(startup, p->startup_ms.value_or(0));
  }
  return startup;
}

std::optional<int64_t> AutoScheduler::next_wakeup_ms(int64_t now_ms) const {
  if (queue_.size() == 0) return std::nullopt;
  const int64_t startup = longest_queued_startup();
  if (startup == 0) return std::nullopt;
  std::optional<int64_t> next;
  for (const Gpu& g : gpus_) {
    const double rate = predicted_rate(g);
    for (size_t j : g.jobs) {
      const Running& r = running_.at(j);
      if (r.departing) continue;
      std::optional<int64_t> end = expected_end(r, rate, now_ms);
      if (end && *end - startup > now_ms && (!next || *end - startup < *next))
        next = *end - startup;
    }
  }
  return next;
}

std::optional<int64_t> AutoScheduler::next_check_ms(int64_t now_ms) const {
  std::optional<int64_t> next = next_wakeup_ms(now_ms);
  auto consider = [&](int64_t at) {
    if (at > now_ms && (!next || at < *next)) next = at;
  };
  for (const Gpu& g : gpus_) {
    if (g.check && g.check->from_ms >= 0) consider(g.check->from_ms + options_.settle_ms);
    if (g.judging) {
      consider(g.changed_ms + options_.settle_ms);
      consider(g.changed_ms + 3 * options_.settle_ms);
    }
  }
  return next;
}

void AutoScheduler::judge(int64_t now_ms) {
  for (Gpu& g : gpus_) check_neighbours(g, now_ms);
  for (Gpu& g : gpus_) {
    if (!g.judging || now_ms < g.changed_ms + options_.settle_ms) continue;
    std::optional<double> work = measured_work(g, g.changed_ms + options_.settle_ms / 2);
    if (!work && now_ms < g.changed_ms + 3 * options_.settle_ms) continue;  // rates still coming
    g.judging = false;
    std::optional<double> reference = g.reference;
    if (g.reference_alone) {
      reference = 0.0;
      for (size_t j : g.jobs)
        reference =
            std::max(*reference, InterferenceModel::weight(options_.mode, running_.at(j).load));
    }
    if (!work || !reference || *reference <= 0) {
      verdicts_.good.insert(g.combination);  // cannot be judged (no solo rates): keep it
      continue;
    }
    if (*work < *reference * (1.0 - options_.tolerance)) {
      verdicts_.bad.push_back(g.combination);
      g.held = true;
      notes_.push_back(fmt::format(
          "gpu{}: {} did {:.2f}x the work of {} (measured progress over solo rates, weighted "
          "by solo load); taking no more jobs there until one ends, and not forming this "
          "combination again",
          g.slot.device, describe(g.combination), *work / *reference,
          g.reference_alone ? "its heaviest job alone" : "the GPU before the last change"));
    } else {
      verdicts_.good.insert(g.combination);
    }
  }
}

const std::vector<ClassQueue::Head>& AutoScheduler::heads_to_try() const {
  // Jobs whose dataset is being read already go first: they share its loader.
  if (!host_.any_cost()) {
    queue_.heads_to_try({}, heads_.to_try);
  } else {
    queue_.heads_to_try([&](const std::string& signature) { return host_.read(signature); },
                        heads_.to_try);
  }
  return heads_.to_try;
}

const std::vector<ClassQueue::Head>& AutoScheduler::walk_heads() {
  if (!host_.any_cost()) {
    queue_.walk({}, heads_.walked);
  } else {
    queue_.walk([&](const std::string& signature) { return host_.read(signature); }, heads_.walked);
  }
  return heads_.walked;
}

void AutoScheduler::place_heads(int64_t now_ms, std::vector<Decision>& out) {
  // Each class is tried once, from its head as the call began.
  for (const auto& [seq, cls] : walk_heads()) {
    std::deque<Waiting>& q = cls->second;
    if (!place(q.front(), now_ms, out)) {
      note_failed(q.front(), now_ms);
      continue;
    }
    do {
      queue_.pop_head(*cls);
    } while (!q.empty() && place(q.front(), now_ms, out));
    if (!q.empty()) note_failed(q.front(), now_ms);
    if (!some_gpu_takes_another()) break;
  }
}

bool AutoScheduler::some_gpu_takes_another() const {
  return std::any_of(gpus_.begin(), gpus_.end(), [&](const Gpu& g) {
    return !g.held && !g.alone && static_cast<int>(g.jobs.size()) < options_.max_jobs_per_gpu;
  });
}

std::vector<Decision> AutoScheduler::schedule(int64_t now_ms) {
  judge(now_ms);
  knowledge_.keep_probe_targets_while(queue_.changes());
  failed_alike_.clear();
  // The head is found again as the walk goes (failed()).
  std::optional<Head> last = std::exchange(head_of_queue_.head, std::nullopt);
  head_of_queue_.reservation.reset();
  head_of_queue_.sought = false;
  std::vector<Decision> out;
  queue_.start_retries([&](const Waiting& w) {
    if (place(w, now_ms, out)) return true;
    failed(w, now_ms);
    return false;
  });
  if (some_gpu_takes_another()) place_heads(now_ms, out);
  // Nothing could start before the walk reached a head (every GPU full): the
  // last one is still kept its GPU, for the user's sake (waiting_reason()).
  if (!head_of_queue_.sought && last &&
      std::none_of(out.begin(), out.end(),
                   [&](const Decision& d) { return d.job == last->waiting.job; }) &&
      waits_for_room(last->waiting))
    head_of_queue_.head = Head{last->waiting, now_ms};
  // Instances placed by the same estimate: one note.
  for (auto& [what, names] : estimate_notes_) {
    notes_.push_back(names.size() == 1 ? fmt::format("{}: {}", names.front(), what)
                                       : fmt::format("{} and {} more instances: {}", names.front(),
                                                     names.size() - 1, what));
  }
  estimate_notes_.clear();
  return out;
}

EndVerdict AutoScheduler::finished(size_t job, JobEnd end, int64_t now_ms) {
  auto it = running_.find(job);
  if (it == running_.end()) return {};
  Running r = std::move(it->second);
  running_.erase(it);
  host_.ended(r.waiting.signature);
  Gpu& g = gpus_[static_cast<size_t>(r.gpu)];
  ++g.version;
  std::erase(g.jobs, job);
  const size_t others = g.jobs.size();
  if (--g.combination[r.waiting.signature] == 0) g.combination.erase(r.waiting.signature);
  g.claimed -= r.claim;
  g.sm_sum = std::max(0.0, g.sm_sum - r.load.sm_active_pct);
  if (r.probe) {
    g.measuring = std::max(0, g.measuring - 1);
    const std::string key = knowledge_.probe_key(r.waiting.signature);
    if (auto s = g.scouts.find(key); s != g.scouts.end() && --s->second <= 0) g.scouts.erase(s);
    if (auto probing = probing_.find(key);
        probing != probing_.end() && --probing->second.newcomers <= 0)
      probing_.erase(probing);
  }
  if (g.check && g.check->newcomer == job) g.check.reset();
  if (g.check) g.check->before.erase(job);
  if (r.waiting.keeps_gpu()) g.alone = false;
  g.held = false;
  g.judging = false;
  g.changed_ms = now_ms;
  if (end == JobEnd::kOk && r.integrated_ms >= 0) {
    // Its work from its first observed rate on, for the expected ends of jobs like it.
    const JobProfile* p = usable_profile(r.waiting);
    if (p != nullptr && p->samples_per_s && *p->samples_per_s > 0) {
      const double work_ms =
          r.work_done_ms + r.rate / *p->samples_per_s *
                               static_cast<double>(std::max<int64_t>(0, now_ms - r.integrated_ms));
      const double samples = work_ms * *p->samples_per_s / 1000.0;
      knowledge_.ended(r.waiting.signature, r.waiting.lookups, samples);
    }
  }

  // A speculative start stopped before it overran (observe_memory()), or one
  // that overran its share: it waits for its family's measurement. The bet
  // was the policy's: not counted against the job.
  const bool stopped = end == JobEnd::kStopped && r.doomed;
  if (stopped || (end == JobEnd::kOutOfMemory && r.speculative)) {
    Waiting w = r.waiting;
    w.after_measurement = true;
    w.alike = {};
    queue_.push_retry(std::move(w));
    return {true,
            fmt::format("{} on gpu{} (a speculative start beside its family's newcomer, limit "
                        "{}); requeued to start from the family's measurement, not counted as "
                        "an attempt",
                        stopped ? "stopped before it overran" : "out of GPU memory", g.slot.device,
                        format_bytes(r.claim)),
            false};
  }
  if (end != JobEnd::kOutOfMemory) return {};
  Waiting w = r.waiting;
  if (w.attempt > options_.max_retries) {
    return {false, fmt::format("out of GPU memory on each of {} attempts; giving up", w.attempt)};
  }
  const uint64_t largest = largest_memory();
  uint64_t had = r.claim > 0 ? r.claim : estimate(w);
  w.memory_estimate = std::min(largest, std::max<uint64_t>(2 * estimate(w), had));
  w.attempt += 1;
  w.alone = w.attempt > options_.max_retries || had >= largest;
  if (w.alone) w.memory_estimate = largest;  // the last attempt gets a whole GPU
  w.alike = {};
  knowledge_.raise_peak(w.signature, *w.memory_estimate);
  std::string note = fmt::format(
      "out of GPU memory on gpu{} ({} other jobs there, limit {}); requeued{} with {} (attempt "
      "{} of {})",
      g.slot.device, others, r.claim > 0 ? format_bytes(r.claim) : std::string("none"),
      w.alone ? " to run alone" : "", format_bytes(*w.memory_estimate), w.attempt,
      options_.max_retries + 1);
  queue_.push_retry(std::move(w));
  return {true, note};
}

void AutoScheduler::observe_rate(size_t job, double samples_per_s, int64_t now_ms) {
  auto it = running_.find(job);
  if (it == running_.end()) return;
  Running& r = it->second;
  const JobProfile* p = usable_profile(r.waiting);
  if (p != nullptr && p->samples_per_s && *p->samples_per_s > 0) {
    // Work since the last observation, at the rate last seen (the first one
    // counts from now: start-up did no GPU work).
    if (r.integrated_ms >= 0 && r.rate_ms >= 0)
      r.work_done_ms += r.rate / *p->samples_per_s * static_cast<double>(now_ms - r.integrated_ms);
    r.integrated_ms = now_ms;
  }
  r.rate = samples_per_s;
  r.rate_ms = now_ms;
  ++gpus_[static_cast<size_t>(r.gpu)].version;
}

void AutoScheduler::observe_memory(size_t job, uint64_t bytes, int64_t /*now_ms*/) {
  auto it = running_.find(job);
  if (it == running_.end() || !it->second.probe) return;
  const Running& newcomer = it->second;
  const std::string key = knowledge_.probe_key(newcomer.waiting.signature);
  auto probing = probing_.find(key);
  if (probing == probing_.end() || bytes <= probing->second.memory_seen) return;
  probing->second.memory_seen = bytes;
  if (!options_.memory_limits) return;  // no limit that a sibling is sure to overrun
  // Its family's speculative starts hold no more than their limits, and
  // each needs at least what this one holds already: those whose limit is
  // smaller cannot fit.
  for (auto& [other, r] : running_) {
    if (!r.speculative || r.doomed || r.claim >= bytes ||
        knowledge_.probe_key(r.waiting.signature) != key)
      continue;
    r.doomed = true;
    stops_.push_back(
        {other, fmt::format("its family's newcomer ({}) holds {} of GPU memory already, more than "
                            "this speculative start's limit {}: it cannot fit; stopped to start "
                            "again from the family's measurement",
                            knowledge_.label(newcomer.waiting.signature), format_bytes(bytes),
                            format_bytes(r.claim))});
  }
}

std::vector<Unplaceable> AutoScheduler::take_stops() { return std::exchange(stops_, {}); }

void AutoScheduler::learned(const std::string& signature, const JobProfile& measured,
                            int64_t now_ms) {
  const JobProfile merged = knowledge_.learned(signature, measured);
  const std::string key = knowledge_.probe_key(signature);
  for (Gpu& g : gpus_) ++g.version;  // expected ends of its jobs, anywhere, may move
  if (merged.has_solo_rate()) {
    // A protected job that ran alone for its solo rate has it: its GPU takes
    // opportunistic neighbours from now on.
    for (auto& [job, r] : running_) {
      if (r.waiting.signature != signature || !r.waiting.solo_unknown) continue;
      r.waiting.solo_unknown = false;
      Gpu& g = gpus_[static_cast<size_t>(r.gpu)];
      g.alone = std::any_of(g.jobs.begin(), g.jobs.end(),
                            [&](size_t j) { return running_.at(j).waiting.keeps_gpu(); });
      notes_.push_back(fmt::format(
          "{} has its solo rate ({}): gpu{} takes opportunistic neighbours beside it now",
          name_of(signature),
          merged.samples_per_s ? fmt::format("{:.0f} samples/s", *merged.samples_per_s)
                               : std::string("its epoch time alone"),
          g.slot.device));
    }
  }
  for (auto& [job, r] : running_) {
    if (r.waiting.signature != signature || !r.load_unknown || !merged.sm_active_pct) continue;
    // Its SM activity measured at last: its load on its GPU is that.
    Gpu& g = gpus_[static_cast<size_t>(r.gpu)];
    const SoloLoad load{*merged.sm_active_pct, merged.gpu_busy_pct()};
    g.sm_sum = std::max(0.0, g.sm_sum - r.load.sm_active_pct + load.sm_active_pct);
    r.load = load;
    r.load_unknown = false;
    ++g.version;
  }
  for (auto& [job, r] : running_) {
    if (r.waiting.signature != signature || !r.probe) continue;
    Gpu& g = gpus_[static_cast<size_t>(r.gpu)];
    r.probe = false;
    r.load_unknown = !merged.sm_active_pct;
    g.measuring = std::max(0, g.measuring - 1);
    if (auto s = g.scouts.find(key); s != g.scouts.end() && --s->second <= 0) g.scouts.erase(s);
    if (auto probing = probing_.find(key);
        probing != probing_.end() && --probing->second.newcomers <= 0)
      probing_.erase(probing);
    const SoloLoad load{merged.sm_active_pct.value_or(100.0), merged.gpu_busy_pct()};
    g.sm_sum = std::max(0.0, g.sm_sum - r.load.sm_active_pct + load.sm_active_pct);
    const uint64_t claim =
        claim_for(merged.peak_memory_bytes.value_or(0), merged.memory_uncertainty);
    g.claimed = g.claimed - std::min(g.claimed, r.claim) + claim;
    r.claim = claim;
    if (g.check && g.check->newcomer == job) {
      // What the model predicts for the jobs already there, with and without it.
      std::vector<SoloLoad> without;
      for (const auto& [neighbour, rate] : g.check->before) {
        (void)rate;
        without.push_back(running_.at(neighbour).load);
      }
      std::vector<SoloLoad> with = without;
      with.push_back(load);
      const ShareMode mode = mode_of(g);  // the newcomer is there already
      const std::vector<double> before = model_.rates(mode, without);
      const std::vector<double> after = model_.rates(mode, with);
      g.check->predicted =
          before.empty() || before.front() <= 0 ? 1.0 : after.front() / before.front();
      g.check->from_ms = now_ms;
    }
    r.load = load;
  }
  // Its family's speculative starts take what the measurement says of them.
  for (auto& [job, r] : running_) {
    if (!r.speculative || knowledge_.probe_key(r.waiting.signature) != key) continue;
    const JobProfile* p = usable_profile(r.waiting);
    if (p == nullptr) continue;
    r.speculative = false;
    Gpu& g = gpus_[static_cast<size_t>(r.gpu)];
    const SoloLoad load{*p->sm_active_pct, p->gpu_busy_pct()};
    g.sm_sum = std::max(0.0, g.sm_sum - r.load.sm_active_pct + load.sm_active_pct);
    r.load = load;
    // Its limit stays what it started with; it claims no more than that.
    const uint64_t claim =
        std::min(r.claim, claim_for(*p->peak_memory_bytes, p->memory_uncertainty));
    g.claimed = g.claimed - std::min(g.claimed, r.claim) + claim;
    r.claim = claim;
  }
  if (merged.peak_memory_bytes && *merged.peak_memory_bytes > largest_memory()) {
    const std::deque<Waiting> dropped = queue_.take_class(signature);
    if (dropped.empty()) return;
    for (const Waiting& w : dropped) {
      unplaceable_.push_back(
          {w.job,
           fmt::format("needs {} of GPU memory (measured); the largest GPU has {}",
                       format_bytes(*merged.peak_memory_bytes), format_bytes(largest_memory()))});
    }
    if (head_of_queue_.head && head_of_queue_.head->waiting.signature == signature) forget_head();
  }
}

void AutoScheduler::avoid_together(const std::vector<std::string>& signatures) {
  Combination c;
  for (const std::string& signature : signatures) ++c[signature];
  if (signatures.size() < 2 || verdicts_.is_bad(c)) return;
  verdicts_.bad.push_back(c);
  notes_.push_back(fmt::format("not forming {} again", describe(c)));
}

void AutoScheduler::measured(size_t job, const JobProfile& measured) {
  auto it = running_.find(job);
  if (it == running_.end() || !measured.peak_memory_bytes) return;
  knowledge_.measured_memory(it->second.waiting.signature, it->second.waiting.lookups, measured);
}

std::vector<size_t> AutoScheduler::drain_queued() {
  forget_head();
  return queue_.drain();
}

bool AutoScheduler::remove_queued(size_t job) {
  if (head_of_queue_.head && head_of_queue_.head->waiting.job == job) forget_head();
  return queue_.remove(job);
}

std::optional<int64_t> AutoScheduler::expected_end_ms(size_t job, int64_t now_ms) const {
  auto it = running_.find(job);
  if (it == running_.end()) return std::nullopt;
  const Running& r = it->second;
  const double gpu_rate = predicted_rate(gpus_[static_cast<size_t>(r.gpu)]);
  if (std::optional<int64_t> end = expected_end(r, gpu_rate, now_ms)) return end;
  // No solo time, but a solo rate (its slowdown is known): the work of a job
  // like it that ended here, counted as its observed rates count work.
  const JobProfile* p = usable_profile(r.waiting);
  if (p == nullptr || r.probe || !p->has_solo_rate() || *p->samples_per_s <= 0) return std::nullopt;
  const std::optional<double> samples =
      knowledge_.ended_samples(r.waiting.signature, r.waiting.lookups);
  if (!samples) return std::nullopt;
  JobProfile timed = *p;
  timed.startup_ms = 0;
  timed.solo_ms = static_cast<int64_t>(*samples * 1000.0 / *p->samples_per_s);
  return expected_end_by(r, timed, gpu_rate, now_ms);
}

std::vector<Unplaceable> AutoScheduler::take_unplaceable() {
  return std::exchange(unplaceable_, {});
}

std::vector<std::string> AutoScheduler::take_notes() { return std::exchange(notes_, {}); }

std::vector<std::string> AutoScheduler::bad_combinations() const {
  std::vector<std::string> out;
  for (const Combination& c : verdicts_.bad) out.push_back(describe(c));
  return out;
}

}  // namespace colo
