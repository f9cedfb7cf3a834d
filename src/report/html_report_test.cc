#include "report/html_report.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/stored.h"
#include "report/figures.h"
#include "report/report_writer.h"
#include "report/run_comparison.h"
#include "report/run_report.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = std::filesystem;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Rows of a CSV without quoted fields, as maps from header to cell.
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::vector<std::map<std::string, std::string>> rows;
  std::istringstream in(read(path));
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    if (header.empty()) {
      header = cells;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

ReportOptions no_png(const std::string& dir) {
  ReportOptions options;
  options.out_dir = dir;
  options.png = false;
  return options;
}

TEST(ReportTarget, ParsesEveryForm) {
  auto parse = [](const char* text) { return parse_report_target(text); };
  EXPECT_EQ(parse("")->kind, ReportTarget::Kind::kLatest);
  EXPECT_EQ(parse("last")->kind, ReportTarget::Kind::kLatest);
  EXPECT_EQ(parse("last-run")->kind, ReportTarget::Kind::kRun);
  EXPECT_EQ(parse("last-run")->id, 0);
  EXPECT_EQ(parse("last-exp")->kind, ReportTarget::Kind::kExperiment);
  EXPECT_EQ(parse("run:12")->kind, ReportTarget::Kind::kRun);
  EXPECT_EQ(parse("run:12")->id, 12);
  EXPECT_EQ(parse("exp:3")->kind, ReportTarget::Kind::kExperiment);
  EXPECT_EQ(parse("exp:3")->id, 3);
  EXPECT_EQ(parse("7")->kind, ReportTarget::Kind::kRun);
  EXPECT_EQ(parse("7")->id, 7);
  for (const char* bad : {"run:", "exp:x", "-1", "0", "7a", "experiment"}) {
    Result<ReportTarget> target = parse(bad);
    ASSERT_FALSE(target.ok()) << bad;
    EXPECT_THAT(target.error().message(), HasSubstr("run:ID, exp:ID"));
  }
}

// `colo report` with no target reports what `colo show` shows: after an
// experiment, a run started later is the latest, not the experiment.
TEST(ReportTarget, LastIsTheLatestRunOrTheExperimentItWasACaseOf) {
  std::unique_ptr<RunStore> store = testing::open_memory_store();
  testing::add_fake_experiment(*store);
  Result<BuiltReport> report = build_report(*store, {});
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_THAT(report->description, ::testing::StartsWith("experiment #1"));
  const int64_t later =
      testing::add_fake_run(*store, testing::FakeRun{}, testing::kFakeT0 + 86'400'000);
  report = build_report(*store, {});
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->description, fmt::format("run #{} (naive)", later));
  report = build_report(*store, {*parse_report_target("last-exp")});
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->description, ::testing::StartsWith("experiment #1"));
}

TEST(HtmlReport, RunReportCsvNumbersMatchTheStore) {
  auto store = testing::open_memory_store();
  testing::FakeRun run;
  run.degree = 3;
  run.stagger_ms = 700;
  run.epoch_ms = 4'321;
  const int64_t id = testing::add_fake_run(*store, run, testing::kFakeT0);
  testing::TempDir dir;
  ReportTarget target{ReportTarget::Kind::kRun, id};
  Result<ReportOutcome> outcome = write_report(*store, target, no_png(dir.path()));
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_EQ(outcome->description, fmt::format("run #{} (naive)", id));
  // Issue 33 (16): the summary's text tables keep their columns (they wrapped).
  EXPECT_THAT(read(outcome->files.index_html), HasSubstr("<pre class=\"table\">"));

  Result<RunSummary> summary = analyse_run(*store, id);
  ASSERT_TRUE(summary.ok());
  const auto jobs = read_csv(dir.path() + "/csv/jobs.csv");
  ASSERT_EQ(jobs.size(), summary->jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobSummary& job = summary->jobs[i];
    Result<std::vector<ProgressEvent>> events = store->job_events(job.id);
    ASSERT_TRUE(events.ok());
    UnixMillis first = 0;
    UnixMillis second = 0;
    for (const ProgressEvent& e : *events) {
      if (e.kind == "epoch_end" && e.epoch == 1) first = e.time_ms;
      if (e.kind == "epoch_end" && e.epoch == 2) second = e.time_ms;
    }
    EXPECT_EQ(jobs[i].at("job"), job.name);
    EXPECT_EQ(std::stod(jobs[i].at("second_epoch_s")), (second - first) / 1000.0);
    EXPECT_EQ(std::stod(jobs[i].at("steady_throughput_per_s")), *job.steady_throughput_per_s);
    EXPECT_EQ(std::stoull(jobs[i].at("peak_memory_bytes")), *job.peak_memory_bytes);
    EXPECT_EQ(std::stoll(jobs[i].at("epochs")), job.epochs);
  }
  // Every device sample's memory, in order.
  Result<std::vector<DeviceSample>> samples = store->device_samples(id);
  ASSERT_TRUE(samples.ok());
  const auto memory = read_csv(dir.path() + "/csv/memory-over-time.csv");
  ASSERT_EQ(memory.size(), samples->size());
  for (size_t i = 0; i < memory.size(); ++i) {
    EXPECT_EQ(std::stoull(memory[i].at("memory_used_bytes")), *(*samples)[i].memory_used_bytes);
    EXPECT_EQ(std::stod(memory[i].at("t_s")),
              ((*samples)[i].time_ms - summary->run.started_ms) / 1000.0);
  }
  const std::string summary_text = read(outcome->files.summary_txt);
  EXPECT_THAT(summary_text, HasSubstr("Steady state"));
  EXPECT_THAT(summary_text, HasSubstr("SIMULATED"));
}

TEST(HtmlReport, ExperimentReportHasThePaperFiguresAndCsvMatchesTheStore) {
  auto store = testing::open_memory_store();
  const int64_t id = testing::add_fake_experiment(*store);
  testing::TempDir dir;
  Result<ReportOutcome> outcome = write_report(*store, ReportTarget{}, no_png(dir.path()));
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_EQ(outcome->description, fmt::format("experiment #{} (paper-uniform)", id));
  for (const char* name :
       {"time-per-epoch-small", "speedup-small", "sm-activity-small", "memory-small",
        "energy-small", "pcie-rx-over-time-small", "power-over-time-small", "time-per-epoch-large",
        "memory-large", "makespan-mixed", "utilization-over-time-mixed",
        "memory-over-time-mixed"}) {
    EXPECT_TRUE(fs::exists(dir.path() + "/figures/" + name + ".html")) << name;
    EXPECT_TRUE(fs::exists(dir.path() + "/csv/" + name + ".csv")) << name;
  }
  EXPECT_FALSE(fs::exists(dir.path() + "/figures/pcie-rx-over-time-large.html"));

  // cases.csv: each case's throughput is its run's, as the store summarizes it.
  Result<std::vector<CaseRow>> cases = store->experiment_cases(id);
  ASSERT_TRUE(cases.ok());
  const auto rows = read_csv(dir.path() + "/csv/cases.csv");
  ASSERT_EQ(rows.size(), cases->size());
  int compared = 0;
  for (const auto& row : rows) {
    if (row.at("status") != "ok") {
      EXPECT_EQ(row.at("run_id"), "");
      continue;
    }
    Result<RunSummary> summary = analyse_run(*store, std::stoll(row.at("run_id")));
    ASSERT_TRUE(summary.ok());
    if (summary->steady_throughput_per_s) {
      EXPECT_EQ(std::stod(row.at("steady_throughput_per_s")), *summary->steady_throughput_per_s);
    } else {
      EXPECT_EQ(row.at("steady_throughput_per_s"), "") << row.at("case");
    }
    EXPECT_EQ(std::stod(row.at("makespan_s")), *summary->makespan_ms / 1000.0);
    ++compared;
  }
  EXPECT_EQ(compared, 21);

  const std::string html = read(outcome->files.index_html);
  EXPECT_THAT(html, HasSubstr("SIMULATED"));
  EXPECT_THAT(html, HasSubstr("does not fit"));
  EXPECT_THAT(html, HasSubstr("not run"));
  EXPECT_THAT(html, HasSubstr("Guideline 1"));
  EXPECT_THAT(html, HasSubstr(std::string(echarts_js().substr(0, 200))));
  // Nothing is loaded from elsewhere.
  EXPECT_THAT(html, Not(HasSubstr("src=\"http")));
  EXPECT_THAT(html, Not(HasSubstr("href=\"http")));
  EXPECT_THAT(read(outcome->files.summary_txt), HasSubstr("Guideline 5"));
}

TEST(HtmlReport, OneReportOverSeveralExperiments) {
  auto store = testing::open_memory_store();
  const int64_t first = testing::add_fake_experiment(*store);
  const int64_t second = testing::add_fake_experiment(*store);
  testing::TempDir dir;
  Result<ReportOutcome> outcome =
      write_report(*store,
                   std::vector<ReportTarget>{{ReportTarget::Kind::kExperiment, first},
                                             {ReportTarget::Kind::kExperiment, second}},
                   no_png(dir.path()));
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_EQ(outcome->description, "2 experiments (paper-uniform + paper-uniform)");
  // Every case of both, and each configuration's repetitions from both.
  Result<std::vector<CaseRow>> cases = store->experiment_cases(first);
  ASSERT_TRUE(cases.ok());
  EXPECT_EQ(read_csv(dir.path() + "/csv/cases.csv").size(), 2 * cases->size());
  const std::string summary = read(outcome->files.summary_txt);
  EXPECT_THAT(summary, HasSubstr(fmt::format("2 experiments from #{}", first)));
  EXPECT_THAT(summary, HasSubstr("ok x4"));  // small exclusive x1: 2 repetitions each
  EXPECT_THAT(summary, HasSubstr("Guideline 5"));

  // Runs do not mix with experiments.
  Result<ReportOutcome> mixed =
      write_report(*store,
                   std::vector<ReportTarget>{{ReportTarget::Kind::kExperiment, first},
                                             {ReportTarget::Kind::kRun, 1}},
                   no_png(dir.path()));
  ASSERT_FALSE(mixed.ok());
  EXPECT_THAT(mixed.error().message(), HasSubstr("two runs to compare"));
}

// Issue 33 (3): `colo report A B` compares two runs as `colo show A B` does.
TEST(HtmlReport, TwoRunsMakeAReportComparingThem) {
  auto store = testing::open_memory_store();
  testing::FakeRun two;
  two.degree = 2;
  testing::FakeRun three;
  three.degree = 3;
  three.epoch_ms = 2'500;
  const int64_t a = testing::add_fake_run(*store, two, testing::kFakeT0);
  const int64_t b = testing::add_fake_run(*store, three, testing::kFakeT0 + 86'400'000);
  testing::TempDir dir;
  Result<ReportOutcome> outcome = write_report(
      *store,
      std::vector<ReportTarget>{{ReportTarget::Kind::kRun, a}, {ReportTarget::Kind::kRun, b}},
      no_png(dir.path()));
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_EQ(outcome->description, fmt::format("run #{} against run #{}", a, b));
  Result<RunSummary> sa = analyse_run(*store, a);
  Result<RunSummary> sb = analyse_run(*store, b);
  ASSERT_TRUE(sa.ok() && sb.ok());
  // summary.txt is colo show A B's text; the tables hold the same cells.
  EXPECT_EQ(read(outcome->files.summary_txt), format_run_comparison(compare_runs(*sa, *sb, "")));
  const auto runs = read_csv(dir.path() + "/csv/runs.csv");
  const auto makespan = std::find_if(runs.begin(), runs.end(),
                                     [](const auto& row) { return row.at("") == "makespan"; });
  ASSERT_NE(makespan, runs.end());
  EXPECT_EQ(makespan->at("B over A"),
            fmt::format("{:.2f}x", static_cast<double>(*sb->makespan_ms) /
                                       static_cast<double>(*sa->makespan_ms)));
  // A's two jobs are in both runs by name; B's third only in B.
  const auto jobs = read_csv(dir.path() + "/csv/jobs-by-name.csv");
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[2].at(fmt::format("state #{}", a)), "(not in this run)");
  EXPECT_THAT(read(outcome->files.index_html), HasSubstr("The jobs, matched by name"));
}

// Issue 33 (4): a loss reported at steps and at epoch ends is two charts,
// one over steps and one over epochs: the epoch values no longer sit at the
// last step stored, as a sawtooth on the step axis.
TEST(HtmlReport, AMetricAtStepsAndEpochEndsIsTwoChartsOfOneAxisEach) {
  RunMetrics m;
  m.run.id = 1;
  JobMetrics j;
  j.name = "train";
  j.started_ms = 0;
  MetricSeries loss;
  loss.name = "loss";
  loss.lower_is_better = true;
  loss.points = {{1000, 100, std::nullopt, 2.0},
                 {2000, 200, std::nullopt, 1.5},
                 {2100, std::nullopt, 1, 1.4},
                 {3000, 300, std::nullopt, 1.0},
                 {3100, std::nullopt, 2, 0.9}};
  j.metrics = {loss};
  m.jobs = {j};
  const ReportContent report = run_report(m, "");
  std::map<std::string, const Figure*> figures;
  for (const Section& s : report.sections)
    for (const Figure& f : s.figures) figures[f.name] = &f;
  ASSERT_TRUE(figures.contains("metric-loss"));
  ASSERT_TRUE(figures.contains("metric-loss-epochs"));
  const Table& steps = figures["metric-loss"]->data;
  EXPECT_EQ(steps.header, (std::vector<std::string>{"job", "step", "loss"}));
  ASSERT_EQ(steps.rows.size(), 3u);
  EXPECT_EQ(steps.rows[2][1], "300");
  const Table& epochs = figures["metric-loss-epochs"]->data;
  EXPECT_EQ(epochs.header, (std::vector<std::string>{"job", "epoch", "loss"}));
  ASSERT_EQ(epochs.rows.size(), 2u);
  EXPECT_EQ(epochs.rows[0][1], "1");
  EXPECT_EQ(epochs.rows[1][2], "0.9");
}

// Issue 33 (16): a loss over several decades is drawn on a log axis, one
// within a decade on a linear one.
TEST(HtmlReport, AMetricOverTwoDecadesOrMoreGetsALogAxis) {
  auto chart = [](std::vector<double> values) {
    RunMetrics m;
    m.run.id = 1;
    JobMetrics j;
    j.name = "train";
    MetricSeries loss;
    loss.name = "loss";
    loss.lower_is_better = true;
    for (size_t i = 0; i < values.size(); ++i)
      loss.points.push_back({static_cast<UnixMillis>(1000 * (i + 1)), std::nullopt,
                             static_cast<int64_t>(i + 1), values[i]});
    j.metrics = {loss};
    m.jobs = {j};
    for (const Section& s : run_report(m, "").sections)
      for (const Figure& f : s.figures)
        if (f.name == "metric-loss") return f;
    ADD_FAILURE() << "no metric-loss chart";
    return Figure{};
  };
  const Figure wide = chart({7.0, 0.5, 0.02, 0.001});
  EXPECT_EQ(wide.option["yAxis"]["type"], "log");
  EXPECT_THAT(wide.caption, HasSubstr("On a log scale"));
  EXPECT_EQ(chart({2.0, 1.0, 0.5}).option["yAxis"]["type"], "value");
}

// Issue 33 (16): a legend of more jobs than one row holds wraps onto more
// rows, all shown, and the plot moves down; it was paged at about 20.
TEST(HtmlReport, ALegendOfManyJobsWrapsOntoRowsInsteadOfPaging) {
  auto loss_chart = [](size_t jobs) {
    RunMetrics m;
    m.run.id = 1;
    for (size_t i = 0; i < jobs; ++i) {
      JobMetrics j;
      j.name = fmt::format("#3 lr-a: sweep[lr=0.{:03}]", i);
      MetricSeries loss;
      loss.name = "loss";
      loss.points.push_back({1000, std::nullopt, 1, 1.0});
      j.metrics = {loss};
      m.jobs.push_back(j);
    }
    for (const Section& s : run_report(m, "").sections)
      for (const Figure& f : s.figures)
        if (f.name == "metric-loss") return f.option;
    ADD_FAILURE() << "no metric-loss chart";
    return nlohmann::json{};
  };
  const nlohmann::json few = loss_chart(3);
  EXPECT_EQ(few["legend"]["type"], "scroll");
  EXPECT_EQ(few["grid"]["top"], 100);
  const nlohmann::json many = loss_chart(24);  // about 6 rows of names this long
  EXPECT_EQ(many["legend"]["type"], "plain");
  EXPECT_GT(many["grid"]["top"].get<int>(), 100 + 22 * 2);
  // Past eight rows the legend scrolls again, rather than squeeze the plot.
  EXPECT_EQ(loss_chart(100)["legend"]["type"], "scroll");
}

// Issue 33 (16): jobs that were never all in their steady epochs at once
// have no steady state together; the band over the GPU's charts must not be
// called so (the summary says they never were), only when they were.
TEST(HtmlReport, TheBandIsSteadyStateOnlyWhenTheJobsRanTogether) {
  RunMetrics m;
  m.run.id = 1;
  m.series = {{0, 10.0}, {10, 40.0}, {20, 40.0}, {30, 5.0}};
  m.steady_start_s = 1;
  m.steady_end_s = 25;
  auto band_and_intro = [](const ReportContent& report) {
    for (const Section& s : report.sections) {
      for (const Figure& f : s.figures) {
        if (f.name == "sm-activity-over-time")
          return std::pair{f.option["series"][0]["markArea"].dump(), s.intro};
      }
    }
    return std::pair{std::string(), std::string()};
  };
  m.together = false;
  auto [apart_band, apart_intro] = band_and_intro(run_report(m, ""));
  EXPECT_THAT(apart_band, HasSubstr("steady epochs, not all together"));
  EXPECT_THAT(apart_intro, HasSubstr("no steady state together"));
  m.together = true;
  auto [together_band, together_intro] = band_and_intro(run_report(m, ""));
  EXPECT_THAT(together_band, HasSubstr("steady state"));
  EXPECT_THAT(together_band, Not(HasSubstr("not all together")));
  EXPECT_THAT(together_intro, HasSubstr("The shaded band is steady state"));
}

TEST(HtmlReport, EmbeddedEchartsIsTheVendoredFileAndSafeInline) {
  const char* source = std::getenv("COLO_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "run through ctest (COLO_SOURCE_DIR)";
  EXPECT_EQ(echarts_js(), read(std::string(source) + "/third_party/echarts/echarts.min.js"));
  EXPECT_EQ(echarts_js().find("</script"), std::string_view::npos);
}

TEST(HtmlReport, ScriptJsonCannotCloseTheScriptElement) {
  Figure f;
  f.name = "x";
  f.title = "</script><b>";
  f.option = {{"title", {{"text", "</script>"}}}};
  const std::string page = render_figure_html(f);
  EXPECT_EQ(page.find("</script><b>"), std::string::npos);
  EXPECT_THAT(page, HasSubstr("&lt;/script&gt;&lt;b&gt;"));
}

TEST(HtmlReport, ScriptJsonCannotOpenACommentOrAScript) {
  // "<!--" then "<script" inside a script element make "</script>" no longer
  // end it: the rest of the page became script text.
  Figure f;
  f.name = "x";
  f.title = "t";
  f.option = {{"series", {{{"name", "lr=<!--<script>"}}}}, {"title", {{"text", "a</script b"}}}};
  const std::string page = render_figure_html(f);
  EXPECT_EQ(page.find("<!--"), std::string::npos);
  EXPECT_EQ(page.find("</script b"), std::string::npos);
  // The only script tags are the page's own.
  size_t tags = 0;
  for (size_t at = page.find("<script"); at != std::string::npos; at = page.find("<script", at + 1))
    ++tags;
  size_t ends = 0;
  for (size_t at = page.find("</script>"); at != std::string::npos;
       at = page.find("</script>", at + 1))
    ++ends;
  EXPECT_EQ(tags, ends);
  EXPECT_THAT(page, HasSubstr("lr=\\u003c!--\\u003cscript\\u003e"));
}

// Issue 33, item 16: `colo report --out report/` printed "report//index.html".
TEST(HtmlReport, ADirectoryWithATrailingSlashGivesPlainPaths) {
  char tmpl[] = "/tmp/colo-report-slash-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/report//";
  Result<WrittenReport> written = write_html_report(ReportContent{}, dir);
  ASSERT_TRUE(written.ok()) << written.error().message();
  EXPECT_EQ(written->index_html, std::string(tmpl) + "/report/index.html");
  std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
}

TEST(HtmlReport, UnwritableDirectoryIsAnErrorNamingIt) {
  ReportContent content;
  Result<WrittenReport> written = write_html_report(content, "/proc/colo-report-test");
  ASSERT_FALSE(written.ok());
  EXPECT_THAT(written.error().message(), HasSubstr("/proc/colo-report-test"));
}

TEST(HtmlReport, LongTextCellsAreCutWithTheWholeOnHoverAndFileCellsAreLinks) {
  Table table;
  table.name = "windows";
  table.header = {"top op", "trace"};
  table.link_column = 1;
  const std::string kernel =
      "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, "
      "__nv_bfloat16, float, false, true>(params)";
  table.rows = {{kernel, "/logs/1/001-a.profile/torch-trace-1.json"}, {"aten::mm", ""}};
  ReportContent content;
  content.title = "t";
  content.sections.push_back(Section{"Profiling windows", "", {}, {table}});
  const std::string html = render_index_html(content);
  EXPECT_THAT(html,
              HasSubstr("<span title=\"void cudnn::engines_precompiled::nchwToNhwcKernel"
                        "&lt;__nv_bfloat16, __nv_bfloat16, float, false, true&gt;(params)\">"));
  EXPECT_THAT(html, HasSubstr("nchwToNhwcKernel&lt;__nv_bfloat16,&hellip;</span>"));
  EXPECT_THAT(html, HasSubstr("<td><a href=\"file:///logs/1/001-a.profile/torch-trace-1.json\" "
                              "title=\"/logs/1/001-a.profile/torch-trace-1.json\">"
                              "torch-trace-1.json</a></td>"));
  EXPECT_THAT(html, HasSubstr("<td>aten::mm</td><td>&ndash;</td>"));  // short, and none
  EXPECT_EQ(to_csv(table).find("&hellip;"), std::string::npos);       // the CSV has it whole
}

}  // namespace
}  // namespace colo
