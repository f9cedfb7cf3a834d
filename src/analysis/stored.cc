#include "analysis/stored.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/enum_names.h"
#include "common/json_values.h"

namespace colo {
namespace {

using nlohmann::json;

constexpr EnumNames<ProfileContribution::Solo, 3> kSoloNames{
    "solo measurement",
    {{
        {ProfileContribution::Solo::kNone, "none"},
        {ProfileContribution::Solo::kProbe, "probe"},
        {ProfileContribution::Solo::kAlone, "alone"},
    }}};

// A kept body: bytes that are not UTF-8 (a command's argument may hold any)
// are replaced rather than thrown on.
std::string body_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

template <class T>
std::optional<T> optional_at(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

json profile_json(const JobProfile& p) {
  return {{"peak_memory_bytes", value_or_null(p.peak_memory_bytes)},
          {"sm_active_pct", value_or_null(p.sm_active_pct)},
          {"gpu_util_pct", value_or_null(p.gpu_util_pct)},
          {"samples_per_s", value_or_null(p.samples_per_s)},
          {"epoch_ms", value_or_null(p.epoch_ms)},
          {"solo_ms", value_or_null(p.solo_ms)},
          {"startup_ms", value_or_null(p.startup_ms)},
          {"source", p.source},
          {"memory_uncertainty", p.memory_uncertainty},
          {"sm_uncertainty", p.sm_uncertainty},
          {"rate_uncertainty", p.rate_uncertainty}};
}

// Throws nlohmann::json::exception on a body of another shape.
JobProfile parse_profile(const json& j) {
  JobProfile p;
  p.peak_memory_bytes = optional_at<uint64_t>(j, "peak_memory_bytes");
  p.sm_active_pct = optional_at<double>(j, "sm_active_pct");
  p.gpu_util_pct = optional_at<double>(j, "gpu_util_pct");
  p.samples_per_s = optional_at<double>(j, "samples_per_s");
  p.epoch_ms = optional_at<double>(j, "epoch_ms");
  p.solo_ms = optional_at<int64_t>(j, "solo_ms");
  p.startup_ms = optional_at<int64_t>(j, "startup_ms");
  p.source = j.at("source").get<std::string>();
  p.memory_uncertainty = j.at("memory_uncertainty").get<double>();
  p.sm_uncertainty = j.at("sm_uncertainty").get<double>();
  p.rate_uncertainty = j.at("rate_uncertainty").get<double>();
  return p;
}

json contributions_json(const std::vector<ProfileContribution>& contributions) {
  json jobs = json::array();
  for (const ProfileContribution& c : contributions) {
    json estimate = nullptr;
    if (c.estimate) {
      estimate = {{"run_id", c.estimate->run_id},
                  {"job", c.estimate->job_name},
                  {"profile", profile_json(c.estimate->estimate)},
                  {"measured_peak_bytes", value_or_null(c.estimate->measured_peak_bytes)}};
    }
    jobs.push_back({{"signature", c.signature},
                    {"gpu", c.gpu_name},
                    {"simulated", c.simulated},
                    {"job", c.job_name},
                    {"group", c.group},
                    {"family", c.family},
                    {"params", c.params},
                    {"command", c.command},
                    {"peak_memory_bytes", value_or_null(c.peak_memory_bytes)},
                    {"estimate", std::move(estimate)},
                    {"solo", kSoloNames.name(c.solo)},
                    {"measured", profile_json(c.measured)},
                    {"jobs", c.jobs}});
  }
  return jobs;
}

// Throws nlohmann::json::exception on a body of another shape; nullopt for
// an unknown solo name.
std::optional<std::vector<ProfileContribution>> parse_contributions(const json& jobs) {
  std::vector<ProfileContribution> out;
  for (const json& job : jobs) {
    ProfileContribution c;
    c.signature = job.at("signature").get<std::string>();
    c.gpu_name = job.at("gpu").get<std::string>();
    c.simulated = job.at("simulated").get<bool>();
    c.job_name = job.at("job").get<std::string>();
    c.group = job.at("group").get<std::string>();
    c.family = job.at("family").get<std::string>();
    c.params = job.at("params").get<std::map<std::string, std::string>>();
    c.command = job.at("command").get<std::vector<std::string>>();
    c.peak_memory_bytes = optional_at<uint64_t>(job, "peak_memory_bytes");
    if (const json& e = job.at("estimate"); !e.is_null()) {
      c.estimate = LearnedProfile::EstimateCheck{
          e.at("run_id").get<int64_t>(), e.at("job").get<std::string>(),
          parse_profile(e.at("profile")), optional_at<uint64_t>(e, "measured_peak_bytes")};
    }
    Result<ProfileContribution::Solo> solo = kSoloNames.parse(job.at("solo").get<std::string>());
    if (!solo.ok()) return std::nullopt;
    c.solo = *solo;
    c.measured = parse_profile(job.at("measured"));
    c.jobs = job.at("jobs").get<int64_t>();
    out.push_back(std::move(c));
  }
  return out;
}

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

// Each job of `record` that resumes an earlier one (JobRow::resumes) gets its
// history joined across the attempts (lineage.h): JobSummary::history, and
// its metrics over the whole of it.
void join_lineage(RunReader& reader, const RunRecord& record, RunSummary& summary) {
  AttemptRecords records(reader);
  records.lend(record);  // a service job's earlier attempts are often in its own run
  std::map<int64_t, JobSummary*> by_id;
  for (JobSummary& job : summary.jobs) by_id[job.id] = &job;
  for (size_t i = 0; i < record.jobs.size(); ++i) {
    const JobRow& row = record.jobs[i];
    if (!row.resumes) continue;
    std::vector<AttemptHistory> attempts = earlier_attempts(records, row);
    if (attempts.empty()) continue;
    AttemptHistory self{JobRef{record.run.id, row.id}, row.started_ms, {}};
    if (i < record.events.size()) self.events = record.events[i];
    if (i < record.metric_steps.size()) {
      self.events.insert(self.events.end(), record.metric_steps[i].begin(),
                         record.metric_steps[i].end());
    }
    attempts.push_back(std::move(self));
    auto job = by_id.find(row.id);
    if (job == by_id.end()) continue;
    JobSummary& s = *job->second;
    s.history = join_history(attempts, row.lower_is_better);
    s.metrics = s.history->metrics;
    s.diverged = std::any_of(s.metrics.begin(), s.metrics.end(),
                             [](const MetricSeries& m) { return m.diverged; });
  }
}

// The summary of run `run_id` (0: the latest) without comparisons: the
// samples' part from the figures kept of it, else from its samples, then
// kept once it has ended. With the metric steps, each resumed job's history
// is joined (join_lineage).
Result<RunSummary> summarize_stored(RunReader& reader, int64_t run_id, MetricSteps steps) {
  if (run_id == 0) {
    Result<std::vector<RunRow>> latest = reader.list_runs(1);
    if (!latest.ok()) return latest.error();
    if (!latest->empty()) run_id = latest->front().id;  // else run_record says there is none
  }
  std::optional<SampleFigures> figures;
  if (run_id != 0) {
    Result<std::optional<std::string>> kept =
        reader.derived(run_id, kSampleFiguresKind, kSampleFiguresVersion);
    if (!kept.ok()) return kept.error();
    if (*kept) figures = parse_sample_figures(**kept);
  }
  Result<RunRecord> record = reader.run_record(run_id, steps, Samples::kSkip);
  if (!record.ok()) return record.error();
  RunSummary summary = summarize(*record, figures ? &*figures : nullptr);
  if (steps == MetricSteps::kRead) join_lineage(reader, *record, summary);
  if (figures) return summary;
  // The samples, one at a time: a service's run holds millions.
  SampleFigureBuilder builder(summary);
  if (Status read = reader.for_each_sample(summary.run.id, builder); !read.ok())
    return read.error();
  const SampleFigures derived = builder.figures();
  apply_sample_figures(summary, derived);
  // A run that was still running when its record was read changes yet.
  if (summary.run.state != RunState::kRunning) {
    (void)reader.keep_derived(summary.run.id, kSampleFiguresKind, kSampleFiguresVersion,
                              sample_figures_json(derived));
  }
  return summary;
}

// The facts of a run summarized already (RunFacts), kept in the store unless
// it is running.
RunFacts facts_of(RunReader& reader, const RunSummary& summary);

// analyse_record's comparisons, for a summary made.
Result<RunSummary> compare(RunReader& reader, RunSummary summary,
                           const std::vector<LearnedProfile>* profiles) {
  if (summary.run.mechanism == "exclusive") return summary;  // the baseline itself

  std::map<std::string, SoloRate> from_baseline;
  if (!summary.run.jobs_signature.empty()) {
    Result<std::optional<int64_t>> baseline_id = reader.exclusive_baseline(summary.run);
    if (!baseline_id.ok()) return baseline_id.error();
    if (*baseline_id) {
      Result<RunSummary> base = summarize_stored(reader, **baseline_id, MetricSteps::kSkip);
      if (!base.ok())
        return base.error().with_context(fmt::format("baseline run #{}", **baseline_id));
      const RunSummary& baseline = *base;
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
      // The run's own facts from the summary at hand, before learning reads
      // them (a run never derived would be summarized again).
      if (Result<std::optional<std::string>> kept =
              reader.derived(summary.run.id, kRunFactsKind, kRunFactsVersion);
          kept.ok() && !*kept)
        facts_of(reader, summary);
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

}  // namespace

Result<RunSummary> analyse_run(RunReader& reader, int64_t run_id,
                               const std::vector<LearnedProfile>* profiles) {
  Result<RunSummary> summary = summarize_stored(reader, run_id, MetricSteps::kRead);
  if (!summary.ok()) return summary.error();
  return compare(reader, std::move(*summary), profiles);
}

Result<RunSummary> analyse_record(RunReader& reader, const RunRecord& record,
                                  const std::vector<LearnedProfile>* profiles) {
  RunSummary summary = summarize(record);
  join_lineage(reader, record, summary);
  return compare(reader, std::move(summary), profiles);
}

std::string run_facts_json(const RunFacts& facts) {
  return body_text(json{{"may_be_collocation", facts.may_be_collocation},
                        {"jobs", contributions_json(facts.contributions)}});
}

std::optional<RunFacts> parse_run_facts(std::string_view text) {
  try {
    const json j = json::parse(text);
    RunFacts facts;
    facts.may_be_collocation = j.at("may_be_collocation").get<bool>();
    std::optional<std::vector<ProfileContribution>> jobs = parse_contributions(j.at("jobs"));
    if (!jobs) return std::nullopt;
    facts.contributions = std::move(*jobs);
    return facts;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::string sample_figures_json(const SampleFigures& figures) {
  json jobs = json::array();
  for (const SampleFigures::Job& j : figures.jobs) {
    jobs.push_back({{"id", j.id},
                    {"peak_memory_bytes", value_or_null(j.peak_memory_bytes)},
                    {"mean_sm_active_pct", value_or_null(j.mean_sm_active_pct)},
                    {"mean_gpu_util_pct", value_or_null(j.mean_gpu_util_pct)},
                    {"steady_sm_active_pct", value_or_null(j.steady_sm_active_pct)},
                    {"steady_gpu_util_pct", value_or_null(j.steady_gpu_util_pct)},
                    {"energy_j", value_or_null(j.energy_j)}});
  }
  return body_text(json{{"device_samples", figures.device_samples},
                        {"mean_sm_active_pct", value_or_null(figures.mean_sm_active_pct)},
                        {"peak_memory_used_bytes", value_or_null(figures.peak_memory_used_bytes)},
                        {"energy_j", value_or_null(figures.energy_j)},
                        {"jobs", std::move(jobs)}});
}

std::optional<SampleFigures> parse_sample_figures(std::string_view text) {
  try {
    const json j = json::parse(text);
    SampleFigures figures;
    figures.device_samples = j.at("device_samples").get<int64_t>();
    figures.mean_sm_active_pct = optional_at<double>(j, "mean_sm_active_pct");
    figures.peak_memory_used_bytes = optional_at<uint64_t>(j, "peak_memory_used_bytes");
    figures.energy_j = optional_at<double>(j, "energy_j");
    for (const json& job : j.at("jobs")) {
      figures.jobs.push_back(
          {job.at("id").get<int64_t>(), optional_at<uint64_t>(job, "peak_memory_bytes"),
           optional_at<double>(job, "mean_sm_active_pct"),
           optional_at<double>(job, "mean_gpu_util_pct"),
           optional_at<double>(job, "steady_sm_active_pct"),
           optional_at<double>(job, "steady_gpu_util_pct"), optional_at<double>(job, "energy_j")});
    }
    return figures;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

namespace {

RunFacts facts_of(RunReader& reader, const RunSummary& summary) {
  RunFacts facts{fold_contributions(profile_contributions(summary)), may_be_collocation(summary)};
  if (summary.run.state != RunState::kRunning)
    (void)reader.keep_derived(summary.run.id, kRunFactsKind, kRunFactsVersion,
                              run_facts_json(facts));
  return facts;
}

}  // namespace

namespace {

// The contributions of the jobs `ended` of run `run_id` (each ended), by job
// id (none for a job that gives none), derived from the rows of their
// lifetimes alone: profile_contributions of the run restricted to the jobs
// that met them and the samples of that time gives what it gives of them in
// the whole ended run (each job's figures come from its own GPU's readings
// within its lifetime and the jobs running there meanwhile).
Result<std::map<int64_t, std::vector<ProfileContribution>>> contributions_of_ended(
    RunReader& reader, int64_t run_id, const std::vector<JobRow>& ended) {
  std::map<int64_t, std::vector<ProfileContribution>> out;
  std::optional<UnixMillis> from;
  std::optional<UnixMillis> to;
  for (const JobRow& job : ended) {
    out[job.id];
    if (!job.started_ms) continue;  // never ran: gives nothing
    from = std::min(from.value_or(*job.started_ms), *job.started_ms);
    const UnixMillis end = std::max(job.ended_ms.value_or(*job.started_ms), *job.started_ms);
    to = std::max(to.value_or(end), end);
  }
  if (!from) return out;
  Result<RunRecord> record = reader.run_window(run_id, *from, *to);
  if (!record.ok()) return record.error();
  // Its jobs are derived as they would be once it ended (contributions are
  // none while a run runs); the jobs still running count until its end.
  if (record->run.state == RunState::kRunning) record->run.state = RunState::kOk;
  RunSummary summary = summarize(*record);
  SampleFigureBuilder builder(summary);
  if (Status read = reader.for_each_sample_between(run_id, *from, *to, builder); !read.ok())
    return read.error();
  apply_sample_figures(summary, builder.figures());
  std::vector<int64_t> ids;
  std::vector<ProfileContribution> all = profile_contributions(summary, &ids);
  for (size_t i = 0; i < all.size(); ++i) {
    if (auto it = out.find(ids[i]); it != out.end()) it->second.push_back(std::move(all[i]));
  }
  return out;
}

// Brings `part` up to what the store holds of run `run_id`: the jobs that
// ended since are derived and folded in. `changed` says whether it moved.
// `head_folded`: the head's size when it was last folded whole; it is folded
// again once it doubled (a run of distinct signatures folds nothing away).
// `derived_jobs` counts the jobs derived. Nothing of `part` changes on an
// error.
Status advance_part(RunReader& reader, int64_t run_id, RunFactsKeeper::Part& part,
                    UnixMillis ended_before_ms, size_t& head_folded, int64_t& derived_jobs,
                    bool& changed) {
  using Segment = RunFactsKeeper::Segment;
  changed = false;
  Result<std::vector<JobRow>> rows = reader.job_ends(run_id, part.through_id);
  if (!rows.ok()) return rows.error();
  // The segment kept that holds job `id`, if any.
  auto kept_segment = [&](int64_t id) -> const Segment* {
    auto it = std::upper_bound(part.rest.begin(), part.rest.end(), id,
                               [](int64_t v, const Segment& s) { return v < s.first_id; });
    if (it == part.rest.begin()) return nullptr;
    --it;
    return id <= it->last_id ? &*it : nullptr;
  };
  // Jobs that ended since `ended_before_ms` count as open this time (those
  // kept already stay kept, should the clock have stepped back).
  for (JobRow& row : *rows) {
    if (is_final(row.state) && row.ended_ms && *row.ended_ms >= ended_before_ms &&
        kept_segment(row.id) == nullptr)
      row.state = JobState::kRunning;
  }
  std::vector<JobRow> ended;
  for (const JobRow& row : *rows) {
    if (is_final(row.state) && kept_segment(row.id) == nullptr) ended.push_back(row);
  }
  if (ended.empty()) return OkStatus();
  Result<std::map<int64_t, std::vector<ProfileContribution>>> derived =
      contributions_of_ended(reader, run_id, ended);
  if (!derived.ok()) return derived.error();

  // Runs of consecutive ended jobs, in job order.
  std::vector<Segment> runs;
  bool open = false;
  for (const JobRow& row : *rows) {
    if (!is_final(row.state)) {
      open = false;
      continue;
    }
    if (!open) runs.push_back(Segment{row.id, row.id, {}});
    open = true;
    Segment& current = runs.back();
    current.last_id = row.id;
    if (const Segment* kept = kept_segment(row.id)) {
      if (kept->first_id == row.id)
        current.contributions.insert(current.contributions.end(), kept->contributions.begin(),
                                     kept->contributions.end());
      continue;
    }
    std::vector<ProfileContribution>& of_job = (*derived)[row.id];
    for (ProfileContribution& c : of_job) current.contributions.push_back(std::move(c));
  }
  for (const JobRow& job : ended) {
    if (!job.started_ms || part.devices.size() >= 2) continue;
    const int device = job.device.value_or(-1);
    if (std::find(part.devices.begin(), part.devices.end(), device) == part.devices.end())
      part.devices.push_back(device);
  }
  // The run that starts right after the head joins it.
  size_t first_rest = 0;
  if (!runs.empty() && runs.front().first_id == rows->front().id) {
    for (ProfileContribution& c : fold_contributions(std::move(runs.front().contributions)))
      part.head.push_back(std::move(c));
    if (part.head.size() >= 2 * std::max<size_t>(head_folded, 64)) {
      part.head = fold_contributions(std::move(part.head));
      head_folded = part.head.size();
    }
    part.through_id = runs.front().last_id;
    first_rest = 1;
  }
  derived_jobs += static_cast<int64_t>(ended.size());
  part.rest.clear();
  for (size_t i = first_rest; i < runs.size(); ++i) {
    runs[i].contributions = fold_contributions(std::move(runs[i].contributions));
    part.rest.push_back(std::move(runs[i]));
  }
  changed = true;
  return OkStatus();
}

// The facts of ended run `run` from the part kept while it ran, brought up
// to its end; nullopt when none is kept (or a job of it is still open).
Result<std::optional<RunFacts>> facts_from_part(RunReader& reader, const RunRow& run) {
  const int64_t run_id = run.id;
  Result<std::optional<std::string>> kept =
      reader.derived(run_id, kRunFactsPartKind, kRunFactsPartVersion);
  if (!kept.ok()) return kept.error();
  if (!*kept) return std::optional<RunFacts>();
  std::optional<RunFactsKeeper::Part> part = parse_run_facts_part(**kept);
  if (!part) return std::optional<RunFacts>();
  bool changed = false;
  size_t head_folded = part->head.size();
  int64_t derived_jobs = 0;
  if (Status s = advance_part(reader, run_id, *part, std::numeric_limits<UnixMillis>::max(),
                              head_folded, derived_jobs, changed);
      !s.ok())
    return s.error();
  if (!part->rest.empty()) return std::optional<RunFacts>();
  if (Result<std::vector<JobRow>> open = reader.job_ends(run_id, part->through_id); !open.ok()) {
    return open.error();
  } else if (!open->empty()) {
    return std::optional<RunFacts>();
  }
  RunFacts facts;
  facts.contributions = fold_contributions(std::move(part->head));
  // Jobs that ran on two GPUs or more are no measured collocation, whatever
  // else, nor is a run that did not end ok under mps or naive (its row says:
  // may_be_collocation); otherwise the run's own rows say (no samples
  // needed). A service killed on one GPU is not read whole.
  if (part->devices.size() < 2 && run.state == RunState::kOk &&
      (run.mechanism == "mps" || run.mechanism == "naive")) {
    Result<RunRecord> record = reader.run_record(run_id, MetricSteps::kSkip, Samples::kSkip);
    if (!record.ok()) return record.error();
    facts.may_be_collocation = may_be_collocation(summarize(*record));
  }
  return std::optional<RunFacts>(std::move(facts));
}

}  // namespace

RunFactsKeeper::RunFactsKeeper(RunReader& reader, int64_t run_id)
    : reader_(reader), run_id_(run_id) {}

Status RunFactsKeeper::update(UnixMillis ended_before_ms) {
  bool changed = false;
  int64_t derived_jobs = 0;
  if (Status s = advance_part(reader_, run_id_, part_, ended_before_ms, head_folded_, derived_jobs,
                              changed);
      !s.ok())
    return s;
  unkept_jobs_ += derived_jobs;
  if (!changed) return OkStatus();
  // Written again once the jobs derived since are a tenth of what it holds:
  // a run of 100,000 distinct signatures writes each contribution about ten
  // times in all, not once every keep (the jobs not kept yet are derived
  // again, each from its own rows, by the first read after a crash).
  size_t held = part_.head.size();
  for (const Segment& segment : part_.rest) held += segment.contributions.size();
  if (kept_once_ && unkept_jobs_ * 10 < static_cast<int64_t>(held)) return OkStatus();
  if (Status s = reader_.keep_derived(run_id_, kRunFactsPartKind, kRunFactsPartVersion,
                                      run_facts_part_json(part_));
      !s.ok())
    return s;
  kept_once_ = true;
  unkept_jobs_ = 0;
  return OkStatus();
}

std::string run_facts_part_json(const RunFactsKeeper::Part& part) {
  json rest = json::array();
  for (const RunFactsKeeper::Segment& s : part.rest) {
    rest.push_back({{"first_id", s.first_id},
                    {"last_id", s.last_id},
                    {"jobs", contributions_json(s.contributions)}});
  }
  return body_text(json{{"through_id", part.through_id},
                        {"head", contributions_json(part.head)},
                        {"rest", std::move(rest)},
                        {"devices", part.devices}});
}

std::optional<RunFactsKeeper::Part> parse_run_facts_part(std::string_view text) {
  try {
    const json j = json::parse(text);
    RunFactsKeeper::Part part;
    part.through_id = j.at("through_id").get<int64_t>();
    std::optional<std::vector<ProfileContribution>> head = parse_contributions(j.at("head"));
    if (!head) return std::nullopt;
    part.head = std::move(*head);
    for (const json& s : j.at("rest")) {
      std::optional<std::vector<ProfileContribution>> jobs = parse_contributions(s.at("jobs"));
      if (!jobs) return std::nullopt;
      part.rest.push_back(RunFactsKeeper::Segment{
          s.at("first_id").get<int64_t>(), s.at("last_id").get<int64_t>(), std::move(*jobs)});
    }
    part.devices = j.at("devices").get<std::vector<int>>();
    return part;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

Result<RunFacts> run_facts(RunReader& reader, int64_t run_id) {
  Result<std::optional<std::string>> kept = reader.derived(run_id, kRunFactsKind, kRunFactsVersion);
  if (!kept.ok()) return kept.error();
  if (*kept) {
    if (std::optional<RunFacts> facts = parse_run_facts(**kept)) return std::move(*facts);
  }
  if (Result<RunRow> run = reader.run_row(run_id); run.ok() && run->state != RunState::kRunning) {
    Result<std::optional<RunFacts>> from_part = facts_from_part(reader, *run);
    if (!from_part.ok()) return from_part.error();
    if (*from_part) {
      (void)reader.keep_derived(run_id, kRunFactsKind, kRunFactsVersion,
                                run_facts_json(**from_part));
      return std::move(**from_part);
    }
  }
  Result<RunSummary> summary = summarize_stored(reader, run_id, MetricSteps::kSkip);
  if (!summary.ok()) return summary.error();
  return facts_of(reader, *summary);
}

Status keep_run_derivations(RunReader& reader, int64_t run_id) {
  Result<RunSummary> summary = summarize_stored(reader, run_id, MetricSteps::kSkip);
  if (!summary.ok()) return summary.error();
  if (summary->run.state == RunState::kRunning)
    return Error(fmt::format("run {} is still running: what it derives would change", run_id));
  if (Result<RunFacts> facts = run_facts(reader, run_id); !facts.ok()) return facts.error();
  for (auto [kind, version] : {std::pair{kSampleFiguresKind, kSampleFiguresVersion},
                               std::pair{kRunFactsKind, kRunFactsVersion}}) {
    Result<std::optional<std::string>> kept = reader.derived(run_id, kind, version);
    if (!kept.ok()) return kept.error();
    if (!*kept)
      return Error(
          fmt::format("what colo derives of run {} could not be kept in the store (it is "
                      "read-only, or locked by another colo): try again",
                      run_id));
  }
  return OkStatus();
}

Result<std::vector<LearnedProfile>> learn_profiles(RunReader& reader, int max_runs) {
  Result<std::vector<RunRow>> runs = reader.list_run_rows(max_runs);
  if (!runs.ok()) return runs.error();
  ProfileLearner learner;
  // Oldest first, so later runs overwrite the solo numbers.
  for (auto it = runs->rbegin(); it != runs->rend(); ++it) {
    if (it->state == RunState::kRunning) continue;
    Result<RunFacts> facts = run_facts(reader, it->id);
    if (!facts.ok()) return facts.error();
    for (const ProfileContribution& c : facts->contributions) learner.add(c);
  }
  return learner.profiles();
}

Result<std::vector<Collocation>> measured_collocations(RunReader& reader,
                                                       const std::vector<LearnedProfile>& profiles,
                                                       int max_runs) {
  // Rows without their job counts: a run of fewer than two jobs is no
  // collocation by its facts (may_be_collocation), kept by learning already.
  Result<std::vector<RunRow>> runs = reader.list_run_rows(max_runs);
  if (!runs.ok()) return runs.error();
  std::vector<Collocation> out;
  for (const RunRow& run : *runs) {
    if (run.state != RunState::kOk || (run.mechanism != "mps" && run.mechanism != "naive"))
      continue;
    Result<RunFacts> facts = run_facts(reader, run.id);
    if (!facts.ok()) return facts.error();
    if (!facts->may_be_collocation) continue;
    Result<RunSummary> stored = summarize_stored(reader, run.id, MetricSteps::kSkip);
    if (!stored.ok()) return stored.error();
    Result<RunSummary> summary = compare(reader, std::move(*stored), &profiles);
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
