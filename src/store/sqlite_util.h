// Small RAII layer over the SQLite C API, used only inside the store module.
//
// SqliteDb owns a connection (closed with sqlite3_close_v2), Statement owns a
// prepared statement, Transaction rolls back unless committed. Every error is
// an Error whose message names the store path, carries SQLite's own message,
// and, for the failures users meet (locked, not a database, read-only, disk
// full), says what to do.
//
// Threading: none of these types is thread-safe; a connection and its
// statements belong to one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace colo {

// Deleter for an owned connection.
struct SqliteCloser {
  void operator()(sqlite3* db) const;
};
using SqliteDb = std::unique_ptr<sqlite3, SqliteCloser>;

// Builds the error for SQLite result code `rc` from connection `db` (which may
// be null), e.g. "/x/colo.db: cannot insert job: database is locked; ...".
// `what` says what colo was doing ("cannot insert job"). Locked, busy, full
// and I/O errors are transient (trying again later may succeed).
Error sqlite_error(sqlite3* db, int rc, std::string_view what, const std::string& path);

// `path` as an SQLite URI: "file:" + the path with %, ? and # escaped +
// `query` ("?mode=ro").
std::string sqlite_uri(const std::string& path, std::string_view query);

// Runs one or more SQL statements that return no rows.
Status exec_sql(sqlite3* db, const std::string& path, const std::string& sql,
                std::string_view what);

// A prepared statement. Bind errors are remembered and reported by the next
// step()/run(), so binds can be chained. Parameter indexes are 1-based, as in
// SQLite. Owns its sqlite3_stmt; borrows the connection, which must outlive it.
class Statement {
 public:
  static Result<Statement> prepare(sqlite3* db, const std::string& path, std::string_view sql);

  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& bind_null(int index);
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, uint32_t value) { return bind(index, static_cast<int64_t>(value)); }
  // Values above INT64_MAX are stored clamped (SQLite integers are signed).
  Statement& bind(int index, uint64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  // Absent values are stored as NULL.
  template <class T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Advances: true when a row is available, false when done.
  Result<bool> step();
  // Steps to completion (for INSERT/UPDATE/DELETE), then resets for reuse.
  Status run();
  // Resets so the statement can run again; bindings are cleared.
  void reset();
  // Steps through every row; `read()` reads the current row's columns and
  // returns a Status (an error stops there). The first error, else ok.
  template <class Read>
  Status for_each_row(Read read) {
    while (true) {
      Result<bool> row = step();
      if (!row.ok()) return row.error();
      if (!*row) return OkStatus();
      if (Status s = read(); !s.ok()) return s;
    }
  }

  bool is_null(int column) const;
  int64_t int64_at(int column) const;
  double double_at(int column) const;
  std::string text_at(int column) const;
  std::optional<int64_t> opt_int64_at(int column) const;
  std::optional<double> opt_double_at(int column) const;
  std::optional<uint64_t> opt_uint64_at(int column) const;

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string path, std::string sql)
      : db_(db), stmt_(stmt), path_(std::move(path)), sql_(std::move(sql)) {}
  void note_bind(int rc, int index);

  sqlite3* db_ = nullptr;         // borrowed
  sqlite3_stmt* stmt_ = nullptr;  // owned (finalized in the destructor)
  std::string path_;
  std::string sql_;
  std::optional<Error> bind_error_;
};

// BEGIN IMMEDIATE ... COMMIT. Rolls back in the destructor unless commit()
// succeeded. Borrows the connection.
class Transaction {
 public:
  static Result<Transaction> begin(sqlite3* db, const std::string& path);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  Status commit();

 private:
  Transaction(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  sqlite3* db_ = nullptr;  // borrowed; null once committed or moved from
  std::string path_;
};

// BEGIN (deferred) ... ROLLBACK around reads: the statements inside read one
// snapshot of the file, and take SQLite's shared lock once instead of once
// each (a run's record reads a statement per job). Does nothing when the
// connection is in a transaction already. Borrows the connection.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(sqlite3* db);
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;
  ~ReadSnapshot();

 private:
  sqlite3* db_ = nullptr;  // borrowed; null when it began nothing
};

}  // namespace colo
