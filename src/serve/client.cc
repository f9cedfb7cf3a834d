#include "serve/client.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ostream>
#include <random>
#include <thread>

#include "common/paths.h"
#include "common/units.h"
#include "jobs/job_state.h"
#include "serve/protocol.h"
#include "serve/unix_socket.h"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace colo {

using nlohmann::json;

namespace {

constexpr const char* kSystemSocket = "/var/lib/colo/colo.sock";

}  // namespace

std::string default_service_socket() {
  if (const char* s = std::getenv("COLO_SOCKET"); s != nullptr && *s != '\0') return s;
  return default_state_dir() + "/colo.sock";
}

std::vector<std::string> service_socket_candidates() {
  if (const char* s = std::getenv("COLO_SOCKET"); s != nullptr && *s != '\0') return {s};
  std::vector<std::string> out = {default_state_dir() + "/colo.sock"};
  const char* home = std::getenv("COLO_HOME");
  if ((home == nullptr || *home == '\0') && out.front() != kSystemSocket)
    out.emplace_back(kSystemSocket);
  return out;
}

Result<ServiceClient> ServiceClient::find(const std::vector<std::string>& candidates) {
  std::vector<std::string> silent;  // nothing listens there
  std::vector<std::string> refused;
  for (const std::string& path : candidates) {
    ServiceClient client(path, 5'000);
    Result<json> answer = client.call(protocol::status_request({}));
    if (answer.ok()) return ServiceClient(path);
    if (answer.error().message().starts_with("no colo serve listens"))
      silent.push_back(path);
    else
      refused.push_back(answer.error().message());
  }
  if (!refused.empty()) return Error(fmt::format("{}", fmt::join(refused, "; ")));
  return Error(fmt::format("no colo serve answers at {}", fmt::join(silent, ", ")));
}

Result<json> ServiceClient::call(const json& request, bool* answered) const {
  if (answered != nullptr) *answered = false;
  const std::string line = request.dump(-1, ' ', false, json::error_handler_t::replace);
  // A service at its connection bounds says "busy", or, past the few
  // connections it tells, closes the rest unanswered: try again, backing
  // off, within the timeout. (A submission is safe to send again: its key
  // makes the service answer with the jobs it stored the first time.)
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  for (int pause_ms = 20;; pause_ms = std::min(pause_ms * 2, 500)) {
    bool dropped = false;
    Result<std::string> got = call_socket(path_, line, timeout_ms_, &dropped);
    if (!got.ok() && dropped && std::chrono::steady_clock::now() < give_up) {
      // Jittered, so that many clients shed at once do not come back at once.
      static thread_local std::minstd_rand jitter(std::random_device{}());
      std::this_thread::sleep_for(std::chrono::milliseconds(
          pause_ms / 2 + static_cast<int>(jitter() % (pause_ms / 2 + 1))));
      continue;
    }
    if (!got.ok()) return got.error();
    json answer = json::parse(*got, nullptr, /*allow_exceptions=*/false);
    if (!answer.is_object())
      return Error(fmt::format("colo serve at {} answered something that is not JSON", path_));
    if (answered != nullptr) *answered = true;
    if (answer.value("ok", false)) return answer;
    const std::string error = answer.contains("error") && answer["error"].is_string()
                                  ? answer["error"].get<std::string>()
                                  : "colo serve said no";
    if (answer.value(protocol::kPermissionDenied, false))
      return Error(error, ErrorKind::kPermissionDenied);
    if (!(answer.contains("busy") && answer["busy"] == true) ||
        std::chrono::steady_clock::now() > give_up)
      return Error(error);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  }
}

namespace {

// A fresh random submission key (protocol::submit_request).
std::string new_submit_key() {
  std::random_device random;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", random(), random(), random(), random());
}

}  // namespace

Result<json> ServiceClient::submit(const std::string& job_file, json jobs,
                                   const std::map<std::string, std::string>& env, json label,
                                   int64_t retry_ms) const {
  return send_submission(
      protocol::submit_request(job_file, std::move(jobs), env, new_submit_key(), std::move(label)),
      retry_ms);
}

Result<json> ServiceClient::resume(const std::string& submission,
                                   const std::map<std::string, std::string>& env, json label,
                                   int64_t retry_ms) const {
  return send_submission(protocol::submit_request("", json::array(), env, new_submit_key(),
                                                  std::move(label), submission),
                         retry_ms);
}

Result<json> ServiceClient::send_submission(const json& request, int64_t retry_ms) const {
  const std::string key = request.value("submit_key", "");
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(retry_ms);
  while (true) {
    bool answered = false;
    Result<json> answer = call(request, &answered);
    if (answer.ok() || answered) return answer;
    if (std::chrono::steady_clock::now() > give_up) {
      return Error(
          fmt::format("{}; the jobs may or may not be queued: `colo queue` shows them "
                      "(submission key {})",
                      answer.error().message(), key));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

Result<ServiceClient::JobsStatus> ServiceClient::status(const std::vector<int64_t>& ids) const {
  Result<json> answer = call(protocol::status_request(ids));
  if (!answer.ok()) return answer.error();
  JobsStatus status;
  for (const json& j : answer->value("jobs", json::array())) {
    Result<QueueJob> q = queue_job_from_json(j);
    if (!q.ok()) return q.error();
    status.jobs.push_back(std::move(q).value());
  }
  for (const json& id : answer->value("recording", json::array())) {
    if (id.is_number_integer()) status.recording.push_back(id.get<int64_t>());
  }
  if (const json t = answer->value("store_trouble", json()); t.is_string())
    status.store_trouble = t.get<std::string>();
  return status;
}

std::map<std::string, std::string> client_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  return env;
}

namespace {

// One line per change worth telling: a start, a new epoch, a requeue, an end.
void tell_changes(const QueueJob& before, const QueueJob& now, std::ostream& out) {
  const std::string who = fmt::format("{} {}", now.id, now.name);
  if (now.state == "running" && (before.state != "running" || before.attempts != now.attempts)) {
    out << fmt::format("{}: running on gpu{}{}\n", who, now.gpu.value_or(0),
                       now.attempts > 1 ? fmt::format(" (attempt {})", now.attempts) : "");
  }
  if (now.state == "running" && now.epoch && now.epoch != before.epoch) {
    out << fmt::format(
        "{}: epoch {}{}\n", who, *now.epoch,
        now.samples_per_s ? fmt::format(", {:.0f} samples/s", *now.samples_per_s) : "");
  }
  if (now.state == "queued" && before.state == "running") {
    out << fmt::format("{}: queued again: {}\n", who, now.reason);
  }
  if (is_final_state(now.state) && !is_final_state(before.state)) {
    std::string took;
    if (now.started_ms && now.ended_ms)
      took = " after " + format_duration_ms(*now.ended_ms - *now.started_ms);
    out << fmt::format("{}: {}{}{}\n", who, now.state, took,
                       now.reason.empty() || now.state == "ok" ? "" : ": " + now.reason);
  }
}

}  // namespace

Result<FollowOutcome> follow_jobs(const ServiceClient& client, const std::vector<int64_t>& ids,
                                  const FollowOptions& options, Clock& clock, std::ostream& out) {
  FollowOutcome outcome;
  std::map<int64_t, QueueJob> last;
  int handled_stops = 0;
  // Since when (monotonic) ended jobs wait only for the store; -1: they do not.
  int64_t store_waiting_since_ms = -1;
  while (true) {
    if (options.detach_requests != nullptr && options.detach_requests->load() > 0) {
      outcome.detached = true;
      break;
    }
    const int stops = options.stop_requests != nullptr ? options.stop_requests->load() : 0;
    if (stops > handled_stops) {
      handled_stops = stops;
      if (stops >= 2) {
        outcome.detached = true;
        break;
      }
      std::vector<int64_t> open;
      for (const auto& [id, job] : last) {
        if (!is_final_state(job.state)) open.push_back(id);
      }
      if (!open.empty()) {
        Result<json> cancelled = client.call(protocol::cancel_request(open));
        out << (cancelled.ok() ? fmt::format("cancelling {} (again to stop waiting)\n",
                                             count_of(static_cast<int64_t>(open.size()), "job"))
                               : "could not cancel: " + cancelled.error().message() + "\n");
      }
      outcome.cancelled = true;
    }
    Result<ServiceClient::JobsStatus> status = client.status(ids);
    if (!status.ok()) {
      return status.error().with_context(
          "lost colo serve (the jobs stay in its queue and run again when it restarts)");
    }
    bool all_ended = true;
    bool only_recording = true;  // every job not ended is one being recorded
    for (const QueueJob& job : status->jobs) {
      auto before = last.find(job.id);
      QueueJob previous = before != last.end() ? before->second : QueueJob{};
      if (before == last.end()) previous.state = "queued";
      if (options.print_progress) tell_changes(previous, job, out);
      last[job.id] = job;
      all_ended = all_ended && is_final_state(job.state);
      if (!is_final_state(job.state) &&
          std::find(status->recording.begin(), status->recording.end(), job.id) ==
              status->recording.end())
        only_recording = false;
    }
    out.flush();
    if (all_ended) break;
    // Ended, but the store cannot take their end yet: say so, and give up
    // after a bound, rather than wait silently or answer before the store
    // holds what they reported.
    if (only_recording && !status->store_trouble.empty()) {
      std::ostream& notices = options.notices != nullptr ? *options.notices : out;
      const std::vector<int64_t>& ids_recording = status->recording;
      const std::string which = fmt::format("{} {}", ids_recording.size() == 1 ? "job" : "jobs",
                                            fmt::join(ids_recording, ", "));
      const int64_t now = clock.monotonic_ms();
      if (store_waiting_since_ms < 0) {
        store_waiting_since_ms = now;
        notices << fmt::format("colo: {} ended; waiting for the store to record {}: {}\n", which,
                               ids_recording.size() == 1 ? "it" : "them", status->store_trouble)
                << std::flush;
      } else if (now - store_waiting_since_ms >= options.store_wait_ms) {
        return Error(fmt::format(
            "{} ended, but the store has not recorded {} after {}: {}; `colo show` and `colo "
            "report` lack what they reported until it can be written (colo serve keeps "
            "trying; `colo wait {}` again says when)",
            which, ids_recording.size() == 1 ? "its end" : "their ends",
            format_duration_ms(options.store_wait_ms), status->store_trouble,
            fmt::join(ids_recording, " ")));
      }
    } else {
      store_waiting_since_ms = -1;
    }
    clock.sleep_for_ms(options.poll_ms);
  }
  for (const auto& [id, job] : last) {
    outcome.jobs.push_back(job);
    if (is_final_state(job.state)) (ended_well(job.state) ? outcome.ok : outcome.not_ok)++;
  }
  return outcome;
}

}  // namespace colo
