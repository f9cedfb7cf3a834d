// The clients' side of colo serve: finding the service, one request at a
// time over its socket, and following submitted jobs until they end (what
// `colo run` does when a service runs, and `colo wait`).
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "serve/snapshot.h"

namespace colo {

// Where clients look for the service: $COLO_SOCKET; else <state dir>/colo.sock,
// then (when $COLO_HOME is not set) the system service's /var/lib/colo/colo.sock.
std::vector<std::string> service_socket_candidates();
// The socket `colo serve` listens on by default: $COLO_SOCKET, else <state dir>/colo.sock.
std::string default_service_socket();

class ServiceClient {
 public:
  explicit ServiceClient(std::string socket_path, int timeout_ms = 30'000)
      : path_(std::move(socket_path)), timeout_ms_(timeout_ms) {}

  // The first of `candidates` where a service answers; else an error saying
  // why not: where nothing listens, and where one listens that refuses you.
  static Result<ServiceClient> find(const std::vector<std::string>& candidates);

  // Sends `request`; the answer when it says ok, else its error as an Error
  // (of kind kPermissionDenied where the answer says the caller may not).
  // `answered` (when given) says whether the service answered at all: when
  // not, the request may or may not have been carried out.
  Result<nlohmann::json> call(const nlohmann::json& request, bool* answered = nullptr) const;

  // Submits jobs under a fresh random key. When the answer is lost (the
  // service died or restarted in between), submits again with the same key
  // for up to `retry_ms`: the service answers with the jobs it stored, so
  // none is queued twice.
  // `label`: as protocol::submit_request takes it.
  Result<nlohmann::json> submit(const std::string& job_file, nlohmann::json jobs,
                                const std::map<std::string, std::string>& env,
                                nlohmann::json label = nullptr, int64_t retry_ms = 30'000) const;
  // The same for `colo submit --resume SUB` (protocol::submit_request's `resume`).
  Result<nlohmann::json> resume(const std::string& submission,
                                const std::map<std::string, std::string>& env,
                                nlohmann::json label = nullptr, int64_t retry_ms = 30'000) const;

  // The jobs of `ids` as the store has them (protocol::status_request).
  struct JobsStatus {
    std::vector<QueueJob> jobs;
    // Jobs that ended but whose end the service is still writing to the store.
    std::vector<int64_t> recording;
    // With them, while the store cannot be written: why; else empty.
    std::string store_trouble;
  };
  Result<JobsStatus> status(const std::vector<int64_t>& ids) const;
  const std::string& path() const { return path_; }

 private:
  // Sends a submit request (protocol::submit_request, with its key), as
  // submit() says.
  Result<nlohmann::json> send_submission(const nlohmann::json& request, int64_t retry_ms) const;
  std::string path_;
  int timeout_ms_;
};

// This process's environment, which a submitted job starts from.
std::map<std::string, std::string> client_environment();

struct FollowOptions {
  int64_t poll_ms = 500;
  bool print_progress = true;  // state changes and epochs as they happen
  // Signals seen by the client: a stop request cancels the jobs (a second
  // one stops following), a detach request stops following and leaves them.
  const std::atomic<int>* stop_requests = nullptr;
  const std::atomic<int>* detach_requests = nullptr;
  // Jobs that ended wait until the store holds their end (and so everything
  // they reported). While the store cannot be written, a line says so on
  // `notices` (null: the output stream), and after this long with nothing
  // else left to wait for, following ends with an error naming the jobs.
  int64_t store_wait_ms = 120'000;
  std::ostream* notices = nullptr;
};

struct FollowOutcome {
  std::vector<QueueJob> jobs;  // as last seen
  bool cancelled = false;      // the client asked the service to cancel them
  bool detached = false;       // the client stopped following; the jobs run on
  int ok = 0;
  int not_ok = 0;
};

// Polls the service until every job of `ids` has ended and its end is in
// the store, with all it reported (or the client detaches), printing what
// changed on `out`. An error when the service cannot be reached, or when
// ended jobs could not be recorded within options.store_wait_ms.
Result<FollowOutcome> follow_jobs(const ServiceClient& client, const std::vector<int64_t>& ids,
                                  const FollowOptions& options, Clock& clock, std::ostream& out);

}  // namespace colo
