#include "report/text_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "analysis/training_metrics.h"
#include "common/text.h"
#include "common/units.h"
#include "jobs/job_spec_json.h"
#include "jobs/progress_event.h"
#include "report/table.h"
#include "report/text_cells.h"

namespace colo {
namespace {

using Align = TextTable::Align;

std::string backend_label(const RunRow& run) {
  return run.simulated ? run.backend + " (simulated)" : run.backend;
}

std::string fixed1(double value) { return fmt::format("{:.1f}", value); }

std::string duration(double ms) { return format_duration_ms(std::llround(ms)); }

template <class T>
nlohmann::json nullable(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// The grid parameters and metric names of a run's jobs, in name order.
std::vector<std::string> param_names(const RunSummary& summary) {
  std::set<std::string> names;
  for (const JobSummary& j : summary.jobs)
    for (const auto& [k, v] : j.params) names.insert(k);
  return {names.begin(), names.end()};
}
std::vector<std::string> metric_names(const RunSummary& summary) {
  std::set<std::string> names;
  for (const JobSummary& j : summary.jobs)
    for (const MetricSeries& m : j.metrics) names.insert(m.name);
  return {names.begin(), names.end()};
}

}  // namespace

std::string format_runs_table(const std::vector<RunRow>& runs,
                              const std::map<int64_t, std::vector<SubmissionRow>>& submissions) {
  if (runs.empty()) return "no runs recorded yet; start one with `colo run <jobs.toml>`\n";
  const bool named =
      !submissions.empty() || std::any_of(runs.begin(), runs.end(), [](const RunRow& r) {
        return !r.label.name.empty() || !r.label.tags.empty() || r.resumes_run || r.resumed_by;
      });
  // The NAME cell: the label, then the lineage `colo show` details.
  const auto name_cell = [](const RunLabel& label, const std::string& resumes,
                            const std::string& resumed_by) {
    std::vector<std::string> parts;
    if (!label.name.empty() || !label.tags.empty()) parts.push_back(label_text(label));
    if (!resumes.empty()) parts.push_back("(resumes " + resumes + ")");
    if (!resumed_by.empty()) parts.push_back("(resumed by " + resumed_by + ")");
    return parts.empty() ? label_text(label) : fmt::format("{}", fmt::join(parts, " "));
  };
  const auto sub_text = [](const std::optional<SubmissionRef>& ref) {
    if (!ref) return std::string();
    return ref->run_id ? fmt::format("{}/{}", *ref->run_id, ref->id) : std::to_string(ref->id);
  };
  const auto run_text = [](const std::optional<int64_t>& id) {
    return id ? "run " + std::to_string(*id) : std::string();
  };
  std::vector<TextTable::Column> columns = {{"ID", Align::kRight}};
  if (named) columns.push_back({"NAME"});
  for (std::string header : {"STARTED", "STATE", "MECHANISM", "BACKEND"})
    columns.push_back({header});
  columns.push_back({"JOBS", Align::kRight});
  columns.push_back({"JOB FILE"});
  TextTable table(std::move(columns));
  const auto add = [&](std::vector<std::string> first, std::vector<std::string> rest) {
    if (named) first.push_back(rest.front());
    first.insert(first.end(), rest.begin() + 1, rest.end());
    table.add_row(std::move(first));
  };
  for (const RunRow& run : runs) {
    add({std::to_string(run.id)},
        {name_cell(run.label, run_text(run.resumes_run), run_text(run.resumed_by)),
         format_local_time(run.started_ms, "%Y-%m-%d %H:%M"), to_string(run.state), run.mechanism,
         backend_label(run),
         run.jobs_not_ok > 0 ? fmt::format("{} ({} not ok)", run.job_count, run.jobs_not_ok)
                             : std::to_string(run.job_count),
         run.job_file.empty() ? kAbsentText : run.job_file});
    auto subs = submissions.find(run.id);
    if (subs == submissions.end()) continue;
    for (const SubmissionRow& sub : subs->second) {
      add({fmt::format("{}/{}", run.id, sub.id)},
          {name_cell(sub.label, sub_text(sub.resumes_submission), sub_text(sub.resumed_by)),
           format_local_time(sub.submitted_ms, "%Y-%m-%d %H:%M"), "submission",
           "by " + sub.owner_name, "", std::to_string(sub.jobs),
           sub.job_file.empty() ? kAbsentText : sub.job_file});
    }
  }
  return table.render();
}

namespace {

// A label's "Name ..." and "Note ..." lines, each when it says something.
std::string label_lines(const RunLabel& label) {
  std::string out;
  if (!label.name.empty() || !label.tags.empty()) out += "Name " + label_text(label) + "\n";
  // A note is anyone's text of any length: a screenful at most here.
  if (!label.note.empty()) {
    out += "Note " + shorten_text(label.note, 5, 500, "`colo show --json` has it whole") + "\n";
  }
  return out;
}

// "Resumes run 4 ..." and "Resumed by run 5 ...", each when it holds, for a
// run or a submission (`what`), whose ids `target` writes as `colo show`
// takes them.
template <typename Id, typename Target>
std::string lineage_lines(std::string_view what, const std::optional<Id>& resumes,
                          const std::optional<Id>& resumed_by, const Target& target) {
  std::string out;
  if (resumes) {
    out += fmt::format(
        "Resumes {} {}: its jobs' epochs and metrics continue that {}'s (one history; `colo "
        "show {}` for that attempt alone)\n",
        what, target(*resumes), what, target(*resumes));
  }
  if (resumed_by) {
    out += fmt::format(
        "Resumed by {} {}: `colo show {}` joins this {}'s epochs and metrics with its own\n", what,
        target(*resumed_by), target(*resumed_by), what);
  }
  return out;
}

// A resumed job's note: which attempts its history joins.
std::string history_note(const JobSummary& job, int64_t run_id) {
  if (!job.history || job.history->parts.size() < 2) return "";
  std::vector<std::string> parts;
  for (const HistoryPart& p : job.history->parts) {
    std::string epochs = p.epochs == 0 ? "no epochs"
                         : p.first_epoch && p.last_epoch
                             ? (*p.first_epoch == *p.last_epoch
                                    ? fmt::format("epoch {}", *p.first_epoch)
                                    : fmt::format("epochs {}-{}", *p.first_epoch, *p.last_epoch))
                             : fmt::format("{} epoch{}", p.epochs, p.epochs == 1 ? "" : "s");
    parts.push_back(p.job.run_id == run_id && p.job.job_id == job.id
                        ? epochs + " here"
                        : fmt::format("{} in run {} (job {})", epochs, p.job.run_id, p.job.job_id));
  }
  return fmt::format(
      "note: {} resumes an earlier attempt: one history of {}, {}; its metrics' last and "
      "best are over all of them\n",
      job.name, count_of(static_cast<int64_t>(job.history->epoch_ends.size()), "epoch"),
      fmt::join(parts, ", "));
}

// The lines that name the run: its id, state, mechanism, backend, start and
// job file; its label; the submission shown, a Slurm job, a SIMULATED banner.
std::string run_header_text(const RunSummary& summary) {
  const RunRow& run = summary.run;
  std::string out =
      fmt::format("Run #{}  {}  mechanism {}  backend {}  started {}", run.id, to_string(run.state),
                  run.mechanism, backend_label(run), format_local_datetime(run.started_ms));
  if (!run.job_file.empty()) out += "  job file " + run.job_file;
  out += "\n";
  out += label_lines(run.label);
  out += lineage_lines("run", run.resumes_run, run.resumed_by,
                       [](int64_t id) { return std::to_string(id); });
  if (const std::optional<SubmissionRow>& sub = summary.submission) {
    out += fmt::format(
        "Submission {}/{}  by {}  submitted {}{}: its {} here (a service's run holds every "
        "submission; `colo show {}` for all of them)\n",
        run.id, sub->id, sub->owner_name, format_local_datetime(sub->submitted_ms),
        sub->job_file.empty() ? "" : "  job file " + sub->job_file,
        summary.jobs.size() == 1 ? "1 job" : fmt::format("{} jobs", summary.jobs.size()), run.id);
    out += label_lines(sub->label);
    out += lineage_lines(
        "submission", sub->resumes_submission, sub->resumed_by, [](const SubmissionRef& s) {
          return s.run_id ? fmt::format("{}/{}", *s.run_id, s.id) : std::to_string(s.id);
        });
  }
  if (!run.slurm.job_id.empty()) {
    out += fmt::format("Slurm job {}{} on {}{}\n", run.slurm.job_id,
                       run.slurm.step.empty() ? "" : " step " + run.slurm.step, run.slurm.node,
                       run.slurm.restart_count > 0
                           ? fmt::format(" (requeued {} times before)", run.slurm.restart_count)
                           : "");
  }
  if (run.simulated) {
    out +=
        "SIMULATED: these numbers come from colo's simulated GPU, not from measurements on a "
        "real one\n";
  }
  return out;
}

// One row per job, what the jobs learned, and notes on their progress lines.
std::string job_table_text(const RunSummary& summary) {
  if (summary.jobs.empty()) return "no jobs recorded for this run\n";
  TextTable table({{"JOB"},
                   {"STATE"},
                   {"GPU", Align::kRight},
                   {"START"},
                   {"DURATION", Align::kRight},
                   {"EPOCHS", Align::kRight},
                   {"EPOCH TIME", Align::kRight},
                   {"SAMPLES/S", Align::kRight},
                   {"PEAK MEM", Align::kRight},
                   {"SM %", Align::kRight},
                   {"ENERGY J", Align::kRight},
                   {"HOST CPU", Align::kRight},
                   {"HOST MEM", Align::kRight},
                   {"SLOWDOWN", Align::kRight},
                   {"REASON"}});
  for (const JobSummary& job : summary.jobs) {
    const bool ok = job.state == JobState::kOk;
    table.add_row({
        job.name,
        to_string(job.state),
        job.gpus.empty() ? or_absent(job.device, [](int d) { return std::to_string(d); })
                         : job.gpus,
        or_absent(job.started_ms, format_local_time_of_day),
        or_absent(job.duration_ms, [](int64_t ms) { return format_duration_ms(ms); }),
        job.started_ms || job.epochs > 0 ? std::to_string(job.epochs) : kAbsentText,
        or_absent(job.mean_epoch_ms, duration),
        or_absent(job.throughput_per_s, fixed1),
        or_absent(job.peak_memory_bytes, format_bytes),
        or_absent(job.mean_sm_active_pct, fixed1),
        or_absent(job.energy_j, fixed1),
        or_absent(job.usage.cpu_ms, [](int64_t ms) { return format_duration_ms(ms); }),
        or_absent(job.usage.memory_peak_bytes, format_bytes),
        or_absent(job.slowdown, [](double v) { return fmt::format("{:.2f}x", v); }),
        ok ? (job.attempts > 1 ? fmt::format("on attempt {}", job.attempts) : "")
           : (job.reason.empty() ? kAbsentText : job.reason),
    });
  }
  std::string out = table.render();
  out += format_learning_table(summary);
  for (const JobSummary& job : summary.jobs) {
    out += history_note(job, summary.run.id);
    if (job.malformed_progress_lines > 0) {
      out +=
          fmt::format("note: {} ignored {} malformed progress line{}\n", job.name,
                      job.malformed_progress_lines, job.malformed_progress_lines == 1 ? "" : "s");
    }
    if (job.qos == QosClass::kProtected) {
      out += format_floor_note(job);
    } else if (job.qos == QosClass::kOpportunistic) {
      out += fmt::format("note: {} is opportunistic: it fills what the others leave\n", job.name);
    }
    if (job.progress_throttled) {
      out += fmt::format("note: {}'s progress was throttled: {} (see docs/job-file.md)\n", job.name,
                         job.progress_throttled->describe());
    }
    if (!job.objective.empty()) {
      std::vector<std::string> reported;
      for (const MetricSeries& m : job.metrics) reported.push_back(m.name);
      if (std::optional<std::string> w = objective_not_reported(job.objective, job.name, reported))
        out += "warning: " + *w + "\n";
    }
  }
  return out;
}

// The run's totals: makespan, throughput, steady throughput, SM activity,
// memory and energy.
std::string run_totals_text(const RunSummary& summary) {
  std::string throughput = or_absent(summary.throughput_per_s,
                                     [](double v) { return fmt::format("{:.1f} samples/s", v); });
  if (summary.total_samples) {
    throughput += fmt::format(" ({} samples)", *summary.total_samples);
  }
  std::string out = fmt::format(
      "makespan:           {}\n",
      or_absent(summary.makespan_ms, [](int64_t ms) { return format_duration_ms(ms); }));
  out += fmt::format("throughput:         {}\n", throughput);
  std::string steady = or_absent(summary.steady_throughput_per_s,
                                 [](double v) { return fmt::format("{:.1f} samples/s", v); });
  if (summary.steady_throughput_per_s && summary.together) {
    steady += fmt::format(" (while the jobs ran together: {:.1f} s from {}, start-up excluded)",
                          static_cast<double>(summary.together->length_ms()) / 1000.0,
                          format_local_time_of_day(summary.together->start_ms));
  } else if (summary.steady_throughput_per_s) {
    steady += " (epochs 2+ of each job, start-up excluded)";
  } else if (!summary.steady_note.empty()) {
    steady += " (" + summary.steady_note + ")";
  }
  out += fmt::format("steady throughput:  {}\n", steady);
  out += fmt::format(
      "mean SM activity:   {}\n",
      or_absent(summary.mean_sm_active_pct, [](double v) { return fmt::format("{:.1f} %", v); }));
  out += fmt::format("peak GPU memory:    {}\n",
                     or_absent(summary.peak_memory_used_bytes, format_bytes));
  out +=
      fmt::format("energy:             {}\n",
                  or_absent(summary.energy_j, [](double v) { return fmt::format("{:.1f} J", v); }));
  return out;
}

// How long each MIG instance was busy and idle; "" without instances.
std::string mig_instances_text(const RunSummary& summary) {
  if (summary.instances.empty() || !summary.makespan_ms) return "";
  const double makespan_s = static_cast<double>(*summary.makespan_ms) / 1000.0;
  const double idle_s = static_cast<double>(summary.idle_instance_ms.value_or(0)) / 1000.0;
  const double total_s = makespan_s * static_cast<double>(summary.instances.size());
  std::string out = fmt::format(
      "idle MIG instances: {:.1f} instance-seconds of {:.1f} ({:.0f}%) had no job running\n",
      idle_s, total_s, total_s > 0 ? 100.0 * idle_s / total_s : 0.0);
  TextTable table({{"MIG INSTANCE"},
                   {"JOBS", Align::kRight},
                   {"BUSY", Align::kRight},
                   {"IDLE", Align::kRight}});
  for (const InstanceUsage& u : summary.instances) {
    // "3g.40gb gi1 ci0 MIG-..." is shown without the UUID.
    const std::string label = u.instance.substr(0, u.instance.find(" MIG-"));
    table.add_row({label, std::to_string(u.jobs), format_duration_ms(u.busy_ms),
                   format_duration_ms(u.idle_ms)});
  }
  return out + table.render();
}

// The speed-ups over the exclusive run of the same jobs and the normalized
// throughput, or why there are none.
std::string speedups_text(const RunSummary& summary) {
  const RunRow& run = summary.run;
  if (run.mechanism == "exclusive") {
    return "speed-up:           - (this run is exclusive: it is the baseline for runs of the same "
           "jobs)\n";
  }
  auto ratio = [](double v) { return fmt::format("{:.2f}x", v); };
  std::string out;
  if (summary.baseline_run_id) {
    out += fmt::format("speed-up end to end: {} over exclusive run #{} of the same jobs\n",
                       or_absent(summary.speedup_vs_exclusive, ratio), *summary.baseline_run_id);
  } else {
    out +=
        "speed-up end to end: - (no exclusive run of the same jobs in the store: run them with "
        "--mechanism exclusive to compare)\n";
  }
  if (summary.steady_speedup_vs_exclusive) {
    out += fmt::format(
        "speed-up steady:     {} (the jobs' rates while they ran together over their solo rates, "
        "per GPU; solo rates from {})\n",
        ratio(*summary.steady_speedup_vs_exclusive), summary.solo_source);
  } else {
    out += fmt::format("speed-up steady:     - ({})\n",
                       summary.steady_note.empty() ? "not measured" : summary.steady_note);
  }
  const NormalizedThroughput& nt = summary.normalized_throughput;
  if (nt.value) {
    out += fmt::format(
        "normalized throughput: {} per GPU (summed rate over solo rate while two or more jobs "
        "were in their steady epochs on a GPU, {} of it; solo rates {})\n",
        ratio(*nt.value), format_duration_ms(nt.shared_ms),
        nt.estimated ? "partly ESTIMATED (not measured alone): " + summary.solo_source
                     : "from " + summary.solo_source);
  } else {
    out += fmt::format("normalized throughput: - ({})\n", nt.why_not);
  }
  return out;
}

}  // namespace

std::string format_floor_note(const JobSummary& job) {
  if (job.qos != QosClass::kProtected) return "";
  std::string out = fmt::format("note: {} is protected: its floor is {:.2f} of its solo speed",
                                job.name, job.min_speed);
  if (!job.floor) return out + "; no solo rate is known to judge it against\n";
  const FloorHistory& f = *job.floor;
  if (f.points.empty()) return out + "; no steady epoch measured against it yet\n";
  out += fmt::format(
      "; over {} steady epoch{} ({}) it ran at {:.2f} of solo (median; lowest {:.2f}, latest "
      "{:.2f}) and spent {:.0f}% of that time below its floor ({})\n",
      f.points.size(), f.points.size() == 1 ? "" : "s", format_duration_ms(f.time.steady_ms),
      *f.median_speed(), *f.lowest_speed(), *f.latest_speed(),
      100.0 * f.time.below_share().value_or(0), format_duration_ms(f.time.below_ms));
  const size_t shown = std::min(f.points.size(), kFloorEpochsShown);
  std::vector<std::string> speeds;
  for (size_t i = f.points.size() - shown; i < f.points.size(); ++i)
    speeds.push_back(fmt::format("{:.2f}", f.points[i].speed));
  out += fmt::format("note: {}'s speed of solo by steady epoch{}: {}\n", job.name,
                     shown < f.points.size()
                         ? fmt::format(" (the last {} of {})", shown, f.points.size())
                         : std::string(),
                     fmt::join(speeds, " "));
  return out;
}

std::string format_run_summary(const RunSummary& summary) {
  std::string out = run_header_text(summary) + "\n";
  out += job_table_text(summary) + "\n";
  out += run_totals_text(summary);
  out += mig_instances_text(summary);
  out += speedups_text(summary);
  return out;
}

namespace {

// A submission's id, or null.
nlohmann::json sub_id(const std::optional<SubmissionRef>& sub) {
  return sub ? nlohmann::json(sub->id) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json to_json(const JobCounts& counts) {
  return {{"ok", counts.ok},
          {"stopped_early", counts.stopped_early},
          {"failed", counts.failed},
          {"cancelled", counts.cancelled},
          {"cancelled_before_start", counts.cancelled_before_start},
          {"unfinished", counts.unfinished}};
}

nlohmann::json to_json(const SubmissionRow& sub) {
  return {{"id", sub.id},
          {"name", sub.label.name},
          {"tags", sub.label.tags},
          {"note", sub.label.note},
          {"owner", sub.owner_name},
          {"submitted_ms", sub.submitted_ms},
          {"jobs", sub.jobs},
          {"job_file", sub.job_file},
          {"resumes_submission", sub_id(sub.resumes_submission)},
          {"resumed_by", sub_id(sub.resumed_by)},
          {"outcomes", to_json(sub.outcomes)}};
}

nlohmann::json to_json(const RunRow& run) {
  return {
      {"id", run.id},
      {"started_ms", run.started_ms},
      {"ended_ms", nullable(run.ended_ms)},
      {"state", to_string(run.state)},
      {"mechanism", run.mechanism},
      {"backend", run.backend},
      {"simulated", run.simulated},
      {"job_file", run.job_file},
      {"jobs_signature", run.jobs_signature},
      {"job_count", run.job_count},
      {"jobs_not_ok", run.jobs_not_ok},
      {"outcomes", to_json(run.jobs)},
      {"host", run.host},
      {"colo_pid", run.colo_pid},
      {"slurm", run.slurm.job_id.empty()
                    ? nlohmann::json(nullptr)
                    : nlohmann::json{{"job_id", run.slurm.job_id},
                                     {"step", run.slurm.step},
                                     {"node", run.slurm.node},
                                     {"restart_count", run.slurm.restart_count}}},
      {"name", run.label.name},
      {"tags", run.label.tags},
      {"note", run.label.note},
      {"resumes_run", nullable(run.resumes_run)},
      {"resumed_by", nullable(run.resumed_by)},
  };
}

std::string format_learning_table(const RunSummary& summary) {
  const std::vector<std::string> params = param_names(summary);
  const std::vector<std::string> metrics = metric_names(summary);
  if (params.empty() && metrics.empty()) return "";
  std::vector<TextTable::Column> columns = {{"JOB"}, {"STATE"}};
  for (const std::string& p : params) columns.push_back({p, Align::kRight});
  for (const std::string& m : metrics) {
    columns.push_back({m + " last", Align::kRight});
    columns.push_back({m + " best", Align::kRight});
  }
  TextTable table(std::move(columns));
  for (const JobSummary& job : summary.jobs) {
    std::vector<std::string> row = {job.name, shown_state(job)};
    for (const std::string& p : params) {
      auto it = job.params.find(p);
      row.push_back(it == job.params.end() ? kAbsentText : it->second);
    }
    for (const std::string& m : metrics) {
      const MetricSeries* s = find_metric(job.metrics, m);
      row.push_back(s ? metric_text(s->last) : kAbsentText);
      row.push_back(s && std::isfinite(s->best) ? metric_text(s->best) : kAbsentText);
    }
    table.add_row(std::move(row));
  }
  std::string out = "\nWhat the jobs learned";
  if (!metrics.empty()) {
    std::vector<std::string> declared;
    for (const std::string& m : metrics) {
      for (const JobSummary& job : summary.jobs) {
        const MetricSeries* s = find_metric(job.metrics, m);
        if (s == nullptr || !s->declared) continue;
        declared.push_back(fmt::format("{} {}", m, s->lower_is_better ? "lowest" : "highest"));
        break;
      }
    }
    out += fmt::format(
        " (best: {}the lowest value of a loss or error, the highest of anything else; last: the "
        "last value reported; nan: a value that was not a number, and the job diverged)",
        declared.empty()
            ? std::string()
            : fmt::format("as the job file declares, {}; else ", fmt::join(declared, ", ")));
  }
  return out + "\n" + table.render();
}

std::string format_jobs_csv(const RunSummary& summary) {
  const std::vector<std::string> params = param_names(summary);
  const std::vector<std::string> metrics = metric_names(summary);
  Table t;
  t.header = {"id",
              "name",
              "state",
              "gpu",
              "started_ms",
              "ended_ms",
              "duration_s",
              "epochs",
              "samples_per_s",
              "steady_samples_per_s",
              "peak_memory_bytes",
              "mean_sm_active_pct",
              "energy_j",
              "attempts",
              "reason",
              "diverged"};
  for (const std::string& p : params) t.header.push_back(p);
  for (const std::string& m : metrics) {
    t.header.push_back(m + "_last");
    t.header.push_back(m + "_best");
  }
  auto opt = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string(); };
  for (const JobSummary& job : summary.jobs) {
    std::vector<std::string> row = {
        std::to_string(job.id),
        job.name,
        std::string(to_string(job.state)),
        job.gpus.empty() ? opt(job.device) : job.gpus,
        opt(job.started_ms),
        opt(job.ended_ms),
        job.duration_ms ? fmt::format("{}", *job.duration_ms / 1000.0) : "",
        std::to_string(job.epochs),
        opt(job.throughput_per_s),
        opt(job.steady_throughput_per_s),
        opt(job.peak_memory_bytes),
        opt(job.mean_sm_active_pct),
        opt(job.energy_j),
        std::to_string(job.attempts),
        job.reason,
        job.diverged ? "true" : "false"};
    for (const std::string& p : params) {
      auto it = job.params.find(p);
      row.push_back(it == job.params.end() ? "" : it->second);
    }
    for (const std::string& m : metrics) {
      const MetricSeries* s = find_metric(job.metrics, m);
      row.push_back(s ? fmt::format("{}", s->last) : "");
      row.push_back(s && std::isfinite(s->best) ? fmt::format("{}", s->best) : "");
    }
    t.rows.push_back(std::move(row));
  }
  return to_csv(t);
}

nlohmann::json to_json(const RunSummary& summary) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const JobSummary& job : summary.jobs) {
    jobs.push_back({
        {"id", job.id},
        {"name", job.name},
        {"state", to_string(job.state)},
        {"reason", job.reason},
        {"attempts", job.attempts},
        {"device", nullable(job.device)},
        {"gpus", job.gpus},
        {"started_ms", nullable(job.started_ms)},
        {"ended_ms", nullable(job.ended_ms)},
        {"duration_ms", nullable(job.duration_ms)},
        {"epochs", job.epochs},
        {"mean_epoch_ms", nullable(job.mean_epoch_ms)},
        {"samples", nullable(job.samples)},
        {"throughput_per_s", nullable(job.throughput_per_s)},
        {"steady_samples", nullable(job.steady_samples)},
        {"steady_throughput_per_s", nullable(job.steady_throughput_per_s)},
        {"peak_memory_bytes", nullable(job.peak_memory_bytes)},
        {"mean_sm_active_pct", nullable(job.mean_sm_active_pct)},
        {"energy_j", nullable(job.energy_j)},
        {"together_samples_per_s", nullable(job.together_samples_per_s)},
        {"together_epochs_per_s", nullable(job.together_epochs_per_s)},
        {"solo_samples_per_s", job.solo ? nullable(job.solo->samples_per_s) : nullptr},
        {"solo_epoch_ms", job.solo ? nullable(job.solo->epoch_ms) : nullptr},
        {"normalized_rate", nullable(job.normalized_rate)},
        {"slowdown", nullable(job.slowdown)},
        {"log_path", job.log_path},
        {"malformed_progress_lines", job.malformed_progress_lines},
        {"instance", job.instance},
        {"host_cpu_ms", nullable(job.usage.cpu_ms)},
        {"host_memory_peak_bytes", nullable(job.usage.memory_peak_bytes)},
        {"params", params_to_json(job.params)},
        {"qos", to_string(job.qos)},
        {"min_speed", job.qos == QosClass::kProtected ? nlohmann::json(job.min_speed) : nullptr},
    });
    // A protected job against its floor (null, and [], for the others and
    // where no solo rate is known).
    const std::optional<FloorHistory>& floor = job.floor;
    nlohmann::json series = nlohmann::json::array();
    if (floor) {
      for (const FloorPoint& p : floor->points)
        series.push_back({{"ended_ms", p.ended_ms},
                          {"attempt", p.attempt},
                          {"epoch_ms", p.epoch_ms},
                          {"speed_of_solo", p.speed}});
    }
    jobs.back()["speed_of_solo"] = floor ? nullable(floor->latest_speed()) : nullptr;
    jobs.back()["speed_of_solo_median"] = floor ? nullable(floor->median_speed()) : nullptr;
    jobs.back()["below_floor_share"] = floor ? nullable(floor->time.below_share()) : nullptr;
    jobs.back()["below_floor_ms"] =
        floor && !floor->points.empty() ? nlohmann::json(floor->time.below_ms) : nullptr;
    jobs.back()["steady_ms"] =
        floor && !floor->points.empty() ? nlohmann::json(floor->time.steady_ms) : nullptr;
    jobs.back()["speed_of_solo_series"] = std::move(series);
    nlohmann::json metrics = nlohmann::json::object();
    for (const MetricSeries& m : job.metrics) {
      metrics[m.name] = {
          {"last", metric_to_json(m.last)},
          {"best", std::isfinite(m.best) ? nlohmann::json(m.best) : nlohmann::json()},
          {"lower_is_better", m.lower_is_better},
          {"declared", m.declared},
          {"diverged", m.diverged},
          {"points", m.points.size()}};
    }
    jobs.back()["metrics"] = std::move(metrics);
    // A resumed job: the attempts its history joins (its metrics above are
    // over all of them); null for the others.
    nlohmann::json history = nullptr;
    if (job.history) {
      history = {{"epochs", job.history->epoch_ends.size()}, {"attempts", nlohmann::json::array()}};
      for (const HistoryPart& p : job.history->parts) {
        history["attempts"].push_back({{"run_id", p.job.run_id},
                                       {"job_id", p.job.job_id},
                                       {"epochs", p.epochs},
                                       {"first_epoch", nullable(p.first_epoch)},
                                       {"last_epoch", nullable(p.last_epoch)}});
      }
    }
    jobs.back()["history"] = std::move(history);
    jobs.back()["diverged"] = job.diverged;
    if (!job.objective.empty()) jobs.back()["objective"] = job.objective;
    if (job.progress_throttled) {
      const ThrottleCounts& t = *job.progress_throttled;
      jobs.back()["progress_throttled"] = {{"skipped_bytes", t.skipped_bytes},
                                           {"dropped_events", t.dropped_events},
                                           {"coalesced_epochs", t.coalesced_epochs},
                                           {"refused_files", t.refused_files}};
    }
  }
  nlohmann::json instances = nlohmann::json::array();
  for (const InstanceUsage& u : summary.instances) {
    instances.push_back({{"instance", u.instance},
                         {"jobs", u.jobs},
                         {"busy_ms", u.busy_ms},
                         {"idle_ms", u.idle_ms}});
  }
  const nlohmann::json submission =
      summary.submission ? to_json(*summary.submission) : nlohmann::json(nullptr);
  return {
      {"run", to_json(summary.run)},
      {"submission", submission},
      {"jobs", std::move(jobs)},
      {"makespan_ms", nullable(summary.makespan_ms)},
      {"total_samples", nullable(summary.total_samples)},
      {"throughput_per_s", nullable(summary.throughput_per_s)},
      {"steady_throughput_per_s", nullable(summary.steady_throughput_per_s)},
      {"together_start_ms",
       summary.together ? nlohmann::json(summary.together->start_ms) : nlohmann::json(nullptr)},
      {"together_end_ms",
       summary.together ? nlohmann::json(summary.together->end_ms) : nlohmann::json(nullptr)},
      {"together_gpus", summary.together_gpus},
      {"mean_sm_active_pct", nullable(summary.mean_sm_active_pct)},
      {"peak_memory_used_bytes", nullable(summary.peak_memory_used_bytes)},
      {"energy_j", nullable(summary.energy_j)},
      {"device_samples", summary.device_samples},
      {"mig_instances", std::move(instances)},
      {"idle_instance_ms", nullable(summary.idle_instance_ms)},
      {"baseline_run_id", nullable(summary.baseline_run_id)},
      {"speedup_vs_exclusive", nullable(summary.speedup_vs_exclusive)},
      {"steady_speedup_vs_exclusive", nullable(summary.steady_speedup_vs_exclusive)},
      {"steady_note", summary.steady_note},
      {"solo_source", summary.solo_source},
      {"normalized_throughput", nullable(summary.normalized_throughput.value)},
      {"normalized_throughput_shared_ms", summary.normalized_throughput.shared_ms},
      {"normalized_throughput_estimated", summary.normalized_throughput.estimated},
      {"normalized_throughput_note", summary.normalized_throughput.why_not},
  };
}

}  // namespace colo
