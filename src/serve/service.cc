#include "serve/service.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <ostream>

#include "common/names.h"
#include "common/paths.h"
#include "common/remove_tree.h"
#include "common/replace_file.h"
#include "common/target_syntax.h"
#include "common/text.h"
#include "common/units.h"
#include "data/ring_owner.h"
#include "gpu/device_json.h"
#include "jobs/job_spec_json.h"
#include "jobs/run_as.h"
#include "jobs/secret_env.h"
#include "run/data_loading.h"
#include "run/leftovers.h"
#include "run/log_layout.h"
#include "serve/preemption.h"
#include "serve/protocol.h"
#include "serve/queue_order.h"
#include "serve/request_fields.h"
#include "store/store_writer.h"

namespace colo {
namespace {

using nlohmann::json;

constexpr size_t kMaxLogChunkBytes = size_t{256} * 1024;

constexpr int64_t kQueueAnswerMaxAgeMs = 500;

json error_answer(const std::string& message) { return json{{"ok", false}, {"error", message}}; }

// A refusal because the caller may not do what it asked (another user's job,
// an admin's command): marked so that the client exits for it (protocol.h).
json denied_answer(const std::string& message) {
  json answer = error_answer(message);
  answer[protocol::kPermissionDenied] = true;
  return answer;
}

// An error of a step, `context` before its message; a refusal stays one.
json error_answer(const Error& error, const std::string& context = "") {
  const std::string message = context.empty() ? error.message() : context + error.message();
  return error.permission_denied() ? denied_answer(message) : error_answer(message);
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// The entries of `env` whose names look secret, as a JSON object.
json secret_values(const std::map<std::string, std::string>& env) {
  json out = json::object();
  for (const auto& [name, value] : env) {
    if (is_secret_env_name(name)) out[name] = value;
  }
  return out;
}

// Writes `value` to `path` (0600, its directory 0700 below 0711 parents),
// replacing it whole.
Status write_private_json(const std::string& path, const json& value) {
  const std::string dir = path.substr(0, path.rfind('/'));
  if (Status s = make_dirs(dir, 0700, 0711); !s.ok()) return s;
  return replace_file(path, value.dump(), kPrivateDurableFile);
}

// What write_private_json wrote; an empty object when there is none.
json read_private_json(const std::string& path) {
  const int fd = open_regular_file(path, O_RDONLY);
  if (fd < 0) return json::object();
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : json::object();
}

}  // namespace

Service::Service(ServeContext& ctx, const ServeOptions& options, RunEngine& engine,
                 StoreWriter& writer, ServiceInfo info)
    : ctx_(ctx),
      options_(options),
      engine_(engine),
      writer_(writer),
      info_(std::move(info)),
      quotas_(options.quotas, QuotaDirectory{user_in_group, user_name_of, primary_group_name_of}),
      usage_(options.usage, user_in_group),
      loaders_(ctx.clock, writer, ctx.log,
               ServiceLoadersOptions{self_executable(), options.logs_root,
                                     options.loader_ready_timeout_ms, info_.run_id}) {}

bool Service::is_admin(const Caller& caller) const {
  return caller.uid == 0 ||
         (options_.admin_group && user_in_group(caller.uid, *options_.admin_group));
}

void Service::record_end(int64_t id, JobState state, const std::string& reason,
                         UnixMillis time_ms) {
  writer_.service_job_ended(id, state, reason, time_ms);
  ends_unwritten_[id] = writer_.last_queued();
  ::unlink(secrets_path(id).c_str());
}

void Service::forget_written_ends() {
  const uint64_t written = writer_.written_through();
  std::erase_if(ends_unwritten_, [written](const auto& end) { return end.second <= written; });
}

std::string Service::secrets_path(int64_t id) const {
  return fmt::format("{}/secrets/{}.json", options_.logs_root, id);
}

std::shared_ptr<const std::map<std::string, std::string>> Service::submitted_env(
    const std::string& env_json, const json& secret_env) {
  std::string key = env_json + '\n' + dump(secret_env);
  if (auto known = envs_.find(key); known != envs_.end()) {
    if (auto env = known->second.lock()) return env;
  }
  std::erase_if(envs_, [](const auto& entry) { return entry.second.expired(); });
  std::map<std::string, std::string> env =
      string_map(json::parse(env_json, nullptr, /*allow_exceptions=*/false));
  for (const auto& [name, value] : string_map(secret_env)) env[name] = value;
  auto shared = std::make_shared<const std::map<std::string, std::string>>(std::move(env));
  envs_[std::move(key)] = shared;
  return shared;
}

void Service::admit(const ServiceJobRow& row, const JobSpec& spec, const json& secrets) {
  EngineJob job;
  job.spec = spec;
  for (const auto& [name, value] : string_map(secrets.value("job_env", json::object())))
    job.spec.env[name] = value;
  job.attempt = row.attempts + 1;
  job.uncounted_before = row.uncounted;
  const std::string stem = service_job_stem(options_.logs_root, row.id, row.name);
  job.log_stem = stem;
  job.progress_path = attempt_progress_path(stem, job.attempt);
  job.checkpoint_dir = service_checkpoint_dir(options_.logs_root, row.id);
  job.profile_dir = service_profile_dir(options_.logs_root, row.id);
  job.extra_env["COLO_JOB_ID"] = std::to_string(row.id);
  job.label = fmt::format("job {} ({}, {})", row.id, row.name, row.owner_name);
  job.owner = row.owner_uid;
  // Early stopping judges a trial only among its own submission's, by the
  // submitter the service saw: the source a client sends is a claim.
  job.trials_of = fmt::format("uid {} submission {} {}", row.owner_uid,
                              row.submission_id.value_or(-row.id), spec.source);
  usage_.set_name(row.owner_uid, row.owner_name);
  // Only what its submitter sent, whatever the request said: never the
  // service's own environment (root's, with its secrets).
  job.base_env = submitted_env(row.env_json, secrets.value("env", json::object()));
  if (geteuid() == 0 && row.owner_uid != 0) {
    Result<RunAs> who = run_as_user(row.owner_uid);
    if (!who.ok()) {
      record_end(row.id, JobState::kFailed, "cannot run as its submitter: " + who.error().message(),
                 ctx_.clock.now_ms());
      return;
    }
    job.run_as = *who;
  }
  HeldJob held{row.id, std::move(job), spec.restart, row.attempts, row.owner_uid};
  if (!held.job.spec.dataset) {
    quotas_.job_added(row.owner_uid);
    hand_to_engine(std::move(held));
    return;
  }
  Result<std::optional<HeldJob>> attached = loaders_.attach(row, std::move(held));
  if (!attached.ok()) {
    record_end(row.id, JobState::kFailed,
               "its shared data loader could not start: " + attached.error().message(),
               ctx_.clock.now_ms());
    return;
  }
  quotas_.job_added(row.owner_uid);
  if (*attached) hand_to_engine(std::move(**attached));
}

void Service::hand_to_engine(HeldJob held) {
  // An owner the quota has not bounded yet is bounded before their first job
  // reaches the engine, or it could start them all at once.
  if (quotas_.bound_gpus() && !quotas_.knows(held.owner)) update_quotas();
  const int priority = held.job.spec.priority;
  const bool preemptible = held.job.spec.preemptible;
  const int gpus = held.job.spec.gpus;
  const QosClass qos = held.job.spec.qos;
  const size_t key = engine_.submit(std::move(held.job));
  Tracked& t = tracked_[held.id] = Tracked{key, held.restart, held.attempts_before, held.owner};
  t.priority = priority;
  t.preemptible = preemptible;
  t.gpus = gpus;
  t.qos = qos;
  t.waiting_since_ms = ctx_.clock.now_ms();
  by_key_[key] = held.id;
}

bool Service::cancel_held(int64_t id, const std::string& reason) {
  std::optional<HeldJob> held = loaders_.take_held(id);
  if (!held) return false;
  quotas_.job_ended(held->owner);
  record_end(id, JobState::kCancelled, reason, ctx_.clock.now_ms());
  loaders_.detach(id);
  return true;
}

Status Service::recover_queue() {
  if (Status loaded = load_usage(); !loaded.ok())
    ctx_.log << "warning: " << loaded.error().message() << "; fair share starts from none\n";
  // Loaders a killed service left: their shared memory and processes.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.logs_root + "/data", ec)) {
    if (!entry.is_directory(ec)) continue;
    Result<std::vector<std::string>> cleaned = cleanup_stale_data_loaders(entry.path().string());
    if (cleaned.ok()) {
      for (const std::string& line : *cleaned) ctx_.log << line << '\n';
    }
  }
  Result<std::vector<ServiceJobRow>> rows = ctx_.store.unfinished_service_jobs();
  if (!rows.ok()) return rows.error().with_context("reading the queue");
  int requeued = 0;
  int queued = 0;
  const UnixMillis now = ctx_.clock.now_ms();
  for (ServiceJobRow& row : *rows) {
    Result<JobSpec> spec = job_spec_from_json(json::parse(row.spec_json, nullptr, false));
    if (!spec.ok()) {
      record_end(row.id, JobState::kFailed, "its job spec is unreadable: " + spec.error().message(),
                 now);
      continue;
    }
    if (row.state == JobState::kRunning) {
      // The service that ran it is gone (killed, or the machine went down):
      // the attempt was cut short by the service, not by the job, and does
      // not count against its attempts.
      const std::string what = fmt::format(
          "attempt {} was interrupted by the service's restart: colo serve stopped while it ran",
          row.attempts);
      if (spec->restart == RestartPolicy::kNever) {
        record_end(row.id, JobState::kInterrupted, what + " (restart = \"never\")", now);
        ctx_.log << fmt::format("job {} ({}): {}; restart = \"never\": not run again\n", row.id,
                                row.name, what);
        continue;
      }
      writer_.service_job_requeued(row.id, what + "; running it again (not counted as an attempt)",
                                   /*counted=*/false);
      row.uncounted += 1;
      ctx_.log << fmt::format("job {} ({}): {}; running it again (attempt {})\n", row.id, row.name,
                              what, row.attempts + 1);
      ++requeued;
    }
    ++queued;
    admit(row, *spec, read_private_json(secrets_path(row.id)));
  }
  ctx_.log << fmt::format("queue: {} from the store ({} interrupted and run again)\n",
                          count_of(queued, "job"), requeued);
  return OkStatus();
}

void Service::record_changes() {
  const bool loaders_changed =
      loaders_.poll([this](HeldJob held) { hand_to_engine(std::move(held)); },
                    [this](const HeldJob& held, const std::string& why) {
                      record_end(held.id, JobState::kFailed, why, ctx_.clock.now_ms());
                      quotas_.job_ended(held.owner);
                    });
  if (loaders_changed) queue_cache_.reset();
  std::vector<JobChange> changes = engine_.take_changes();
  if (!changes.empty()) queue_cache_.reset();
  for (const JobChange& c : changes) {
    auto it = by_key_.find(c.key);
    if (it == by_key_.end()) continue;
    const int64_t id = it->second;
    const Tracked tracked = tracked_.at(id);
    switch (c.kind) {
      case JobChange::Kind::kStarted:
        tracked_.at(id).accounted_to_ms = c.time_ms;
        tracked_.at(id).started_ms = c.time_ms;
        writer_.service_job_started(id, c.job_id, c.device.value_or(0), c.time_ms,
                                    engine_.view(c.key).log_path);
        loaders_.started(id, c.job_id);
        break;
      case JobChange::Kind::kRequeued:
        account_last_span(c.key, c.time_ms);
        tracked_.at(id).waiting_since_ms = c.time_ms;
        writer_.service_job_requeued(id, c.reason, c.counted);
        break;
      case JobChange::Kind::kEnded:
        account_last_span(c.key, c.time_ms);
        if (c.state == JobState::kInterrupted && tracked.restart == RestartPolicy::kOnFailure) {
          // The service stops under it: it runs again at the next start, and
          // the attempt the service cut short is not the job's.
          writer_.service_job_requeued(
              id,
              fmt::format("attempt {} interrupted by the service's stop: {}; it runs again when "
                          "the service starts (not counted as an attempt)",
                          c.attempt, c.reason),
              /*counted=*/false);
        } else {
          record_end(id, c.state, c.reason, c.time_ms);
          ended_.views[id] = engine_.view(c.key);
          ended_.order.push_back(id);
          if (ended_.order.size() > kEndedViewsKept) {
            ended_.views.erase(ended_.order.front());
            ended_.order.pop_front();
          }
        }
        loaders_.detach(id);
        quotas_.job_ended(tracked.owner);
        tracked_.erase(id);
        by_key_.erase(it);
        break;
    }
  }
  if (!changes.empty()) update_quotas();
  // What the store could not take yet (full disk, locked) waits in the
  // writer, in order, and is written once it can be: no job's end is lost.
  for (const std::string& line : writer_.flush()) ctx_.log << line << '\n';
  forget_written_ends();
}

std::string Service::answer(const Caller& caller, const std::string& request_line) {
  json parsed = json::parse(request_line, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return dump(error_answer("the request is not a JSON object"));
  // The queue's first page as colo queue and colo top ask for it (its table,
  // or its snapshot without samples): the cached text.
  if (parsed.size() <= 4 && parsed.value("op", json()) == protocol::kQueue &&
      parsed.value("offset", json(0)) == 0 &&
      parsed.value("limit", json(protocol::kQueuedPage)) == protocol::kQueuedPage) {
    if (parsed.value("table", json()) == true && !parsed.contains("samples")) {
      const ServiceSnapshot& page = first_page_snapshot();
      if (queue_cache_.table.empty())
        queue_cache_.table = dump(json{{"ok", true}, {"table", format_queue(page, page.time_ms)}});
      return queue_cache_.table;
    }
    if (parsed.value("samples", json()) == false && !parsed.contains("table")) {
      const json& page = first_queue_page();
      if (queue_cache_.text.empty()) queue_cache_.text = dump(page);
      return queue_cache_.text;
    }
  }
  try {
    return dump(handle(caller, parsed));
  } catch (const json::exception& e) {
    // A field of a type no check above foresaw: that request fails, the service goes on.
    ctx_.log << fmt::format("warning: a request from {} (uid {}) was malformed: {}\n", caller.user,
                            caller.uid, e.what());
    return dump(error_answer(fmt::format("malformed request: {}", e.what())));
  }
}

json Service::handle(const Caller& caller, const json& request) {
  Result<std::string> op_field = string_field(request, "op", "");
  if (!op_field.ok()) return error_answer(op_field.error().message());
  const std::string& op = *op_field;
  if (op == protocol::kSubmit) return submit(caller, request);
  if (op == protocol::kQueue) return queue_answer(request);
  if (op == protocol::kStatus) return status(request);
  if (op == protocol::kCancel) return cancel(caller, request);
  if (op == protocol::kLogs) return logs(caller, request);
  if (op == protocol::kUsage) return usage_answer(request);
  if (op == protocol::kDrain) return drain(caller, request);
  if (op == protocol::kGc) return gc(caller, request);
  return error_answer(fmt::format("unknown request '{}'; colo serve answers {}", op,
                                  fmt::join(protocol::kOperations, ", ")));
}

json Service::drain(const Caller& caller, const json& request) {
  if (!is_admin(caller)) {
    return denied_answer(fmt::format(
        "only the service's admins (root, {} or --admin-group) may drain or undrain colo serve; "
        "you are {}",
        info_.user, caller.user));
  }
  auto drain = request.find("drain");
  if (drain == request.end() || !drain->is_boolean())
    return error_answer("drain: 'drain' must be true or false");
  if (info_.state != "running" && info_.state != "drained") {
    return error_answer(fmt::format("colo serve is {}{}; it cannot be {}", info_.state,
                                    halt_.reason.empty() ? "" : ": " + halt_.reason,
                                    *drain ? "drained" : "undrained"));
  }
  const std::string was = info_.state;
  set_state(*drain ? "drained" : "running");
  engine_.hold(*drain);
  if (info_.state != was) {
    ctx_.log << fmt::format(
        "{} {} the service: {}\n", caller.user, *drain ? "drained" : "undrained",
        *drain ? fmt::format("no queued job starts; {} running run on", engine_.running())
               : "queued jobs start again");
  }
  return json{{"ok", true}, {"state", info_.state}, {"running", engine_.running()}};
}

json Service::gc(const Caller& caller, const json& request) {
  // Another store first: a user collecting their own store is not refused.
  Result<std::string> store = string_field(request, "store", "");
  if (!store.ok()) return error_answer("gc: " + store.error().message());
  std::error_code ec;
  if (!store->empty() && !std::filesystem::equivalent(*store, ctx_.store.path(), ec)) {
    return error_answer(
        fmt::format("gc: this colo serve keeps {}, not {}", ctx_.store.path(), *store));
  }
  if (!is_admin(caller)) {
    return denied_answer(fmt::format(
        "only the service's admins (root, {} or --admin-group) may collect its jobs' files; you "
        "are {}",
        info_.user, caller.user));
  }
  Result<int64_t> older = integer_field(request, "older_than_ms", -1);
  if (!older.ok() || *older < 0)
    return error_answer("gc: 'older_than_ms' must be a number of milliseconds, 0 or more");
  const bool dry_run = request.value("dry_run", false);
  const UnixMillis now = ctx_.clock.now_ms();
  Result<std::vector<ServiceJobRow>> rows =
      ctx_.store.ended_service_jobs_with_files(0, now - *older, kGcJobsPerRequest + 1);
  if (!rows.ok()) return error_answer("gc: " + rows.error().message());
  const bool more = rows->size() > kGcJobsPerRequest;
  if (more) rows->pop_back();
  int64_t files = 0;
  std::vector<int64_t> done;
  std::vector<std::string> problems;
  for (const ServiceJobRow& row : *rows) {
    const std::string log =
        row.log_path.empty()
            ? attempt_log_path(service_job_stem(options_.logs_root, row.id, row.name), 1)
            : row.log_path;
    if (dry_run) {
      done.push_back(row.id);
      continue;
    }
    Result<int64_t> removed = remove_job_files(log, row.attempts);
    if (!removed.ok()) {
      problems.push_back(fmt::format("job {}: {}", row.id, removed.error().message()));
      continue;
    }
    files += *removed;
    done.push_back(row.id);
  }
  if (!dry_run && !done.empty()) {
    if (Status marked = ctx_.store.service_jobs_files_removed(done, now); !marked.ok())
      problems.push_back(marked.error().message());
  }
  if (!dry_run && !done.empty()) {
    ctx_.log << fmt::format("{} collected the files of {} that ended over {} ago ({})\n",
                            caller.user, count_of(static_cast<int64_t>(done.size()), "job"),
                            format_duration_ms(*older), count_of(files, "file"));
  }
  json answer = {{"ok", true},
                 {"jobs", done.size()},
                 {"files", files},
                 {"more", more && problems.empty()},
                 {"store", ctx_.store.path()},
                 {"problems", problems}};
  return answer;
}

void Service::sweep_checkpoints() {
  const int64_t keep = options_.engine.keep_checkpoints_ms;
  if (keep <= 0) return;
  const UnixMillis until = ctx_.clock.now_ms() - keep;
  Result<std::vector<ServiceJobRow>> rows =
      ctx_.store.ended_service_jobs_with_files(checkpoints_swept_to_ms_, until, kGcJobsPerRequest);
  if (!rows.ok()) return;  // tried again at the next sweep
  for (const ServiceJobRow& row : *rows) {
    if (row.state == JobState::kOk) {
      if (Status s = remove_tree(service_checkpoint_dir(options_.logs_root, row.id)); !s.ok())
        ctx_.log << fmt::format("warning: job {}: its checkpoints stay: {}\n", row.id,
                                s.error().message());
    }
    checkpoints_swept_to_ms_ = std::max(checkpoints_swept_to_ms_, row.ended_ms.value_or(0));
  }
  if (rows->size() < static_cast<size_t>(kGcJobsPerRequest)) checkpoints_swept_to_ms_ = until;
}

json Service::submit(const Caller& caller, const json& request) {
  if (info_.state != "running" && info_.state != "drained") {
    return error_answer(fmt::format("colo serve is {}{}; it takes no new jobs", info_.state,
                                    halt_.reason.empty() ? "" : ": " + halt_.reason));
  }
  if (geteuid() != 0 && caller.uid != geteuid()) {
    return denied_answer(fmt::format(
        "this colo serve runs as {} and runs jobs only for {}; ask the administrator for a "
        "system service (running as root, it runs each job as its submitter)",
        info_.user, info_.user));
  }
  Result<std::string> job_file = string_field(request, "job_file", "");
  if (!job_file.ok()) return error_answer("submit: " + job_file.error().message());
  *job_file = strip_control_chars(*job_file);  // a label every user's queue shows
  Result<std::string> submit_key = string_field(request, "submit_key", "");
  if (!submit_key.ok()) return error_answer("submit: " + submit_key.error().message());
  if (submit_key->size() > 128) return error_answer("submit: 'submit_key' is over 128 bytes");
  // A retried submission (its answer was lost): the jobs stored the first time.
  Result<std::vector<int64_t>> earlier =
      ctx_.store.service_jobs_submitted_as(caller.uid, *submit_key);
  if (!earlier.ok()) return error_answer("could not read the queue: " + earlier.error().message());
  const json service = {{"mechanism", info_.mechanism}, {"policy", info_.policy}};
  if (!earlier->empty())
    return json{{"ok", true}, {"ids", *earlier}, {"already_submitted", true}, {"service", service}};
  Result<RunLabel> label = submission_label(request);
  if (!label.ok()) return error_answer("submit: " + label.error().message());
  std::vector<JobSpec> specs;
  // A resumption: the jobs of an earlier submission that did not end ok.
  std::optional<Resumption> resumption;
  if (request.contains("resume")) {
    Result<std::string> which = string_field(request, "resume", "");
    Result<Resumption> r =
        which.ok() ? resumable(caller, *which) : Result<Resumption>(which.error());
    if (!r.ok()) return error_answer(r.error(), "submit --resume: ");
    resumption = std::move(r).value();
    specs = resumption->specs;
    *job_file = resumption->job_file;
    // The resumed submission's name and tags carry over; what this request
    // gives (--name, --tag) changes them, a tag given empty (--tag KEY=)
    // removing it.
    RunLabel carried = resumption->label;
    if (!label->name.empty()) carried.name = label->name;
    carried.tags = changed_tags(std::move(carried.tags), label->tags);
    carried.note = label->note;
    *label = std::move(carried);
    if (label->note.empty()) label->note = fmt::format("resumes submission {}", resumption->of);
  } else {
    label->tags = changed_tags({}, label->tags);  // a tag given empty removes nothing here
    Result<std::vector<JobSpec>> sent = submitted_specs(caller, request);
    if (!sent.ok()) return error_answer(sent.error());
    specs = std::move(sent).value();
  }
  // The jobs are their submitter's: a resumption's stay those of the
  // submission it resumes, whoever asked for it (an admin's help never runs
  // a user's code as the admin).
  const uid_t owner_uid = resumption ? resumption->owner_uid : caller.uid;
  const std::string owner_name = resumption ? resumption->owner_name : caller.user;
  if (std::optional<std::string> over = quotas_.over_quota(owner_uid, specs))
    return error_answer(*over);
  // The store keeps the environments with secret values redacted (the store
  // is read by reports and copied around); the values stay in a file of
  // their own, 0600, until the job ends.
  const std::map<std::string, std::string> env =
      request.contains("env") ? string_map(request["env"]) : std::map<std::string, std::string>{};
  const json env_secrets = secret_values(env);
  const std::string stored_env = dump(json(redact_secret_env(env)));
  std::vector<NewServiceJob> rows;
  std::vector<json> secrets;
  const UnixMillis now = ctx_.clock.now_ms();
  for (const JobSpec& spec : specs) {
    rows.push_back(NewServiceJob{now, owner_uid, owner_name, *job_file, spec.name, spec.group,
                                 dump(job_spec_to_stored_json(spec)), stored_env, *submit_key});
    json s = json::object();
    if (!env_secrets.empty()) s["env"] = env_secrets;
    if (json job_env = secret_values(spec.env); !job_env.empty()) s["job_env"] = job_env;
    secrets.push_back(std::move(s));
  }
  Result<std::vector<int64_t>> ids = ctx_.store.add_service_jobs(
      rows, info_.run_id, *label,
      resumption ? std::optional<int64_t>(resumption->submission_id) : std::nullopt);
  if (!ids.ok()) return error_answer("could not queue the jobs: " + ids.error().message());
  Result<std::vector<ServiceJobRow>> added = ctx_.store.service_jobs_by_id(*ids);
  if (!added.ok())
    return error_answer("could not read the queued jobs: " + added.error().message());
  json resumed = json::array();
  for (size_t i = 0; resumption && i < added->size(); ++i) {
    // The job takes its earlier attempt's checkpoint directory (admit() names it by the new id).
    const int64_t from = resumption->from[i];
    const int64_t id = (*added)[i].id;
    const std::string old_dir = service_checkpoint_dir(options_.logs_root, from);
    std::error_code ec;
    bool moved = false;
    if (std::filesystem::exists(old_dir, ec)) {
      std::filesystem::rename(old_dir, service_checkpoint_dir(options_.logs_root, id), ec);
      moved = !ec;
      if (ec) {
        ctx_.log << fmt::format(
            "warning: job {} resumes job {}, but its checkpoint directory {} "
            "could not be moved: {}; it starts without it\n",
            id, from, old_dir, ec.message());
      }
    }
    if (Status marked = ctx_.store.set_service_job_resumed_by(from, id); !marked.ok()) {
      ctx_.log << fmt::format(
          "warning: job {} resumes job {}, which the store could not mark "
          "as resumed ({}): it could be resumed again\n",
          id, from, marked.error().message());
    }
    resumed.push_back({{"id", id}, {"from", from}, {"checkpoint", moved}});
  }
  for (size_t i = 0; i < added->size(); ++i) {
    const int64_t id = (*added)[i].id;
    if (!secrets[i].empty()) {
      if (Status written = write_private_json(secrets_path(id), secrets[i]); !written.ok()) {
        ctx_.log << fmt::format(
            "warning: job {}: {}; should the service restart before it "
            "runs, it runs without its secret values\n",
            id, written.error().message());
      }
    }
    admit((*added)[i], specs[i], secrets[i]);
  }
  queue_cache_.reset();
  ctx_.log << fmt::format("{} submitted {} job{} from {}: {}{}{}\n", caller.user, ids->size(),
                          ids->size() == 1 ? "" : "s", job_file->empty() ? "?" : *job_file,
                          ids->front(), ids->size() > 1 ? fmt::format("-{}", ids->back()) : "",
                          owner_uid == caller.uid ? "" : fmt::format(" (for {})", owner_name));
  json answer = {{"ok", true}, {"ids", *ids}, {"service", service}};
  if (resumption) {
    answer["resumed"] = std::move(resumed);
    answer["ended_well"] = resumption->ended_well;
  }
  if (!added->empty() && added->front().submission_id) {
    answer["submission"] = *added->front().submission_id;
    answer["run"] = info_.run_id;
  }
  return answer;
}

void Service::halt(const std::string& why) {
  halt_.reason = fmt::format("the store {} {}", ctx_.store.path(), why);
  set_state("halted");
  engine_.hold(true);
  json queue = json::array();
  if (Result<std::vector<ServiceJobRow>> rows = ctx_.store.unfinished_service_jobs(); rows.ok()) {
    for (const ServiceJobRow& row : *rows) {
      queue.push_back({{"id", row.id},
                       {"owner", row.owner_name},
                       {"state", to_string(row.state)},
                       {"job_file", row.job_file},
                       {"job", json::parse(row.spec_json, nullptr, false)}});
    }
  } else {
    for (const auto& [id, tracked] : tracked_) {
      const EngineJobView v = engine_.view(tracked.key);
      queue.push_back({{"id", id}, {"state", to_string(v.state)}});
    }
  }
  halt_.lost_queue_path = fmt::format("{}/queue-when-the-store-was-lost-{}.json",
                                      options_.logs_root, ctx_.clock.now_ms());
  Status written = write_private_json(halt_.lost_queue_path, json{{"why", why}, {"jobs", queue}});
  ctx_.log << fmt::format(
      "ERROR: the store {} {}. colo serve takes no new jobs and starts none of the {} it holds; "
      "running jobs run on, but nothing more about them can be recorded. {}. Stop the service, "
      "put the store back or start it on a new one, and submit them again.\n",
      ctx_.store.path(), why, queue.size(),
      written.ok() ? "The queue is written to " + halt_.lost_queue_path
                   : "The queue could not be saved either: " + written.error().message());
  if (!written.ok()) halt_.lost_queue_path.clear();
}

QueueJob Service::queue_job(const ServiceJobRow& row) const {
  QueueJob q = queue_job_of(row, info_.mechanism);
  // Where a job got to, at what rate, with how much memory: while it runs,
  // and after it ended (its last known values).
  auto progress_of = [&](const EngineJobView& v) {
    q.run_id = info_.run_id;
    q.epoch = v.epoch;
    q.samples_per_s = v.samples_per_s;
    q.last_epoch_ms = v.last_epoch_ms;
    if (v.peak_memory_bytes > 0) q.peak_memory_bytes = v.peak_memory_bytes;
  };
  // Its class (the ended jobs' rows are read without their spec), and a
  // protected job against its floor, across its attempts: while queued
  // again, running, and after it ended.
  auto floor_of = [&](const EngineJobView& v) {
    q.qos = to_string(v.qos);
    q.min_speed = v.min_speed;
    q.speed_of_solo = v.speed_of_solo;
    q.below_floor_share = v.below_floor_share;
    if (v.below_floor_share) {
      q.steady_ms = v.steady_ms;
      q.below_floor_ms = v.below_floor_ms;
    }
  };
  auto it = tracked_.find(row.id);
  if (it != tracked_.end()) {
    EngineJobView v = engine_.view(it->second.key);
    if (v.state == JobState::kRunning) {
      progress_of(v);
      q.predicted_end_ms = v.expected_end_ms;
      q.probe = v.probe;
      q.pid = static_cast<uint32_t>(v.pid);
      q.mps_sm_share_pct = v.mps_sm_share_pct;
      q.mps_memory_limit_bytes = v.mps_memory_limit_bytes;
      q.mig_instance = v.mig_instance;
      q.gang_gpus = v.gang_devices;
      q.stalled = v.stalled;
      q.outside_mps = v.outside_mps;
    }
    q.solo_samples_per_s = v.solo_samples_per_s;
    floor_of(v);
  } else if (auto ended = ended_.views.find(row.id);
             ended != ended_.views.end() && is_final(row.state)) {
    progress_of(ended->second);
    q.solo_samples_per_s = ended->second.solo_samples_per_s;
    floor_of(ended->second);
  }
  return q;
}

void Service::account_usage() {
  const int64_t now = ctx_.clock.monotonic_ms();
  usage_.decay_to(now);
  const UnixMillis wall = ctx_.clock.now_ms();
  const GpuShares shares = charged_shares_by_gpu();
  for (size_t key : engine_.running_keys()) account_run_until(key, wall, shares);
  account_energy(running_per_gpu());
  update_quotas();
  if (options_.fair_share) engine_.set_usage(usage_.weighted());
  if (usage_.keep_due(now, kUsageKeptEveryMs)) {
    if (Status kept = keep_usage(); !kept.ok())
      ctx_.log << "warning: the users' fair-share usage was not kept: " << kept.error().message()
               << '\n';
  }
}

namespace {

std::vector<int> gpus_of(const EngineJobView& v) { return job_gpus(v.device, v.gang_devices); }

}  // namespace

std::map<int, int> Service::running_per_gpu() const {
  std::map<int, int> on_gpu;
  for (size_t key : engine_.running_keys()) {
    for (int g : gpus_of(engine_.view(key))) ++on_gpu[g];
  }
  return on_gpu;
}

Service::GpuShares Service::charged_shares_by_gpu(std::optional<size_t> ended) const {
  std::map<int, std::vector<size_t>> keys_on;
  std::vector<size_t> keys = engine_.running_keys();
  if (ended && std::find(keys.begin(), keys.end(), *ended) == keys.end()) keys.push_back(*ended);
  std::map<int64_t, size_t> key_of_row;  // jobs-table row -> engine key
  for (size_t key : keys) {
    const EngineJobView v = engine_.view(key);
    if (v.job_id != 0) key_of_row[v.job_id] = key;
    for (int g : gpus_of(v)) keys_on[g].push_back(key);
  }
  // What the driver last measured of each job's processes on each GPU.
  std::map<int, std::map<size_t, double>> sm_util;
  for (const auto& [device, processes] : engine_.latest_processes()) {
    for (const EngineProcess& p : processes) {
      if (!p.job_id || !p.sample.sm_util_pct) continue;
      if (auto k = key_of_row.find(*p.job_id); k != key_of_row.end())
        sm_util[device][k->second] += *p.sample.sm_util_pct;
    }
  }
  GpuShares shares;
  for (const auto& [gpu, on] : keys_on) {
    std::vector<JobOnGpu> jobs;
    for (size_t key : on) {
      JobOnGpu j;
      if (auto d = sm_util.find(gpu); d != sm_util.end()) {
        if (auto u = d->second.find(key); u != d->second.end()) j.sm_util_pct = u->second;
      }
      const EngineJobView v = engine_.view(key);
      if (v.mps_sm_share_pct) j.mps_sm_share_pct = *v.mps_sm_share_pct;
      if (v.samples_per_s && v.solo_samples_per_s && *v.solo_samples_per_s > 0)
        j.reported_progress = *v.samples_per_s / *v.solo_samples_per_s;
      j.qos = v.qos;
      if (v.opportunistic_thread_pct) j.thread_cap_pct = *v.opportunistic_thread_pct;
      jobs.push_back(j);
    }
    const std::vector<double> charged = charged_shares(jobs);
    for (size_t i = 0; i < on.size(); ++i) shares[gpu][on[i]] = charged[i];
  }
  return shares;
}

void Service::account_run_until(size_t key, UnixMillis until_ms, const GpuShares& shares) {
  auto id = by_key_.find(key);
  if (id == by_key_.end()) return;
  Tracked& t = tracked_.at(id->second);
  if (!t.accounted_to_ms) return;  // not running
  const double span = static_cast<double>(until_ms - *t.accounted_to_ms);
  t.accounted_to_ms = until_ms;
  if (span <= 0) return;
  // Charged: its measured share of each of its GPUs (a gang's each), what
  // fair share counts.
  const EngineJobView v = engine_.view(key);
  const std::vector<int> gpus = gpus_of(v);
  double charged = 0;
  for (int g : gpus) {
    auto on = shares.find(g);
    if (on == shares.end()) continue;
    if (auto c = on->second.find(key); c != on->second.end()) charged += c->second;
  }
  usage_.add(t.owner, charged * span);
  t.attempt += span_usage(span, gpus.size(), charged, v.samples_per_s, v.solo_samples_per_s);
}

void Service::account_energy(const std::map<int, int>& on_gpu) {
  const std::map<int, double> joules = usage_.new_energy_j(engine_.recent_samples());
  for (size_t key : engine_.running_keys()) {
    auto id = by_key_.find(key);
    if (id == by_key_.end()) continue;
    Tracked& t = tracked_.at(id->second);
    if (!t.accounted_to_ms) continue;
    add_energy_share(t.attempt, gpus_of(engine_.view(key)), joules, on_gpu);
  }
}

void Service::preempt_for_waiting() {
  if (!options_.preempt_after_ms || info_.state != "running") return;
  const UnixMillis now = ctx_.clock.now_ms();
  const int64_t wait = *options_.preempt_after_ms;
  if (preempting_.for_id) {
    auto w = tracked_.find(*preempting_.for_id);
    const bool waits = w != tracked_.end() && !w->second.accounted_to_ms;
    // Its victim waits parked until it starts (or leaves the queue), or,
    // when room did not come of it, for two waits at most.
    if (waits && now - preempting_.at_ms < 2 * wait) return;
    engine_.release_parked();
    preempting_.for_id.reset();
  }
  std::vector<PreemptCandidate> jobs;
  for (const auto& [id, t] : tracked_) {
    // A protected job past its owner's protected GPUs waits for them, not for room.
    const bool held = quotas_.holds(t.owner) ||
                      (t.qos == QosClass::kProtected && quotas_.holds_protected(t.owner));
    jobs.push_back(PreemptCandidate{id, t.priority, t.accounted_to_ms.has_value(), t.preemptible,
                                    held, t.waiting_since_ms, t.started_ms});
  }
  const std::optional<PreemptChoice> choice = choose_preemption(jobs, now, wait);
  if (!choice) return;
  Tracked& waiting = tracked_.at(choice->waiting);
  const std::string reason =
      fmt::format("preempted for job {} (priority {}), which waited {}", choice->waiting,
                  waiting.priority, format_duration_ms(now - waiting.waiting_since_ms));
  if (!engine_.preempt(tracked_.at(choice->victim).key, reason)) return;
  ctx_.log << fmt::format("job {} {}\n", choice->victim, reason);
  preempting_ = Preempting{choice->waiting, now};
  waiting.waiting_since_ms = now;  // its next victim only after it waited again
}

void Service::update_quotas() {
  if (!quotas_.bound_gpus()) return;
  const std::map<int, int> on_gpu = running_per_gpu();
  std::map<uid_t, OwnerLoad> load;
  for (size_t key : engine_.running_keys()) {
    auto id = by_key_.find(key);
    if (id == by_key_.end()) continue;
    const Tracked& t = tracked_.at(id->second);
    OwnerLoad& l = load[t.owner];
    ++l.running;
    const std::vector<int> gpus = gpus_of(engine_.view(key));
    for (int g : gpus) l.gpus_held += 1.0 / std::max(1, on_gpu.at(g));
    // A protected job holds each of its GPUs whole: no normal job joins it.
    if (t.qos == QosClass::kProtected) l.protected_gpus += static_cast<int>(gpus.size());
  }
  if (quotas_.bound_protected()) {
    for (const auto& [id, t] : tracked_) {
      if (t.qos == QosClass::kProtected && !t.accounted_to_ms) ++load[t.owner].protected_queued;
    }
  }
  for (const auto& [owner, n] : quotas_.unfinished()) {
    OwnerLoad& l = load[owner];
    l.share = usage_.share(owner);
    auto known = usage_.names().find(owner);  // of every job admitted: no user database read
    l.name = known != usage_.names().end() ? known->second : user_name_of(owner);
  }
  quotas_.update(load);
  engine_.set_quota_left(quotas_.left());
  engine_.set_protected_left(quotas_.protected_left());
}

void Service::account_last_span(size_t key, UnixMillis end_ms) {
  account_run_until(key, end_ms, charged_shares_by_gpu(key));  // it ran there until its end
  auto id = by_key_.find(key);
  if (id == by_key_.end()) return;
  Tracked& t = tracked_.at(id->second);
  if (t.accounted_to_ms) writer_.service_job_usage(id->second, t.attempt);
  t.accounted_to_ms.reset();
  t.attempt = {};
}

Status Service::load_usage() {
  Result<std::vector<ServiceUsageRow>> rows = ctx_.store.service_usage();
  if (!rows.ok()) return rows.error().with_context("reading the users' fair-share usage");
  usage_.load(*rows, ctx_.clock.now_ms());
  return OkStatus();
}

Status Service::keep_usage() {
  return ctx_.store.keep_service_usage(usage_.rows(ctx_.clock.now_ms()));
}

std::vector<DeviceSample> Service::recent_samples() const {
  std::vector<DeviceSample> out;
  size_t n = 0;
  for (const auto& [device, samples] : engine_.recent_samples()) n += samples.size();
  out.reserve(n);  // exactly: 64 GPUs' samples are 3 MB, which doubling would leave half empty
  for (const auto& [device, samples] : engine_.recent_samples())
    out.insert(out.end(), samples.begin(), samples.end());
  std::sort(out.begin(), out.end(),
            [](const DeviceSample& a, const DeviceSample& b) { return a.time_ms < b.time_ms; });
  return out;
}

ServiceSnapshot Service::snapshot(int64_t queued_offset, int64_t queued_limit, bool samples) {
  ServiceSnapshot s;
  s.time_ms = ctx_.clock.now_ms();
  s.service = info_;
  s.service.mechanism_down = engine_.mechanism_down();
  const std::map<int, std::deque<DeviceSample>>& recent = engine_.recent_samples();
  for (const DeviceInfo& d : engine_.devices()) {
    GpuView g{d.index, d.name, d.uuid, d.memory_total_bytes, 0, std::nullopt, d.power_limit_w};
    if (auto it = recent.find(d.index); it != recent.end() && !it->second.empty())
      g.latest = it->second.back();
    s.gpus.push_back(std::move(g));
  }
  s.queued_offset = queued_offset;
  if (Result<std::map<std::string, ServiceJobCounts>> counts =
          ctx_.store.unfinished_service_job_counts();
      counts.ok()) {
    for (const auto& [owner, n] : *counts) {
      s.owners[owner] = OwnerJobs{n.queued, n.running, 0};
      s.queued_total += n.queued;
    }
    for (const auto& [uid, name] : usage_.names()) {
      auto used = usage_.usage().find(uid);
      if (used == usage_.usage().end() && !s.owners.contains(name)) continue;
      OwnerJobs& o = s.owners[name];
      o.usage_ms = used == usage_.usage().end() ? 0 : used->second;
      auto total = usage_.total().find(uid);
      o.total_ms = total == usage_.total().end() ? 0 : total->second;
      o.weight = usage_.weight_of(uid);
    }
  }
  // Running jobs by id, then one page of the queued in the order they will
  // start (serve/queue_order.h). Where that order is arrival (first come,
  // first served, or one owner queued, and no priority), the store pages it.
  const bool by_share =
      options_.fair_share && std::count_if(s.owners.begin(), s.owners.end(),
                                           [](const auto& o) { return o.second.queued > 0; }) > 1;
  std::map<uid_t, OwnerShare> shares;
  for (const auto& [uid, name] : usage_.names()) {
    auto used = usage_.usage().find(uid);
    shares[uid] =
        OwnerShare{name, used == usage_.usage().end() ? 0.0 : used->second, usage_.weight_of(uid)};
  }
  auto in_order = [&](const ServiceJobRow& row) {
    QueuedInOrder q{row.id, row.owner_uid, 0, false};
    if (auto it = tracked_.find(row.id); it != tracked_.end()) {
      q.priority = it->second.priority;
      q.opportunistic = it->second.qos == QosClass::kOpportunistic;
    }
    if (!shares.contains(row.owner_uid)) shares[row.owner_uid] = OwnerShare{row.owner_name, 0, 1};
    return q;
  };
  const bool ordered = by_share || std::any_of(tracked_.begin(), tracked_.end(), [](const auto& t) {
                         return t.second.priority != 0 || t.second.qos == QosClass::kOpportunistic;
                       });
  Result<std::vector<ServiceJobRow>> running = ctx_.store.running_service_jobs();
  Result<std::vector<ServiceJobRow>> queued =
      ordered ? ctx_.store.queued_service_jobs(0, std::numeric_limits<int64_t>::max())
              : ctx_.store.queued_service_jobs(queued_offset, queued_limit);
  std::optional<QueuedInOrder> first_to_start;
  std::map<int64_t, QueuedInOrder> order_of;
  if (running.ok() && queued.ok()) {
    std::vector<ServiceJobRow> rows = std::move(running).value();
    std::sort(rows.begin(), rows.end(),
              [](const ServiceJobRow& a, const ServiceJobRow& b) { return a.id < b.id; });
    for (const ServiceJobRow& row : rows) s.jobs.push_back(queue_job(row));
    std::vector<QueuedInOrder> each;
    std::map<int64_t, const ServiceJobRow*> row_of;
    for (const ServiceJobRow& row : *queued) {
      each.push_back(in_order(row));
      row_of[row.id] = &row;
    }
    each = in_start_order(std::move(each), by_share ? &shares : nullptr);
    if (!each.empty() && (ordered || queued_offset == 0)) first_to_start = each.front();
    const size_t from = ordered ? static_cast<size_t>(std::max<int64_t>(0, queued_offset)) : 0;
    for (size_t i = from; i < each.size() && (!ordered || static_cast<int64_t>(i - from) <
                                                              std::max<int64_t>(0, queued_limit));
         ++i) {
      s.jobs.push_back(queue_job(*row_of.at(each[i].id)));
      order_of[each[i].id] = each[i];
    }
  }
  if (Result<std::vector<ServiceJobRow>> rows =
          ctx_.store.ended_service_jobs(options_.ended_jobs_shown);
      rows.ok()) {
    for (const ServiceJobRow& row : *rows) s.jobs.push_back(queue_job(row));
  }
  // Why a job waits, where nothing else says: its owner's quota (a protected
  // job's, on protected GPUs, first); when more than one user has jobs, the
  // order of fair share.
  for (QueueJob& j : s.jobs) {
    if (j.state != "queued" || !j.reason.empty()) continue;
    auto tracked = tracked_.find(j.id);  // its class as admitted (listings carry no spec)
    if (tracked != tracked_.end() && tracked->second.qos == QosClass::kProtected &&
        quotas_.holds_protected(j.owner_uid)) {
      if (const std::string* why = quotas_.why_protected(j.owner_uid)) j.reason = "quota: " + *why;
    }
    if (!j.reason.empty() || !quotas_.holds(j.owner_uid)) continue;
    if (const std::string* why = quotas_.why(j.owner_uid)) j.reason = "quota: " + *why;
  }
  // The policy's word: the head of the queue, kept a GPU, and the jobs
  // that may only go around it.
  auto job_name = [&](size_t key) {
    auto id = by_key_.find(key);
    return id != by_key_.end() ? fmt::format("job {}", id->second) : std::string("a job");
  };
  for (QueueJob& j : s.jobs) {
    if (j.state != "queued" || !j.reason.empty()) continue;
    if (auto it = tracked_.find(j.id); it != tracked_.end())
      j.reason = engine_.waiting_reason(it->second.key, job_name);
  }
  // Behind the first to start: the order's word (fair share, priority,
  // class, arrival); the first itself, and a job behind its owner's own,
  // wait for what the first waits for (below).
  if (first_to_start) {
    for (QueueJob& j : s.jobs) {
      if (j.state != "queued" || !j.reason.empty()) continue;
      auto it = order_of.find(j.id);
      if (it == order_of.end()) continue;
      j.reason = waits_behind(it->second, *first_to_start, by_share ? &shares : nullptr,
                              options_.usage.half_life_ms);
    }
  }
  for (GpuView& g : s.gpus) {
    g.jobs_running =
        static_cast<int>(std::count_if(s.jobs.begin(), s.jobs.end(), [&](const QueueJob& j) {
          const std::vector<int> on = gpus_of(j);
          return j.state == "running" && std::find(on.begin(), on.end(), g.index) != on.end();
        }));
  }
  // Else: a service that starts nothing says so; a gang waits for its GPUs
  // at once; another job for room on one.
  std::string busy;
  for (const GpuView& g : s.gpus)
    busy += fmt::format("{}gpu{} runs {}", busy.empty() ? "" : ", ", g.index, g.jobs_running);
  for (QueueJob& j : s.jobs) {
    if (j.state != "queued" || !j.reason.empty()) continue;
    if (info_.state == "drained") {
      j.reason = "drained: the service starts no job until an admin runs `colo undrain`";
      continue;
    }
    if (info_.state != "running") {
      j.reason = fmt::format("{}: the service starts no job", info_.state);
      continue;
    }
    auto it = tracked_.find(j.id);
    const int gpus = it != tracked_.end() ? it->second.gpus : 1;
    j.reason = gpus > 1 ? fmt::format("gang: needs {} GPUs at once ({})", gpus, busy)
                        : fmt::format("room: no GPU has room for it now ({})", busy);
  }
  if (samples) s.samples = recent_samples();
  // A GPU's processes are its running jobs': jobs-table row -> service job.
  std::map<int64_t, int64_t> service_id_of;
  for (const QueueJob& j : s.jobs) {
    if (j.state != "running") continue;
    if (auto it = tracked_.find(j.id); it != tracked_.end()) {
      if (int64_t row = engine_.view(it->second.key).job_id; row != 0) service_id_of[row] = j.id;
    }
  }
  for (const auto& [device, processes] : engine_.latest_processes()) {
    for (const EngineProcess& p : processes) {
      ProcessView v;
      v.gpu = device;
      v.pid = p.sample.pid;
      if (p.job_id) {
        if (auto it = service_id_of.find(*p.job_id); it != service_id_of.end()) v.job = it->second;
      }
      v.used_memory_bytes = p.sample.used_memory_bytes;
      v.sm_util_pct = p.sample.sm_util_pct;
      v.mps_client = p.sample.mps_client;
      if (options_.describe_process) {
        ProcessIdentity who = options_.describe_process(v.pid);
        v.user = std::move(who.user);
        v.command = std::move(who.command);
      }
      s.processes.push_back(std::move(v));
    }
  }
  if (Result<std::vector<RunRow>> runs = ctx_.store.list_runs(10); runs.ok()) {
    for (const RunRow& r : *runs) {
      s.runs.push_back(RunView{r.id, to_string(r.state), r.started_ms, r.ended_ms, r.mechanism,
                               r.job_file, r.job_count});
    }
  }
  return s;
}

void Service::publish() {
  auto built = std::make_shared<const ServiceSnapshot>(snapshot());
  std::lock_guard lock(latest_mu_);
  latest_ = std::move(built);
}

std::shared_ptr<const ServiceSnapshot> Service::latest_snapshot() const {
  std::lock_guard lock(latest_mu_);
  return latest_;
}

json Service::queue_answer(const json& request) {
  Result<int64_t> offset = integer_field(request, "offset", 0);
  if (!offset.ok()) return error_answer("queue: " + offset.error().message());
  Result<int64_t> limit = integer_field(request, "limit", protocol::kQueuedPage);
  if (!limit.ok()) return error_answer("queue: " + limit.error().message());
  if (*limit < 1 || *limit > protocol::kMaxQueuedPage) {
    return error_answer(fmt::format("queue: 'limit' must be from 1 to {} (got {})",
                                    protocol::kMaxQueuedPage, *limit));
  }
  auto samples = request.find("samples");
  if (samples != request.end() && !samples->is_boolean())
    return error_answer("queue: 'samples' must be true or false");
  auto table = request.find("table");
  if (table != request.end() && !table->is_boolean())
    return error_answer("queue: 'table' must be true or false");
  if (table != request.end() && table->get<bool>()) {
    ServiceSnapshot page = snapshot(*offset, *limit, false);
    return json{{"ok", true}, {"table", format_queue(page, page.time_ms)}};
  }
  const bool with_samples = samples == request.end() || samples->get<bool>();
  if (*offset != 0 || *limit != protocol::kQueuedPage)
    return json{{"ok", true}, {"snapshot", to_json(snapshot(*offset, *limit, with_samples))}};
  if (!with_samples) return first_queue_page();
  json answer = first_queue_page();
  json& history = answer["snapshot"]["samples"];
  for (const DeviceSample& d : recent_samples()) history.push_back(device_sample_to_json(d));
  return answer;
}

const ServiceSnapshot& Service::first_page_snapshot() {
  const int64_t now = ctx_.clock.monotonic_ms();
  if (!queue_cache_.snapshot || now - queue_cache_.made_ms >= kQueueAnswerMaxAgeMs) {
    queue_cache_.reset();
    queue_cache_.snapshot = snapshot(0, protocol::kQueuedPage, false);
    queue_cache_.made_ms = now;
  }
  return *queue_cache_.snapshot;
}

const json& Service::first_queue_page() {
  const ServiceSnapshot& page = first_page_snapshot();
  if (!queue_cache_.answer) queue_cache_.answer = json{{"ok", true}, {"snapshot", to_json(page)}};
  return *queue_cache_.answer;
}

json Service::usage_answer(const json& request) {
  Result<int64_t> since = integer_field(request, "since_ms", 0);
  if (!since.ok()) return error_answer("usage: " + since.error().message());
  Result<std::vector<ServiceUsageReport>> ended = ctx_.store.service_usage_since(*since);
  if (!ended.ok()) return error_answer("usage: " + ended.error().message());
  return json{{"ok", true},
              {"since_ms", *since},
              {"owners", owners_to_json(this->snapshot(0, 1, false).owners)},
              {"ended", usage_rows_to_json(*ended)}};
}

json Service::status(const json& request) {
  Result<std::vector<int64_t>> wanted = ids_of(request);
  if (!wanted.ok()) return error_answer("status: " + wanted.error().message());
  const std::vector<int64_t>& ids = *wanted;
  Result<std::vector<ServiceJobRow>> rows = ctx_.store.service_jobs_by_id(ids);
  if (!rows.ok()) return error_answer(rows.error().message());
  json jobs = json::array();
  std::vector<int64_t> missing = ids;
  std::vector<int64_t> recording;
  forget_written_ends();
  for (const ServiceJobRow& row : *rows) {
    jobs.push_back(to_json(queue_job(row)));
    std::erase(missing, row.id);
    if (!is_final(row.state) && ends_unwritten_.contains(row.id)) recording.push_back(row.id);
  }
  json answer = {{"ok", true}, {"jobs", std::move(jobs)}, {"missing", missing}};
  if (!recording.empty()) {
    answer["recording"] = recording;
    if (std::optional<std::string> trouble = writer_.trouble()) answer["store_trouble"] = *trouble;
  }
  return answer;
}

Result<std::vector<int64_t>> Service::open_jobs_of_submission(const Caller& caller,
                                                              const std::string& which) {
  Result<Target> read = parse_target(
      which, TargetForms{.id = false, .submission = true, .name = true, .command = "cancel"});
  if (!read.ok()) return read.error();
  std::optional<int64_t> id;
  if (read->kind == Target::Kind::kSubmission) {
    id = read->last;
  } else {
    Result<std::optional<NamedTarget>> named =
        ctx_.store.find_named(which, caller.uid, NameKinds::kSubmissions);
    if (!named.ok()) return named.error();
    if (!*named) {
      return Error(fmt::format(
          "'{}' names no submission of yours (give its RUN/SUB, as colo submit printed it, or its "
          "name; `colo runs` lists the named ones)",
          which));
    }
    id = (*named)->id;
  }
  Result<std::optional<SubmissionRow>> sub = ctx_.store.submission(*id);
  if (!sub.ok()) return sub.error();
  if (!*sub || (read->kind == Target::Kind::kSubmission && (*sub)->run_id != read->first)) {
    return Error(fmt::format(
        "'{}' is no submission of this service (give its RUN/SUB, as colo submit printed it, or "
        "its name; `colo runs` lists the named ones)",
        which));
  }
  Result<std::vector<ServiceJobRow>> rows = ctx_.store.service_jobs_of_submission((*sub)->id);
  if (!rows.ok()) return rows.error();
  std::vector<int64_t> open;
  for (const ServiceJobRow& row : *rows) {
    if (!is_final(row.state)) open.push_back(row.id);
  }
  if (open.empty()) {
    return Error(fmt::format("submission {} has no queued or running job ({} of {})", which,
                             count_of(static_cast<int64_t>(rows->size()), "job"),
                             (*sub)->owner_name));
  }
  std::sort(open.begin(), open.end());
  return open;
}

json Service::cancel(const Caller& caller, const json& request) {
  Result<std::vector<int64_t>> wanted = ids_of(request);
  if (!wanted.ok()) return error_answer("cancel: " + wanted.error().message());
  std::vector<int64_t> ids = *wanted;
  // What names several jobs at once: submissions (RUN/SUB or a name) and
  // `mine` (every job of the caller's not yet ended); each submission that
  // names none is a result of its own.
  json results = json::array();
  std::vector<std::string> submissions;
  if (auto it = request.find("submissions"); it != request.end() && !it->is_null()) {
    if (!it->is_array()) return error_answer("cancel: 'submissions' must be an array of strings");
    for (const json& s : *it) {
      if (!s.is_string()) return error_answer("cancel: 'submissions' must be an array of strings");
      submissions.push_back(s.get<std::string>());
    }
  }
  const bool mine = request.value("mine", false);
  for (const std::string& which : submissions) {
    Result<std::vector<int64_t>> of = open_jobs_of_submission(caller, which);
    if (!of.ok()) {
      json result = {{"submission", which}, {"ok", false}, {"error", of.error().message()}};
      if (of.error().permission_denied()) result[protocol::kPermissionDenied] = true;
      results.push_back(std::move(result));
      continue;
    }
    ids.insert(ids.end(), of->begin(), of->end());
  }
  if (mine) {
    Result<std::vector<ServiceJobRow>> open = ctx_.store.unfinished_service_jobs();
    if (!open.ok()) return error_answer(open.error().message());
    for (const ServiceJobRow& row : *open) {
      if (row.owner_uid == caller.uid) ids.push_back(row.id);
    }
  }
  // Each job once, in the order first named.
  std::vector<int64_t> once;
  for (int64_t id : ids) {
    if (std::find(once.begin(), once.end(), id) == once.end()) once.push_back(id);
  }
  ids = std::move(once);
  if (ids.empty() && results.empty()) {
    if (mine) return json{{"ok", true}, {"results", json::array()}};
    return error_answer("cancel: name at least one job id");
  }
  Result<std::vector<ServiceJobRow>> rows = ctx_.store.service_jobs_by_id(ids);
  if (!rows.ok()) return error_answer(rows.error().message());
  for (int64_t id : ids) {
    auto row = std::find_if(rows->begin(), rows->end(),
                            [&](const ServiceJobRow& r) { return r.id == id; });
    json result = {{"id", id}, {"ok", false}};
    if (row == rows->end()) {
      result["error"] = fmt::format("there is no job {}", id);
    } else if (row->owner_uid != caller.uid && !is_admin(caller)) {
      result["error"] = fmt::format(
          "job {} belongs to {}; you ({}) may cancel only your own jobs (root and the admin "
          "group may cancel any)",
          id, row->owner_name, caller.user);
      result[protocol::kPermissionDenied] = true;
      ctx_.log << fmt::format("refused: {} (uid {}) asked to cancel job {} of {}\n", caller.user,
                              caller.uid, id, row->owner_name);
    } else if (is_final(row->state)) {
      result["error"] = fmt::format("job {} has already ended ({})", id, to_string(row->state));
    } else if (const std::string why = "cancelled by " + caller.user;
               !cancel_held(id, why) &&
               (tracked_.find(id) == tracked_.end() || !engine_.cancel(tracked_.at(id).key, why))) {
      result["error"] = fmt::format("job {} is not in this service's queue", id);
    } else {
      result["ok"] = true;
      ctx_.log << fmt::format("{} cancelled job {} ({})\n", caller.user, id, row->name);
    }
    results.push_back(std::move(result));
  }
  record_changes();
  queue_cache_.reset();
  return json{{"ok", true}, {"results", std::move(results)}};
}

json Service::logs(const Caller& caller, const json& request) {
  Result<int64_t> id_field = integer_field(request, "id", 0);
  Result<int64_t> offset_field = integer_field(request, "offset", 0);
  Result<int64_t> max_bytes_field =
      integer_field(request, "max_bytes", static_cast<int64_t>(kMaxLogChunkBytes));
  for (const Result<int64_t>* f : {&id_field, &offset_field, &max_bytes_field}) {
    if (!f->ok()) return error_answer("logs: " + f->error().message());
  }
  const int64_t id = *id_field;
  Result<std::vector<ServiceJobRow>> rows = ctx_.store.service_jobs_by_id({id});
  if (!rows.ok()) return error_answer(rows.error().message());
  if (rows->empty()) return error_answer(fmt::format("there is no job {}", id));
  const ServiceJobRow& row = rows->front();
  if (row.owner_uid != caller.uid && !is_admin(caller)) {
    return denied_answer(fmt::format("job {} belongs to {}; you ({}) may read only your own logs",
                                     id, row.owner_name, caller.user));
  }
  json answer = {{"ok", true},
                 {"path", row.log_path},
                 {"attempts", row.attempts},
                 {"state", to_string(row.state)},
                 {"ended", is_final(row.state)}};
  const auto offset = static_cast<uint64_t>(*offset_field);
  std::string data;
  if (!row.log_path.empty()) {
    int fd = ::open(row.log_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      data.resize(std::min<uint64_t>(static_cast<uint64_t>(*max_bytes_field), kMaxLogChunkBytes));
      ssize_t n = ::pread(fd, data.data(), data.size(), static_cast<off_t>(offset));
      data.resize(n > 0 ? static_cast<size_t>(n) : 0);
      ::close(fd);
    }
  }
  answer["offset"] = offset + data.size();
  answer["data"] = std::move(data);
  return answer;
}

}  // namespace colo
