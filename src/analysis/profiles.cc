#include "analysis/profiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <set>

#include "common/units.h"
#include "jobs/job_features.h"
#include "jobs/job_signature.h"

namespace colo {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string gpu_name_of(const RunSummary& run, std::optional<int> device) {
  if (!device) return "";
  for (const DeviceInfo& d : run.devices) {
    if (d.index == *device) return d.name;
  }
  return "";
}

std::vector<bool> ran_alone(const RunSummary& run) {
  const std::vector<JobSummary>& jobs = run.jobs;
  constexpr UnixMillis kNever = std::numeric_limits<UnixMillis>::max();
  auto end_of = [&](size_t i) { return jobs[i].ended_ms.value_or(kNever); };
  // Whether another job on i's GPU started before i ended and ended after it started.
  auto shares_with_any = [&](size_t i) {
    return std::any_of(jobs.begin(), jobs.end(), [&](const JobSummary& other) {
      return other.id != jobs[i].id && other.device == jobs[i].device && other.started_ms &&
             *other.started_ms < *jobs[i].ended_ms &&
             other.ended_ms.value_or(kNever) > *jobs[i].started_ms;
    });
  };
  std::map<int, std::vector<size_t>> started_on;  // per GPU, in order of start
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].device && jobs[i].started_ms) started_on[*jobs[i].device].push_back(i);
  }
  std::vector<bool> alone(jobs.size(), false);
  for (auto& [device, order] : started_on) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return *jobs[a].started_ms < *jobs[b].started_ms; });
    UnixMillis latest_end = std::numeric_limits<UnixMillis>::min();  // of those before
    for (size_t k = 0; k < order.size(); ++k) {
      const size_t i = order[k];
      const UnixMillis start = *jobs[i].started_ms;
      if (jobs[i].ended_ms && *jobs[i].ended_ms <= start) {
        alone[i] = !shares_with_any(i);  // an instant: not worth a sweep
      } else if (jobs[i].ended_ms) {
        // One that started before shares when it ended after this start; of
        // those that started after, the first usually tells.
        bool shared = latest_end > start;
        for (size_t n = k + 1;
             !shared && n < order.size() && *jobs[order[n]].started_ms < *jobs[i].ended_ms; ++n)
          shared = end_of(order[n]) > start;
        alone[i] = !shared;
      }
      latest_end = std::max(latest_end, end_of(i));
    }
  }
  return alone;
}

std::vector<ProfileContribution> profile_contributions(const RunSummary& run,
                                                       std::vector<int64_t>* job_ids) {
  std::vector<ProfileContribution> out;
  if (run.run.state == RunState::kRunning) return out;
  const std::vector<bool> alone = ran_alone(run);
  for (size_t index = 0; index < run.jobs.size(); ++index) {
    const JobSummary& job = run.jobs[index];
    if (job.state != JobState::kOk || job.signature.empty() || !job.device) continue;
    ProfileContribution c;
    c.signature = job.signature;
    c.gpu_name = gpu_name_of(run, job.device);
    c.simulated = run.run.simulated;
    c.job_name = job.name;
    c.group = job.group;
    c.family = job.family;
    c.params = job.params;
    c.command = job.command;
    c.peak_memory_bytes = job.peak_memory_bytes;
    if (job.estimate) {
      c.estimate =
          LearnedProfile::EstimateCheck{run.run.id, job.name, *job.estimate, job.peak_memory_bytes};
    }
    JobProfile& m = c.measured;
    if (!alone[index]) {
      // Probed by the auto policy, then joined by others: what it measured
      // while its GPU was its own.
      if (job.probe && job.probe->sm_active_pct) {
        c.solo = ProfileContribution::Solo::kProbe;
        m.sm_active_pct = job.probe->sm_active_pct;
        m.sm_uncertainty = job.probe->sm_uncertainty;
        m.gpu_util_pct = job.probe->gpu_util_pct;
        m.samples_per_s = job.probe->samples_per_s;
        m.rate_uncertainty = job.probe->rate_uncertainty;
        m.startup_ms = job.probe->startup_ms;
        // Its time alone, had it kept its GPU: its start-up, then all its
        // samples at the rate measured alone.
        if (job.samples && job.probe->samples_per_s && *job.probe->samples_per_s > 0) {
          m.solo_ms = job.probe->startup_ms.value_or(0) +
                      static_cast<int64_t>(static_cast<double>(*job.samples) * 1000.0 /
                                           *job.probe->samples_per_s);
        }
        m.source = fmt::format("store: run {} job {} ({}, probe{})", run.run.id, job.id,
                               run.run.mechanism, run.run.simulated ? ", simulated" : "");
      }
      if (job_ids != nullptr) job_ids->push_back(job.id);
      out.push_back(std::move(c));
      continue;
    }
    c.solo = ProfileContribution::Solo::kAlone;
    // The steady epochs' load; the whole job's mean counts start-up, when
    // the GPU idles (resnet26 on the H200: 8% over the job, 15% working).
    const bool steady = job.steady_sm_active_pct.has_value();
    m.sm_active_pct = steady ? job.steady_sm_active_pct : job.mean_sm_active_pct;
    m.gpu_util_pct = steady ? job.steady_gpu_util_pct : job.mean_gpu_util_pct;
    m.samples_per_s =
        job.steady_throughput_per_s ? job.steady_throughput_per_s : job.throughput_per_s;
    std::optional<SteadyEpochs> epochs = steady_epochs(job.epoch_ends);
    m.epoch_ms = epochs ? std::optional<double>(epochs->epoch_ms) : std::nullopt;
    m.solo_ms = job.duration_ms;
    // Start-up: the first epoch took this much longer than a steady one.
    if (job.started_ms && job.steady_start_ms && job.mean_epoch_ms) {
      m.startup_ms = std::max<int64_t>(
          0, *job.steady_start_ms - *job.started_ms - static_cast<int64_t>(*job.mean_epoch_ms));
    }
    m.source = fmt::format("store: run {} job {} ({}, alone{})", run.run.id, job.id,
                           run.run.mechanism, run.run.simulated ? ", simulated" : "");
    if (job_ids != nullptr) job_ids->push_back(job.id);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<ProfileContribution> fold_contributions(
    std::vector<ProfileContribution> contributions) {
  using Solo = ProfileContribution::Solo;
  std::map<std::pair<std::string_view, std::string_view>, std::vector<size_t>> by_key;
  for (size_t i = 0; i < contributions.size(); ++i)
    by_key[{contributions[i].signature, contributions[i].gpu_name}].push_back(i);
  std::vector<bool> kept(contributions.size(), false);
  for (const auto& entry : by_key) {
    const std::vector<size_t>& indexes = entry.second;
    // What add() reads of each, where the last (or first) one wins.
    auto keep_last = [&](auto wanted) {
      auto it = std::find_if(indexes.rbegin(), indexes.rend(),
                             [&](size_t i) { return wanted(contributions[i]); });
      return it == indexes.rend() ? indexes.size() : static_cast<size_t>(indexes.rend() - it - 1);
    };
    auto keep_to_named = [&](size_t from) {  // the name sticks once it is not empty
      for (size_t k = from; k < indexes.size(); ++k) {
        kept[indexes[k]] = true;
        if (!contributions[indexes[k]].job_name.empty()) break;
      }
    };
    keep_to_named(0);
    const size_t last_solo = keep_last([](const auto& c) { return c.solo != Solo::kNone; });
    if (last_solo < indexes.size()) keep_to_named(last_solo);
    for (size_t k :
         {keep_last([](const auto& c) { return c.solo == Solo::kAlone; }),
          keep_last([](const auto& c) { return !c.family.empty(); }),
          keep_last([](const auto& c) { return !c.params.empty(); }),
          keep_last([](const auto& c) { return c.estimate.has_value(); }), indexes.size() - 1}) {
      if (k < indexes.size()) kept[indexes[k]] = true;
    }
    auto peak = std::max_element(indexes.begin(), indexes.end(), [&](size_t a, size_t b) {
      const auto& x = contributions[a].peak_memory_bytes;
      const auto& y = contributions[b].peak_memory_bytes;
      return std::pair(x.has_value(), x.value_or(0)) < std::pair(y.has_value(), y.value_or(0));
    });
    kept[*peak] = true;
    int64_t folded = 0;
    for (size_t i : indexes) folded += kept[i] ? 0 : contributions[i].jobs;
    contributions[indexes.back()].jobs += folded;
  }
  std::vector<ProfileContribution> out;
  for (size_t i = 0; i < contributions.size(); ++i) {
    if (kept[i]) out.push_back(std::move(contributions[i]));
  }
  return out;
}

void ProfileLearner::add(const RunSummary& run) {
  for (const ProfileContribution& c : profile_contributions(run)) add(c);
}

void ProfileLearner::add(const ProfileContribution& c) {
  LearnedProfile& p = by_key_[{c.signature, c.gpu_name}];
  p.signature = c.signature;
  p.gpu_name = c.gpu_name;
  p.simulated = c.simulated;
  p.runs += static_cast<int>(c.jobs);
  if (!c.family.empty()) p.family = c.family;
  if (!c.params.empty()) p.params = c.params;
  if (p.job_name.empty() || c.solo != ProfileContribution::Solo::kNone) {
    p.group = c.group;
    p.job_name = c.job_name;
    p.command = c.command;
  }
  if (c.peak_memory_bytes) {
    p.profile.peak_memory_bytes =
        std::max(p.profile.peak_memory_bytes.value_or(0), *c.peak_memory_bytes);
  }
  if (c.estimate) p.estimate = c.estimate;
  const JobProfile& m = c.measured;
  switch (c.solo) {
    case ProfileContribution::Solo::kNone:
      return;
    case ProfileContribution::Solo::kAlone:
      p.profile.epoch_ms = m.epoch_ms;
      p.profile.solo_ms = m.solo_ms;
      p.solo_alone = true;
      break;
    case ProfileContribution::Solo::kProbe:
      if (!p.solo_alone) p.profile.solo_ms = m.solo_ms;
      break;
  }
  p.profile.sm_active_pct = m.sm_active_pct;
  p.profile.sm_uncertainty = m.sm_uncertainty;
  p.profile.gpu_util_pct = m.gpu_util_pct;
  p.profile.samples_per_s = m.samples_per_s;
  p.profile.rate_uncertainty = m.rate_uncertainty;
  p.profile.startup_ms = m.startup_ms;
  p.profile.source = m.source;
}

std::vector<LearnedProfile> ProfileLearner::profiles() const {
  std::vector<LearnedProfile> out;
  for (const auto& [key, learned] : by_key_) {
    LearnedProfile p = learned;
    if (p.profile.source.empty())
      p.profile.source = fmt::format("store: {}, never alone", count_of(p.runs, "job"));
    out.push_back(std::move(p));
  }
  return out;
}

const LearnedProfile* find_profile(const std::vector<LearnedProfile>& profiles,
                                   const std::string& signature, std::string_view gpu_model,
                                   bool simulated) {
  const std::string model = lower(gpu_model);
  const LearnedProfile* best = nullptr;
  for (const LearnedProfile& p : profiles) {
    if (p.signature != signature || lower(p.gpu_name).find(model) == std::string::npos) continue;
    if (p.simulated && !simulated) continue;
    if (best == nullptr || (p.simulated == simulated && best->simulated != simulated)) best = &p;
  }
  return best;
}

std::vector<PriorSample> prior_samples(const std::vector<LearnedProfile>& learned,
                                       std::string_view gpu_model, bool simulated) {
  std::vector<PriorSample> out;
  std::set<std::string> seen;  // signatures
  for (const LearnedProfile& l : learned) {
    if (!seen.insert(l.signature).second) continue;
    const LearnedProfile* best = find_profile(learned, l.signature, gpu_model, simulated);
    if (best == nullptr || !best->profile.peak_memory_bytes || !best->profile.sm_active_pct)
      continue;
    out.push_back({best->job_name, job_features(best->command), best->profile});
  }
  return out;
}

std::map<std::string, std::vector<FamilyInstance>> family_instances(
    const std::vector<LearnedProfile>& learned, const std::vector<JobSpec>& jobs,
    std::string_view gpu_model, bool simulated) {
  std::map<std::string, std::vector<FamilyInstance>> out;
  std::set<std::string> families;
  for (const JobSpec& job : jobs) {
    if (!job.family.empty()) families.insert(job.family);
  }
  std::set<std::string> seen;  // signatures
  for (const LearnedProfile& l : learned) {
    if (!families.contains(l.family) || !seen.insert(l.signature).second) continue;
    const LearnedProfile* best = find_profile(learned, l.signature, gpu_model, simulated);
    if (best == nullptr) continue;
    out[l.family].push_back({instance_label(best->job_name), best->params, best->profile});
  }
  return out;
}

ProfilesBySignature usable_profiles(
    const ProfilesBySignature& known,
    const std::map<std::string, std::vector<FamilyInstance>>& instances,
    const std::vector<JobSpec>& jobs) {
  return usable_profiles(known, instances, jobs, job_signatures(jobs));
}

ProfilesBySignature usable_profiles(
    const ProfilesBySignature& known,
    const std::map<std::string, std::vector<FamilyInstance>>& instances,
    const std::vector<JobSpec>& jobs, const std::vector<std::string>& signatures) {
  ProfilesBySignature out;
  out.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobSpec& job = jobs[i];
    const std::string& signature = signatures[i];
    auto own = known.find(signature);
    if (own != known.end() && own->second.admissible()) {
      out.try_emplace(signature, own->second);  // the first job of a signature decides
      continue;
    }
    if (out.contains(signature)) continue;
    auto family = instances.find(job.family);
    if (family == instances.end()) continue;
    FamilyEstimate e = estimate_from_family(family->second, job.params, job.resource_params);
    if (!e.profile) continue;
    out[signature] = own != known.end() ? merge_profiles(own->second, *e.profile) : *e.profile;
  }
  return out;
}

std::optional<SoloRate> solo_rate_of(const JobProfile& profile) {
  if (!profile.has_solo_rate()) return std::nullopt;
  return SoloRate{profile.samples_per_s, profile.epoch_ms, "profile (" + profile.source + ")",
                  profile.rate_uncertainty > 0};
}

JobProfile hint_profile(const JobSpec& job) {
  JobProfile p;
  p.peak_memory_bytes = job.gpu_memory_bytes;
  if (job.sm_activity_pct) p.sm_active_pct = *job.sm_activity_pct;
  if (job.gpu_util_pct) p.gpu_util_pct = *job.gpu_util_pct;
  p.solo_ms = job.solo_time_ms;
  p.startup_ms = job.startup_time_ms;
  p.source = "hint: " + job.source;
  return p;
}

ProfilesBySignature known_profiles(const std::vector<LearnedProfile>& learned,
                                   const std::vector<JobSpec>& jobs, std::string_view gpu_model,
                                   bool simulated) {
  return known_profiles(learned, jobs, job_signatures(jobs), gpu_model, simulated);
}

ProfilesBySignature known_profiles(const std::vector<LearnedProfile>& learned,
                                   const std::vector<JobSpec>& jobs,
                                   const std::vector<std::string>& signatures,
                                   std::string_view gpu_model, bool simulated) {
  ProfilesBySignature out;
  out.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobSpec& job = jobs[i];
    const std::string& signature = signatures[i];
    if (out.contains(signature)) continue;
    const LearnedProfile* best = find_profile(learned, signature, gpu_model, simulated);
    JobProfile hint = hint_profile(job);
    if (best == nullptr && !job.gpu_memory_bytes && !job.sm_activity_pct && !job.gpu_util_pct &&
        !job.solo_time_ms && !job.startup_time_ms)
      continue;
    out[signature] = best != nullptr ? merge_profiles(best->profile, hint) : hint;
  }
  return out;
}

bool may_be_collocation(const RunSummary& run) {
  return run.run.state == RunState::kOk && run.jobs.size() >= 2 &&
         (run.run.mechanism == "mps" || run.run.mechanism == "naive") && run.together_gpus == 1;
}

std::optional<Collocation> measured_collocation(const RunSummary& run,
                                                const std::vector<LearnedProfile>& profiles) {
  if (!may_be_collocation(run) || !run.steady_speedup_vs_exclusive) return std::nullopt;
  Collocation c;
  c.mode = run.run.mechanism == "mps" ? ShareMode::kSpatial : ShareMode::kTimeSliced;
  double total = 0;
  for (const JobSummary& job : run.jobs) {
    const LearnedProfile* p =
        find_profile(profiles, job.signature, gpu_name_of(run, job.device), run.run.simulated);
    if (p == nullptr || p->simulated != run.run.simulated || !p->profile.sm_active_pct ||
        !job.normalized_rate)
      return std::nullopt;
    c.jobs.push_back({*p->profile.sm_active_pct, p->profile.gpu_busy_pct()});
    total += *job.normalized_rate;
  }
  c.measured_total = total;
  c.source = fmt::format("run {} ({}, {})", run.run.id, run.run.mechanism,
                         count_of(static_cast<int64_t>(run.jobs.size()), "job"));
  return c;
}

}  // namespace colo
