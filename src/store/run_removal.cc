// Removing runs and experiments from the store (declared in run_store.h):
// `colo rm` and `colo gc`. The schema's ON DELETE clauses take a run's jobs,
// events, samples and data loaders with it; an experiment case that ran it
// keeps its row, without the run.
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

}  // namespace colo
