// colo serve's dashboard: the pages a browser reads at the service's HTTP
// address, beside the JSON API they are built on (serve/http_api.h). All of
// it is compiled into colo (the page, ECharts), so it works with no network.
//
// Routes (GET):
//   /dashboard/                       GPUs (SM activity, memory, power, PCIe over
//                                     the last minutes), processes, jobs, runs
//   /dashboard/job/ID                 one job: epochs, rate over time, attempts, log
//   /dashboard/echarts.min.js         the vendored ECharts
//   /dashboard/runs/ID/               run ID's report page: `colo report`'s own
//   /dashboard/runs/ID/csv/NAME.csv   ... the numbers behind a figure or table
//   /dashboard/runs/ID/figures/NAME.html, .../figures/echarts.min.js
//   /dashboard/runs/ID/summary.txt
//
// Read-only, like the API. The page shows every name through textContent;
// the report pages escape as `colo report` does. Each page (the overview, a
// job, usage) comes with its first data in it, the API's answers at the
// moment it is sent, and draws them before its first request of its own.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/clock.h"
#include "common/result.h"
#include "report/report_writer.h"
#include "serve/http_api.h"
#include "store/run_store.h"

namespace colo {

// The dashboard page (src/views/dashboard.html, compiled in).
std::string_view dashboard_html();

// The page with `first` as its first data, in its <script
// type="application/json" id="first-data"> block (null in
// dashboard_html()), which the page draws from before it asks the service
// for anything: a screenshot taken as it loads shows data, not
// "connecting...". Every "<" in the JSON is written \u003c, so that no
// name in it can end the block.
std::string dashboard_page(const nlohmann::json& first);

// The first data of the page at `path` ("/dashboard/", "/dashboard/usage",
// "/dashboard/job/ID"), read through `api`: {"page": "overview", "snapshot":
// /api/snapshot}, {"page": "usage", "usage": /api/usage, "service":
// /api/service} or {"page": "job", "job": /api/jobs/ID, "service": ...}; an
// answer other than 200 as {"error": its message, "status": its status}.
nlohmann::json dashboard_first_data(std::string_view path, const ApiReader& api);

// Thread-safe: HTTP threads call get() concurrently.
//
// Run reports are cached per version of the store's data and rebuilt off the
// request path: a request is answered from the report built last (building
// it only the first time a run is asked for), and a thread of the
// dashboard's own rebuilds a running run's report when the store has changed
// since, at most every kRefreshMs, while someone has asked for it in the last
// kWatchedMs. So many readers of the service's always-running report cost
// one build per refresh, not one each (issue 35, item 7: 40 requests left
// /metrics unanswered for 20 s).
class DashboardPages {
 public:
  // `store`: a read-only connection of the dashboard's own; null: the run
  // report pages answer 503.
  explicit DashboardPages(std::unique_ptr<RunStore> store);
  ~DashboardPages();  // stops the rebuilding thread
  DashboardPages(const DashboardPages&) = delete;
  DashboardPages& operator=(const DashboardPages&) = delete;

  // The answer to GET `path`; nullopt when the path is not the dashboard's.
  // A page's first data is read through `api` (none without it: the page
  // then asks for it as it loads).
  std::optional<HttpAnswer> get(const std::string& path, const ApiReader& api = {});

  // Reports built so far (the first build of each run and every rebuild).
  int64_t builds() const;

  static constexpr int64_t kRefreshMs = 2'000;
  static constexpr int64_t kWatchedMs = 60'000;

 private:
  struct Cached {
    std::shared_ptr<const BuiltReport> report;
    int64_t data_version = 0;
    int64_t built_ms = 0;  // monotonic
    int64_t asked_ms = 0;  // monotonic: the last request for it
    bool ended = false;    // built after its run ended: never rebuilt
  };
  HttpAnswer run_page(int64_t run_id, const std::string& rest);
  // Run `run_id`'s latest report: the cached one, else built now.
  Result<std::shared_ptr<const BuiltReport>> report_of(int64_t run_id);
  // Builds run `run_id`'s report and caches it, under build_mu_. A first
  // build (`refresh` false) returns what another request built meanwhile; a
  // refresh rebuilds only when the store changed since the cached one.
  Result<std::shared_ptr<const BuiltReport>> build(int64_t run_id, bool refresh);
  void refresh_loop();

  SystemClock clock_;
  std::mutex build_mu_;              // one build at a time; held while the store is read
  std::unique_ptr<RunStore> store_;  // guarded by build_mu_
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<int64_t, Cached> cache_;  // guarded by mu_
  int64_t builds_ = 0;               // guarded by mu_
  bool stopping_ = false;            // guarded by mu_
  std::thread refresher_;
};

// The dashboard's routes for colo serve (ServeOptions::http_pages): pages
// over a read-only connection to the store at `store_path` (without one,
// the run report pages answer 503 and the rest works).
PageRoutes dashboard_routes(const std::string& store_path);

}  // namespace colo
