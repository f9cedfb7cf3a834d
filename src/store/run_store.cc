#include "store/run_store.h"

#include <fmt/format.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/names.h"
#include "common/paths.h"
#include "gpu/device_json.h"
#include "jobs/job_signature.h"
#include "jobs/job_spec_json.h"
#include "store/schema.h"
#include "store/store_file.h"

namespace colo {
namespace {

constexpr const char* kReasonInterruptedRunning =
    "colo stopped while the job was running (found at next start)";
constexpr const char* kReasonInterruptedQueued =
    "colo stopped before the job started (found at next start)";

// The same for the one write a reading command makes (marking a dead colo's runs).
constexpr int kReaderBusyTimeoutMs = 500;

}  // namespace

bool process_is_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  // A zombie (killed, not yet reaped by its parent) is dead for our purposes.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
}

Result<std::unique_ptr<RunStore>> RunStore::open(const std::string& path, StoreAccess access) {
  if (!is_in_memory_store(path) && access == StoreAccess::kReadWrite) {
    size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      Status dirs = make_dirs(path.substr(0, slash), 0700);
      if (!dirs.ok()) {
        return dirs.error().with_context(
            fmt::format("cannot create the directory of the run store {} (pass --db to choose "
                        "another path)",
                        path));
      }
    }
  }

  // The store holds job commands and environments: readable by its owner only
  // (its -wal and -shm files take the same mode from SQLite). Never through a
  // link: one at --db in a directory others may write would make colo, maybe
  // root, create or write the store where it points. The descriptor stays
  // open as long as the store (file_damage()): closing any descriptor of the
  // file would drop the locks SQLite holds on it.
  UniqueFd file;
  if (!is_in_memory_store(path) && access == StoreAccess::kReadWrite) {
    Result<UniqueFd> held = hold_store_file(path);
    if (!held.ok()) return held.error();
    file = std::move(held).value();
  }

  // A reader marks the runs of a dead colo (a write) only when that is quick:
  // it shows the store as it is rather than wait on a busy one.
  const bool reader = access == StoreAccess::kRead;
  std::unique_ptr<RunStore> store;
  Result<SqliteDb> db = open_store_writable(path, !reader);
  if (db.ok()) {
    store = std::make_unique<RunStore>(PrivateTag(), std::move(db).value(), path);
    store->file_ = std::move(file);
    if (reader) store->set_busy_timeout_ms(kReaderBusyTimeoutMs);
    UnixMillis now = SystemClock().now_ms();
    auto stale = store->mark_stale_runs(process_is_alive, now, host_name());
    if (stale.ok()) {
      store->interrupted_at_open_ = std::move(stale).value();
      store->set_busy_timeout_ms(kStoreBusyTimeoutMs);
      return store;
    }
    if (!reader) return stale.error();
    store.reset();
    db = stale.error();
  }
  if (!reader) return db.error();
  // A reader falls back to reading only: a read-only file or file system, a
  // full disk, a store locked by a writer for long.
  Result<SqliteDb> read_only = open_store_read_only(path);
  if (!read_only.ok()) return db.error();
  store = std::make_unique<RunStore>(PrivateTag(), std::move(read_only).value(), path);
  store->read_only_reason_ = db.error().message();
  return store;
}

Result<std::unique_ptr<RunStore>> RunStore::open_read_only(const std::string& path) {
  Result<SqliteDb> db = open_store_read_only(path);
  if (!db.ok()) return db.error();
  auto store = std::make_unique<RunStore>(PrivateTag(), std::move(db).value(), path);
  store->read_only_reason_ = "opened for reading only";
  return store;
}

void RunStore::set_busy_timeout_ms(int timeout_ms) { sqlite3_busy_timeout(db_.get(), timeout_ms); }

ScopedBusyTimeout::ScopedBusyTimeout(RunStore& store, int timeout_ms) : store_(store) {
  store_.set_busy_timeout_ms(timeout_ms);
}

ScopedBusyTimeout::~ScopedBusyTimeout() { store_.set_busy_timeout_ms(kStoreBusyTimeoutMs); }

Status RunStore::set_max_pages(int64_t pages) {
  return exec_sql(db_.get(), path_, fmt::format("PRAGMA max_page_count = {}", pages),
                  "cannot set the page limit");
}

RunStore::~RunStore() = default;

std::string RunStore::file_damage() const { return store_file_damage(file_.get(), path_); }

Status RunStore::quick_check() {
  auto stmt = Statement::prepare(db_.get(), path_, "PRAGMA quick_check(1)");
  if (!stmt.ok()) return stmt.error();
  auto row = stmt->step();
  if (!row.ok()) return row.error();
  const std::string result = *row ? stmt->text_at(0) : "no answer";
  if (result == "ok") return OkStatus();
  return Error(fmt::format("{} failed SQLite's integrity check: {}", path_, result));
}

int RunStore::schema_version() const {
  Result<int> version = read_schema_version(db_.get(), path_);
  return version.ok() ? *version : -1;
}

Result<std::vector<int64_t>> RunStore::mark_stale_runs_interrupted(
    const std::function<bool(pid_t)>& is_alive, UnixMillis now_ms) {
  return mark_stale_runs(is_alive, now_ms, std::nullopt);
}

Result<std::vector<int64_t>> RunStore::mark_stale_runs(
    const std::function<bool(pid_t)>& is_alive, UnixMillis now_ms,
    const std::optional<std::string>& only_host) {
  sqlite3* db = db_.get();
  auto running = Statement::prepare(
      db, path_, "SELECT id, colo_pid, host, started_ms FROM runs WHERE state = 'running'");
  if (!running.ok()) return running.error();
  struct Stale {
    int64_t id;
    UnixMillis started_ms;
  };
  std::vector<Stale> stale;
  Status read = running->for_each_row([&]() -> Status {
    std::string host = running->text_at(2);
    // A pid means nothing on another host (a store on a shared file system).
    if (only_host && !host.empty() && host != *only_host) return OkStatus();
    if (is_alive(static_cast<pid_t>(running->int64_at(1)))) return OkStatus();
    stale.push_back({running->int64_at(0), running->int64_at(3)});
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  if (stale.empty()) return std::vector<int64_t>{};  // the usual case: no write lock taken

  auto tx = Transaction::begin(db, path_);
  if (!tx.ok()) return tx.error().with_context("marking runs of a colo that stopped");

  // The run ended, as far as anyone can tell, at the last thing it recorded.
  // Its GPUs' last samples each by a seek in the index (run, device, time),
  // the GPUs found by seeks too: a service's run holds millions of samples.
  auto last_time = Statement::prepare(db, path_, R"sql(
      SELECT max(t) FROM (
        SELECT max(s.t) AS t FROM (
          WITH RECURSIVE d(device) AS (
            SELECT (SELECT min(device) FROM device_samples WHERE run_id = ?1)
            UNION ALL
            SELECT (SELECT min(device) FROM device_samples WHERE run_id = ?1 AND device > d.device)
            FROM d WHERE d.device IS NOT NULL)
          SELECT (SELECT max(time_ms) FROM device_samples WHERE run_id = ?1 AND device = d.device)
                 AS t
          FROM d WHERE d.device IS NOT NULL) s
        UNION ALL SELECT max(time_ms) FROM process_samples WHERE run_id = ?1
        UNION ALL SELECT max(e.time_ms) FROM job_events e JOIN jobs j ON e.job_id = j.id
                  WHERE j.run_id = ?1
        UNION ALL SELECT max(max(coalesce(started_ms, 0), coalesce(ended_ms, 0)))
                  FROM jobs WHERE run_id = ?1))sql");
  if (!last_time.ok()) return last_time.error();
  auto end_run = Statement::prepare(
      db, path_,
      "UPDATE runs SET state = 'interrupted', ended_ms = ?2 WHERE id = ?1 AND state = 'running'");
  if (!end_run.ok()) return end_run.error();
  auto end_running_jobs = Statement::prepare(db, path_, R"sql(
      UPDATE jobs SET state = 'interrupted', ended_ms = coalesce(ended_ms, ?2), reason = ?3
      WHERE run_id = ?1 AND state = 'running')sql");
  if (!end_running_jobs.ok()) return end_running_jobs.error();
  auto end_queued_jobs = Statement::prepare(db, path_, R"sql(
      UPDATE jobs SET state = 'interrupted', reason = ?2
      WHERE run_id = ?1 AND state = 'queued')sql");
  if (!end_queued_jobs.ok()) return end_queued_jobs.error();
  auto end_attempts = Statement::prepare(db, path_, R"sql(
      UPDATE job_attempts SET state = 'interrupted', ended_ms = ?2, reason = ?3
      WHERE ended_ms IS NULL AND job_id IN (SELECT id FROM jobs WHERE run_id = ?1))sql");
  if (!end_attempts.ok()) return end_attempts.error();

  std::vector<int64_t> ids;
  for (const Stale& run : stale) {
    last_time->bind(1, run.id);
    auto row = last_time->step();
    if (!row.ok()) return row.error();
    std::optional<int64_t> last = *row ? last_time->opt_int64_at(0) : std::nullopt;
    last_time->reset();
    UnixMillis ended = last && *last > 0 ? std::max(*last, run.started_ms) : now_ms;

    Status status = end_run->bind(1, run.id).bind(2, ended).run();
    if (!status.ok()) return status.error();
    if (sqlite3_changes(db) == 0) continue;  // another colo marked it meanwhile
    status =
        end_running_jobs->bind(1, run.id).bind(2, ended).bind(3, kReasonInterruptedRunning).run();
    if (!status.ok()) return status.error();
    status = end_queued_jobs->bind(1, run.id).bind(2, kReasonInterruptedQueued).run();
    if (!status.ok()) return status.error();
    status = end_attempts->bind(1, run.id).bind(2, ended).bind(3, kReasonInterruptedRunning).run();
    if (!status.ok()) return status.error();
    ids.push_back(run.id);
  }
  Status committed = tx->commit();
  if (!committed.ok()) return committed.error();
  return ids;
}

std::string tags_json(const std::map<std::string, std::string>& tags) {
  return nlohmann::json(tags).dump();
}

std::map<std::string, std::string> parse_tags_json(const std::string& text) {
  std::map<std::string, std::string> tags;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return tags;
  for (const auto& [key, value] : j.items())
    if (value.is_string()) tags[key] = value.get<std::string>();
  return tags;
}

Result<int64_t> RunStore::begin_run(const NewRun& run) {
  auto insert = Statement::prepare(db_.get(), path_, R"sql(
      INSERT INTO runs (started_ms, state, mechanism, backend, simulated, job_file, host, colo_pid,
                        command_line, devices_json, slurm_job_id, slurm_step, slurm_node,
                        slurm_restart_count, name, tags_json, note, owner_uid, owner_name,
                        resumes_run)
      VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql");
  if (!insert.ok()) return insert.error();
  Status status = insert->bind(1, run.started_ms)
                      .bind(2, run.mechanism)
                      .bind(3, run.backend)
                      .bind(4, run.simulated)
                      .bind(5, run.job_file)
                      .bind(6, run.host)
                      .bind(7, static_cast<int64_t>(run.colo_pid))
                      .bind(8, run.command_line)
                      .bind(9, run.devices_json.empty() ? std::string("[]") : run.devices_json)
                      .bind(10, run.slurm.job_id)
                      .bind(11, run.slurm.step)
                      .bind(12, run.slurm.node)
                      .bind(13, run.slurm.restart_count)
                      .bind(14, run.label.name)
                      .bind(15, tags_json(run.label.tags))
                      .bind(16, run.label.note)
                      .bind(17, run.owner_uid)
                      .bind(18, run.owner_name)
                      .bind(19, run.resumes_run)
                      .run();
  if (!status.ok()) return status.error().with_context("recording the start of a run");
  return sqlite3_last_insert_rowid(db_.get());
}

Status RunStore::set_label(int64_t run_id, const RunLabel& label) {
  auto update = Statement::prepare(
      db_.get(), path_, "UPDATE runs SET name = ?, tags_json = ?, note = ? WHERE id = ?");
  if (!update.ok()) return update.error();
  Status status = update->bind(1, label.name)
                      .bind(2, tags_json(label.tags))
                      .bind(3, label.note)
                      .bind(4, run_id)
                      .run();
  if (!status.ok()) return status.error().with_context(fmt::format("labelling run #{}", run_id));
  if (sqlite3_changes(db_.get()) == 0)
    return Error(
        fmt::format("{} has no run #{}; `colo runs` lists the runs it holds", path_, run_id));
  return OkStatus();
}

Result<std::vector<int64_t>> RunStore::add_jobs(int64_t run_id, const std::vector<JobSpec>& jobs,
                                                const std::vector<std::string>& log_paths,
                                                UnixMillis queued_ms,
                                                const std::vector<int64_t>& resumes_jobs) {
  if (!log_paths.empty() && log_paths.size() != jobs.size()) {
    return Error(fmt::format("add_jobs: {} jobs but {} log paths (a bug in colo)", jobs.size(),
                             log_paths.size()));
  }
  if (!resumes_jobs.empty() && resumes_jobs.size() != jobs.size()) {
    return Error(fmt::format("add_jobs: {} jobs but {} resumed jobs (a bug in colo)", jobs.size(),
                             resumes_jobs.size()));
  }
  sqlite3* db = db_.get();
  auto tx = Transaction::begin(db, path_);
  if (!tx.ok()) return tx.error();
  Result<RunRow> run = read_run(run_id);
  if (!run.ok()) return run.error();

  auto insert = Statement::prepare(db, path_, R"sql(
      INSERT INTO jobs (run_id, name, grp, spec_json, signature, state, queued_ms, log_path,
                        resumes_job)
      VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?))sql");
  if (!insert.ok()) return insert.error();
  std::vector<int64_t> ids;
  ids.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobSpec& job = jobs[i];
    Status status = insert->bind(1, run_id)
                        .bind(2, job.name)
                        .bind(3, job.group)
                        .bind(4, job_spec_to_stored_json(job).dump())
                        .bind(5, job_signature(job))
                        .bind(6, queued_ms)
                        .bind(7, log_paths.empty() ? std::string() : log_paths[i])
                        .bind(8, resumes_jobs.empty() || resumes_jobs[i] <= 0
                                     ? std::optional<int64_t>()
                                     : std::optional<int64_t>(resumes_jobs[i]))
                        .run();
    if (!status.ok()) return status.error().with_context("recording job " + job.name);
    ids.push_back(sqlite3_last_insert_rowid(db));
  }

  // The signature covers every job of the run, also those added earlier.
  Status status = refresh_jobs_signature(run_id);
  if (!status.ok()) return status.error();
  status = tx->commit();
  if (!status.ok()) return status.error();
  return ids;
}

Status RunStore::refresh_jobs_signature(int64_t run_id) {
  sqlite3* db = db_.get();
  auto signatures = Statement::prepare(db, path_, "SELECT signature FROM jobs WHERE run_id = ?");
  if (!signatures.ok()) return signatures.error();
  signatures->bind(1, run_id);
  std::vector<std::string> all;
  Status read = signatures->for_each_row([&]() -> Status {
    all.push_back(signatures->text_at(0));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  auto update = Statement::prepare(db, path_, "UPDATE runs SET jobs_signature = ? WHERE id = ?");
  if (!update.ok()) return update.error();
  return update->bind(1, jobs_signature(std::move(all))).bind(2, run_id).run();
}

namespace {

// Runs an UPDATE of one row and fails when no row had that id.
Status update_one(sqlite3* db, const std::string& path, Statement& statement, std::string_view what,
                  std::string_view noun, int64_t id) {
  Status status = statement.run();
  if (!status.ok()) return status.error().with_context(what);
  if (sqlite3_changes(db) != 1) {
    return Error(fmt::format("{}: {}: there is no {} #{} (a bug in colo)", path, what, noun, id));
  }
  return OkStatus();
}

}  // namespace

Status RunStore::job_started(int64_t job_id, pid_t pid, int device, UnixMillis started_ms,
                             int attempt) {
  auto tx = Transaction::begin(db_.get(), path_);
  if (!tx.ok()) return tx.error();
  auto update = Statement::prepare(db_.get(), path_, R"sql(
      UPDATE jobs SET state = 'running', pid = ?2, device = ?3, started_ms = ?4 WHERE id = ?1)sql");
  if (!update.ok()) return update.error();
  update->bind(1, job_id).bind(2, static_cast<int64_t>(pid)).bind(3, device).bind(4, started_ms);
  if (Status s =
          update_one(db_.get(), path_, *update, "recording the start of a job", "job", job_id);
      !s.ok())
    return s;
  auto insert = Statement::prepare(db_.get(), path_, R"sql(
      INSERT OR REPLACE INTO job_attempts (job_id, attempt, device, pid, started_ms, state, log_path)
      SELECT id, ?2, ?3, ?4, ?5, 'running', log_path FROM jobs WHERE id = ?1)sql");
  if (!insert.ok()) return insert.error();
  insert->bind(1, job_id)
      .bind(2, attempt)
      .bind(3, device)
      .bind(4, static_cast<int64_t>(pid))
      .bind(5, started_ms);
  if (Status s = insert->run(); !s.ok()) return s.error().with_context("recording an attempt");
  return tx->commit();
}

namespace {

// Ends the attempt of `job_id` that is still open, if any.
Status end_open_attempt(sqlite3* db, const std::string& path, int64_t job_id,
                        const std::string& state, const std::string& reason, UnixMillis ended_ms) {
  auto update = Statement::prepare(db, path, R"sql(
      UPDATE job_attempts SET state = ?2, reason = ?3, ended_ms = ?4
      WHERE job_id = ?1 AND ended_ms IS NULL)sql");
  if (!update.ok()) return update.error();
  update->bind(1, job_id).bind(2, state).bind(3, reason).bind(4, ended_ms);
  if (Status s = update->run(); !s.ok()) return s.error().with_context("recording an attempt");
  return OkStatus();
}

}  // namespace

Status RunStore::job_requeued(int64_t job_id, const std::string& log_path,
                              const std::string& reason, UnixMillis ended_ms) {
  auto tx = Transaction::begin(db_.get(), path_);
  if (!tx.ok()) return tx.error();
  auto update = Statement::prepare(db_.get(), path_, R"sql(
      UPDATE jobs SET state = 'queued', pid = NULL, log_path = ?2 WHERE id = ?1)sql");
  if (!update.ok()) return update.error();
  update->bind(1, job_id).bind(2, log_path);
  if (Status s = update_one(db_.get(), path_, *update, "recording a job's retry", "job", job_id);
      !s.ok())
    return s;
  if (Status s = end_open_attempt(db_.get(), path_, job_id, "requeued", reason, ended_ms); !s.ok())
    return s;
  return tx->commit();
}

Status RunStore::job_instance(int64_t job_id, const std::string& instance) {
  auto update = Statement::prepare(db_.get(), path_, "UPDATE jobs SET instance = ?2 WHERE id = ?1");
  if (!update.ok()) return update.error();
  update->bind(1, job_id).bind(2, instance);
  return update_one(db_.get(), path_, *update, "recording the MIG instance of a job", "job",
                    job_id);
}

Status RunStore::job_gpus(int64_t job_id, const std::string& gpus) {
  auto update = Statement::prepare(db_.get(), path_, "UPDATE jobs SET gpus = ?2 WHERE id = ?1");
  if (!update.ok()) return update.error();
  update->bind(1, job_id).bind(2, gpus);
  return update_one(db_.get(), path_, *update, "recording the GPUs of a gang", "job", job_id);
}

Status RunStore::job_finished(int64_t job_id, const JobExit& exit, UnixMillis ended_ms,
                              int64_t malformed_progress_lines) {
  if (!is_final(exit.state)) {
    return Error(fmt::format("job #{} cannot finish in state '{}' (a bug in colo)", job_id,
                             to_string(exit.state)));
  }
  auto update = Statement::prepare(db_.get(), path_, R"sql(
      UPDATE jobs SET state = ?2, exit_code = ?3, signal = ?4, reason = ?5, ended_ms = ?6,
                      malformed_lines = ?7, cpu_ms = ?8, host_memory_peak_bytes = ?9
      WHERE id = ?1)sql");
  if (!update.ok()) return update.error();
  update->bind(1, job_id)
      .bind(2, to_string(exit.state))
      .bind(3, exit.exit_code)
      .bind(4, exit.signal)
      .bind(5, exit.reason)
      .bind(6, ended_ms)
      .bind(7, malformed_progress_lines)
      .bind(8, exit.usage.cpu_ms)
      .bind(9, exit.usage.memory_peak_bytes);
  auto tx = Transaction::begin(db_.get(), path_);
  if (!tx.ok()) return tx.error();
  if (Status s = update_one(db_.get(), path_, *update, "recording the end of a job", "job", job_id);
      !s.ok())
    return s;
  if (Status s =
          end_open_attempt(db_.get(), path_, job_id, to_string(exit.state), exit.reason, ended_ms);
      !s.ok())
    return s;
  return tx->commit();
}

Status RunStore::end_run(int64_t run_id, RunState state, UnixMillis ended_ms) {
  if (state == RunState::kRunning) {
    return Error(fmt::format("run #{} cannot end in state 'running' (a bug in colo)", run_id));
  }
  auto update = Statement::prepare(db_.get(), path_,
                                   "UPDATE runs SET state = ?2, ended_ms = ?3 WHERE id = ?1");
  if (!update.ok()) return update.error();
  update->bind(1, run_id).bind(2, to_string(state)).bind(3, ended_ms);
  return update_one(db_.get(), path_, *update, "recording the end of a run", "run", run_id);
}

Status RunStore::add_job_events(const std::vector<std::pair<int64_t, ProgressEvent>>& events) {
  if (events.empty()) return OkStatus();
  auto tx = Transaction::begin(db_.get(), path_);
  if (!tx.ok()) return tx.error();
  auto insert = Statement::prepare(db_.get(), path_, R"sql(
      INSERT INTO job_events (job_id, time_ms, kind, epoch, step, samples, metrics_json)
      VALUES (?, ?, ?, ?, ?, ?, ?))sql");
  if (!insert.ok()) return insert.error();
  for (const auto& [job_id, event] : events) {
    insert->bind(1, job_id)
        .bind(2, event.time_ms)
        .bind(3, event.kind)
        .bind(4, event.epoch)
        .bind(5, event.step)
        .bind(6, event.samples);
    if (event.metrics.empty()) {
      insert->bind_null(7);
    } else {
      insert->bind(7, metrics_to_json(event.metrics).dump());
    }
    Status status = insert->run();
    if (!status.ok()) {
      return status.error().with_context(
          fmt::format("recording a progress event of job #{}", job_id));
    }
  }
  return tx->commit();
}

Status RunStore::add_samples(int64_t run_id, const std::vector<DeviceSample>& devices,
                             const std::vector<ProcessSampleRow>& processes) {
  if (devices.empty() && processes.empty()) return OkStatus();
  auto tx = Transaction::begin(db_.get(), path_);
  if (!tx.ok()) return tx.error();
  auto insert_device = Statement::prepare(db_.get(), path_, R"sql(
      INSERT INTO device_samples (run_id, time_ms, device, sm_active_pct, sm_occupancy_pct,
                                  tensor_active_pct, dram_active_pct, gpu_util_pct,
                                  memory_used_bytes, memory_total_bytes, power_w, energy_mj,
                                  pcie_rx_mib_per_s, pcie_tx_mib_per_s, sm_clock_mhz)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql");
  if (!insert_device.ok()) return insert_device.error();
  for (const DeviceSample& s : devices) {
    Status status = insert_device->bind(1, run_id)
                        .bind(2, s.time_ms)
                        .bind(3, s.device)
                        .bind(4, s.sm_active_pct)
                        .bind(5, s.sm_occupancy_pct)
                        .bind(6, s.tensor_active_pct)
                        .bind(7, s.dram_active_pct)
                        .bind(8, s.gpu_util_pct)
                        .bind(9, s.memory_used_bytes)
                        .bind(10, s.memory_total_bytes)
                        .bind(11, s.power_w)
                        .bind(12, s.energy_mj)
                        .bind(13, s.pcie_rx_mib_per_s)
                        .bind(14, s.pcie_tx_mib_per_s)
                        .bind(15, s.sm_clock_mhz)
                        .run();
    if (!status.ok()) return status.error().with_context("recording a device sample");
  }
  auto insert_process = Statement::prepare(db_.get(), path_, R"sql(
      INSERT INTO process_samples (run_id, time_ms, device, pid, job_id, used_memory_bytes,
                                   sm_util_pct, mps_client)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?))sql");
  if (!insert_process.ok()) return insert_process.error();
  for (const ProcessSampleRow& row : processes) {
    const ProcessSample& s = row.sample;
    Status status = insert_process->bind(1, run_id)
                        .bind(2, s.time_ms)
                        .bind(3, s.device)
                        .bind(4, s.pid)
                        .bind(5, row.job_id)
                        .bind(6, s.used_memory_bytes)
                        .bind(7, s.sm_util_pct)
                        .bind(8, s.mps_client)
                        .run();
    if (!status.ok()) return status.error().with_context("recording a process sample");
  }
  return tx->commit();
}

namespace {

constexpr const char* kRunColumns =
    "r.id, r.started_ms, r.ended_ms, r.state, r.mechanism, r.backend, r.simulated, r.job_file, "
    "r.jobs_signature, r.host, r.colo_pid, r.slurm_job_id, r.slurm_step, r.slurm_node, "
    "r.slurm_restart_count, r.name, r.tags_json, r.note, r.owner_uid, r.owner_name, "
    "r.resumes_run, (SELECT max(x.id) FROM runs x WHERE x.resumes_run = r.id)";

Result<RunRow> run_from_row(const Statement& s) {
  RunRow run;
  run.id = s.int64_at(0);
  run.started_ms = s.int64_at(1);
  run.ended_ms = s.opt_int64_at(2);
  Result<RunState> state = parse_run_state(s.text_at(3));
  if (!state.ok()) return state.error().with_context(fmt::format("run #{}", run.id));
  run.state = *state;
  run.mechanism = s.text_at(4);
  run.backend = s.text_at(5);
  run.simulated = s.int64_at(6) != 0;
  run.job_file = s.text_at(7);
  run.jobs_signature = s.text_at(8);
  run.host = s.text_at(9);
  run.colo_pid = static_cast<pid_t>(s.int64_at(10));
  run.slurm = {s.text_at(11), s.text_at(12), s.text_at(13), static_cast<int>(s.int64_at(14))};
  run.label = {s.text_at(15), parse_tags_json(s.text_at(16)), s.text_at(17)};
  if (std::optional<int64_t> owner = s.opt_int64_at(18)) run.owner_uid = static_cast<uid_t>(*owner);
  run.owner_name = s.text_at(19);
  run.resumes_run = s.opt_int64_at(20);
  run.resumed_by = s.opt_int64_at(21);
  return run;
}

// Each (state, started, count) group of a run's jobs: its `jobs` rows, and
// the service jobs submitted to it that ended without a `jobs` row (cancelled
// before they started). Counted by the one rule (jobs/job_outcome.h).
constexpr const char* kRunJobGroups = R"sql(
    SELECT state, started_ms IS NOT NULL, count(*) FROM jobs WHERE run_id = ?1 GROUP BY 1, 2
    UNION ALL
    SELECT s.state, s.started_ms IS NOT NULL, count(*)
    FROM service_submissions u JOIN service_jobs s ON s.submission_id = u.id
    WHERE u.run_id = ?1 AND s.job_id IS NULL AND s.state NOT IN ('queued', 'running')
    GROUP BY 1, 2)sql";

}  // namespace

Status RunStore::count_jobs(RunRow& run) {
  auto s = Statement::prepare(db_.get(), path_, kRunJobGroups);
  if (!s.ok()) return s.error();
  s->bind(1, run.id);
  run.jobs = {};
  Status read = s->for_each_row([&]() -> Status {
    Result<JobState> state = parse_job_state(s->text_at(0));
    if (!state.ok()) return state.error().with_context(fmt::format("run #{}", run.id));
    run.jobs.add(*state, s->int64_at(1) != 0, s->int64_at(2));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  run.job_count = static_cast<int>(run.jobs.total());
  run.jobs_not_ok = static_cast<int>(run.jobs.not_ok());
  return OkStatus();
}

namespace {}  // namespace

Result<std::vector<RunRow>> RunStore::list_runs(int limit) {
  Result<std::vector<RunRow>> runs = list_run_rows(limit);
  if (!runs.ok()) return runs;
  for (RunRow& run : *runs) {
    if (Status counted = count_jobs(run); !counted.ok()) return counted.error();
  }
  return runs;
}

Result<std::vector<RunRow>> RunStore::list_run_rows(int limit) {
  auto select = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {} FROM runs r ORDER BY r.id DESC LIMIT ?", kRunColumns));
  if (!select.ok()) return select.error();
  select->bind(1, limit > 0 ? limit : -1);
  std::vector<RunRow> runs;
  Status read = select->for_each_row([&]() -> Status {
    Result<RunRow> run = run_from_row(*select);
    if (!run.ok()) return run.error();
    runs.push_back(std::move(*run));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return runs;
}

Result<RunRow> RunStore::read_run(int64_t run_id, bool with_counts) {
  std::string sql =
      run_id == 0 ? fmt::format("SELECT {} FROM runs r ORDER BY r.id DESC LIMIT 1", kRunColumns)
                  : fmt::format("SELECT {} FROM runs r WHERE r.id = ?", kRunColumns);
  auto select = Statement::prepare(db_.get(), path_, sql);
  if (!select.ok()) return select.error();
  if (run_id != 0) select->bind(1, run_id);
  auto row = select->step();
  if (!row.ok()) return row.error();
  if (!*row) {
    if (run_id == 0) {
      return Error(
          fmt::format("{} holds no runs yet; start one with `colo run <jobs.toml>`", path_));
    }
    return Error(
        fmt::format("{} has no run #{}; `colo runs` lists the runs it holds", path_, run_id));
  }
  Result<RunRow> run = run_from_row(*select);
  if (!run.ok() || !with_counts) return run;
  if (Status counted = count_jobs(*run); !counted.ok()) return counted.error();
  return run;
}

Result<RunRow> RunStore::run(int64_t run_id) { return read_run(run_id); }

Result<int64_t> RunStore::data_version() {
  auto s = Statement::prepare(db_.get(), path_, "PRAGMA data_version");
  if (!s.ok()) return s.error();
  int64_t version = 0;
  Status read = s->for_each_row([&]() -> Status {
    version = s->int64_at(0);
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return version;
}

Result<std::vector<JobRow>> RunStore::job_rows(int64_t run_id) {
  return read_job_rows("run_id", run_id);
}

Result<std::optional<JobRow>> RunStore::job_row(int64_t job_id) {
  Result<std::vector<JobRow>> rows = read_job_rows("id", job_id);
  if (!rows.ok()) return rows.error();
  if (rows->empty()) return std::optional<JobRow>();
  return std::optional<JobRow>(std::move(rows->front()));
}

Result<std::vector<std::pair<int64_t, int64_t>>> RunStore::jobs_of_signature(
    const std::string& signature, int limit) {
  auto select = Statement::prepare(
      db_.get(), path_, "SELECT id, run_id FROM jobs WHERE signature = ? ORDER BY id DESC LIMIT ?");
  if (!select.ok()) return select.error();
  select->bind(1, signature).bind(2, limit);
  std::vector<std::pair<int64_t, int64_t>> out;
  Status read = select->for_each_row([&]() -> Status {
    out.emplace_back(select->int64_at(0), select->int64_at(1));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return out;
}

Result<std::vector<RunStore::StoredJobSpec>> RunStore::job_specs(int64_t run_id) {
  auto select = Statement::prepare(
      db_.get(), path_,
      "SELECT id, name, state, log_path, spec_json FROM jobs WHERE run_id = ? ORDER BY id");
  if (!select.ok()) return select.error();
  select->bind(1, run_id);
  std::vector<StoredJobSpec> out;
  Status read = select->for_each_row([&]() -> Status {
    StoredJobSpec job;
    job.id = select->int64_at(0);
    job.name = select->text_at(1);
    Result<JobState> state = parse_job_state(select->text_at(2));
    if (!state.ok()) return state.error().with_context(fmt::format("{}: job #{}", path_, job.id));
    job.state = *state;
    job.log_path = select->text_at(3);
    job.spec_json = select->text_at(4);
    out.push_back(std::move(job));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return out;
}

Result<std::vector<JobRow>> RunStore::read_job_rows(std::string_view column, int64_t value,
                                                    std::optional<Window> window) {
  auto jobs = Statement::prepare(
      db_.get(), path_,
      fmt::format(
          R"sql(
      SELECT j.id, j.name, j.state, j.reason, j.device, j.started_ms, j.ended_ms, j.log_path,
             j.malformed_lines, j.signature, j.grp, j.instance, j.spec_json, j.cpu_ms,
             j.host_memory_peak_bytes, j.gpus, p.run_id, p.id
      FROM jobs j LEFT JOIN jobs p ON p.id = COALESCE(j.resumes_job,
          (SELECT s.job_id FROM service_jobs s
           WHERE j.service_job_id IS NOT NULL AND s.resumed_by = j.service_job_id))
      WHERE j.{} = ?1 {} ORDER BY j.id)sql",
          column,
          window ? "AND j.started_ms <= ?3 AND (j.ended_ms IS NULL OR j.ended_ms >= ?2)" : ""));
  if (!jobs.ok()) return jobs.error();
  jobs->bind(1, value);
  if (window) jobs->bind(2, window->from_ms).bind(3, window->to_ms);
  std::vector<JobRow> rows;
  Status read = jobs->for_each_row([&]() -> Status {
    JobRow job;
    job.id = jobs->int64_at(0);
    job.name = jobs->text_at(1);
    Result<JobState> state = parse_job_state(jobs->text_at(2));
    if (!state.ok()) return state.error().with_context(fmt::format("{}: job #{}", path_, job.id));
    job.state = *state;
    job.reason = jobs->text_at(3);
    if (auto device = jobs->opt_int64_at(4)) job.device = static_cast<int>(*device);
    job.started_ms = jobs->opt_int64_at(5);
    job.ended_ms = jobs->opt_int64_at(6);
    job.log_path = jobs->text_at(7);
    job.malformed_progress_lines = jobs->int64_at(8);
    job.signature = jobs->text_at(9);
    job.group = jobs->text_at(10);
    job.instance = jobs->text_at(11);
    job.gpus = jobs->text_at(15);
    // The family and grid values live in the spec; a malformed spec (never
    // written by colo) leaves them empty.
    const nlohmann::json spec = nlohmann::json::parse(jobs->text_at(12), nullptr, false);
    if (spec.is_object()) {
      if (auto f = spec.find("family"); f != spec.end() && f->is_string())
        job.family = f->get<std::string>();
      if (auto p = spec.find("params"); p != spec.end() && p->is_object()) {
        for (const auto& [k, v] : p->items()) {
          if (v.is_string()) job.params[k] = v.get<std::string>();
        }
      }
      if (auto c = spec.find("command"); c != spec.end() && c->is_array()) {
        for (const nlohmann::json& word : *c) {
          if (word.is_string()) job.command.push_back(word.get<std::string>());
        }
      }
      SpecObjective objective = objective_of_spec(spec);
      job.objective = std::move(objective.metric);
      job.lower_is_better = std::move(objective.lower_is_better);
      const SpecQos qos = qos_of_spec(spec);
      job.qos = qos.qos;
      job.min_speed = qos.min_speed;
    }
    job.usage.cpu_ms = jobs->opt_int64_at(13);
    job.usage.memory_peak_bytes = jobs->opt_uint64_at(14);
    if (std::optional<int64_t> from = jobs->opt_int64_at(17); from && *from != job.id)
      job.resumes = JobRef{jobs->int64_at(16), *from};
    rows.push_back(std::move(job));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return rows;
}

Result<std::vector<DeviceInfo>> RunStore::run_devices(int64_t run_id) {
  auto select = Statement::prepare(db_.get(), path_, "SELECT devices_json FROM runs WHERE id = ?");
  if (!select.ok()) return select.error();
  select->bind(1, run_id);
  auto row = select->step();
  if (!row.ok()) return row.error();
  if (!*row) return std::vector<DeviceInfo>{};
  Result<std::vector<DeviceInfo>> devices = devices_from_json(select->text_at(0));
  if (!devices.ok()) {
    return devices.error().with_context(
        fmt::format("{}: the devices recorded with run #{}", path_, run_id));
  }
  return devices;
}

namespace {

// Rows whose columns from `first` on are (time_ms, kind, epoch, step,
// samples, metrics_json), each handed to `take` as an event with column 0
// (a job id, where first > 0).
template <class Take>
Status read_events(Statement& select, int first, Take take) {
  return select.for_each_row([&]() -> Status {
    ProgressEvent e;
    e.time_ms = select.int64_at(first);
    e.kind = select.text_at(first + 1);
    e.epoch = select.opt_int64_at(first + 2);
    e.step = select.opt_int64_at(first + 3);
    e.samples = select.opt_int64_at(first + 4);
    if (!select.is_null(first + 5)) {
      nlohmann::json metrics = nlohmann::json::parse(select.text_at(first + 5), nullptr, false);
      if (metrics.is_object()) {
        for (const auto& [key, value] : metrics.items()) {
          if (std::optional<double> v = metric_from_json(value)) e.metrics[key] = *v;
        }
      }
    }
    return take(first > 0 ? select.int64_at(0) : 0, std::move(e));
  });
}

Result<std::vector<ProgressEvent>> all_events(Statement& select) {
  std::vector<ProgressEvent> events;
  Status read = read_events(select, 0, [&](int64_t, ProgressEvent e) -> Status {
    events.push_back(std::move(e));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return events;
}

}  // namespace

Result<RunRecord> RunStore::run_record(int64_t run_id, MetricSteps metric_steps_wanted,
                                       Samples samples_wanted) {
  const ReadSnapshot snapshot(db_.get());
  RunRecord record;
  Result<RunRow> run = read_run(run_id);
  if (!run.ok()) return run.error();
  record.run = std::move(*run);
  const int64_t id = record.run.id;
  Result<std::vector<DeviceInfo>> devices = run_devices(id);
  if (!devices.ok()) return devices.error();
  record.devices = std::move(*devices);
  Result<std::vector<JobRow>> jobs = job_rows(id);
  if (!jobs.ok()) return jobs.error();
  record.jobs = std::move(*jobs);
  // One statement for every job's events, one prepared once for the metric
  // steps: a run of 100,000 jobs would otherwise compile 200,000 of them.
  record.events.resize(record.jobs.size());
  auto events = Statement::prepare(db_.get(), path_, R"sql(
      SELECT job_id, time_ms, kind, epoch, step, samples, metrics_json FROM job_events
      WHERE job_id IN (SELECT id FROM jobs WHERE run_id = ?) AND kind != 'step'
      ORDER BY job_id, time_ms, id)sql");
  if (!events.ok()) return events.error();
  events->bind(1, id);
  size_t job_index = 0;  // jobs are ordered by id, as the events are
  Status read = read_events(*events, 1, [&](int64_t job_id, ProgressEvent e) -> Status {
    while (job_index < record.jobs.size() && record.jobs[job_index].id < job_id) ++job_index;
    if (job_index < record.jobs.size() && record.jobs[job_index].id == job_id)
      record.events[job_index].push_back(std::move(e));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  if (metric_steps_wanted == MetricSteps::kRead) {
    auto steps = prepare_metric_steps();
    if (!steps.ok()) return steps.error();
    for (const JobRow& job : record.jobs) {
      Result<std::vector<ProgressEvent>> of_job =
          metric_steps_of(*steps, job.id, RunRecord::kMaxMetricSteps);
      if (!of_job.ok()) return of_job.error();
      record.metric_steps.push_back(std::move(*of_job));
    }
  }
  if (samples_wanted == Samples::kSkip) return record;
  Result<std::vector<DeviceSample>> samples = device_samples(id);
  if (!samples.ok()) return samples.error();
  record.device_samples = std::move(*samples);
  Result<std::vector<ProcessSampleRow>> processes = process_samples(id);
  if (!processes.ok()) return processes.error();
  record.process_samples = std::move(*processes);
  return record;
}

Result<std::vector<JobRow>> RunStore::job_ends(int64_t run_id, int64_t after_id) {
  auto select = Statement::prepare(db_.get(), path_, R"sql(
      SELECT id, state, device, started_ms, ended_ms FROM jobs
      WHERE run_id = ? AND id > ? ORDER BY id)sql");
  if (!select.ok()) return select.error();
  select->bind(1, run_id).bind(2, after_id);
  std::vector<JobRow> out;
  Status read = select->for_each_row([&]() -> Status {
    JobRow job;
    job.id = select->int64_at(0);
    Result<JobState> state = parse_job_state(select->text_at(1));
    if (!state.ok()) return state.error().with_context(fmt::format("{}: job #{}", path_, job.id));
    job.state = *state;
    if (auto device = select->opt_int64_at(2)) job.device = static_cast<int>(*device);
    job.started_ms = select->opt_int64_at(3);
    job.ended_ms = select->opt_int64_at(4);
    out.push_back(std::move(job));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return out;
}

Result<RunRecord> RunStore::run_window(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms) {
  const ReadSnapshot snapshot(db_.get());
  RunRecord record;
  Result<RunRow> run = read_run(run_id, /*with_counts=*/false);
  if (!run.ok()) return run.error();
  record.run = std::move(*run);
  Result<std::vector<DeviceInfo>> devices = run_devices(record.run.id);
  if (!devices.ok()) return devices.error();
  record.devices = std::move(*devices);
  Result<std::vector<JobRow>> jobs = read_job_rows("run_id", record.run.id, Window{from_ms, to_ms});
  if (!jobs.ok()) return jobs.error();
  record.jobs = std::move(*jobs);
  record.events.resize(record.jobs.size());
  auto events = Statement::prepare(db_.get(), path_, R"sql(
      SELECT time_ms, kind, epoch, step, samples, metrics_json FROM job_events
      WHERE job_id = ? AND kind != 'step' ORDER BY time_ms, id)sql");
  if (!events.ok()) return events.error();
  for (size_t i = 0; i < record.jobs.size(); ++i) {
    events->reset();
    events->bind(1, record.jobs[i].id);
    Result<std::vector<ProgressEvent>> of_job = all_events(*events);
    if (!of_job.ok()) return of_job.error();
    record.events[i] = std::move(*of_job);
  }
  return record;
}

Result<std::optional<int64_t>> RunStore::exclusive_baseline(const RunRow& run) {
  auto baseline = Statement::prepare(db_.get(), path_, R"sql(
      SELECT id FROM runs
      WHERE state = 'ok' AND mechanism = 'exclusive' AND jobs_signature = ? AND simulated = ?
            AND id != ?
      ORDER BY started_ms DESC, id DESC LIMIT 1)sql");
  if (!baseline.ok()) return baseline.error();
  baseline->bind(1, run.jobs_signature).bind(2, run.simulated).bind(3, run.id);
  auto row = baseline->step();
  if (!row.ok()) return row.error();
  if (!*row) return std::optional<int64_t>();
  return std::optional<int64_t>(baseline->int64_at(0));
}

Result<std::optional<std::string>> RunStore::derived(int64_t run_id, std::string_view kind,
                                                     int version) {
  auto select = Statement::prepare(
      db_.get(), path_,
      "SELECT body FROM run_derived WHERE run_id = ? AND kind = ? AND version = ?");
  if (!select.ok()) return select.error();
  select->bind(1, run_id).bind(2, kind).bind(3, version);
  auto row = select->step();
  if (!row.ok()) return row.error();
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(select->text_at(0));
}

Status RunStore::keep_derived(int64_t run_id, std::string_view kind, int version,
                              const std::string& body) {
  auto insert = Statement::prepare(db_.get(), path_, R"sql(
      INSERT INTO run_derived (run_id, kind, version, body) VALUES (?, ?, ?, ?)
      ON CONFLICT (run_id, kind) DO UPDATE SET version = excluded.version, body = excluded.body)sql");
  if (!insert.ok()) return insert.error();
  insert->bind(1, run_id).bind(2, kind).bind(3, version).bind(4, body);
  ScopedBusyTimeout brief(*this, kDerivedBusyTimeoutMs);
  return insert->run();
}

namespace {

// A run's samples, read one row at a time: the one reading of each table.
// Oldest first; `by_device`: device by device, each oldest first (the
// index's order: a third of the time for millions of rows, with no sort).
// `all_fields` false: only SampleSink's fields (rows.h), the rest unset.
Status read_device_samples(sqlite3* db, const std::string& path, int64_t run_id, bool by_device,
                           bool all_fields, const std::function<void(const DeviceSample&)>& each,
                           UnixMillis from_ms = std::numeric_limits<UnixMillis>::min(),
                           UnixMillis to_ms = std::numeric_limits<UnixMillis>::max());

// The columns every sample read selects first, in this order: time_ms,
// device, sm_active_pct, gpu_util_pct, memory_used_bytes, power_w, energy_mj.
DeviceSample sample_of_first_columns(const Statement& row) {
  DeviceSample s;
  s.time_ms = row.int64_at(0);
  s.device = static_cast<int>(row.int64_at(1));
  s.sm_active_pct = row.opt_double_at(2);
  s.gpu_util_pct = row.opt_double_at(3);
  s.memory_used_bytes = row.opt_uint64_at(4);
  s.power_w = row.opt_double_at(5);
  s.energy_mj = row.opt_uint64_at(6);
  return s;
}

// read_device_samples by device of only the samples taken in [from_ms,
// to_ms]: one range of the index (run, device, time) per device the run
// sampled, each found by a seek, so that what is read is the window's, not
// every sample of the run (a service's run holds millions, and its facts
// are kept a window at a time: analysis/stored.h).
Status read_device_samples_between(sqlite3* db, const std::string& path, int64_t run_id,
                                   UnixMillis from_ms, UnixMillis to_ms,
                                   const std::function<void(const DeviceSample&)>& each) {
  auto next_device = Statement::prepare(db, path, R"sql(
      SELECT min(device) FROM device_samples WHERE run_id = ?1 AND device > ?2)sql");
  if (!next_device.ok()) return next_device.error();
  auto select = Statement::prepare(db, path, R"sql(
      SELECT time_ms, device, sm_active_pct, gpu_util_pct, memory_used_bytes, power_w, energy_mj
      FROM device_samples WHERE run_id = ?1 AND device = ?2 AND time_ms BETWEEN ?3 AND ?4
      ORDER BY time_ms)sql");
  if (!select.ok()) return select.error();
  int64_t after = std::numeric_limits<int64_t>::min();
  while (true) {
    next_device->reset();
    next_device->bind(1, run_id).bind(2, after);
    std::optional<int64_t> device;
    Status found = next_device->for_each_row([&]() -> Status {
      device = next_device->opt_int64_at(0);
      return OkStatus();
    });
    if (!found.ok()) return found;
    if (!device) return OkStatus();
    after = *device;
    select->reset();
    select->bind(1, run_id).bind(2, *device).bind(3, from_ms).bind(4, to_ms);
    Status read = select->for_each_row([&]() -> Status {
      each(sample_of_first_columns(*select));
      return OkStatus();
    });
    if (!read.ok()) return read;
  }
}

Status read_device_samples(sqlite3* db, const std::string& path, int64_t run_id, bool by_device,
                           bool all_fields, const std::function<void(const DeviceSample&)>& each,
                           UnixMillis from_ms, UnixMillis to_ms) {
  auto select = Statement::prepare(
      db, path,
      fmt::format(R"sql(
      SELECT time_ms, device, sm_active_pct, gpu_util_pct, memory_used_bytes, power_w, energy_mj
             {}
      FROM device_samples WHERE run_id = ?1 AND time_ms BETWEEN ?2 AND ?3 ORDER BY {})sql",
                  all_fields ? ", sm_occupancy_pct, tensor_active_pct, dram_active_pct, "
                               "memory_total_bytes, pcie_rx_mib_per_s, pcie_tx_mib_per_s, "
                               "sm_clock_mhz"
                             : "",
                  by_device ? "device, time_ms" : "time_ms, device"));
  if (!select.ok()) return select.error();
  select->bind(1, run_id).bind(2, from_ms).bind(3, to_ms);
  return select->for_each_row([&]() -> Status {
    DeviceSample s = sample_of_first_columns(*select);
    if (all_fields) {
      s.sm_occupancy_pct = select->opt_double_at(7);
      s.tensor_active_pct = select->opt_double_at(8);
      s.dram_active_pct = select->opt_double_at(9);
      s.memory_total_bytes = select->opt_uint64_at(10);
      s.pcie_rx_mib_per_s = select->opt_double_at(11);
      s.pcie_tx_mib_per_s = select->opt_double_at(12);
      if (auto clock = select->opt_int64_at(13)) s.sm_clock_mhz = static_cast<uint32_t>(*clock);
    }
    each(s);
    return OkStatus();
  });
}

Status read_process_samples(sqlite3* db, const std::string& path, int64_t run_id,
                            const std::function<void(const ProcessSampleRow&)>& each,
                            UnixMillis from_ms = std::numeric_limits<UnixMillis>::min(),
                            UnixMillis to_ms = std::numeric_limits<UnixMillis>::max()) {
  auto select = Statement::prepare(db, path, R"sql(
      SELECT time_ms, device, pid, job_id, used_memory_bytes, sm_util_pct, mps_client
      FROM process_samples WHERE run_id = ?1 AND time_ms BETWEEN ?2 AND ?3
      ORDER BY time_ms, device, pid)sql");
  if (!select.ok()) return select.error();
  select->bind(1, run_id).bind(2, from_ms).bind(3, to_ms);
  return select->for_each_row([&]() -> Status {
    ProcessSampleRow r;
    r.sample.time_ms = select->int64_at(0);
    r.sample.device = static_cast<int>(select->int64_at(1));
    r.sample.pid = static_cast<uint32_t>(select->int64_at(2));
    r.job_id = select->opt_int64_at(3);
    r.sample.used_memory_bytes = select->opt_uint64_at(4);
    r.sample.sm_util_pct = select->opt_double_at(5);
    r.sample.mps_client = select->int64_at(6) != 0;
    each(r);
    return OkStatus();
  });
}

}  // namespace

Status RunStore::for_each_sample(int64_t run_id, SampleSink& sink) {
  const ReadSnapshot snapshot(db_.get());
  Status devices =
      read_device_samples(db_.get(), path_, run_id, /*by_device=*/true, /*all_fields=*/false,
                          [&](const DeviceSample& s) { sink.add(s); });
  if (!devices.ok()) return devices;
  return read_process_samples(db_.get(), path_, run_id,
                              [&](const ProcessSampleRow& r) { sink.add(r); });
}

Status RunStore::for_each_sample_between(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms,
                                         SampleSink& sink) {
  const ReadSnapshot snapshot(db_.get());
  Status devices = read_device_samples_between(db_.get(), path_, run_id, from_ms, to_ms,
                                               [&](const DeviceSample& s) { sink.add(s); });
  if (!devices.ok()) return devices;
  return read_process_samples(
      db_.get(), path_, run_id, [&](const ProcessSampleRow& r) { sink.add(r); }, from_ms, to_ms);
}

Result<std::vector<DeviceSample>> RunStore::device_samples(int64_t run_id) {
  std::vector<DeviceSample> samples;
  Status read =
      read_device_samples(db_.get(), path_, run_id, /*by_device=*/false, /*all_fields=*/true,
                          [&](const DeviceSample& s) { samples.push_back(s); });
  if (!read.ok()) return read.error();
  return samples;
}

Result<std::vector<ProcessSampleRow>> RunStore::process_samples(int64_t run_id) {
  std::vector<ProcessSampleRow> rows;
  Status read = read_process_samples(db_.get(), path_, run_id,
                                     [&](const ProcessSampleRow& r) { rows.push_back(r); });
  if (!read.ok()) return read.error();
  return rows;
}

Result<std::vector<ProgressEvent>> RunStore::job_events(int64_t job_id, bool with_steps) {
  auto select = Statement::prepare(db_.get(), path_, R"sql(
      SELECT time_ms, kind, epoch, step, samples, metrics_json
      FROM job_events WHERE job_id = ?1 AND (?2 OR kind != 'step') ORDER BY time_ms, id)sql");
  if (!select.ok()) return select.error();
  select->bind(1, job_id).bind(2, with_steps);
  return all_events(*select);
}

Result<Statement> RunStore::prepare_metric_steps() {
  return Statement::prepare(db_.get(), path_, R"sql(
      SELECT time_ms, kind, epoch, step, samples, metrics_json FROM (
        SELECT time_ms, kind, epoch, step, samples, metrics_json, id,
               row_number() OVER (ORDER BY time_ms, id) AS n, count(*) OVER () AS total
        FROM job_events
        WHERE job_id = ?1 AND kind = 'step' AND metrics_json IS NOT NULL
              AND metrics_json != '{}')
      WHERE (n - 1) % ((total + ?2 - 1) / ?2) = 0 OR n = total
      ORDER BY time_ms, id)sql");
}

Result<std::vector<ProgressEvent>> RunStore::metric_steps_of(Statement& select, int64_t job_id,
                                                             int64_t limit) {
  select.reset();
  select.bind(1, job_id).bind(2, std::max<int64_t>(limit, 1));
  return all_events(select);
}

Result<std::vector<ProgressEvent>> RunStore::metric_steps(int64_t job_id, int64_t limit) {
  auto select = prepare_metric_steps();
  if (!select.ok()) return select.error();
  return metric_steps_of(*select, job_id, limit);
}

namespace {

constexpr const char* kAttemptColumns =
    "a.job_id, j.run_id, a.attempt, a.device, a.pid, a.started_ms, a.ended_ms, a.state, "
    "a.reason, a.log_path";

Result<std::vector<AttemptRow>> read_attempts(Statement& s) {
  std::vector<AttemptRow> out;
  Status read = s.for_each_row([&]() -> Status {
    AttemptRow a;
    a.job_id = s.int64_at(0);
    a.run_id = s.int64_at(1);
    a.attempt = static_cast<int>(s.int64_at(2));
    if (std::optional<int64_t> d = s.opt_int64_at(3)) a.device = static_cast<int>(*d);
    a.pid = s.opt_int64_at(4);
    a.started_ms = s.int64_at(5);
    a.ended_ms = s.opt_int64_at(6);
    a.state = s.text_at(7);
    a.reason = s.text_at(8);
    a.log_path = s.text_at(9);
    out.push_back(std::move(a));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return out;
}

}  // namespace

Result<std::vector<AttemptRow>> RunStore::job_attempts(int64_t job_id) {
  auto select = Statement::prepare(db_.get(), path_,
                                   fmt::format(R"sql(
      SELECT {} FROM job_attempts a JOIN jobs j ON a.job_id = j.id
      WHERE a.job_id = ? ORDER BY a.attempt)sql",
                                               kAttemptColumns));
  if (!select.ok()) return select.error();
  select->bind(1, job_id);
  return read_attempts(*select);
}

Result<std::vector<AttemptRow>> RunStore::service_job_attempts(int64_t id) {
  auto select = Statement::prepare(db_.get(), path_,
                                   fmt::format(R"sql(
      SELECT {} FROM job_attempts a JOIN jobs j ON a.job_id = j.id
      WHERE j.service_job_id = ? ORDER BY a.attempt, a.started_ms)sql",
                                               kAttemptColumns));
  if (!select.ok()) return select.error();
  select->bind(1, id);
  return read_attempts(*select);
}

}  // namespace colo
