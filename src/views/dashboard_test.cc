#include "views/dashboard.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "report/html_report.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class DashboardPagesTest : public ::testing::Test {
 protected:
  DashboardPagesTest() {
    std::unique_ptr<RunStore> store = testing::open_memory_store();
    testing::FakeRun run;
    run.degree = 2;
    run_id_ = testing::add_fake_run(*store, run, testing::kFakeT0);
    pages_ = std::make_unique<DashboardPages>(std::move(store));
  }
  HttpAnswer get(const std::string& path) {
    std::optional<HttpAnswer> answer = pages_->get(path);
    EXPECT_TRUE(answer) << path << " should be the dashboard's";
    return answer ? *answer : HttpAnswer{};
  }
  std::unique_ptr<DashboardPages> pages_;
  int64_t run_id_ = 0;
};

TEST_F(DashboardPagesTest, ThePageAndEchartsComeFromTheBinary) {
  for (const char* path : {"/dashboard", "/dashboard/", "/dashboard/job/12", "/dashboard/usage"}) {
    HttpAnswer page = get(path);
    EXPECT_EQ(page.status, 200) << path;
    EXPECT_THAT(page.content_type, StartsWith("text/html"));
    EXPECT_EQ(page.body, dashboard_html());
  }
  HttpAnswer js = get("/dashboard/echarts.min.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_THAT(js.content_type, StartsWith("application/javascript"));
  EXPECT_EQ(js.body, echarts_js());
}

TEST_F(DashboardPagesTest, ThePageNeedsNothingButTheService) {
  const std::string page(dashboard_html());
  EXPECT_THAT(page, Not(HasSubstr("http://")));
  EXPECT_THAT(page, Not(HasSubstr("https://")));
  EXPECT_THAT(page, Not(HasSubstr("//cdn")));
  EXPECT_THAT(page, HasSubstr("<script src=\"/dashboard/echarts.min.js\">"));
  EXPECT_THAT(page, Not(HasSubstr("innerHTML"))) << "names reach the page as text only";
}

TEST_F(DashboardPagesTest, OtherPathsAreNotTheDashboards) {
  EXPECT_FALSE(pages_->get("/"));
  EXPECT_FALSE(pages_->get("/api/snapshot"));
  EXPECT_FALSE(pages_->get("/metrics"));
  EXPECT_FALSE(pages_->get("/dashboardx"));
  for (const char* path :
       {"/dashboard/nope", "/dashboard/job/x", "/dashboard/job/-1", "/dashboard/runs/x/"}) {
    HttpAnswer a = get(path);
    EXPECT_EQ(a.status, 404) << path;
    EXPECT_THAT(a.body, HasSubstr("/dashboard/")) << path;
  }
}

TEST_F(DashboardPagesTest, ARunsReportIsColoReportsPageWithItsFilesBeside) {
  const std::string base = "/dashboard/runs/" + std::to_string(run_id_) + "/";
  HttpAnswer index = get(base);
  ASSERT_EQ(index.status, 200) << index.body;
  EXPECT_THAT(index.body, HasSubstr("run #" + std::to_string(run_id_)));
  EXPECT_THAT(index.body, HasSubstr("data-figure=\""));
  EXPECT_THAT(index.body, HasSubstr("SIMULATED"));
  // Every CSV and figure page the report links is there.
  int links = 0;
  for (size_t at = index.body.find("href=\"csv/"); at != std::string::npos;
       at = index.body.find("href=\"csv/", at + 1)) {
    const size_t start = at + 6;
    const std::string file = index.body.substr(start, index.body.find('"', start) - start);
    HttpAnswer csv = get(base + file);
    EXPECT_EQ(csv.status, 200) << file;
    EXPECT_THAT(csv.content_type, StartsWith("text/csv"));
    EXPECT_FALSE(csv.body.empty());
    ++links;
  }
  EXPECT_GE(links, 2);
  const size_t figure = index.body.find("href=\"figures/");
  ASSERT_NE(figure, std::string::npos);
  const std::string page =
      index.body.substr(figure + 6, index.body.find('"', figure + 6) - figure - 6);
  EXPECT_THAT(get(base + page).body, HasSubstr("<script src=\"echarts.min.js\">"));
  EXPECT_EQ(get(base + "figures/echarts.min.js").body, echarts_js());
  EXPECT_EQ(get(base + "summary.txt").status, 200);
  EXPECT_EQ(get(base + "csv/nothing.csv").status, 404);
  // Without the slash the report's relative links would break: sent to it.
  HttpAnswer bare = get("/dashboard/runs/" + std::to_string(run_id_));
  EXPECT_THAT(bare.body, HasSubstr("url=" + base));
}

// Issue 58, item 14: a screenshot taken as the page loaded showed
// "connecting..." and empty tables. Each page comes with the API's answers
// in it, which it draws before asking for anything.
TEST_F(DashboardPagesTest, EachPageCarriesItsFirstDataFromTheApi) {
  std::vector<std::string> asked;
  const ApiReader api = [&](const std::string& path) {
    asked.push_back(path);
    if (path == "/api/snapshot") {
      return HttpAnswer{200, "application/json",
                        R"({"jobs":[{"id":1,"name":"</script><img src=x onerror=alert(1)>"}]})"};
    }
    if (path == "/api/jobs/7") return HttpAnswer{200, "application/json", R"({"job":{"id":7}})"};
    if (path == "/api/jobs/8")
      return HttpAnswer{404, "application/json", R"({"error":"there is no job 8"})"};
    if (path == "/api/service") return HttpAnswer{200, "application/json", R"({"service":{}})"};
    if (path == "/api/usage") return HttpAnswer{503, "text/plain", "down"};
    return HttpAnswer{404, "application/json", R"({"error":"?"})"};
  };
  // The JSON of the page's first-data block.
  const auto first_of = [](const std::string& page) {
    const std::string open = "<script type=\"application/json\" id=\"first-data\">";
    const size_t at = page.find(open);
    if (at == std::string::npos) return nlohmann::json();
    const size_t from = at + open.size();
    return nlohmann::json::parse(page.substr(from, page.find("</script>", from) - from), nullptr,
                                 false);
  };
  struct Case {
    const char* path;
    std::vector<std::string> asked;
    nlohmann::json first;
  };
  for (const Case& c : {
           Case{"/dashboard/",
                {"/api/snapshot"},
                {{"page", "overview"},
                 {"snapshot",
                  {{"jobs", {{{"id", 1}, {"name", "</script><img src=x onerror=alert(1)>"}}}}}}}},
           Case{"/dashboard",
                {"/api/snapshot"},
                {{"page", "overview"},
                 {"snapshot",
                  {{"jobs", {{{"id", 1}, {"name", "</script><img src=x onerror=alert(1)>"}}}}}}}},
           Case{"/dashboard/job/7",
                {"/api/jobs/7", "/api/service"},
                {{"page", "job"},
                 {"job", {{"job", {{"id", 7}}}}},
                 {"service", {{"service", nlohmann::json::object()}}}}},
           Case{"/dashboard/job/8",
                {"/api/jobs/8", "/api/service"},
                {{"page", "job"},
                 {"job", {{"error", "there is no job 8"}, {"status", 404}}},
                 {"service", {{"service", nlohmann::json::object()}}}}},
           Case{"/dashboard/usage",
                {"/api/usage", "/api/service"},
                {{"page", "usage"},
                 {"usage", {{"error", "down"}, {"status", 503}}},
                 {"service", {{"service", nlohmann::json::object()}}}}},
       }) {
    SCOPED_TRACE(c.path);
    asked.clear();
    std::optional<HttpAnswer> page = pages_->get(c.path, api);
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_EQ(asked, c.asked);
    EXPECT_EQ(first_of(page->body), c.first);
    // No name in it ends its block: one "</script>" for each <script>.
    EXPECT_THAT(page->body, Not(HasSubstr("</script><img")));
    EXPECT_THAT(page->body, Not(HasSubstr("id=\"first-data\">null<")));
  }
  // Neither ECharts nor a report page asks the API for anything.
  asked.clear();
  EXPECT_EQ(pages_->get("/dashboard/echarts.min.js", api)->body, echarts_js());
  EXPECT_EQ(pages_->get("/dashboard/job/x", api)->status, 404);
  EXPECT_TRUE(asked.empty());
  // Without the API the page asks for its data as it loads.
  EXPECT_EQ(first_of(get("/dashboard/").body), nlohmann::json(nullptr));
}

TEST(DashboardPage, FirstDataIsWrittenSoThatNoTextEndsItsBlock) {
  const nlohmann::json first = {{"name", "a</script><script>alert(1)</script>"}, {"n", 1}};
  const std::string page = dashboard_page(first);
  EXPECT_THAT(page,
              HasSubstr(R"({"n":1,"name":"a\u003c/script>\u003cscript>alert(1)\u003c/script>"})"));
  EXPECT_THAT(page, Not(HasSubstr("<script>alert")));
  EXPECT_EQ(dashboard_page(nullptr), dashboard_html());
}

// Issue 58, item 14: a service run's report mixed two submissions' jobs of
// one name. Each job is named by its submission first.
TEST(DashboardReports, AServiceRunsReportNamesEachJobByItsSubmission) {
  std::unique_ptr<RunStore> store = testing::open_memory_store();
  testing::FakeRun fake;
  fake.degree = 2;
  const int64_t run_id = testing::add_fake_run(*store, fake, testing::kFakeT0);
  Result<RunRecord> record = store->run_record(run_id);
  ASSERT_TRUE(record.ok()) << record.error().message();
  ASSERT_EQ(record->jobs.size(), 2u);
  std::vector<int64_t> subs;
  for (int i = 0; i < 2; ++i) {
    NewServiceJob job{testing::kFakeT0,     1000, "alice", "sw.toml",
                      record->jobs[i].name, "sw", "{}",    "{}"};
    Result<std::vector<int64_t>> ids =
        store->add_service_jobs({job}, run_id, {i == 0 ? "" : "lr-b", {}, ""});
    ASSERT_TRUE(ids.ok());
    ASSERT_TRUE(
        store->service_job_started(ids->front(), record->jobs[i].id, 0, testing::kFakeT0, "").ok());
    subs.push_back(*store->service_jobs_by_id({ids->front()})->front().submission_id);
  }
  DashboardPages pages(std::move(store));
  const std::string base = "/dashboard/runs/" + std::to_string(run_id) + "/";
  std::optional<HttpAnswer> summary = pages.get(base + "summary.txt");
  ASSERT_TRUE(summary && summary->status == 200);
  const std::string first = fmt::format("#{}/{}: {}", run_id, subs[0], record->jobs[0].name);
  const std::string second = fmt::format("#{}/{} lr-b: {}", run_id, subs[1], record->jobs[1].name);
  EXPECT_THAT(summary->body, HasSubstr(first));
  EXPECT_THAT(summary->body, HasSubstr(second));
  std::optional<HttpAnswer> index = pages.get(base);
  ASSERT_TRUE(index && index->status == 200);
  EXPECT_THAT(index->body, HasSubstr(fmt::format("#{}/{} lr-b: ", run_id, subs[1])));
}

// Issue 58, item 14: the overview listed `sw[lr=0.2]` of two submissions
// alike. The page comes with each job's listed name (listed_names()), which
// its table shows.
TEST(DashboardOverview, ItsFirstDataListsTwoSubmissionsJobsOfOneNameByTheirSubmission) {
  auto snapshot = std::make_shared<ServiceSnapshot>();
  snapshot->time_ms = testing::kFakeT0;
  for (int64_t sub : {3, 5}) {
    QueueJob j;
    j.id = sub * 10;
    j.name = "sw[lr=0.2]";
    j.state = "queued";
    j.submission_id = sub;
    j.submission_run_id = 7;
    j.submission_name = sub == 5 ? "lr-b" : "";
    snapshot->jobs.push_back(j);
  }
  ApiRoutes api([&] { return std::shared_ptr<const ServiceSnapshot>(snapshot); }, nullptr, {});
  DashboardPages pages(nullptr);
  std::optional<HttpAnswer> page =
      pages.get("/dashboard/", [&](const std::string& path) { return api.get(path, {}); });
  ASSERT_TRUE(page && page->status == 200);
  EXPECT_THAT(page->body, HasSubstr(R"("listed_name":"#7/3: sw[lr=0.2]")"));
  EXPECT_THAT(page->body, HasSubstr(R"("listed_name":"#7/5 lr-b: sw[lr=0.2]")"));
  EXPECT_THAT(page->body, HasSubstr("text: listedName(j)")) << "the table shows them";
}

TEST_F(DashboardPagesTest, AMissingRunIs404AndNoStoreIs503) {
  EXPECT_EQ(get("/dashboard/runs/999/").status, 404);
  DashboardPages without(nullptr);
  std::optional<HttpAnswer> a = without.get("/dashboard/runs/1/");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 503);
  EXPECT_EQ(without.get("/dashboard/")->status, 200) << "the rest works without a store";
}

// Issue 35, item 7: every request rebuilt the service's always-running
// report, one at a time under a lock. Requests now share one build, and a
// change to the store is built in by the dashboard's own thread.
TEST(DashboardCache, RequestsShareOneBuildAndAChangeIsBuiltOffTheRequestPath) {
  std::string dir = ::testing::TempDir() + "dash.XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/colo.db";
  Result<std::unique_ptr<RunStore>> writer = RunStore::open(path);
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  NewRun run;
  run.started_ms = testing::kFakeT0;
  run.mechanism = "naive";
  run.backend = "sim";
  run.simulated = true;
  run.host = "fake-host";
  run.colo_pid = 1;
  run.devices_json = R"([{"index":0,"name":"NVIDIA H200","uuid":"GPU-fake"}])";
  Result<int64_t> running = (*writer)->begin_run(run);  // never ended: like colo serve's
  ASSERT_TRUE(running.ok()) << running.error().message();
  Result<std::unique_ptr<RunStore>> reader = RunStore::open_read_only(path);
  ASSERT_TRUE(reader.ok()) << reader.error().message();
  DashboardPages pages(std::move(reader).value());
  const std::string page = "/dashboard/runs/" + std::to_string(*running) + "/summary.txt";

  std::vector<std::thread> readers;
  std::atomic<int> answered{0};
  for (int i = 0; i < 16; ++i) {
    readers.emplace_back([&] {
      std::optional<HttpAnswer> a = pages.get(page);
      if (a && a->status == 200) ++answered;
    });
  }
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(answered, 16);
  EXPECT_EQ(pages.builds(), 1) << "16 requests at once, one build";

  testing::add_fake_run(**writer, testing::FakeRun{}, testing::kFakeT0 + 60'000);
  // Rebuilt within a refresh round or two, with no request waiting for it.
  for (int i = 0; i < 400 && pages.builds() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(pages.builds(), 2);
  EXPECT_EQ(pages.get(page)->status, 200);
  EXPECT_EQ(pages.builds(), 2) << "answered from the cache";
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace colo
