#include "report/report_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "analysis/job_selection.h"
#include "analysis/stored.h"
#include "report/case_metrics.h"
#include "report/experiment_report.h"
#include "report/png_export.h"
#include "report/run_comparison.h"
#include "report/run_profiling.h"
#include "report/run_report.h"
#include "report/text_report.h"

namespace colo {
namespace {

Result<int64_t> parse_id(std::string_view text, std::string_view whole) {
  int64_t id = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (error != std::errc() || end != text.data() + text.size() || id <= 0) {
    return Error(fmt::format(
        "'{}' is not a report target: use run:ID, exp:ID, a run id or name, last-run, last-exp "
        "or last (`colo runs` lists runs)",
        whole));
  }
  return id;
}

}  // namespace

Result<ReportTarget> parse_report_target(std::string_view text) {
  ReportTarget target;
  if (text.empty() || text == "last") return target;
  if (text == "last-run") {
    target.kind = ReportTarget::Kind::kRun;
    return target;
  }
  if (text == "last-exp") {
    target.kind = ReportTarget::Kind::kExperiment;
    return target;
  }
  std::string_view number = text;
  target.kind = ReportTarget::Kind::kRun;
  if (text.substr(0, 4) == "run:") {
    number = text.substr(4);
  } else if (text.substr(0, 4) == "exp:") {
    number = text.substr(4);
    target.kind = ReportTarget::Kind::kExperiment;
  }
  Result<int64_t> id = parse_id(number, text);
  if (!id) return id.error();
  target.id = *id;
  return target;
}

Result<ReportOutcome> write_report(RunStore& store, const ReportTarget& target,
                                   const ReportOptions& options) {
  return write_report(store, std::vector<ReportTarget>{target}, options);
}

Result<BuiltReport> build_report(RunStore& store, const std::vector<ReportTarget>& targets) {
  std::vector<ReportTarget> resolved = targets.empty() ? std::vector<ReportTarget>{{}} : targets;
  for (ReportTarget& t : resolved) {
    if (t.kind != ReportTarget::Kind::kLatest) continue;
    // What `colo show` shows, the most recent run, or the experiment it was
    // a case of: the most recent experiment, unless a run started after it ended.
    Result<std::vector<ExperimentRow>> experiments = store.list_experiments(1);
    if (!experiments) return experiments.error();
    Result<std::vector<RunRow>> runs = store.list_runs(1);
    if (!runs) return runs.error();
    const bool run_after = !experiments->empty() && !runs->empty() &&
                           experiments->front().ended_ms &&
                           runs->front().started_ms > *experiments->front().ended_ms;
    t.kind = experiments->empty() || run_after ? ReportTarget::Kind::kRun
                                               : ReportTarget::Kind::kExperiment;
  }
  const auto is_run = [](const ReportTarget& t) { return t.kind == ReportTarget::Kind::kRun; };
  BuiltReport built;
  if (resolved.size() == 2 && std::all_of(resolved.begin(), resolved.end(), is_run)) {
    // Two runs: compared.
    std::vector<RunSummary> summaries;
    std::vector<RunMetrics> metrics;
    for (const ReportTarget& t : resolved) {
      Result<RunRecord> record = store.run_record(t.id);
      if (!record) return record.error();
      Result<RunSummary> summary = analyse_record(store, *record);
      if (!summary) return summary.error();
      metrics.push_back(run_metrics_from(*summary, {}));
      summaries.push_back(std::move(*summary));
    }
    std::string metric = declared_objective(summaries[0]);
    if (metric.empty()) metric = declared_objective(summaries[1]);
    const RunComparison comparison = compare_runs(summaries[0], summaries[1], metric);
    built.description =
        fmt::format("run {} against run {}", comparison.title_a, comparison.title_b);
    built.content = comparison_report(comparison, metrics[0], metrics[1]);
    return built;
  }
  if (resolved.size() > 1 && !std::all_of(resolved.begin(), resolved.end(), [](const auto& t) {
        return t.kind == ReportTarget::Kind::kExperiment;
      })) {
    return Error(
        "a report over several targets takes two runs to compare (run:A run:B) or experiments "
        "(exp:ID exp:ID ...)");
  }

  if (resolved.front().kind == ReportTarget::Kind::kExperiment) {
    std::vector<int64_t> ids;
    for (const ReportTarget& t : resolved) ids.push_back(t.id);
    Result<ExperimentMetrics> metrics = compute_experiments_metrics(store, ids);
    if (!metrics) return metrics.error();
    built.description =
        metrics->experiments.size() > 1
            ? fmt::format("{} experiments ({})", metrics->experiments.size(),
                          metrics->experiment.suite)
            : fmt::format("experiment #{} ({})", metrics->experiment.id, metrics->experiment.suite);
    built.content = experiment_report(*metrics);
  } else {
    Result<RunRecord> record = store.run_record(resolved.front().id);
    if (!record) return record.error();
    // A service's run: its submissions' jobs told apart (two `sw[lr=0.2]`).
    Result<std::map<int64_t, SubmissionRow>> submissions =
        store.submissions_of_run_jobs(record->run.id);
    if (!submissions) return submissions.error();
    name_jobs_by_submission(*record, *submissions);
    Result<RunSummary> summary = analyse_record(store, *record);
    if (!summary) return summary.error();
    RunMetrics metrics = run_metrics_from(*summary, record->device_samples);
    built.description = fmt::format("run #{} ({})", metrics.run.id, metrics.run.mechanism);
    // Its profiling windows, as colo show gives them (summary.txt is its text).
    std::vector<std::string> problems;
    const RunProfiling profiling = run_profiling(store, *summary, problems);
    built.content =
        run_report(metrics, format_run_summary(*summary) + format_profile_windows(profiling.jobs) +
                                profiling.interference_text);
    if (std::optional<Section> section = profiling_section(profiling))
      built.content.sections.push_back(std::move(*section));
    for (const std::string& problem : problems)
      built.content.facts.push_back("not shown: " + problem);
  }
  return built;
}

Result<ReportOutcome> write_report(RunStore& store, const std::vector<ReportTarget>& targets,
                                   const ReportOptions& options) {
  if (options.out_dir.empty()) return Error("colo report needs --out DIR");
  auto step = [&](const std::string& what) {
    if (options.progress) options.progress(what);
  };
  step("reading the store");
  Result<BuiltReport> built = build_report(store, targets);
  if (!built) return built.error();
  ReportOutcome outcome;
  outcome.description = built->description;
  const ReportContent& content = built->content;

  step("writing the HTML and CSV");
  Result<WrittenReport> written = write_html_report(content, options.out_dir);
  if (!written) return written.error();
  outcome.files = std::move(*written);

  if (!options.png) {
    outcome.png_note = "PNGs not made (--no-png)";
    return outcome;
  }
  std::optional<std::string> browser = options.browser ? options.browser : find_browser();
  if (!browser) {
    outcome.png_note = browser_missing_hint();
    return outcome;
  }
  PngExportOptions png_options;
  png_options.browser = *browser;
  png_options.on_page = [&](size_t n, size_t of) {
    step(fmt::format("rendering PNG {} of {} with {}", n, of, *browser));
  };
  step("checking that every chart drew (" + *browser + ")");
  // The index holds every chart: if one did not draw there, its PNG is blank.
  if (Status drawn = verify_charts_drawn(png_options, outcome.files.index_html); !drawn) {
    return drawn.error().with_context(
        fmt::format("the HTML report and CSV are in {}, but PNGs were not made", options.out_dir));
  }
  Result<std::vector<std::string>> pngs =
      export_pngs(outcome.files.figure_pages, options.out_dir + "/png", png_options);
  if (!pngs) {
    return pngs.error().with_context(
        fmt::format("the HTML report and CSV are in {}, but the PNGs failed", options.out_dir));
  }
  outcome.pngs = std::move(*pngs);
  return outcome;
}

}  // namespace colo
