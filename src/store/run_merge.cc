// RunStore::merge_runs: runs of other store files copied into one run;
// RunStore::copy_to: the whole store copied (store_backup.h).
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "store/run_store.h"
#include "store/schema.h"

namespace colo {
namespace {

Result<std::vector<std::string>> table_columns(sqlite3* db, const std::string& path,
                                               const std::string& schema,
                                               const std::string& table) {
  auto info = Statement::prepare(db, path, fmt::format("PRAGMA {}.table_info({})", schema, table));
  if (!info.ok()) return info.error();
  std::vector<std::string> columns;
  Status read = info->for_each_row([&]() -> Status {
    columns.push_back(info->text_at(1));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return columns;
}

// The columns both stores' `table` has, except `skip`, comma-separated with
// `prefix` ("j.") before each, and without: for INSERT ... SELECT.
struct ColumnLists {
  std::string insert;
  std::string select;
};
Result<ColumnLists> shared_columns(sqlite3* db, const std::string& path, const std::string& table,
                                   const std::set<std::string>& skip, const std::string& prefix) {
  Result<std::vector<std::string>> ours = table_columns(db, path, "main", table);
  if (!ours.ok()) return ours.error();
  Result<std::vector<std::string>> theirs = table_columns(db, path, "src", table);
  if (!theirs.ok()) return theirs.error();
  ColumnLists lists;
  for (const std::string& c : *ours) {
    if (skip.count(c) > 0 || std::find(theirs->begin(), theirs->end(), c) == theirs->end())
      continue;
    lists.insert += ", " + c;
    lists.select += ", " + prefix + c;
  }
  return lists;
}

Result<int64_t> single_int(sqlite3* db, const std::string& path, const std::string& sql,
                           int64_t bound = 0) {
  auto stmt = Statement::prepare(db, path, sql);
  if (!stmt.ok()) return stmt.error();
  if (sql.find('?') != std::string::npos) stmt->bind(1, bound);
  auto row = stmt->step();
  if (!row.ok()) return row.error();
  if (!*row || stmt->is_null(0)) return int64_t{0};
  return stmt->int64_at(0);
}

// Detaches `src` when it goes out of scope.
class Attached {
 public:
  Attached(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;
  ~Attached() { (void)exec_sql(db_, path_, "DETACH DATABASE src", "cannot detach a store"); }

 private:
  sqlite3* db_;
  std::string path_;
};

}  // namespace

Result<int64_t> RunStore::merge_runs(const NewRun& header, const std::vector<RunSource>& sources) {
  sqlite3* db = db_.get();
  NewRun run = header;
  run.devices_json = "[]";
  Result<int64_t> merged = begin_run(run);
  if (!merged.ok()) return merged.error();

  nlohmann::json devices = nlohmann::json::array();
  std::optional<UnixMillis> first_start;
  std::optional<UnixMillis> last_end;
  int next_device = 0;
  for (const RunSource& source : sources) {
    const std::string where = "merging " + source.path;
    auto attach = Statement::prepare(db, path_, "ATTACH DATABASE ? AS src");
    if (!attach.ok()) return attach.error();
    if (Status s = attach->bind(1, sqlite_uri(source.path, "?mode=ro")).run(); !s.ok())
      return s.error().with_context(where);
    Attached detach_at_end(db, path_);

    Result<int64_t> version = single_int(db, path_, "PRAGMA src.user_version");
    if (!version.ok()) return version.error().with_context(where);
    Result<int64_t> app = single_int(db, path_, "PRAGMA src.application_id");
    if (!app.ok()) return app.error().with_context(where);
    if (*app != kColoApplicationId || *version < 1 || *version > latest_schema_version()) {
      return Error(fmt::format(
          "{} is not a colo store this colo can read (application id {:#x}, schema version {})",
          source.path, static_cast<uint64_t>(*app), *version));
    }

    auto tx = Transaction::begin(db, path_);
    if (!tx.ok()) return tx.error().with_context(where);
    int64_t src_run = source.run_id;
    if (src_run == 0) {
      Result<int64_t> latest = single_int(db, path_, "SELECT max(id) FROM src.runs");
      if (!latest.ok()) return latest.error().with_context(where);
      src_run = *latest;
    }
    auto read = Statement::prepare(
        db, path_, "SELECT started_ms, ended_ms, devices_json FROM src.runs WHERE id = ?");
    if (!read.ok()) return read.error();
    read->bind(1, src_run);
    auto found = read->step();
    if (!found.ok()) return found.error().with_context(where);
    if (!*found) return Error(fmt::format("{} holds no run {}", source.path, src_run));
    first_start = std::min(first_start.value_or(read->int64_at(0)), read->int64_at(0));
    if (std::optional<int64_t> ended = read->opt_int64_at(1))
      last_end = std::max(last_end.value_or(*ended), *ended);
    nlohmann::json source_devices =
        nlohmann::json::parse(read->text_at(2), nullptr, /*allow_exceptions=*/false);

    // Its devices, numbered after those of the sources before it.
    if (Status s = exec_sql(db, path_,
                            "CREATE TEMP TABLE IF NOT EXISTS merge_devices (old INTEGER PRIMARY "
                            "KEY, new INTEGER NOT NULL); DELETE FROM temp.merge_devices;",
                            "cannot map devices");
        !s.ok())
      return s.error();
    std::set<int64_t> olds;
    if (source_devices.is_array()) {
      for (const nlohmann::json& d : source_devices) {
        if (d.is_object() && d.contains("index") && d["index"].is_number_integer())
          olds.insert(d["index"].get<int64_t>());
      }
    }
    auto used = Statement::prepare(
        db, path_,
        "SELECT device FROM src.jobs WHERE run_id = ?1 AND device IS NOT NULL UNION "
        "SELECT DISTINCT device FROM src.device_samples WHERE run_id = ?1");
    if (!used.ok()) return used.error();
    used->bind(1, src_run);
    Status listed = used->for_each_row([&]() -> Status {
      olds.insert(used->int64_at(0));
      return OkStatus();
    });
    if (!listed.ok()) return listed.error().with_context(where);
    auto map = Statement::prepare(db, path_, "INSERT INTO temp.merge_devices VALUES (?, ?)");
    if (!map.ok()) return map.error();
    for (int64_t old : olds) {
      nlohmann::json entry = {{"index", next_device}};
      if (source_devices.is_array()) {
        for (const nlohmann::json& d : source_devices) {
          if (d.is_object() && d.value("index", int64_t{-1}) == old) entry = d;
        }
      }
      entry["index"] = next_device;
      entry["source_index"] = old;
      entry["source"] = source.label;
      devices.push_back(std::move(entry));
      if (Status s = map->bind(1, old).bind(2, next_device).run(); !s.ok()) return s.error();
      ++next_device;
    }

    // Jobs keep their order; their ids move past those already here.
    Result<int64_t> ours = single_int(db, path_, "SELECT max(id) FROM main.jobs");
    if (!ours.ok()) return ours.error();
    Result<int64_t> lowest =
        single_int(db, path_, "SELECT min(id) FROM src.jobs WHERE run_id = ?", src_run);
    if (!lowest.ok()) return lowest.error().with_context(where);
    const int64_t delta = *ours + 1 - *lowest;
    const std::string new_device =
        "(SELECT m.new FROM temp.merge_devices m WHERE m.old = {}device)";

    Result<ColumnLists> jobs = shared_columns(db, path_, "jobs", {"id", "run_id", "device"}, "j.");
    if (!jobs.ok()) return jobs.error();
    Result<ColumnLists> events = shared_columns(db, path_, "job_events", {"id", "job_id"}, "e.");
    if (!events.ok()) return events.error();
    Result<ColumnLists> device_rows =
        shared_columns(db, path_, "device_samples", {"run_id", "device"}, "d.");
    if (!device_rows.ok()) return device_rows.error();
    Result<ColumnLists> process_rows =
        shared_columns(db, path_, "process_samples", {"run_id", "device", "job_id"}, "p.");
    if (!process_rows.ok()) return process_rows.error();
    const std::vector<std::string> copies = {
        fmt::format("INSERT INTO main.jobs (id, run_id, device{}) SELECT j.id + {}, {}, {}{} "
                    "FROM src.jobs j WHERE j.run_id = {} ORDER BY j.id",
                    jobs->insert, delta, *merged, fmt::format(fmt::runtime(new_device), "j."),
                    jobs->select, src_run),
        fmt::format("INSERT INTO main.job_events (job_id{}) SELECT e.job_id + {}{} FROM "
                    "src.job_events e JOIN src.jobs j ON j.id = e.job_id WHERE j.run_id = {} "
                    "ORDER BY e.id",
                    events->insert, delta, events->select, src_run),
        fmt::format("INSERT INTO main.device_samples (run_id, device{}) SELECT {}, {}{} FROM "
                    "src.device_samples d WHERE d.run_id = {}",
                    device_rows->insert, *merged, fmt::format(fmt::runtime(new_device), "d."),
                    device_rows->select, src_run),
        fmt::format("INSERT INTO main.process_samples (run_id, device, job_id{}) SELECT {}, {}, "
                    "p.job_id + {}{} FROM src.process_samples p WHERE p.run_id = {}",
                    process_rows->insert, *merged, fmt::format(fmt::runtime(new_device), "p."),
                    delta, process_rows->select, src_run),
    };
    for (const std::string& sql : copies) {
      if (Status s = exec_sql(db, path_, sql, "cannot copy a run"); !s.ok())
        return s.error().with_context(where);
    }
    if (Status s = tx->commit(); !s.ok()) return s.error().with_context(where);
  }

  auto tx = Transaction::begin(db, path_);
  if (!tx.ok()) return tx.error();
  if (Status s = refresh_jobs_signature(*merged); !s.ok()) return s.error();
  auto update = Statement::prepare(db, path_,
                                   "UPDATE runs SET started_ms = ?, devices_json = ? WHERE id = ?");
  if (!update.ok()) return update.error();
  Status s = update
                 ->bind(1, header.started_ms > 0 ? header.started_ms
                                                 : first_start.value_or(header.started_ms))
                 .bind(2, devices.dump())
                 .bind(3, *merged)
                 .run();
  if (!s.ok()) return s.error();
  // Ok when every job ended well, by the one rule (jobs/job_outcome.h).
  RunRow counted;
  counted.id = *merged;
  if (s = count_jobs(counted); !s.ok()) return s.error();
  const JobCounts& jobs = counted.jobs;
  s = end_run(
      *merged,
      jobs.total() > 0 && jobs.ended_well() == jobs.total() ? RunState::kOk : RunState::kFailed,
      last_end.value_or(first_start.value_or(header.started_ms)));
  if (!s.ok()) return s.error();
  if (s = tx->commit(); !s.ok()) return s.error();
  return *merged;
}

Result<StoreCopy> RunStore::copy_to(const std::string& path, ExistingFile existing) {
  return write_store_copy(db_.get(), path_, path, existing);
}

}  // namespace colo
