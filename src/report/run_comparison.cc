#include "report/run_comparison.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "analysis/training_metrics.h"
#include "common/units.h"
#include "report/table.h"
#include "report/text_cells.h"

namespace colo {
namespace {

// "#3" or "#3 lr-sweep"; a submission "#3/2" or "#3/2 lr-sweep".
std::string run_title(const RunSummary& s) {
  if (s.submission) return submission_title(s.run.id, *s.submission);
  const std::string id = fmt::format("#{}", s.run.id);
  return s.run.label.name.empty() ? id : id + " " + s.run.label.name;
}

// A run's state; a submission's: running while a job of it has not ended,
// then ok, or failed when a job of it did not end well (jobs/job_outcome.h).
std::string state_of(const RunSummary& s) {
  if (!s.submission) return to_string(s.run.state);
  const JobCounts& counts = s.submission->outcomes;
  if (counts.unfinished > 0) return "running";
  return counts.not_ok() > 0 ? "failed" : "ok";
}

// The label a comparison shows: the submission's, else the run's.
const RunLabel& label_of(const RunSummary& s) {
  return s.submission ? s.submission->label : s.run.label;
}

// "b/a" as "1.25x", or "-".
std::string ratio_text(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *a <= 0) return kAbsentText;
  return fmt::format("{:.2f}x", *b / *a);
}

// The job's best value of `metric`, when it reported a finite one.
std::optional<double> best_of(const JobSummary& job, std::string_view metric) {
  const MetricSeries* m = find_metric(job.metrics, metric);
  if (m == nullptr || std::isnan(m->best)) return std::nullopt;
  return m->best;
}

// Whether lower is better for `metric`, as the runs' jobs reported it.
bool lower_better(const RunSummary& a, const RunSummary& b, std::string_view metric) {
  for (const RunSummary* s : {&a, &b}) {
    for (const JobSummary& job : s->jobs)
      if (const MetricSeries* m = find_metric(job.metrics, metric)) return m->lower_is_better;
  }
  return lower_is_better(metric);
}

// The run's best value of `metric` among its jobs, and the job's name.
std::optional<std::pair<double, std::string>> run_best(const RunSummary& s, std::string_view metric,
                                                       bool lower) {
  std::optional<std::pair<double, std::string>> best;
  for (const JobSummary& job : s.jobs) {
    std::optional<double> v = best_of(job, metric);
    if (v && (!best || (lower ? *v < best->first : *v > best->first))) best.emplace(*v, job.name);
  }
  return best;
}

// "12: all ok", "39: 30 ok, 2 stopped early, 1 failed, 6 cancelled before
// start (1 diverged)": the jobs of the run (or submission) as the store
// counts them, by the one rule (jobs/job_outcome.h), those that diverged noted.
std::string jobs_text(const RunSummary& s) {
  std::string out = format_job_counts(s.submission ? s.submission->outcomes : s.run.jobs);
  const auto diverged =
      std::count_if(s.jobs.begin(), s.jobs.end(), [](const JobSummary& j) { return j.diverged; });
  if (diverged > 0) out += fmt::format(" ({} diverged)", diverged);
  return out;
}

std::string params_text(const JobSummary& job) {
  std::vector<std::string> words;
  for (const auto& [k, v] : job.params) words.push_back(k + "=" + v);
  return words.empty() ? std::string(kAbsentText) : fmt::format("{}", fmt::join(words, " "));
}

}  // namespace

RunComparison compare_runs(const RunSummary& a, const RunSummary& b, std::string_view metric) {
  RunComparison c;
  c.title_a = run_title(a);
  c.title_b = run_title(b);
  c.simulated = a.run.simulated || b.run.simulated;
  c.metric = metric;
  const std::string& ta = c.title_a;
  const std::string& tb = c.title_b;
  c.facts.push_back({"state", state_of(a), state_of(b), ""});
  if (!label_of(a).tags.empty() || !label_of(b).tags.empty()) {
    RunLabel la = label_of(a);
    RunLabel lb = label_of(b);
    la.name.clear();
    lb.name.clear();
    c.facts.push_back({"tags", label_text(la), label_text(lb), ""});
  }
  if (!label_of(a).note.empty() || !label_of(b).note.empty()) {
    c.facts.push_back({"note", label_of(a).note.empty() ? kAbsentText : label_of(a).note,
                       label_of(b).note.empty() ? kAbsentText : label_of(b).note, ""});
  }
  const auto job_file = [](const RunSummary& s) {
    const std::string& file = s.submission ? s.submission->job_file : s.run.job_file;
    return file.empty() ? std::string(kAbsentText) : file;
  };
  c.facts.push_back({"job file", job_file(a), job_file(b), ""});
  c.facts.push_back({"mechanism", a.run.mechanism, b.run.mechanism, ""});
  c.facts.push_back({"jobs", jobs_text(a), jobs_text(b), ""});
  auto as_double = [](const std::optional<int64_t>& v) {
    return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
  };
  c.facts.push_back({"makespan",
                     or_absent(a.makespan_ms, [](int64_t ms) { return format_duration_ms(ms); }),
                     or_absent(b.makespan_ms, [](int64_t ms) { return format_duration_ms(ms); }),
                     ratio_text(as_double(a.makespan_ms), as_double(b.makespan_ms))});
  auto rate = [](double v) { return fmt::format("{:.1f} samples/s", v); };
  c.facts.push_back({"throughput", or_absent(a.throughput_per_s, rate),
                     or_absent(b.throughput_per_s, rate),
                     ratio_text(a.throughput_per_s, b.throughput_per_s)});
  auto joules = [](double v) { return fmt::format("{:.0f} J", v); };
  c.facts.push_back({"GPU energy", or_absent(a.energy_j, joules), or_absent(b.energy_j, joules),
                     ratio_text(a.energy_j, b.energy_j)});
  c.lower = !metric.empty() && lower_better(a, b, metric);
  if (!metric.empty()) {
    auto best = [&](const RunSummary& s) {
      auto v = run_best(s, metric, c.lower);
      return v ? fmt::format("{} ({})", metric_text(v->first), v->second)
               : std::string(kAbsentText);
    };
    c.facts.push_back({fmt::format("best {} ({} is better)", metric, c.lower ? "lower" : "higher"),
                       best(a), best(b), ""});
  }

  // The jobs, matched by name: A's in its order, then those only B has.
  std::map<std::string, const JobSummary*, std::less<>> in_b;
  for (const JobSummary& job : b.jobs) in_b.try_emplace(job.name, &job);
  std::vector<std::pair<const JobSummary*, const JobSummary*>> pairs;
  std::set<std::string, std::less<>> in_a;
  for (const JobSummary& job : a.jobs) {
    in_a.insert(job.name);
    auto it = in_b.find(job.name);
    pairs.emplace_back(&job, it == in_b.end() ? nullptr : it->second);
  }
  for (const JobSummary& job : b.jobs)
    if (!in_a.contains(job.name)) pairs.emplace_back(nullptr, &job);
  c.job_header = {"JOB", "PARAMS", "STATE " + ta, "STATE " + tb};
  if (!metric.empty()) {
    c.job_header.push_back(fmt::format("{} {}", metric, ta));
    c.job_header.push_back(fmt::format("{} {}", metric, tb));
    c.job_header.push_back("CHANGE");
  }
  for (const auto& [ja, jb] : pairs) {
    const JobSummary& any = ja != nullptr ? *ja : *jb;
    c.in_both += ja != nullptr && jb != nullptr ? 1 : 0;
    std::vector<std::string> row = {any.name, params_text(any),
                                    ja != nullptr ? shown_state(*ja) : "(not in this run)",
                                    jb != nullptr ? shown_state(*jb) : "(not in this run)"};
    if (!metric.empty()) {
      std::optional<double> va = ja != nullptr ? best_of(*ja, metric) : std::nullopt;
      std::optional<double> vb = jb != nullptr ? best_of(*jb, metric) : std::nullopt;
      row.push_back(or_absent(va, metric_text));
      row.push_back(or_absent(vb, metric_text));
      std::string change = kAbsentText;
      if (va && vb) {
        const double d = *vb - *va;
        change = d == 0 ? "same"
                        : fmt::format("{}{} ({})", d > 0 ? "+" : "", metric_text(d),
                                      (d < 0) == c.lower ? "better" : "worse");
      }
      row.push_back(change);
    }
    c.jobs.push_back(std::move(row));
  }
  c.only_a = a.jobs.size() - static_cast<size_t>(c.in_both);
  c.only_b = b.jobs.size() - static_cast<size_t>(c.in_both);
  return c;
}

std::string format_run_comparison(const RunComparison& c) {
  std::string out = fmt::format("Run {} against run {}\n", c.title_a, c.title_b);
  if (c.simulated) {
    out += "SIMULATED: numbers of a run on colo's simulated GPU come from no measurement\n";
  }
  out += "\n";
  TextTable facts({{""}, {c.title_a}, {c.title_b}, {"B OVER A", TextTable::Align::kRight}});
  for (const std::vector<std::string>& row : c.facts) facts.add_row(row);
  out += facts.render();
  std::vector<TextTable::Column> columns;
  for (size_t i = 0; i < c.job_header.size(); ++i) {
    // The metric's two columns and the change are numbers.
    columns.push_back(
        {c.job_header[i], i >= 4 ? TextTable::Align::kRight : TextTable::Align::kLeft});
  }
  TextTable jobs(std::move(columns));
  for (const std::vector<std::string>& row : c.jobs) jobs.add_row(row);
  out += fmt::format("\nJobs by name: {} in both, {} only in {}, {} only in {}{}\n", c.in_both,
                     c.only_a, c.title_a, c.only_b, c.title_b,
                     c.metric.empty() ? "" : fmt::format("; {}: each job's best", c.metric));
  out += jobs.render();
  return out;
}

}  // namespace colo
