// colo serve's HTTP interface (`colo serve --http ADDR:PORT`): a read-only
// JSON API for dashboards and scripts, and Prometheus /metrics. Off unless
// asked for; 127.0.0.1 unless another address is named. Writes (submit,
// cancel) go only through the Unix socket, which knows who is asking.
//
// Routes (GET; docs/serve.md gives every shape):
//   /                  a redirect (303) to /dashboard/ when the dashboard is
//                      served, else to /api
//   /api               the routes
//   /api/snapshot      the whole snapshot (the socket's `queue` answer)
//   /api/service       the service
//   /api/gpus          GPUs with their latest sample
//   /api/jobs          queued, running and recently ended jobs (?state=)
//   /api/jobs/ID       one job: its grid parameters, submission, objective,
//                      attempts, epochs, metrics, recent events, log tail
//   /api/jobs/ID/profiles/N/trace
//                      its profiling window N's Chrome trace, as a download
//                      (with --http-logs, as log tails)
//   /api/samples       recent device samples (?since=MS, ?gpu=N)
//   /api/runs          recent runs of the store (?limit=N)
//   /api/usage         colo usage's figures: each user's usage lately and in
//                      all, and the jobs that ended since ?since=MS (default:
//                      the last 7 days) with their GPU time, solo-equivalent
//                      time, GPU time held and energy
//   /metrics           Prometheus text format (serve/metrics.h)
//
// ApiRoutes answers requests apart from any server (tests call it directly);
// HttpServer is cpp-httplib's server around it, on its own threads. The
// routes read only the service's latest published snapshot and the store
// through a read-only connection of their own, so they never wait for the
// service's loop and cannot change anything.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "common/result.h"
#include "common/unique_fd.h"
#include "serve/snapshot.h"
#include "store/run_store.h"

namespace colo {

class GatedServer;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (the address says which)
  // Job log tails in /api/jobs/ID. Off by default: the socket lets a user
  // read only their own logs, while anyone who reaches the address reads
  // these.
  bool logs = false;
};

// "--http ADDR:PORT": "127.0.0.1:8470", "[::1]:8470", "0.0.0.0:8470"; ":8470"
// and "8470" mean 127.0.0.1. An error says what is wrong and what to write.
Result<HttpOptions> parse_http_address(std::string_view text);

// True for addresses only this machine reaches (127.0.0.0/8, ::1, localhost).
bool is_loopback(const std::string& host);

struct HttpAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string location;  // a redirect's target (the Location header); "" for none
  // A file sent instead of `body`, read as it is sent, `file_size` bytes
  // from its start, as a download named `download_name`.
  std::shared_ptr<const UniqueFd> file;
  uint64_t file_size = 0;
  std::string download_name;
};

// The API's answer to GET `path` (an /api route, no query parameters; any
// other path answers 404): what a page embeds as its first data, so that it
// shows them before its first request of its own.
using ApiReader = std::function<HttpAnswer(const std::string& path)>;

// More GET routes, asked before the API's (the dashboard: src/views): the
// answer, or nullopt when the path is not theirs. `api` reads the API as
// the request's answer would. Called from HTTP threads.
using PageRoutes =
    std::function<std::optional<HttpAnswer>(const std::string& path, const ApiReader& api)>;

class ApiRoutes {
 public:
  using SnapshotSource = std::function<std::shared_ptr<const ServiceSnapshot>()>;

  // `store` may be null (no store routes: /api/jobs/ID and /api/runs answer 503).
  ApiRoutes(SnapshotSource snapshot, std::unique_ptr<RunStore> store, HttpOptions options);

  // Answers GET `path` with its query parameters. Thread-safe.
  HttpAnswer get(const std::string& path, const std::map<std::string, std::string>& query);

  // Adds `pages` before requests are answered (before HttpServer::serve).
  void add_pages(PageRoutes pages) { pages_ = std::move(pages); }

 private:
  HttpAnswer job_detail(const ServiceSnapshot& snapshot, int64_t id,
                        const std::map<std::string, std::string>& query);
  HttpAnswer profile_trace(int64_t id, int64_t window);
  HttpAnswer runs(const std::map<std::string, std::string>& query);
  HttpAnswer usage(const ServiceSnapshot& snap, const std::map<std::string, std::string>& query);

  SnapshotSource snapshot_;
  std::mutex store_mu_;
  std::unique_ptr<RunStore> store_;  // guarded by store_mu_
  HttpOptions options_;
  PageRoutes pages_;
};

class HttpServer {
 public:
  // Listens on the options' address (binding now, so that a taken port is
  // an error at start); requests are answered once serve() is called.
  static Result<std::unique_ptr<HttpServer>> bind(const HttpOptions& options);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // "127.0.0.1:8470", "[::1]:8470".
  const std::string& address() const { return address_; }

  // Answers requests with `routes` on a thread of its own until stop().
  void serve(std::shared_ptr<ApiRoutes> routes);
  // Stops answering and waits for the threads. Idempotent.
  void stop();

 private:
  HttpServer() = default;

  static constexpr time_t kHttpReadTimeoutS = 2;
  static constexpr size_t kWantedOpenFiles = 8192;

  std::unique_ptr<GatedServer> server_;
  std::shared_ptr<ApiRoutes> routes_;
  // The Host headers answered; empty: any (the server is not on loopback).
  std::set<std::string> allowed_hosts_;
  // Files being sent (each holds a worker while it goes): a few at once, so
  // that downloads never keep /metrics waiting.
  std::atomic<int> downloads_ = 0;
  std::thread thread_;
  std::string address_;
};

}  // namespace colo
