// Removing runs and experiments from the store (declared in run_store.h):
// `colo rm` and `colo gc`. The schema's ON DELETE clauses take a run's jobs,
// events, samples and data loaders with it; an experiment case that ran it
// keeps its row, without the run. And thinning old samples (`colo gc
// --thin-samples-after`, the service's retention).
#include <fmt/format.h>
#include <sqlite3.h>

#include "store/run_store.h"

namespace colo {

Result<std::vector<std::string>> RunStore::remove_run(int64_t run_id) {
  Result<RunRow> run = read_run(run_id);
  if (!run.ok()) return run.error();
  if (run->state == RunState::kRunning) {
    return Error(fmt::format(
        "run {} is still running (colo pid {} on {}): stop it first (Ctrl-C in its terminal, or "
        "kill {})",
        run_id, run->colo_pid, run->host.empty() ? "this host" : run->host, run->colo_pid));
  }
  auto logs = Statement::prepare(db_.get(), path_,
                                 "SELECT log_path FROM jobs WHERE run_id = ? ORDER BY id");
  if (!logs.ok()) return logs.error();
  logs->bind(1, run_id);
  std::vector<std::string> paths;
  Status read = logs->for_each_row([&]() -> Status {
    if (std::string path = logs->text_at(0); !path.empty()) paths.push_back(std::move(path));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  auto tx = Transaction::begin(db_.get(), path_);
  if (!tx.ok()) return tx.error().with_context(fmt::format("removing run {}", run_id));
  auto remove = Statement::prepare(db_.get(), path_, "DELETE FROM runs WHERE id = ?");
  if (!remove.ok()) return remove.error();
  remove->bind(1, run_id);
  if (Status s = remove->run(); !s.ok()) return s.error();
  if (Status s = tx->commit(); !s.ok()) return s.error();
  return paths;
}

Status RunStore::remove_experiment(int64_t experiment_id) {
  Result<ExperimentRow> experiment = this->experiment(experiment_id);
  if (!experiment.ok()) return experiment.error();
  if (experiment->state == "running") {
    return Error(
        fmt::format("experiment {} is still running: stop its colo bench first", experiment_id));
  }
  auto remove = Statement::prepare(db_.get(), path_, "DELETE FROM experiments WHERE id = ?");
  if (!remove.ok()) return remove.error();
  remove->bind(1, experiment_id);
  return remove->run();
}

Result<int64_t> RunStore::thin_samples(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms,
                                       int64_t every_ms) {
  if (every_ms <= 0) return Error("thin_samples: the span must be positive");
  // The GPUs the run sampled: one index seek each.
  auto distinct = Statement::prepare(db_.get(), path_, R"sql(
      WITH RECURSIVE gpu(d) AS (
        SELECT min(device) FROM device_samples WHERE run_id = ?1
        UNION ALL
        SELECT (SELECT min(device) FROM device_samples WHERE run_id = ?1 AND device > gpu.d)
        FROM gpu WHERE gpu.d IS NOT NULL)
      SELECT d FROM gpu WHERE d IS NOT NULL)sql");
  if (!distinct.ok()) return distinct.error();
  distinct->bind(1, run_id);
  std::vector<int64_t> devices;
  Status listed = distinct->for_each_row([&]() -> Status {
    devices.push_back(distinct->int64_at(0));
    return OkStatus();
  });
  if (!listed.ok()) return listed.error();
  auto tx = Transaction::begin(db_.get(), path_);
  if (!tx.ok()) return tx.error().with_context(fmt::format("thinning run {}'s samples", run_id));
  int64_t removed = 0;
  // Per GPU, so that the index (run_id, device, time_ms) bounds the scan.
  auto device_rows = Statement::prepare(db_.get(), path_, R"sql(
      DELETE FROM device_samples WHERE rowid IN (
        SELECT rowid FROM (
          SELECT rowid, row_number() OVER (PARTITION BY time_ms / ?5 ORDER BY time_ms, rowid) AS n
          FROM device_samples WHERE run_id = ?1 AND device = ?2 AND time_ms >= ?3 AND time_ms < ?4)
        WHERE n > 1))sql");
  if (!device_rows.ok()) return device_rows.error();
  for (int64_t device : devices) {
    device_rows->reset();
    device_rows->bind(1, run_id).bind(2, device).bind(3, from_ms).bind(4, to_ms).bind(5, every_ms);
    if (Status s = device_rows->run(); !s.ok()) return s.error();
    removed += sqlite3_changes(db_.get());
  }
  auto process_rows = Statement::prepare(db_.get(), path_, R"sql(
      DELETE FROM process_samples WHERE rowid IN (
        SELECT rowid FROM (
          SELECT rowid, row_number() OVER (
                   PARTITION BY device, pid, time_ms / ?4
                   ORDER BY used_memory_bytes DESC, time_ms, rowid) AS n
          FROM process_samples WHERE run_id = ?1 AND time_ms >= ?2 AND time_ms < ?3)
        WHERE n > 1))sql");
  if (!process_rows.ok()) return process_rows.error();
  process_rows->bind(1, run_id).bind(2, from_ms).bind(3, to_ms).bind(4, every_ms);
  if (Status s = process_rows->run(); !s.ok()) return s.error();
  removed += sqlite3_changes(db_.get());
  if (Status s = tx->commit(); !s.ok()) return s.error();
  return removed;
}

}  // namespace colo
