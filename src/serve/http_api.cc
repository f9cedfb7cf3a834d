#include "serve/http_api.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <set>

#include "analysis/floor_history.h"
#include "analysis/run_summary.h"
#include "analysis/training_metrics.h"
#include "common/json_values.h"
#include "common/proc_stat.h"
#include "common/user_file.h"
#include "jobs/job_spec_json.h"
#include "jobs/progress_event.h"
#include "profiling/windows.h"
#include "run/log_layout.h"
#include "serve/http_gate.h"
#include "serve/metrics.h"

namespace colo {
namespace {

using nlohmann::json;

constexpr int64_t kDefaultEvents = 200;
constexpr int64_t kMaxEvents = 5000;
constexpr int64_t kMaxEpochs = 10'000;
constexpr size_t kMaxMetricPoints = 2'000;
constexpr int64_t kDefaultLogTail = int64_t{16} * 1024;
constexpr int64_t kMaxLogTail = int64_t{256} * 1024;
constexpr int64_t kDefaultRuns = 20;
constexpr int64_t kUsageDefaultSpanMs = 7 * 86'400'000LL;  // as colo usage's --since
constexpr int64_t kMaxRuns = 500;

const char* const kRoutes[] = {"/api",
                               "/api/snapshot",
                               "/api/service",
                               "/api/gpus",
                               "/api/jobs",
                               "/api/jobs/ID",
                               "/api/jobs/ID/profiles/N/trace",
                               "/api/samples?since=MS&gpu=N",
                               "/api/runs",
                               "/api/usage?since=MS",
                               "/metrics"};

HttpAnswer json_answer(const json& body, int status = 200) {
  return HttpAnswer{status, "application/json",
                    body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

HttpAnswer error(int status, const std::string& message) {
  return json_answer(json{{"error", message}}, status);
}

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The query parameter `name` as a whole number in [lo, hi]; `fallback` when
// absent; nullopt (after setting `bad`) when it is not one.
std::optional<int64_t> int_param(const std::map<std::string, std::string>& query,
                                 const std::string& name, int64_t fallback, int64_t lo, int64_t hi,
                                 HttpAnswer& bad) {
  auto it = query.find(name);
  if (it == query.end()) return fallback;
  std::optional<int64_t> v = parse_int(it->second);
  if (!v || *v < lo || *v > hi) {
    bad = error(400, fmt::format("?{}= must be a whole number from {} to {}, got \"{}\"", name, lo,
                                 hi, it->second));
    return std::nullopt;
  }
  return v;
}

// The log of the job's latest attempt ("" before it started).
std::string latest_log(const ServiceJobRow& row, const std::vector<AttemptRow>& attempts) {
  if (!row.log_path.empty() || attempts.empty()) return row.log_path;
  return attempts.back().log_path;
}

// Files sent at once, at most (HttpServer::downloads_).
constexpr int kMaxDownloads = 2;
constexpr size_t kFileChunk = size_t{1} << 20;

// Sends `answer`'s file as `res`'s body, read a chunk at a time as the
// client takes it; 503 when kMaxDownloads are under way.
void send_file(HttpAnswer answer, httplib::Response& res, std::atomic<int>& downloads) {
  if (downloads.fetch_add(1) >= kMaxDownloads) {
    downloads.fetch_sub(1);
    res.status = 503;
    res.set_header("Retry-After", "5");
    res.set_content(fmt::format("{{\"error\": \"{} files are being sent; try again in a few "
                                "seconds\"}}",
                                kMaxDownloads),
                    "application/json");
    return;
  }
  res.set_header("Content-Disposition",
                 fmt::format("attachment; filename=\"{}\"", answer.download_name));
  std::shared_ptr<const UniqueFd> file = std::move(answer.file);
  res.set_content_provider(
      answer.file_size, answer.content_type,
      [file](size_t offset, size_t length, httplib::DataSink& sink) {
        std::string chunk(std::min(length, kFileChunk), '\0');
        const ssize_t n =
            ::pread(file->get(), chunk.data(), chunk.size(), static_cast<off_t>(offset));
        // A file that shrank since: the connection ends short, as the client sees.
        if (n <= 0) return false;
        return sink.write(chunk.data(), static_cast<size_t>(n));
      },
      [&downloads](bool /*success*/) { downloads.fetch_sub(1); });
}

json attempt_json(const AttemptRow& a) {
  return json{{"attempt", a.attempt},
              {"job_id", a.job_id},
              {"run_id", a.run_id},
              {"gpu", value_or_null(a.device)},
              {"pid", value_or_null(a.pid)},
              {"started_ms", a.started_ms},
              {"ended_ms", value_or_null(a.ended_ms)},
              {"state", a.state},
              {"reason", a.reason},
              {"log_path", a.log_path}};
}

// The attempt an event of `job_id` at `time_ms` belongs to: the latest of
// that row's attempts started by then (else its first).
int attempt_of(const std::vector<AttemptRow>& attempts, int64_t job_id, UnixMillis time_ms) {
  int found = 0;
  for (const AttemptRow& a : attempts) {
    if (a.job_id != job_id) continue;
    if (found == 0 || a.started_ms <= time_ms) found = a.attempt;
  }
  return found;
}

// The last `max_bytes` of the job's log, from the start of a line when cut
// (read as a file the job controls: common/user_file.h).
json log_tail(const std::string& path, int64_t max_bytes, bool enabled) {
  json log = {{"path", path}, {"size_bytes", nullptr}, {"tail", nullptr}};
  if (path.empty()) {
    log["note"] = "the job has not started";
    return log;
  }
  Result<std::optional<UserFile>> file = open_user_file(path);
  if (!file.ok() || !*file) {
    log["note"] = file.ok() ? "the log file is not there" : file.error().message();
    return log;
  }
  const auto size = static_cast<int64_t>((*file)->size());
  log["size_bytes"] = size;
  if (!enabled) {
    log["note"] =
        "log tails are off over HTTP: start colo serve with --http-logs, or read it "
        "with colo logs ID";
    return log;
  }
  const int64_t from = std::max<int64_t>(0, size - max_bytes);
  // One byte more: whether the tail starts a line.
  const int64_t read_from = std::max<int64_t>(0, from - 1);
  Result<std::string> data = read_user_file_range(**file, static_cast<uint64_t>(read_from),
                                                  static_cast<uint64_t>(size - read_from), path);
  if (!data.ok()) {
    log["note"] = data.error().message();
    return log;
  }
  if (from > 0) {
    size_t newline = data->find('\n');
    data->erase(0, newline == std::string::npos ? data->size() : newline + 1);
  }
  log["tail"] = std::move(*data);
  log["truncated"] = from > 0;
  return log;
}

// A job's grid values (its spec's "params"), as params_to_json gives them.
json params_of_spec(const json& spec) {
  std::map<std::string, std::string> params;
  const auto p = spec.is_object() ? spec.find("params") : spec.end();
  if (p != spec.end() && p->is_object()) {
    for (const auto& [name, value] : p->items()) {
      if (value.is_string()) params[name] = value.get<std::string>();
    }
  }
  return params_to_json(params);
}

// The submission a job came with: its title (as `colo show RUN/SUB` takes
// it), name, tags, note, owner, job file and its job count; null when none.
json submission_json(const std::optional<SubmissionRow>& sub) {
  if (!sub) return nullptr;
  return json{{"id", sub->id},
              {"run_id", value_or_null(sub->run_id)},
              {"title", sub->run_id ? submission_title(*sub->run_id, *sub)
                                    : fmt::format("submission {}", sub->id)},
              {"name", sub->label.name},
              {"tags", sub->label.tags},
              {"note", sub->label.note},
              {"owner", sub->owner_name},
              {"submitted_ms", sub->submitted_ms},
              {"job_file", sub->job_file},
              {"jobs", sub->jobs}};
}

// A job file's [objective]: its metric (null when it names none) and each
// declared goal, "min" or "max"; null when the file has no [objective].
json objective_json(const SpecObjective& objective) {
  if (objective.metric.empty() && objective.lower_is_better.empty()) return nullptr;
  json goals = json::object();
  for (const auto& [name, lower] : objective.lower_is_better) goals[name] = lower ? "min" : "max";
  return json{{"metric", objective.metric.empty() ? json(nullptr) : json(objective.metric)},
              {"goals", std::move(goals)}};
}

}  // namespace

Result<HttpOptions> parse_http_address(std::string_view text) {
  HttpOptions o;
  std::string_view port = text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return Error(
          fmt::format("--http {}: write an IPv6 address as [ADDR]:PORT ([::1]:8470)", text));
    o.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else if (size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon)
      return Error(
          fmt::format("--http {}: write an IPv6 address as [ADDR]:PORT ([::1]:8470)", text));
    if (colon > 0) o.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  std::optional<int64_t> number = parse_int(port);
  if (!number || *number < 0 || *number > 65535) {
    return Error(fmt::format(
        "--http {}: expected ADDR:PORT with a port from 0 to 65535 (127.0.0.1:8470; 0 picks a "
        "free port)",
        text));
  }
  o.port = static_cast<int>(*number);
  return o;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

ApiRoutes::ApiRoutes(SnapshotSource snapshot, std::unique_ptr<RunStore> store, HttpOptions options)
    : snapshot_(std::move(snapshot)), store_(std::move(store)), options_(std::move(options)) {}

HttpAnswer ApiRoutes::get(const std::string& path,
                          const std::map<std::string, std::string>& query) {
  if (pages_) {
    const ApiReader api = [this](const std::string& api_path) {
      // Never a page: a page that read pages would ask itself.
      if (api_path.rfind("/api/", 0) != 0)
        return error(404, fmt::format("not an API route: {}", api_path));
      return get(api_path, {});
    };
    if (std::optional<HttpAnswer> page = pages_(path, api)) return std::move(*page);
  }
  if (path == "/") {
    // Browsers land on the dashboard; the route index is at /api.
    const std::string target = pages_ ? "/dashboard/" : "/api";
    return HttpAnswer{303, "text/plain; charset=utf-8", "See " + target + "\n", target};
  }
  if (path == "/api") {
    json routes = json::array();
    for (const char* r : kRoutes) routes.push_back(r);
    json index = {{"colo", "serve"}, {"routes", routes}, {"docs", "docs/serve.md"}};
    if (pages_) index["dashboard"] = "/dashboard/";
    return json_answer(index);
  }
  std::shared_ptr<const ServiceSnapshot> snap = snapshot_();
  if (!snap) return error(503, "colo serve is starting; try again in a second");
  if (path == "/metrics") {
    return HttpAnswer{200, "text/plain; version=0.0.4; charset=utf-8", prometheus_metrics(*snap)};
  }
  if (path == "/api/snapshot") return json_answer(to_json(*snap));
  if (path == "/api/service") {
    return json_answer(json{{"time_ms", snap->time_ms}, {"service", to_json(*snap)["service"]}});
  }
  if (path == "/api/gpus") {
    json gpus = json::array();
    for (const GpuView& g : snap->gpus) gpus.push_back(to_json(g));
    return json_answer(json{{"time_ms", snap->time_ms}, {"gpus", std::move(gpus)}});
  }
  if (path == "/api/jobs") {
    std::string state;
    if (auto it = query.find("state"); it != query.end()) state = it->second;
    static const std::set<std::string> kStates = {"",          "queued",      "running", "ended",
                                                  "ok",        "failed",      "oom",     "killed",
                                                  "cancelled", "interrupted", "stopped"};
    if (kStates.count(state) == 0) {
      return error(400, fmt::format("?state= must be queued, running, ended, ok, failed, oom, "
                                    "killed, cancelled, interrupted or stopped, got \"{}\"",
                                    state));
    }
    json jobs = json::array();
    for (const QueueJob& j : snap->jobs) {
      const bool keep =
          state.empty() || j.state == state || (state == "ended" && is_final_state(j.state));
      if (keep) jobs.push_back(to_json(j));
    }
    return json_answer(json{{"time_ms", snap->time_ms}, {"jobs", std::move(jobs)}});
  }
  if (path.rfind("/api/jobs/", 0) == 0) {
    // ID, or ID/profiles/N/trace.
    std::string_view rest = std::string_view(path).substr(10);
    const size_t slash = rest.find('/');
    std::optional<int64_t> id = parse_int(rest.substr(0, slash));
    if (id && *id > 0 && slash == std::string_view::npos) return job_detail(*snap, *id, query);
    constexpr std::string_view kProfiles = "/profiles/";
    constexpr std::string_view kTrace = "/trace";
    if (id && *id > 0 && rest.substr(slash).starts_with(kProfiles) && rest.ends_with(kTrace) &&
        rest.size() > slash + kProfiles.size() + kTrace.size()) {
      std::string_view n = rest.substr(slash + kProfiles.size());
      n.remove_suffix(kTrace.size());
      if (std::optional<int64_t> window = parse_int(n); window && *window > 0)
        return profile_trace(*id, *window);
    }
    return error(
        404, fmt::format("no such route: {} (/api/jobs/ID, /api/jobs/ID/profiles/N/trace)", path));
  }
  if (path == "/api/samples") {
    HttpAnswer bad;
    std::optional<int64_t> since =
        int_param(query, "since", 0, 0, std::numeric_limits<int64_t>::max(), bad);
    if (!since) return bad;
    std::optional<int64_t> gpu = int_param(query, "gpu", -1, -1, 1 << 20, bad);
    if (!gpu) return bad;
    json samples = json::array();
    for (const DeviceSample& d : snap->samples) {
      if (d.time_ms > *since && (*gpu < 0 || d.device == *gpu))
        samples.push_back(device_sample_to_json(d));
    }
    return json_answer(json{{"time_ms", snap->time_ms}, {"samples", std::move(samples)}});
  }
  if (path == "/api/runs") return runs(query);
  if (path == "/api/usage") return usage(*snap, query);
  return error(404, fmt::format("no such route: {} (GET /api lists them)", path));
}

HttpAnswer ApiRoutes::usage(const ServiceSnapshot& snap,
                            const std::map<std::string, std::string>& query) {
  HttpAnswer bad;
  std::optional<int64_t> since = int_param(query, "since", snap.time_ms - kUsageDefaultSpanMs, 0,
                                           std::numeric_limits<int64_t>::max(), bad);
  if (!since) return bad;
  std::lock_guard lock(store_mu_);
  if (!store_) return error(503, "this colo serve has no store to read usage from");
  Result<std::vector<ServiceUsageReport>> ended = store_->service_usage_since(*since);
  if (!ended.ok()) return error(500, ended.error().message());
  return json_answer(json{{"time_ms", snap.time_ms},
                          {"since_ms", *since},
                          {"owners", owners_to_json(snap.owners)},
                          {"ended", usage_rows_to_json(*ended)}});
}

HttpAnswer ApiRoutes::profile_trace(int64_t id, int64_t window) {
  if (!options_.logs) {
    return error(403,
                 "jobs' files are off over HTTP: start colo serve with --http-logs, or open the "
                 "trace where colo show names it");
  }
  std::string log_path;
  {
    std::lock_guard lock(store_mu_);
    if (!store_) return error(503, "this colo serve has no store to read jobs from");
    Result<std::vector<ServiceJobRow>> rows = store_->service_jobs_by_id({id});
    if (!rows.ok()) return error(500, rows.error().message());
    if (rows->empty()) return error(404, fmt::format("there is no job {}", id));
    Result<std::vector<AttemptRow>> attempts = store_->service_job_attempts(id);
    if (!attempts.ok()) return error(500, attempts.error().message());
    log_path = latest_log(rows->front(), *attempts);
  }
  const std::string dir = job_dir_of_log(log_path, JobDir::kProfile);
  const std::vector<ProfileWindow> windows =
      dir.empty() ? std::vector<ProfileWindow>{} : read_profile_windows(dir, nullptr);
  auto w = std::find_if(windows.begin(), windows.end(),
                        [&](const ProfileWindow& p) { return p.window == window; });
  if (w == windows.end() || w->trace_path.empty()) {
    return error(404, fmt::format("job {} has no profiling window {} with a trace (GET "
                                  "/api/jobs/{} lists its windows)",
                                  id, window, id));
  }
  Result<UserFile> file = open_window_file(dir, w->trace_path);
  if (!file.ok()) return error(404, file.error().message());
  HttpAnswer answer{200, "application/json", "", ""};
  answer.file_size = file->size();
  answer.file = std::make_shared<const UniqueFd>(std::move(file->fd));
  answer.download_name = fmt::format("job-{}-torch-trace-{}.json", id, window);
  return answer;
}

HttpAnswer ApiRoutes::runs(const std::map<std::string, std::string>& query) {
  HttpAnswer bad;
  std::optional<int64_t> limit = int_param(query, "limit", kDefaultRuns, 1, kMaxRuns, bad);
  if (!limit) return bad;
  std::lock_guard lock(store_mu_);
  if (!store_) return error(503, "this colo serve has no store to read runs from");
  Result<std::vector<RunRow>> rows = store_->list_runs(static_cast<int>(*limit));
  if (!rows.ok()) return error(500, rows.error().message());
  json runs = json::array();
  for (const RunRow& r : *rows) {
    runs.push_back(to_json(RunView{r.id, to_string(r.state), r.started_ms, r.ended_ms, r.mechanism,
                                   r.job_file, r.job_count}));
  }
  return json_answer(json{{"runs", std::move(runs)}});
}

HttpAnswer ApiRoutes::job_detail(const ServiceSnapshot& snap, int64_t id,
                                 const std::map<std::string, std::string>& query) {
  HttpAnswer bad;
  std::optional<int64_t> max_events =
      int_param(query, "events", kDefaultEvents, 0, kMaxEvents, bad);
  if (!max_events) return bad;
  std::optional<int64_t> tail = int_param(query, "tail", kDefaultLogTail, 0, kMaxLogTail, bad);
  if (!tail) return bad;

  // The store under its lock; the job's files (its profiling windows, its
  // log), which the job controls, after it is released.
  std::unique_lock lock(store_mu_);
  if (!store_) return error(503, "this colo serve has no store to read jobs from");
  Result<std::vector<ServiceJobRow>> rows = store_->service_jobs_by_id({id});
  if (!rows.ok()) return error(500, rows.error().message());
  if (rows->empty()) return error(404, fmt::format("there is no job {}", id));
  const ServiceJobRow& row = rows->front();
  std::optional<SubmissionRow> submission;
  if (row.submission_id) {
    Result<std::optional<SubmissionRow>> sub = store_->submission(*row.submission_id);
    if (!sub.ok()) return error(500, sub.error().message());
    submission = *sub;
  }
  auto live = std::find_if(snap.jobs.begin(), snap.jobs.end(),
                           [&](const QueueJob& j) { return j.id == id; });
  const bool from_snapshot = live != snap.jobs.end() && live->state == to_string(row.state);
  QueueJob job = from_snapshot ? *live : queue_job_of(row, snap.service.mechanism);

  Result<std::vector<AttemptRow>> attempts = store_->service_job_attempts(id);
  if (!attempts.ok()) return error(500, attempts.error().message());
  json attempts_json = json::array();
  std::vector<int64_t> job_rows;
  for (const AttemptRow& a : *attempts) {
    attempts_json.push_back(attempt_json(a));
    if (std::find(job_rows.begin(), job_rows.end(), a.job_id) == job_rows.end())
      job_rows.push_back(a.job_id);
  }

  json events = json::array();
  json epochs = json::array();
  std::map<int, UnixMillis> last_epoch_end;  // per attempt
  for (const AttemptRow& a : *attempts) last_epoch_end[a.attempt] = a.started_ms;
  std::vector<ProgressEvent> all_events;  // for the metrics below
  for (int64_t job_id : job_rows) {
    Result<std::vector<ProgressEvent>> rows_events = store_->job_events(job_id);
    if (!rows_events.ok()) return error(500, rows_events.error().message());
    all_events.insert(all_events.end(), rows_events->begin(), rows_events->end());
    // Its steady epochs' rates (analysis/floor_history.h), each attempt's
    // apart, by when they ended: for each epoch's speed of solo.
    std::map<int, std::vector<ProgressEvent>> by_attempt;
    for (const ProgressEvent& e : *rows_events)
      by_attempt[attempt_of(*attempts, job_id, e.time_ms)].push_back(e);
    std::map<UnixMillis, double> steady_rate;
    for (const auto& [attempt, its_events] : by_attempt) {
      for (const EpochRate& r : epoch_rates(its_events)) {
        if (r.steady) steady_rate[r.ended_ms] = r.samples_per_s;
      }
    }
    for (const ProgressEvent& e : *rows_events) {
      const int attempt = attempt_of(*attempts, job_id, e.time_ms);
      json metrics = json::object();
      for (const auto& [k, v] : e.metrics) metrics[k] = v;
      events.push_back({{"attempt", attempt},
                        {"time_ms", e.time_ms},
                        {"kind", e.kind},
                        {"epoch", value_or_null(e.epoch)},
                        {"step", value_or_null(e.step)},
                        {"samples", value_or_null(e.samples)},
                        {"metrics", std::move(metrics)}});
      if (e.kind != "epoch_end") continue;
      const UnixMillis since = last_epoch_end[attempt];
      last_epoch_end[attempt] = e.time_ms;
      json epoch = {{"attempt", attempt},      {"epoch", value_or_null(e.epoch)},
                    {"time_ms", e.time_ms},    {"samples", value_or_null(e.samples)},
                    {"seconds", nullptr},      {"samples_per_s", nullptr},
                    {"speed_of_solo", nullptr}};
      if (auto steady = steady_rate.find(e.time_ms);
          steady != steady_rate.end() && job.solo_samples_per_s && *job.solo_samples_per_s > 0)
        epoch["speed_of_solo"] = steady->second / *job.solo_samples_per_s;
      if (since > 0 && e.time_ms > since) {
        const double seconds = static_cast<double>(e.time_ms - since) / 1000.0;
        epoch["seconds"] = seconds;
        if (e.samples) epoch["samples_per_s"] = static_cast<double>(*e.samples) / seconds;
      }
      epochs.push_back(std::move(epoch));
    }
  }
  lock.unlock();
  auto keep_last = [](json& list, int64_t n) {
    if (static_cast<int64_t>(list.size()) > n)
      list.erase(list.begin(), list.begin() + static_cast<int64_t>(list.size()) - n);
  };
  // A job the snapshot no longer lists (it ended long ago, or under an earlier
  // service process): its run and last epoch from the store.
  if (!from_snapshot && !attempts->empty()) {
    job.run_id = attempts->back().run_id;
    for (const json& e : epochs) {
      if (e["attempt"] == attempts->back().attempt && e["epoch"].is_number_integer())
        job.epoch = e["epoch"].get<int64_t>();
    }
  }
  keep_last(events, *max_events);
  keep_last(epochs, kMaxEpochs);
  // What it learned, its last attempt's: each metric's last and best value
  // and its curve, [time_ms, value, step, epoch] evenly thinned to at most
  // kMaxMetricPoints points, the last always among them.
  json learned = json::object();
  const std::optional<UnixMillis> since =
      attempts->empty() ? std::nullopt : std::optional<UnixMillis>(attempts->back().started_ms);
  const json spec = json::parse(row.spec_json, nullptr, /*allow_exceptions=*/false);
  const SpecObjective objective = objective_of_spec(spec);
  for (const MetricSeries& m : training_metrics(all_events, since, objective.lower_is_better)) {
    json points = json::array();
    const size_t n = m.points.size();
    const size_t stride = (n + kMaxMetricPoints - 1) / kMaxMetricPoints;
    for (size_t i = 0; i < n; ++i) {
      if (i % stride != 0 && i + 1 != n) continue;
      const MetricPoint& p = m.points[i];
      points.push_back({p.time_ms, p.value, value_or_null(p.step), value_or_null(p.epoch)});
    }
    learned[m.name] = {{"last", metric_to_json(m.last)},
                       {"best", metric_to_json(m.best)},
                       {"lower_is_better", m.lower_is_better},
                       {"declared", m.declared},
                       {"diverged", m.diverged},
                       {"axis", wants_log_axis(m.points) ? "log" : "linear"},
                       {"points", std::move(points)}};
  }

  const std::string log_path = latest_log(row, *attempts);
  // Its profiling windows (docs/profiling.md), as its profile directory
  // holds them, each with the route its trace downloads from (when jobs'
  // files are served).
  json profiles = json::array();
  if (const std::string dir = job_dir_of_log(log_path, JobDir::kProfile); !dir.empty()) {
    std::vector<ProfileWindow> windows = read_profile_windows(dir, nullptr);
    if (!windows.empty())
      profiles = profile_windows_json({JobWindows{job.name, std::move(windows)}})[job.name];
    for (json& w : profiles) {
      w["trace_url"] = nullptr;
      if (options_.logs && !w.value("trace", "").empty())
        w["trace_url"] = fmt::format("/api/jobs/{}/profiles/{}/trace", id, w.value("window", 0));
    }
  }
  return json_answer(json{{"time_ms", snap.time_ms},
                          {"profiles", std::move(profiles)},
                          {"job", to_json(job)},
                          {"params", params_of_spec(spec)},
                          {"submission", submission_json(submission)},
                          {"objective", objective_json(objective)},
                          {"attempts", std::move(attempts_json)},
                          {"epochs", std::move(epochs)},
                          {"events", std::move(events)},
                          {"metrics", std::move(learned)},
                          {"log", log_tail(log_path, *tail, options_.logs)}});
}

Result<std::unique_ptr<HttpServer>> HttpServer::bind(const HttpOptions& options) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  // Connections are bounded below the open-file limit, raised first: the
  // service never runs out of descriptors before it refuses anyone.
  GateOptions gate;
  gate.limits.total = std::min(gate.limits.total, raise_open_file_limit(kWantedOpenFiles) / 4);
  gate.limits.per_user = std::min(gate.limits.per_user, gate.limits.total);
  s->server_ = std::make_unique<GatedServer>(gate);
  // cpp-httplib sets SO_REUSEPORT, which lets a second server take the same
  // port and share its connections: only SO_REUSEADDR here, so a taken port
  // is an error.
  s->server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  auto address = [&](int port) {
    return options.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", options.host, port)
                                                       : fmt::format("{}:{}", options.host, port);
  };
  errno = 0;
  int port = -1;
  if (options.port == 0) {
    port = s->server_->bind_to_any_port(options.host);
  } else if (s->server_->bind_to_port(options.host, options.port)) {
    port = options.port;
  }
  if (port <= 0) {
    return Error(fmt::format(
        "--http {}: cannot listen there{}; name a free port (0 picks one), or leave --http out",
        address(options.port), errno != 0 ? fmt::format(" ({})", std::strerror(errno)) : ""));
  }
  s->address_ = address(port);
  if (is_loopback(options.host)) {
    // A web page elsewhere can make a browser send requests here under its
    // own host name (DNS rebinding): only the loopback names are answered.
    for (const std::string& name :
         std::initializer_list<std::string>{"127.0.0.1", "localhost", "[::1]", options.host})
      s->allowed_hosts_.insert({name, fmt::format("{}:{}", name, port)});
    s->allowed_hosts_.insert(s->address_);
  }
  return s;
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::serve(std::shared_ptr<ApiRoutes> routes) {
  routes_ = std::move(routes);
  ApiRoutes* r = routes_.get();
  // The gate (serve/http_gate.h) holds idle and slow clients without a
  // thread; a worker reads a request whose head has arrived, and never a
  // body: every request is answered by the handler below, before one is read.
  server_->set_read_timeout(kHttpReadTimeoutS);
  server_->set_write_timeout(kHttpReadTimeoutS);
  const std::set<std::string>* hosts = &allowed_hosts_;
  std::atomic<int>* downloads = &downloads_;
  server_->set_pre_routing_handler(
      [r, hosts, downloads](const httplib::Request& req, httplib::Response& res) {
        HttpAnswer answer;
        if (!hosts->empty() && !hosts->contains(req.get_header_value("Host"))) {
          answer = error(421,
                         "this API answers only requests addressed to the loopback address "
                         "it listens on (Host: 127.0.0.1:PORT or localhost:PORT)");
        } else if (req.method != "GET" && req.method != "HEAD") {
          answer = error(405,
                         "this API is read-only: submit and cancel jobs with colo submit and colo "
                         "cancel (the Unix socket checks who asks)");
          res.set_header("Allow", "GET, HEAD");
        } else {
          std::map<std::string, std::string> query;
          for (const auto& [k, v] : req.params) query.emplace(k, v);
          answer = r->get(req.path, query);
        }
        res.status = answer.status;
        if (!answer.location.empty()) res.set_header("Location", answer.location);
        if (answer.file) {
          send_file(std::move(answer), res, *downloads);
        } else {
          res.set_content(answer.body, answer.content_type);
        }
        return httplib::Server::HandlerResponse::Handled;
      });
  GatedServer* server = server_.get();
  server->start_gate();
  thread_ = std::thread([server] { server->listen_after_bind(); });
  // stop() before the listening loop runs would not end it: wait for it.
  for (int i = 0; i < 2500 && !server_->is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

void HttpServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  if (server_) server_->stop_gate();
}

}  // namespace colo
