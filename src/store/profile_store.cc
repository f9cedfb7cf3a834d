// The profile half of RunStore (declared in run_store.h): what earlier runs
// measured about each job signature, for the auto policy and `colo
// simulate`. Built from run summaries, so the numbers are the ones `colo
// show` prints.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "store/run_store.h"

namespace colo {
namespace {

// The GPU name of device `index` in a run's devices_json, or "".
std::string gpu_name(const std::string& devices_json, int index) {
  nlohmann::json list = nlohmann::json::parse(devices_json, nullptr, false);
  if (!list.is_array()) return "";
  for (const nlohmann::json& d : list) {
    if (d.is_object() && d.value("index", -1) == index) return d.value("name", "");
  }
  return "";
}

// True when no other job of the run shared `job`'s device while it ran.
bool ran_alone(const JobSummary& job, const RunSummary& run) {
  if (!job.device || !job.started_ms || !job.ended_ms) return false;
  return std::none_of(run.jobs.begin(), run.jobs.end(), [&](const JobSummary& other) {
    return other.id != job.id && other.device == job.device && other.started_ms &&
           *other.started_ms < *job.ended_ms &&
           other.ended_ms.value_or(std::numeric_limits<UnixMillis>::max()) > *job.started_ms;
  });
}

}  // namespace

Result<std::vector<StoredProfile>> RunStore::learned_profiles(int max_runs) {
  Result<std::vector<RunRow>> runs = list_runs(max_runs);
  if (!runs.ok()) return runs.error();
  auto devices = Statement::prepare(db_.get(), path_, "SELECT devices_json FROM runs WHERE id = ?");
  if (!devices.ok()) return devices.error();

  std::map<std::pair<std::string, std::string>, StoredProfile> by_key;
  // Oldest first, so later runs overwrite the solo numbers.
  for (auto it = runs->rbegin(); it != runs->rend(); ++it) {
    if (it->state == RunState::kRunning) continue;
    Result<RunSummary> summary = summarize(it->id, /*with_baseline=*/false);
    if (!summary.ok()) return summary.error();
    devices->bind(1, it->id);
    auto row = devices->step();
    if (!row.ok()) return row.error();
    std::string json = *row ? devices->text_at(0) : "[]";
    devices->reset();
    for (const JobSummary& job : summary->jobs) {
      if (job.state != JobState::kOk || job.signature.empty() || !job.device) continue;
      std::string gpu = gpu_name(json, *job.device);
      StoredProfile& p = by_key[{job.signature, gpu}];
      p.signature = job.signature;
      p.gpu_name = gpu;
      p.simulated = it->simulated;
      p.runs += 1;
      if (job.peak_memory_bytes) {
        p.profile.peak_memory_bytes =
            std::max(p.profile.peak_memory_bytes.value_or(0), *job.peak_memory_bytes);
      }
      if (!ran_alone(job, *summary)) continue;
      p.job_name = job.name;
      p.group = job.group;
      // The steady epochs' load; the whole job's mean counts start-up, when
      // the GPU idles (resnet26 on the H200: 8% over the job, 15% working).
      const bool steady = job.steady_sm_active_pct.has_value();
      p.profile.sm_active_pct = steady ? job.steady_sm_active_pct : job.mean_sm_active_pct;
      p.profile.gpu_util_pct = steady ? job.steady_gpu_util_pct : job.mean_gpu_util_pct;
      p.profile.samples_per_s =
          job.steady_throughput_per_s ? job.steady_throughput_per_s : job.throughput_per_s;
      p.profile.solo_ms = job.duration_ms;
      // Start-up: the first epoch took this much longer than a steady one.
      if (job.started_ms && job.steady_start_ms && job.mean_epoch_ms) {
        p.profile.startup_ms = std::max<int64_t>(
            0, *job.steady_start_ms - *job.started_ms - static_cast<int64_t>(*job.mean_epoch_ms));
      }
      p.profile.source = fmt::format("store: run {} job {} ({}, alone{})", it->id, job.id,
                                     it->mechanism, it->simulated ? ", simulated" : "");
    }
  }
  std::vector<StoredProfile> out;
  for (auto& [key, p] : by_key) {
    if (p.profile.source.empty())
      p.profile.source = fmt::format("store: {} jobs, never alone", p.runs);
    out.push_back(std::move(p));
  }
  return out;
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

std::map<std::string, JobProfile> known_profiles(const std::vector<StoredProfile>& stored,
                                                 const std::vector<JobSpec>& jobs,
                                                 std::string_view gpu_model, bool simulated) {
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string model = lower(gpu_model);
  std::map<std::string, JobProfile> out;
  for (const JobSpec& job : jobs) {
    const std::string signature = job_signature(job);
    if (out.contains(signature)) continue;
    const StoredProfile* best = nullptr;
    for (const StoredProfile& sp : stored) {
      if (sp.signature != signature || lower(sp.gpu_name).find(model) == std::string::npos)
        continue;
      if (sp.simulated && !simulated) continue;
      if (best == nullptr || (sp.simulated == simulated && best->simulated != simulated))
        best = &sp;
    }
    JobProfile hint = hint_profile(job);
    JobProfile merged = best != nullptr ? merge_profiles(best->profile, hint) : hint;
    if (best == nullptr && !job.gpu_memory_bytes && !job.sm_activity_pct && !job.gpu_util_pct &&
        !job.solo_time_ms && !job.startup_time_ms)
      continue;
    out[signature] = merged;
  }
  return out;
}

Result<std::vector<Collocation>> RunStore::measured_collocations(
    const std::vector<StoredProfile>& profiles, int max_runs) {
  Result<std::vector<RunRow>> runs = list_runs(max_runs);
  if (!runs.ok()) return runs.error();
  std::vector<Collocation> out;
  for (const RunRow& run : *runs) {
    if (run.state != RunState::kOk || run.job_count < 2 ||
        (run.mechanism != "mps" && run.mechanism != "naive"))
      continue;
    Result<RunSummary> summary = summarize(run.id, /*with_baseline=*/false);
    if (!summary.ok()) return summary.error();
    const std::vector<JobSummary>& jobs = summary->jobs;
    if (!summary->steady_throughput_per_s || jobs.empty() ||
        std::any_of(jobs.begin(), jobs.end(), [&](const JobSummary& j) {
          return j.signature != jobs.front().signature || j.device != jobs.front().device;
        }))
      continue;
    auto p = std::find_if(profiles.begin(), profiles.end(), [&](const StoredProfile& sp) {
      return sp.signature == jobs.front().signature && sp.simulated == run.simulated &&
             sp.profile.samples_per_s && sp.profile.sm_active_pct;
    });
    if (p == profiles.end()) continue;
    Collocation c;
    c.mode = run.mechanism == "mps" ? ShareMode::kSpatial : ShareMode::kTimeSliced;
    c.jobs.assign(jobs.size(), SoloLoad{*p->profile.sm_active_pct, p->profile.gpu_busy_pct()});
    c.measured_total = *summary->steady_throughput_per_s / *p->profile.samples_per_s;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace colo
