// The experiment half of RunStore (declared in run_store.h): experiments of
// `colo bench` and their cases (schema version 2).
//
// Stale experiments: an experiment still 'running' whose colo (same host,
// pid gone) has died is marked 'interrupted', and its planned cases
// 'cancelled', before any experiment is read or begun. RunStore::open()
// covers the common case too: marking the colo's run interrupted fires the
// schema's trigger, which takes the experiment of the same colo with it.
#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <set>

#include "common/names.h"
#include "store/run_store.h"

namespace colo {
namespace {

const std::set<std::string, std::less<>>& experiment_states() {
  static const std::set<std::string, std::less<>> kStates = {"running", "ok", "failed", "cancelled",
                                                             "interrupted"};
  return kStates;
}

const std::set<std::string, std::less<>>& case_statuses() {
  static const std::set<std::string, std::less<>> kStatuses = {
      "planned", "ok", "failed", "does_not_fit", "not_run", "cancelled"};
  return kStatuses;
}

constexpr const char* kExperimentColumns =
    "id, suite, started_ms, ended_ms, state, options_json, simulated, backend, gpu_name, "
    "command_line";

ExperimentRow read_experiment_row(const Statement& stmt) {
  ExperimentRow row;
  row.id = stmt.int64_at(0);
  row.suite = stmt.text_at(1);
  row.started_ms = stmt.int64_at(2);
  row.ended_ms = stmt.opt_int64_at(3);
  row.state = stmt.text_at(4);
  row.options_json = stmt.text_at(5);
  row.simulated = stmt.int64_at(6) != 0;
  row.backend = stmt.text_at(7);
  row.gpu_name = stmt.text_at(8);
  row.command_line = stmt.text_at(9);
  return row;
}

// Marks experiments of this host still 'running' whose colo is gone as
// interrupted (ended at their last case's run end, else now), and their
// planned cases cancelled. Takes the write lock only when there is one.
Status mark_stale_experiments(sqlite3* db, const std::string& path) {
  auto running = Statement::prepare(
      db, path, "SELECT id, colo_pid, host FROM experiments WHERE state = 'running'");
  if (!running.ok()) return running.error();
  const std::string here = host_name();
  std::vector<int64_t> stale;
  Status read = running->for_each_row([&]() -> Status {
    std::string host = running->text_at(2);
    if (!host.empty() && host != here) return OkStatus();  // a pid means nothing on another host
    if (process_is_alive(static_cast<pid_t>(running->int64_at(1)))) return OkStatus();
    stale.push_back(running->int64_at(0));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  if (stale.empty()) return OkStatus();

  auto tx = Transaction::begin(db, path);
  if (!tx.ok()) return tx.error().with_context("marking experiments of a colo that stopped");
  auto cancel_cases = Statement::prepare(db, path, R"sql(
      UPDATE experiment_cases SET status = 'cancelled',
             reason = 'colo stopped before the case ended (found at next start)'
       WHERE experiment_id = ?1 AND status = 'planned')sql");
  if (!cancel_cases.ok()) return cancel_cases.error();
  auto end = Statement::prepare(db, path, R"sql(
      UPDATE experiments SET state = 'interrupted',
             ended_ms = coalesce((SELECT max(r.ended_ms) FROM experiment_cases c
                                    JOIN runs r ON r.id = c.run_id
                                   WHERE c.experiment_id = ?1), ?2)
       WHERE id = ?1 AND state = 'running')sql");
  if (!end.ok()) return end.error();
  const UnixMillis now = SystemClock().now_ms();
  for (int64_t id : stale) {
    if (Status s = cancel_cases->bind(1, id).run(); !s.ok()) return s;
    if (Status s = end->bind(1, id).bind(2, now).run(); !s.ok()) return s;
  }
  return tx->commit();
}

}  // namespace

Result<int64_t> RunStore::begin_experiment(const NewExperiment& e) {
  if (Status s = mark_stale_experiments(db_.get(), path_); !s.ok()) return s.error();
  auto stmt = Statement::prepare(db_.get(), path_, R"sql(
      INSERT INTO experiments (suite, started_ms, state, options_json, simulated, backend,
                               gpu_name, command_line, host, colo_pid)
      VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9))sql");
  if (!stmt.ok()) return stmt.error();
  Status s = stmt->bind(1, e.suite)
                 .bind(2, e.started_ms)
                 .bind(3, e.options_json.empty() ? std::string("{}") : e.options_json)
                 .bind(4, e.simulated)
                 .bind(5, e.backend)
                 .bind(6, e.gpu_name)
                 .bind(7, e.command_line)
                 .bind(8, host_name())
                 .bind(9, static_cast<int64_t>(getpid()))
                 .run();
  if (!s.ok()) return s.error().with_context("cannot record the experiment");
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Result<int64_t> RunStore::add_case(int64_t experiment_id, const CaseRow& c) {
  if (!case_statuses().contains(c.status)) {
    return Error(fmt::format("case {}: unknown status '{}'", c.name, c.status));
  }
  auto stmt = Statement::prepare(db_.get(), path_, R"sql(
      INSERT INTO experiment_cases (experiment_id, name, workload, models, mechanism, degree,
                                    repetition, run_id, status, reason)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10))sql");
  if (!stmt.ok()) return stmt.error();
  Status s = stmt->bind(1, experiment_id)
                 .bind(2, c.name)
                 .bind(3, c.workload)
                 .bind(4, c.models)
                 .bind(5, c.mechanism)
                 .bind(6, c.degree)
                 .bind(7, c.repetition)
                 .bind(8, c.run_id)
                 .bind(9, c.status)
                 .bind(10, c.reason)
                 .run();
  if (!s.ok()) {
    return s.error().with_context(
        fmt::format("cannot record case {} of experiment {}", c.name, experiment_id));
  }
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Status RunStore::update_case(int64_t case_id, std::optional<int64_t> run_id,
                             const std::string& status, const std::string& reason) {
  if (!case_statuses().contains(status)) {
    return Error(fmt::format("case {}: unknown status '{}'", case_id, status));
  }
  auto stmt = Statement::prepare(db_.get(), path_, R"sql(
      UPDATE experiment_cases SET run_id = coalesce(?2, run_id), status = ?3, reason = ?4
       WHERE id = ?1)sql");
  if (!stmt.ok()) return stmt.error();
  Status s = stmt->bind(1, case_id).bind(2, run_id).bind(3, status).bind(4, reason).run();
  if (!s.ok()) return s.error().with_context(fmt::format("cannot update case {}", case_id));
  if (sqlite3_changes(db_.get()) == 0)
    return Error(fmt::format("no case {} in {}", case_id, path_));
  return OkStatus();
}

Status RunStore::end_experiment(int64_t experiment_id, const std::string& state,
                                UnixMillis ended_ms) {
  if (!experiment_states().contains(state) || state == "running") {
    return Error(fmt::format(
        "experiment {}: cannot end in state '{}'; expected ok, failed, cancelled or interrupted",
        experiment_id, state));
  }
  auto stmt = Statement::prepare(db_.get(), path_,
                                 "UPDATE experiments SET state = ?2, ended_ms = ?3 WHERE id = ?1");
  if (!stmt.ok()) return stmt.error();
  Status s = stmt->bind(1, experiment_id).bind(2, state).bind(3, ended_ms).run();
  if (!s.ok())
    return s.error().with_context(fmt::format("cannot end experiment {}", experiment_id));
  if (sqlite3_changes(db_.get()) == 0) {
    return Error(fmt::format("no experiment {} in {}", experiment_id, path_));
  }
  return OkStatus();
}

Result<std::vector<ExperimentRow>> RunStore::list_experiments(int limit) {
  if (Status s = mark_stale_experiments(db_.get(), path_); !s.ok()) return s.error();
  auto stmt = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {} FROM experiments ORDER BY id DESC LIMIT ?1", kExperimentColumns));
  if (!stmt.ok()) return stmt.error();
  stmt->bind(1, limit);
  std::vector<ExperimentRow> rows;
  Status read = stmt->for_each_row([&]() -> Status {
    rows.push_back(read_experiment_row(*stmt));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return rows;
}

Result<ExperimentRow> RunStore::experiment(int64_t experiment_id) {
  if (Status s = mark_stale_experiments(db_.get(), path_); !s.ok()) return s.error();
  auto stmt = Statement::prepare(
      db_.get(), path_,
      experiment_id == 0
          ? fmt::format("SELECT {} FROM experiments ORDER BY id DESC LIMIT 1", kExperimentColumns)
          : fmt::format("SELECT {} FROM experiments WHERE id = ?1", kExperimentColumns));
  if (!stmt.ok()) return stmt.error();
  if (experiment_id != 0) stmt->bind(1, experiment_id);
  auto row = stmt->step();
  if (!row.ok()) return row.error();
  if (!*row) {
    return Error(
        experiment_id == 0
            ? fmt::format("no experiment in {} yet: `colo bench --suite NAME` records one", path_)
            : fmt::format("no experiment {} in {}", experiment_id, path_));
  }
  return read_experiment_row(*stmt);
}

Result<std::vector<CaseRow>> RunStore::experiment_cases(int64_t experiment_id) {
  Result<ExperimentRow> e = experiment(experiment_id);  // resolves 0 and checks existence
  if (!e.ok()) return e.error();
  auto stmt = Statement::prepare(db_.get(), path_, R"sql(
      SELECT id, experiment_id, name, workload, models, mechanism, degree, repetition, run_id,
             status, reason
        FROM experiment_cases WHERE experiment_id = ?1 ORDER BY id)sql");
  if (!stmt.ok()) return stmt.error();
  stmt->bind(1, e->id);
  std::vector<CaseRow> cases;
  Status read = stmt->for_each_row([&]() -> Status {
    CaseRow c;
    c.id = stmt->int64_at(0);
    c.experiment_id = stmt->int64_at(1);
    c.name = stmt->text_at(2);
    c.workload = stmt->text_at(3);
    c.models = stmt->text_at(4);
    c.mechanism = stmt->text_at(5);
    c.degree = static_cast<int>(stmt->int64_at(6));
    c.repetition = static_cast<int>(stmt->int64_at(7));
    c.run_id = stmt->opt_int64_at(8);
    c.status = stmt->text_at(9);
    c.reason = stmt->text_at(10);
    cases.push_back(std::move(c));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return cases;
}

}  // namespace colo
