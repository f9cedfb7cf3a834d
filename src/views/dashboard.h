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
// the report pages escape as `colo report` does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "report/report_writer.h"
#include "serve/http_api.h"
#include "store/run_store.h"

namespace colo {

// The dashboard page (src/views/dashboard.html, compiled in).
std::string_view dashboard_html();

// Thread-safe: HTTP threads call get() concurrently.
class DashboardPages {
 public:
  // `store`: a read-only connection of the dashboard's own; null: the run
  // report pages answer 503.
  explicit DashboardPages(std::unique_ptr<RunStore> store);

  // The answer to GET `path`; nullopt when the path is not the dashboard's.
  std::optional<HttpAnswer> get(const std::string& path);

 private:
  HttpAnswer run_page(int64_t run_id, const std::string& rest);
  // Run `run_id`'s report; ended runs' reports are kept (a few), since they
  // no longer change.
  Result<std::shared_ptr<const BuiltReport>> report_of(int64_t run_id);

  std::mutex mu_;
  std::unique_ptr<RunStore> store_;                                      // guarded by mu_
  std::map<int64_t, std::shared_ptr<const BuiltReport>> ended_reports_;  // guarded by mu_
};

// The dashboard's routes for colo serve (ServeOptions::http_pages): pages
// over a read-only connection to the store at `store_path` (without one,
// the run report pages answer 503 and the rest works).
PageRoutes dashboard_routes(const std::string& store_path);

}  // namespace colo
