#include "sched/auto_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/units.h"

namespace colo {

AutoScheduler::AutoScheduler(std::vector<GpuSlot> gpus, AutoOptions options,
                             InterferenceModel model)
    : options_(options), model_(std::move(model)) {
  for (const GpuSlot& slot : gpus) {
    Gpu g;
    g.slot = slot;
    gpus_.push_back(std::move(g));
  }
}

void AutoScheduler::set_profile(const std::string& signature, const JobProfile& profile) {
  profiles_[signature] = profile;
}

const JobProfile* AutoScheduler::profile(const std::string& signature) const {
  auto it = profiles_.find(signature);
  return it == profiles_.end() ? nullptr : &it->second;
}

void AutoScheduler::set_label(const std::string& signature, std::string label) {
  labels_[signature] = std::move(label);
}

std::string AutoScheduler::label(const std::string& signature) const {
  auto it = labels_.find(signature);
  return it != labels_.end() ? it->second : signature.substr(0, 8);
}

std::string AutoScheduler::describe() const {
  return fmt::format("auto (SM activity cap {:.0f}%, memory margin {:.0f}%, judged after {})",
                     options_.sm_cap_pct, 100 * options_.memory_margin,
                     format_duration_ms(options_.settle_ms));
}

std::string AutoScheduler::describe(const Combination& c) const {
  std::string out;
  for (const auto& [sig, n] : c) out += fmt::format("{}{} x{}", out.empty() ? "" : " + ", label(sig), n);
  return out;
}

uint64_t AutoScheduler::largest_memory() const {
  uint64_t largest = 0;
  for (const Gpu& g : gpus_) largest = std::max(largest, g.slot.memory_total_bytes);
  return largest;
}

void AutoScheduler::push_waiting(Waiting w) {
  std::deque<Waiting>& q = classes_[w.signature];
  if (q.empty()) heads_.insert({w.seq, w.signature});
  q.push_back(std::move(w));
  ++queued_;
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
  w.seq = next_seq_++;
  push_waiting(std::move(w));
}

uint64_t AutoScheduler::estimate(const Waiting& w) const {
  if (w.memory_estimate) return *w.memory_estimate;
  const JobProfile* p = profile(w.signature);
  return p != nullptr ? p->peak_memory_bytes.value_or(0) : 0;
}

uint64_t AutoScheduler::claim_for(uint64_t estimate) const {
  return static_cast<uint64_t>(static_cast<double>(estimate) * (1.0 + options_.memory_margin)) +
         options_.memory_headroom_bytes;
}

std::vector<SoloLoad> AutoScheduler::loads(const Gpu& gpu) const {
  std::vector<SoloLoad> out;
  out.reserve(gpu.jobs.size());
  for (size_t j : gpu.jobs) out.push_back(running_.at(j).load);
  return out;
}

// Summed normalized progress of the GPU's jobs from rates observed at or after
// `fresh_since_ms`; nullopt when a job has no fresh rate or no solo rate.
std::optional<double> AutoScheduler::progress_sum(const Gpu& gpu, int64_t fresh_since_ms) const {
  double sum = 0;
  for (size_t j : gpu.jobs) {
    const Running& r = running_.at(j);
    const JobProfile* p = profile(r.waiting.signature);
    if (r.rate_ms < fresh_since_ms || p == nullptr || !p->samples_per_s ||
        *p->samples_per_s <= 0)
      return std::nullopt;
    sum += r.rate / *p->samples_per_s;
  }
  return sum;
}

bool AutoScheduler::is_bad(const Combination& c) const {
  return std::any_of(bad_.begin(), bad_.end(), [&](const Combination& bad) {
    return std::all_of(bad.begin(), bad.end(), [&](const auto& entry) {
      auto it = c.find(entry.first);
      return it != c.end() && it->second >= entry.second;
    });
  });
}

void AutoScheduler::add(Gpu& gpu, Running r, int64_t now_ms, std::vector<Decision>& out) {
  if (gpu.changed_ms != now_ms) {
    // The first change at this instant: remember what the GPU did before it.
    gpu.reference = gpu.jobs.size() <= 1 ? std::optional<double>(1.0)
                                         : progress_sum(gpu, gpu.changed_ms + options_.settle_ms);
    gpu.changed_ms = now_ms;
  }
  size_t job = r.waiting.job;
  gpu.jobs.push_back(job);
  gpu.combination[r.waiting.signature] += 1;
  gpu.claimed += r.claim;
  gpu.sm_sum += r.load.sm_active_pct;
  gpu.probing = gpu.probing || r.probe;
  gpu.alone = gpu.alone || r.waiting.alone;
  gpu.judging = gpu.jobs.size() >= 2 && !good_.contains(gpu.combination);
  std::optional<uint64_t> limit;
  if (options_.memory_limits && !r.probe) limit = r.claim;
  out.push_back(Decision{job, gpu.slot.device, r.probe, limit});
  running_.emplace(job, std::move(r));
  --queued_;
}

bool AutoScheduler::place_probe(const Waiting& w, int64_t now_ms, std::vector<Decision>& out) {
  if (probing_.contains(w.signature)) return false;
  for (Gpu& g : gpus_) {
    if (!g.jobs.empty()) continue;
    probing_.insert(w.signature);
    notes_.push_back(fmt::format("{}: no profile yet; probing it alone on gpu{}", label(w.signature),
                                 g.slot.device));
    Running r{w, static_cast<int>(&g - gpus_.data()), 0, SoloLoad{100.0, 100.0}, true};
    add(g, std::move(r), now_ms, out);
    return true;
  }
  return false;
}

bool AutoScheduler::place(const Waiting& w, int64_t now_ms, std::vector<Decision>& out) {
  const JobProfile* p = profile(w.signature);
  if (p == nullptr || !p->admissible()) return place_probe(w, now_ms, out);

  const uint64_t need = estimate(w);
  const SoloLoad load{*p->sm_active_pct, p->gpu_busy_pct()};
  Gpu* best = nullptr;
  double best_gain = 0;
  uint64_t best_free_after = 0;
  uint64_t best_claim = 0;
  for (Gpu& g : gpus_) {
    if (g.probing || g.held || g.alone) continue;
    if (g.judging && g.changed_ms != now_ms) continue;  // one change at a time
    if (w.alone && !g.jobs.empty()) continue;
    if (static_cast<int>(g.jobs.size()) >= options_.max_jobs_per_gpu) continue;
    const uint64_t total = g.slot.memory_total_bytes;
    uint64_t claim = claim_for(need);
    if (g.jobs.empty()) {
      if (need > total) continue;
      claim = std::min(claim, total);  // alone, it may have the whole GPU
    } else {
      uint64_t usable = total > options_.memory_reserve_bytes ? total - options_.memory_reserve_bytes : 0;
      if (g.claimed + claim > usable) continue;
      if (g.sm_sum + load.sm_active_pct > options_.sm_cap_pct) continue;
    }
    Combination after = g.combination;
    after[w.signature] += 1;
    if (is_bad(after)) continue;
    std::vector<SoloLoad> before = loads(g);
    double gain = -model_.total(options_.mode, before);
    before.push_back(load);
    gain += model_.total(options_.mode, before);
    if (gain <= 1e-9) continue;
    uint64_t free_after = total > g.claimed + claim ? total - g.claimed - claim : 0;
    if (best == nullptr || gain > best_gain + 1e-9 ||
        (std::abs(gain - best_gain) <= 1e-9 && free_after < best_free_after)) {
      best = &g;
      best_gain = gain;
      best_free_after = free_after;
      best_claim = claim;
    }
  }
  if (best == nullptr) return false;
  add(*best, Running{w, static_cast<int>(best - gpus_.data()), best_claim, load, false}, now_ms,
      out);
  return true;
}

void AutoScheduler::judge(int64_t now_ms) {
  for (Gpu& g : gpus_) {
    if (!g.judging || now_ms < g.changed_ms + options_.settle_ms) continue;
    std::optional<double> sum = progress_sum(g, g.changed_ms + options_.settle_ms / 2);
    if (!sum && now_ms < g.changed_ms + 3 * options_.settle_ms) continue;  // rates still coming
    g.judging = false;
    if (!sum || !g.reference) {
      good_.insert(g.combination);  // cannot be judged (no solo rates): keep it
      continue;
    }
    if (*sum < *g.reference * (1.0 - options_.tolerance)) {
      bad_.push_back(g.combination);
      g.held = true;
      notes_.push_back(fmt::format(
          "gpu{}: {} made {:.2f} solo jobs' worth of progress, down from {:.2f} before the last "
          "change; taking no more jobs there until one ends, and not forming this combination "
          "again",
          g.slot.device, describe(g.combination), *sum, *g.reference));
    } else {
      good_.insert(g.combination);
    }
  }
}

std::vector<Decision> AutoScheduler::schedule(int64_t now_ms) {
  judge(now_ms);
  std::vector<Decision> out;
  for (auto it = retries_.begin(); it != retries_.end();) {
    it = place(*it, now_ms, out) ? retries_.erase(it) : std::next(it);
  }
  std::vector<std::pair<uint64_t, std::string>> heads(heads_.begin(), heads_.end());
  for (const auto& head : heads) {
    std::deque<Waiting>& q = classes_[head.second];
    while (!q.empty() && place(q.front(), now_ms, out)) q.pop_front();
    heads_.erase(head);
    if (q.empty()) {
      classes_.erase(head.second);
    } else {
      heads_.insert({q.front().seq, head.second});
    }
  }
  return out;
}

EndVerdict AutoScheduler::finished(size_t job, JobEnd end, int64_t now_ms) {
  auto it = running_.find(job);
  if (it == running_.end()) return {};
  Running r = std::move(it->second);
  running_.erase(it);
  Gpu& g = gpus_[static_cast<size_t>(r.gpu)];
  std::erase(g.jobs, job);
  const size_t others = g.jobs.size();
  if (--g.combination[r.waiting.signature] == 0) g.combination.erase(r.waiting.signature);
  g.claimed -= r.claim;
  g.sm_sum = std::max(0.0, g.sm_sum - r.load.sm_active_pct);
  if (r.probe) {
    g.probing = false;
    probing_.erase(r.waiting.signature);
  }
  if (r.waiting.alone) g.alone = false;
  g.held = false;
  g.judging = false;
  g.changed_ms = now_ms;

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
  JobProfile& p = profiles_[w.signature];
  p.peak_memory_bytes = std::max(p.peak_memory_bytes.value_or(0), *w.memory_estimate);
  std::string note = fmt::format(
      "out of GPU memory on gpu{} ({} other jobs there, limit {}); requeued {} with {} (attempt "
      "{} of {})",
      g.slot.device, others, r.claim > 0 ? format_bytes(r.claim) : std::string("none"),
      w.alone ? "to run alone" : "", format_bytes(*w.memory_estimate), w.attempt,
      options_.max_retries + 1);
  retries_.push_back(std::move(w));
  ++queued_;
  return {true, note};
}

void AutoScheduler::observe_rate(size_t job, double samples_per_s, int64_t now_ms) {
  auto it = running_.find(job);
  if (it == running_.end()) return;
  it->second.rate = samples_per_s;
  it->second.rate_ms = now_ms;
}

void AutoScheduler::learned(const std::string& signature, const JobProfile& measured) {
  auto it = profiles_.find(signature);
  JobProfile merged = it == profiles_.end() ? measured : merge_profiles(measured, it->second);
  profiles_[signature] = merged;
  probing_.erase(signature);
  for (auto& [job, r] : running_) {
    if (r.waiting.signature != signature || !r.probe) continue;
    Gpu& g = gpus_[static_cast<size_t>(r.gpu)];
    r.probe = false;
    r.load = SoloLoad{merged.sm_active_pct.value_or(100.0), merged.gpu_busy_pct()};
    g.sm_sum = r.load.sm_active_pct;
    r.claim = claim_for(merged.peak_memory_bytes.value_or(0));
    g.claimed = r.claim;
    g.probing = false;
  }
  if (merged.peak_memory_bytes && *merged.peak_memory_bytes > largest_memory()) {
    auto q = classes_.find(signature);
    if (q == classes_.end()) return;
    for (const Waiting& w : q->second) {
      unplaceable_.push_back(
          {w.job, fmt::format("needs {} of GPU memory (measured); the largest GPU has {}",
                              format_bytes(*merged.peak_memory_bytes), format_bytes(largest_memory()))});
      --queued_;
    }
    heads_.erase({q->second.front().seq, signature});
    classes_.erase(q);
  }
}

std::vector<size_t> AutoScheduler::drain_queued() {
  std::vector<std::pair<uint64_t, size_t>> all;
  for (const Waiting& w : retries_) all.emplace_back(w.seq, w.job);
  for (const auto& [sig, q] : classes_) {
    for (const Waiting& w : q) all.emplace_back(w.seq, w.job);
  }
  std::sort(all.begin(), all.end());
  retries_.clear();
  classes_.clear();
  heads_.clear();
  queued_ = 0;
  std::vector<size_t> jobs;
  for (const auto& [seq, job] : all) jobs.push_back(job);
  return jobs;
}

std::vector<Unplaceable> AutoScheduler::take_unplaceable() {
  return std::exchange(unplaceable_, {});
}

std::vector<std::string> AutoScheduler::take_notes() { return std::exchange(notes_, {}); }

std::vector<std::string> AutoScheduler::bad_combinations() const {
  std::vector<std::string> out;
  for (const Combination& c : bad_) out.push_back(describe(c));
  return out;
}

}  // namespace colo
