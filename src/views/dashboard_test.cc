#include "views/dashboard.h"

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
