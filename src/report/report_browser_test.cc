// The report in a real browser: headless Chromium (Debian package chromium,
// installed by scripts/install-deps.sh) loads index.html from disk, runs
// ECharts, and the test reads the DOM it dumps: every chart container must hold
// an <svg> with drawn <path>s. Also checks the PNG export. Without a browser
// every test here fails, saying how to install one.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "analysis/stored.h"
#include "report/png_export.h"
#include "report/report_writer.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

namespace fs = std::filesystem;

class ReportInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::string> browser = find_browser();
    ASSERT_TRUE(browser) << "headless Chromium is required for this test and was not found on "
                            "PATH: install it (Debian: apt-get install chromium, or run "
                            "scripts/install-deps.sh)";
    options_.browser = *browser;
  }

  // Writes the report of `target` into dir_, with a PNG of each figure when
  // `png` (one browser start per figure: the slowest part of these tests, so
  // the tests that check PNGs are those whose pages differ in what they draw).
  ReportOutcome write(RunStore& store, const ReportTarget& target, bool png) {
    ReportOptions options;
    options.out_dir = dir_.path() + "/report";
    options.browser = options_.browser;
    options.png = png;
    Result<ReportOutcome> outcome = write_report(store, target, options);
    EXPECT_TRUE(outcome.ok()) << outcome.error().message();
    return outcome.ok() ? std::move(*outcome) : ReportOutcome{};
  }

  // The DOM of index.html after ECharts has drawn (`hash`: "#smooth=0.9", ...).
  std::string dom(const ReportOutcome& outcome, const std::string& hash = "") {
    PngExportOptions options = options_;
    options.width_px = 1200;
    options.height_px = 900;
    Result<std::string> text =
        run_headless_browser(options, {"--dump-dom"},
                             "file://" + fs::absolute(outcome.files.index_html).string() + hash);
    EXPECT_TRUE(text.ok()) << text.error().message();
    return text.ok() ? *text : "";
  }

  // Checks that every figure's container in `html` holds a drawn SVG chart.
  static void expect_charts_drawn(const std::string& html, const ReportOutcome& outcome) {
    ASSERT_FALSE(outcome.files.figure_pages.empty());
    for (const std::string& page : outcome.files.figure_pages) {
      const std::string name = fs::path(page).stem().string();
      const std::string marker = "data-figure=\"" + name + "\"";
      const size_t at = html.find(marker);
      ASSERT_NE(at, std::string::npos) << name << " has no container in the page";
      const size_t end = html.find("class=\"csv\"", at);
      const std::string chart = html.substr(at, end - at);
      EXPECT_THAT(chart, ::testing::HasSubstr("data-rendered=\"yes\"")) << name;
      EXPECT_THAT(chart, ::testing::HasSubstr("<svg")) << name;
      EXPECT_THAT(chart, ::testing::Not(::testing::HasSubstr("chart-error"))) << name;
      // Axes, legend and data: a drawn chart has many paths.
      int paths = 0;
      for (size_t p = chart.find("<path"); p != std::string::npos; p = chart.find("<path", p + 1)) {
        ++paths;
      }
      EXPECT_GE(paths, 10) << name << " looks empty";
    }
  }

  static void expect_pngs(const ReportOutcome& outcome) {
    ASSERT_TRUE(outcome.png_note.empty()) << outcome.png_note;
    EXPECT_EQ(outcome.pngs.size(), outcome.files.figure_pages.size());
    for (const std::string& png : outcome.pngs) {
      std::ifstream in(png, std::ios::binary);
      char magic[8] = {};
      in.read(magic, sizeof magic);
      EXPECT_EQ(std::string(magic + 1, 3), "PNG") << png;
      EXPECT_GT(fs::file_size(png), 5'000u) << png << " is too small to hold a chart";
    }
  }

  PngExportOptions options_;
  testing::TempDir dir_{"colo_browser_test"};
};

TEST_F(ReportInBrowser, RunReportOfTheH200ResultsRendersEveryChart) {
  const char* source = std::getenv("COLO_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "run through ctest (COLO_SOURCE_DIR)";
  // A copy: opening a store may migrate it, and the committed file stays as it is.
  const std::string db = dir_.path() + "/colo.db";
  fs::copy_file(std::string(source) + "/docs/results/2026-11-22-h200-resnet26x7/colo.db", db);
  Result<std::unique_ptr<RunStore>> store = RunStore::open(db);
  ASSERT_TRUE(store.ok()) << store.error().message();
  const ReportOutcome outcome = write(**store, ReportTarget{ReportTarget::Kind::kRun, 2}, false);
  EXPECT_EQ(outcome.description, "run #2 (mps)");
  const std::string html = dom(outcome);
  expect_charts_drawn(html, outcome);
  EXPECT_THAT(html, ::testing::HasSubstr("resnet26#7"));  // the per-job table
}

TEST_F(ReportInBrowser, ExperimentReportRendersEveryChartWithGapsAndBanner) {
  const std::string db = dir_.path() + "/colo.db";
  Result<std::unique_ptr<RunStore>> store = RunStore::open(db);
  ASSERT_TRUE(store.ok()) << store.error().message();
  testing::add_fake_experiment(**store);
  const ReportOutcome outcome = write(**store, ReportTarget{}, false);
  const std::string html = dom(outcome);
  expect_charts_drawn(html, outcome);
  EXPECT_THAT(html, ::testing::HasSubstr("class=\"banner\">SIMULATED"));
  EXPECT_THAT(html, ::testing::HasSubstr("does not fit"));  // drawn as an SVG label
  EXPECT_GE(outcome.files.figure_pages.size(), 12u);
}

TEST_F(ReportInBrowser, AGridValueThatOpensAnHtmlCommentLeavesEveryChartDrawn) {
  // A job named after a grid value "<!--<script>" once put the rest of the
  // page inside a script element: every chart blank, blank PNGs, no warning.
  std::unique_ptr<RunStore> store = testing::open_memory_store();
  testing::FakeRun run;
  run.degree = 2;
  run.model = "lr=<!--<script>";
  const int64_t id = testing::add_fake_run(*store, run, testing::kFakeT0);
  const ReportOutcome outcome = write(*store, ReportTarget{ReportTarget::Kind::kRun, id}, true);
  const std::string html = dom(outcome);
  expect_charts_drawn(html, outcome);
  EXPECT_THAT(html, ::testing::HasSubstr("lr=&lt;!--&lt;script&gt;"));
  expect_pngs(outcome);
}

TEST_F(ReportInBrowser, ChartsThatDidNotDrawAreNamed) {
  const std::string page = dir_.path() + "/page.html";
  std::ofstream(page) << "<html><body><div data-figure=\"drawn\" data-rendered=\"yes\"><svg>"
                         "</svg></div><div data-figure=\"blank\"></div><div data-figure=\"broken\">"
                         "<div class=\"chart-error\">This chart could not be drawn: TypeError"
                         "</div></div></body></html>";
  Status drawn = verify_charts_drawn(options_, page);
  ASSERT_FALSE(drawn.ok());
  EXPECT_THAT(drawn.error().message(), ::testing::HasSubstr(page));
  EXPECT_THAT(drawn.error().message(), ::testing::HasSubstr("blank (its script did not run)"));
  EXPECT_THAT(drawn.error().message(), ::testing::HasSubstr("broken (TypeError)"));
  EXPECT_THAT(drawn.error().message(), ::testing::Not(::testing::HasSubstr("drawn,")));
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// A fake run of `degree` jobs, job j reporting loss(j, epoch) at epochs
// 1..`epochs`, in `store`; its id.
int64_t add_run_with_losses(RunStore& store, int degree, int epochs,
                            const std::function<double(size_t, int)>& loss) {
  testing::FakeRun run;
  run.degree = degree;
  const int64_t id = testing::add_fake_run(store, run, testing::kFakeT0);
  Result<RunRecord> record = store.run_record(id);
  EXPECT_TRUE(record.ok()) << record.error().message();
  std::vector<std::pair<int64_t, ProgressEvent>> events;
  for (size_t j = 0; record.ok() && j < record->jobs.size(); ++j) {
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      ProgressEvent e;
      e.kind = "metric";
      e.time_ms = testing::kFakeT0 + 20'000 + int64_t{epoch} * 1'000;
      e.epoch = epoch;
      e.metrics["loss"] = loss(j, epoch);
      events.emplace_back(record->jobs[j].id, e);
    }
  }
  EXPECT_TRUE(store.add_job_events(events).ok());
  return id;
}

// Issue 26: a run whose jobs reported a loss per epoch. Its report has one
// loss chart with a line per job, drawn by the browser, and the DOM's table
// holds each job's best loss as the store gives it.
TEST_F(ReportInBrowser, TheLossOfEachJobIsDrawnAndItsBestIsTheStores) {
  std::unique_ptr<RunStore> store = testing::open_memory_store();
  const int64_t id = add_run_with_losses(*store, 3, 3, [](size_t j, int epoch) {
    return 2.0 / (epoch + static_cast<double>(j)) + 0.125;
  });
  const ReportOutcome outcome = write(*store, ReportTarget{ReportTarget::Kind::kRun, id}, false);
  const std::string html = dom(outcome);
  expect_charts_drawn(html, outcome);
  const size_t at = html.find("data-figure=\"metric-loss\"");
  ASSERT_NE(at, std::string::npos) << "no loss chart";
  const std::string chart = html.substr(at, html.find("class=\"csv\"", at) - at);
  Result<RunSummary> summary = analyse_run(*store, id);
  ASSERT_TRUE(summary.ok());
  for (const JobSummary& job : summary->jobs) {
    EXPECT_THAT(chart, ::testing::HasSubstr(job.name)) << "a line per job, in the legend";
    const MetricSeries* loss = find_metric(job.metrics, "loss");
    ASSERT_NE(loss, nullptr) << job.name;
    // The page's table shows it as it shows every value below 1: 3 significant digits.
    EXPECT_THAT(html, ::testing::HasSubstr(fmt::format("<td>{:.3g}</td>", loss->best))) << job.name;
  }
}

// Issue 33: a chart of curves has a log-scale switch and a smoothing slider;
// a link sets them (index.html#smooth=0.9&log=1), and they redraw the chart.
TEST_F(ReportInBrowser, ALossChartIsRedrawnSmoothedAndOnALogScale) {
  std::unique_ptr<RunStore> store = testing::open_memory_store();
  const int64_t id = add_run_with_losses(*store, 2, 8, [](size_t j, int epoch) {
    return (epoch % 2 == 0 ? 1.0 : 3.0) + static_cast<double>(j);  // zigzag
  });
  const ReportOutcome outcome = write(*store, ReportTarget{ReportTarget::Kind::kRun, id}, false);
  auto loss_chart = [](const std::string& html) {
    const size_t at = html.find("data-controls=\"metric-loss\"");
    return at == std::string::npos ? "" : html.substr(at, html.find("class=\"csv\"", at) - at);
  };
  const std::string plain = loss_chart(dom(outcome));
  ASSERT_THAT(plain, ::testing::HasSubstr("<output>0.00</output>")) << "no controls";
  ASSERT_THAT(plain, ::testing::HasSubstr("<svg"));
  const auto svg = [](const std::string& chart) { return chart.substr(chart.find("<svg")); };
  ASSERT_EQ(svg(loss_chart(dom(outcome))), svg(plain)) << "the same page drew differently twice";
  const std::string smooth = loss_chart(dom(outcome, "#smooth=0.9"));
  EXPECT_THAT(smooth, ::testing::HasSubstr("<output>0.90</output>"));
  EXPECT_THAT(smooth, ::testing::HasSubstr("<svg"));
  EXPECT_NE(svg(smooth), svg(plain)) << "smoothing did not redraw the curves";
  const std::string log = loss_chart(dom(outcome, "#log=1"));
  EXPECT_NE(svg(log), svg(plain)) << "the log scale did not redraw the axis";
}

}  // namespace
}  // namespace colo
