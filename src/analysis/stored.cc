#include "analysis/stored.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace colo {
namespace {

// A job never measured alone: what the auto policy measured of it in place
// while it ran alone, what its family's measured instances say now, or the
// estimate it was placed by; each labelled estimated. A rate measured beside
// other jobs, and a prior's (another job's), stand for no solo rate.
std::optional<SoloRate> estimated_solo_rate(const JobSummary& job,
                                            const std::vector<LearnedProfile>& known,
                                            std::string_view gpu, bool simulated) {
  auto labelled = [&](const std::optional<double>& rate, const std::string& what) {
    return SoloRate{rate, std::nullopt, fmt::format("estimated for {} ({})", job.name, what), true};
  };
  if (job.probe && job.probe->samples_per_s && job.probe->rate_uncertainty == 0)
    return labelled(job.probe->samples_per_s, "measured where it ran alone");
  if (!job.family.empty()) {
    JobSpec member;
    member.family = job.family;
    for (const auto& [family, instances] : family_instances(known, {member}, gpu, simulated)) {
      FamilyEstimate e = estimate_from_family(instances, job.params, std::nullopt);
      if (e.profile && e.profile->samples_per_s && e.profile->has_solo_rate())
        return labelled(e.profile->samples_per_s, "its family: " + e.profile->source);
    }
  }
  if (job.estimate && job.estimate->samples_per_s && job.estimate->has_solo_rate())
    return labelled(job.estimate->samples_per_s, "the estimate it was placed by");
  return std::nullopt;
}

}  // namespace

Result<RunSummary> analyse_run(RunReader& reader, int64_t run_id,
                               const std::vector<LearnedProfile>* profiles) {
  Result<RunRecord> record = reader.run_record(run_id);
  if (!record.ok()) return record.error();
  return analyse_record(reader, *record, profiles);
}

Result<RunSummary> analyse_record(RunReader& reader, const RunRecord& record,
                                  const std::vector<LearnedProfile>* profiles) {
  RunSummary summary = summarize(record);
  if (summary.run.mechanism == "exclusive") return summary;  // the baseline itself

  std::map<std::string, SoloRate> from_baseline;
  if (!summary.run.jobs_signature.empty()) {
    Result<std::optional<int64_t>> baseline_id = reader.exclusive_baseline(summary.run);
    if (!baseline_id.ok()) return baseline_id.error();
    if (*baseline_id) {
      Result<RunRecord> base = reader.run_record(**baseline_id, MetricSteps::kSkip);
      if (!base.ok())
        return base.error().with_context(fmt::format("baseline run #{}", **baseline_id));
      const RunSummary baseline = summarize(*base);
      compare_end_to_end(summary, baseline);
      from_baseline = solo_rates_of(baseline, fmt::format("exclusive run #{}", baseline.run.id));
    }
  }

  std::optional<std::vector<LearnedProfile>> learned;
  std::vector<std::optional<SoloRate>> solo;
  for (const JobSummary& job : summary.jobs) {
    if (auto it = from_baseline.find(job.signature); it != from_baseline.end()) {
      solo.emplace_back(it->second);
      continue;
    }
    if (profiles == nullptr && !learned) {
      Result<std::vector<LearnedProfile>> l = learn_profiles(reader);
      if (!l.ok()) return l.error().with_context("learning profiles for solo rates");
      learned = std::move(*l);
    }
    const std::vector<LearnedProfile>& known = profiles != nullptr ? *profiles : *learned;
    const LearnedProfile* p =
        find_profile(known, job.signature, gpu_name_of(summary, job.device), summary.run.simulated);
    std::optional<SoloRate> rate = p != nullptr ? solo_rate_of(p->profile) : std::nullopt;
    solo.push_back(rate ? rate
                        : estimated_solo_rate(job, known, gpu_name_of(summary, job.device),
                                              summary.run.simulated));
  }
  apply_solo_rates(summary, solo);
  return summary;
}

Result<std::vector<LearnedProfile>> learn_profiles(RunReader& reader, int max_runs) {
  Result<std::vector<RunRow>> runs = reader.list_runs(max_runs);
  if (!runs.ok()) return runs.error();
  ProfileLearner learner;
  // Oldest first, so later runs overwrite the solo numbers.
  for (auto it = runs->rbegin(); it != runs->rend(); ++it) {
    if (it->state == RunState::kRunning) continue;
    Result<RunRecord> record = reader.run_record(it->id, MetricSteps::kSkip);
    if (!record.ok()) return record.error();
    learner.add(summarize(*record));
  }
  return learner.profiles();
}

Result<std::vector<Collocation>> measured_collocations(RunReader& reader,
                                                       const std::vector<LearnedProfile>& profiles,
                                                       int max_runs) {
  Result<std::vector<RunRow>> runs = reader.list_runs(max_runs);
  if (!runs.ok()) return runs.error();
  std::vector<Collocation> out;
  for (const RunRow& run : *runs) {
    if (run.state != RunState::kOk || run.job_count < 2 ||
        (run.mechanism != "mps" && run.mechanism != "naive"))
      continue;
    Result<RunRecord> record = reader.run_record(run.id, MetricSteps::kSkip);
    if (!record.ok()) return record.error();
    Result<RunSummary> summary = analyse_record(reader, *record, &profiles);
    if (!summary.ok()) return summary.error();
    if (std::optional<Collocation> c = measured_collocation(*summary, profiles))
      out.push_back(std::move(*c));
  }
  return out;
}

Result<InterferenceModel> calibrated_model(RunReader& reader, const InterferenceModel& base,
                                           const std::vector<LearnedProfile>& profiles) {
  Result<std::vector<Collocation>> c = measured_collocations(reader, profiles);
  if (!c.ok()) return c.error();
  return calibrate(base, *c);
}

}  // namespace colo
