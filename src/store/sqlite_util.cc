#include "store/sqlite_util.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <limits>
#include <utility>

namespace colo {
namespace {

// What the user can do about the common failures, or "" when there is no
// better advice than SQLite's message.
std::string advice_for(int rc, const std::string& path) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return fmt::format(
          "another process holds a lock on {} (is another colo writing to it?); wait for it to "
          "finish, or pass --db to use another store",
          path);
    case SQLITE_NOTADB:
      return fmt::format(
          "{} is not a colo database (file is not a database); pass --db to "
          "choose another path",
          path);
    case SQLITE_CORRUPT:
      return fmt::format(
          "{} is damaged; move it aside (colo will start a new store) or pass --db "
          "to choose another path",
          path);
    case SQLITE_READONLY:
      return fmt::format(
          "{} cannot be written; check the permissions of the file and its "
          "directory, or pass --db to choose another path",
          path);
    case SQLITE_CANTOPEN:
      return fmt::format(
          "cannot open {}; check that its directory exists and is writable, or "
          "pass --db to choose another path",
          path);
    case SQLITE_FULL:
      return fmt::format("the disk holding {} is full; free some space", path);
    case SQLITE_IOERR:
      return fmt::format("input/output error on {}; check the disk and the file system", path);
    default:
      return "";
  }
}

}  // namespace

void SqliteCloser::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

Error sqlite_error(sqlite3* db, int rc, std::string_view what, const std::string& path) {
  std::string sqlite_message =
      db != nullptr && sqlite3_errcode(db) == rc ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string advice = advice_for(rc, path);
  const int primary = rc & 0xff;
  const ErrorKind kind = primary == SQLITE_BUSY || primary == SQLITE_LOCKED ||
                                 primary == SQLITE_FULL || primary == SQLITE_IOERR
                             ? ErrorKind::kTransient
                             : ErrorKind::kPermanent;
  if (advice.empty()) return Error(fmt::format("{}: {}: {}", path, what, sqlite_message), kind);
  return Error(fmt::format("{}: {}: {}; {}", path, what, sqlite_message, advice), kind);
}

std::string sqlite_uri(const std::string& path, std::string_view query) {
  std::string out = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + std::string(query);
}

Status exec_sql(sqlite3* db, const std::string& path, const std::string& sql,
                std::string_view what) {
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return sqlite_error(db, rc, what, path);
  return OkStatus();
}

Result<Statement> Statement::prepare(sqlite3* db, const std::string& path, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return sqlite_error(db, rc, fmt::format("cannot prepare \"{}\"", sql), path);
  }
  return Statement(db, stmt, path, std::string(sql));
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      path_(std::move(other.path_)),
      sql_(std::move(other.sql_)),
      bind_error_(std::move(other.bind_error_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    path_ = std::move(other.path_);
    sql_ = std::move(other.sql_);
    bind_error_ = std::move(other.bind_error_);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::note_bind(int rc, int index) {
  if (rc != SQLITE_OK && !bind_error_) {
    bind_error_ = sqlite_error(
        db_, rc, fmt::format("cannot bind parameter {} of \"{}\"", index, sql_), path_);
  }
}

Statement& Statement::bind_null(int index) {
  note_bind(sqlite3_bind_null(stmt_, index), index);
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  note_bind(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, uint64_t value) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return bind(index, static_cast<int64_t>(value > kMax ? kMax : value));
}

Statement& Statement::bind(int index, double value) {
  note_bind(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  note_bind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
  return *this;
}

Result<bool> Statement::step() {
  if (bind_error_) {
    Error error = *bind_error_;
    bind_error_.reset();
    sqlite3_reset(stmt_);
    return error;
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Error error = sqlite_error(db_, rc, fmt::format("cannot run \"{}\"", sql_), path_);
  sqlite3_reset(stmt_);
  return error;
}

Status Statement::run() {
  while (true) {
    Result<bool> row = step();
    if (!row.ok()) return row.error();
    if (!*row) break;
  }
  reset();
  return OkStatus();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_.reset();
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::int64_at(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::double_at(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::text_at(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::optional<int64_t> Statement::opt_int64_at(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64_at(column);
}

std::optional<double> Statement::opt_double_at(int column) const {
  if (is_null(column)) return std::nullopt;
  return double_at(column);
}

std::optional<uint64_t> Statement::opt_uint64_at(int column) const {
  if (is_null(column)) return std::nullopt;
  int64_t value = int64_at(column);
  return value < 0 ? 0 : static_cast<uint64_t>(value);
}

Result<Transaction> Transaction::begin(sqlite3* db, const std::string& path) {
  Status status = exec_sql(db, path, "BEGIN IMMEDIATE", "cannot start a transaction");
  if (!status.ok()) return status.error();
  return Transaction(db, path);
}

Transaction::Transaction(Transaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Transaction::~Transaction() {
  if (db_ != nullptr) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

Status Transaction::commit() {
  if (db_ == nullptr) return Error(path_ + ": transaction committed twice (a bug in colo)");
  Status status = exec_sql(db_, path_, "COMMIT", "cannot commit");
  if (!status.ok()) return status;  // the destructor rolls back
  db_ = nullptr;
  return OkStatus();
}

ReadSnapshot::ReadSnapshot(sqlite3* db) {
  // A failed BEGIN leaves the reads as they were: each its own snapshot.
  if (sqlite3_get_autocommit(db) != 0 &&
      sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK)
    db_ = db;
}

ReadSnapshot::~ReadSnapshot() {
  if (db_ != nullptr) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

}  // namespace colo
