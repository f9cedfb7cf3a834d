#include "serve/usage_ledger.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <iterator>

#include "analysis/energy.h"

namespace colo {
namespace {

// The split that `weight` gives, when every job has a positive one.
std::optional<std::vector<double>> split_by(
    const std::vector<JobOnGpu>& jobs,
    const std::function<std::optional<double>(const JobOnGpu&)>& weight) {
  double sum = 0;
  for (const JobOnGpu& j : jobs) {
    const std::optional<double> w = weight(j);
    if (!w || !(*w > 0)) return std::nullopt;  // NaN too
    sum += *w;
  }
  std::vector<double> shares;
  for (const JobOnGpu& j : jobs) shares.push_back(*weight(j) / sum);
  return shares;
}

// A GPU that one protected job keeps with only opportunistic neighbours.
bool kept_by_protected(const std::vector<JobOnGpu>& jobs) {
  const auto is = [](QosClass qos) { return [qos](const JobOnGpu& j) { return j.qos == qos; }; };
  return std::count_if(jobs.begin(), jobs.end(), is(QosClass::kProtected)) == 1 &&
         std::count_if(jobs.begin(), jobs.end(), is(QosClass::kOpportunistic)) ==
             static_cast<std::ptrdiff_t>(jobs.size()) - 1;
}

// The rule for a protected job's GPU (charged_shares): whole, the protected
// job paying what its neighbours did not harvest.
std::vector<double> protected_gpu_shares(const std::vector<JobOnGpu>& jobs) {
  const double keeps_at_least = 0.5 / static_cast<double>(jobs.size());
  std::vector<double> shares(jobs.size(), 0.0);
  double harvest = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].qos != QosClass::kOpportunistic) continue;
    shares[i] = opportunistic_share(jobs, i);
    harvest += shares[i];
  }
  const double scale = harvest > 1 - keeps_at_least ? (1 - keeps_at_least) / harvest : 1.0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].qos == QosClass::kOpportunistic)
      shares[i] *= scale;
    else
      shares[i] = 1 - harvest * scale;
  }
  return shares;
}

}  // namespace

double opportunistic_share(const std::vector<JobOnGpu>& jobs, size_t i) {
  const JobOnGpu& job = jobs.at(i);
  const double equal = 1.0 / static_cast<double>(jobs.size());
  std::optional<double> cap;
  if (job.thread_cap_pct && *job.thread_cap_pct > 0)  // NaN too
    cap = std::min(1.0, *job.thread_cap_pct / 100);
  double share = cap.value_or(equal);
  if (std::optional<std::vector<double>> measured =
          split_by(jobs, [](const JobOnGpu& j) { return j.sm_util_pct; })) {
    share = (*measured)[i];
  } else if (job.reported_progress && *job.reported_progress >= 0) {
    share = std::min(1.0, *job.reported_progress);
  }
  return std::clamp(share, cap.value_or(equal) / 2, cap.value_or(1.0));
}

std::vector<double> charged_shares(const std::vector<JobOnGpu>& jobs) {
  if (jobs.empty()) return {};
  if (jobs.size() > 1 && kept_by_protected(jobs)) return protected_gpu_shares(jobs);
  const double equal = 1.0 / static_cast<double>(jobs.size());
  std::optional<std::vector<double>> shares =
      split_by(jobs, [](const JobOnGpu& j) { return j.sm_util_pct; });
  if (!shares) shares = split_by(jobs, [](const JobOnGpu& j) { return j.mps_sm_share_pct; });
  if (!shares) shares = split_by(jobs, [](const JobOnGpu& j) { return j.reported_progress; });
  if (!shares) shares = std::vector<double>(jobs.size(), equal);
  for (double& s : *shares) s = std::max(s, equal / 2);
  return *shares;
}

ServiceJobUsage span_usage(double span_ms, size_t gpus, double charged,
                           std::optional<double> samples_per_s,
                           std::optional<double> solo_samples_per_s) {
  const double held = static_cast<double>(std::max<size_t>(1, gpus));
  ServiceJobUsage usage{.gpu_ms = span_ms * held, .share_ms = charged * span_ms};
  if (samples_per_s && solo_samples_per_s && *solo_samples_per_s > 0) {
    usage.solo_ms = std::min(1.0, *samples_per_s / *solo_samples_per_s) * held * span_ms;
    usage.rated_gpu_ms = usage.gpu_ms;
    usage.rated_share_ms = usage.share_ms;
  }
  return usage;
}

void add_energy_share(ServiceJobUsage& usage, const std::vector<int>& gpus,
                      const std::map<int, double>& joules, const std::map<int, int>& on_gpu) {
  for (int g : gpus) {
    auto j = joules.find(g);
    auto n = on_gpu.find(g);
    if (j != joules.end()) usage.energy_j += j->second / (n == on_gpu.end() ? 1 : n->second);
  }
}

double decayed(double value, int64_t elapsed_ms, int64_t half_life_ms) {
  return value * std::exp2(-static_cast<double>(elapsed_ms) /
                           static_cast<double>(std::max<int64_t>(1, half_life_ms)));
}

UsageLedger::UsageLedger(const UsageLedgerOptions& options,
                         std::function<bool(uid_t, gid_t)> in_group)
    : options_(options), in_group_(std::move(in_group)) {}

void UsageLedger::decay_to(int64_t monotonic_ms) {
  const int64_t since = usage_at_ms_ < 0 ? monotonic_ms : usage_at_ms_;
  usage_at_ms_ = monotonic_ms;
  if (monotonic_ms <= since) return;
  for (auto& [owner, used] : usage_ms_)
    used = decayed(used, monotonic_ms - since, options_.half_life_ms);
}

void UsageLedger::add(uid_t owner, double charged_ms) {
  usage_ms_[owner] += charged_ms;
  total_ms_[owner] += charged_ms;
}

double UsageLedger::weight_of(uid_t owner) const {
  if (auto it = options_.user_weights.find(owner); it != options_.user_weights.end())
    return it->second;
  if (options_.group_weights.empty()) return 1.0;
  auto [cached, is_new] = group_weight_of_.try_emplace(owner, 0.0);
  if (is_new) {  // groups are read once per owner: the snapshot asks every second
    for (const auto& [group, w] : options_.group_weights) {
      if (in_group_(owner, group)) cached->second = std::max(cached->second, w);
    }
  }
  return cached->second > 0 ? cached->second : 1.0;
}

double UsageLedger::share(uid_t owner) const {
  auto it = usage_ms_.find(owner);
  return (it == usage_ms_.end() ? 0.0 : it->second) / weight_of(owner);
}

std::map<uint32_t, double> UsageLedger::weighted() const {
  std::map<uint32_t, double> out;
  for (const auto& [owner, used] : usage_ms_) out[owner] = used / weight_of(owner);
  return out;
}

void UsageLedger::load(const std::vector<ServiceUsageRow>& rows, UnixMillis now_ms) {
  for (const ServiceUsageRow& r : rows) {
    usage_ms_[r.owner_uid] =
        decayed(r.usage_ms, std::max<int64_t>(0, now_ms - r.at_ms), options_.half_life_ms);
    total_ms_[r.owner_uid] = r.total_ms;
    names_.emplace(r.owner_uid, r.owner_name);
  }
}

std::vector<ServiceUsageRow> UsageLedger::rows(UnixMillis now_ms) const {
  std::vector<ServiceUsageRow> out;
  for (const auto& [owner, used] : usage_ms_) {
    auto name = names_.find(owner);
    auto total = total_ms_.find(owner);
    out.push_back({owner, name == names_.end() ? std::to_string(owner) : name->second, used,
                   total == total_ms_.end() ? 0.0 : total->second, now_ms});
  }
  return out;
}

bool UsageLedger::keep_due(int64_t monotonic_ms, int64_t every_ms) {
  if (kept_at_ms_ >= 0 && monotonic_ms - kept_at_ms_ < every_ms) return false;
  kept_at_ms_ = monotonic_ms;
  return true;
}

std::map<int, double> UsageLedger::new_energy_j(
    const std::map<int, std::deque<DeviceSample>>& recent) {
  std::map<int, double> joules;
  for (const auto& [gpu, samples] : recent) {
    if (samples.empty()) continue;
    // The samples are in time order: the new ones are found by a binary
    // search, not a walk of the GPU's whole recent history every second.
    auto counted = energy_counted_to_.find(gpu);
    auto first_new =
        counted == energy_counted_to_.end()
            ? samples.begin()
            : std::upper_bound(samples.begin(), samples.end(), counted->second,
                               [](UnixMillis t, const DeviceSample& d) { return t < d.time_ms; });
    for (auto it = first_new == samples.begin() ? std::next(first_new) : first_new;
         it != samples.end(); ++it) {
      if (std::optional<double> j = pair_energy_j(*std::prev(it), *it)) joules[gpu] += *j;
    }
    energy_counted_to_[gpu] = samples.back().time_ms;
  }
  return joules;
}

}  // namespace colo
