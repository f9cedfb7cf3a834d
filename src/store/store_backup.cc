#include "store/store_backup.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "store/schema.h"
#include "store/sqlite_util.h"
#include "store/store_file.h"

namespace colo {
namespace {

Result<int64_t> read_int(sqlite3* db, const std::string& path, std::string_view sql) {
  auto stmt = Statement::prepare(db, path, sql);
  if (!stmt.ok()) return stmt.error();
  auto row = stmt->step();
  if (!row.ok()) return row.error();
  if (!*row || stmt->is_null(0)) return int64_t{0};
  return stmt->int64_at(0);
}

// The schema version of a colo store; an error for any other SQLite file.
Result<int> colo_schema_version(sqlite3* db, const std::string& path) {
  Result<int64_t> app = read_int(db, path, "PRAGMA application_id");
  if (!app.ok()) return app.error();
  Result<int64_t> version = read_int(db, path, "PRAGMA user_version");
  if (!version.ok()) return version.error();
  if ((*app != 0 && *app != kColoApplicationId) || *version < 1) {
    return Error(fmt::format("{} is not a colo store (application id {:#x}, schema version {})",
                             path, static_cast<uint64_t>(*app), *version));
  }
  return static_cast<int>(*version);
}

// What `copy` holds: its schema version and how many runs and jobs.
Status count_rows(sqlite3* db, const std::string& path, StoreCopy& copy) {
  Result<int> version = colo_schema_version(db, path);
  if (!version.ok()) return version.error();
  Result<int64_t> runs = read_int(db, path, "SELECT count(*) FROM runs");
  if (!runs.ok()) return runs.error();
  Result<int64_t> jobs = read_int(db, path, "SELECT count(*) FROM jobs");
  if (!jobs.ok()) return jobs.error();
  copy.schema_version = *version;
  copy.runs = *runs;
  copy.jobs = *jobs;
  return OkStatus();
}

// An existing regular file, never reached through a link.
Status check_regular_file(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return Error(fmt::format("{}: no {} there ({})", path, what, std::strerror(errno)));
  }
  if (S_ISLNK(st.st_mode)) {
    return Error(fmt::format(
        "{} is a symbolic link: colo opens a {} only at its real path (give that)", path, what));
  }
  if (!S_ISREG(st.st_mode)) return Error(fmt::format("{} is not a regular file", path));
  return OkStatus();
}

Result<SqliteDb> open_for_reading(const std::string& path, std::string_view query) {
  const std::string uri = sqlite_uri(path, query);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(
      uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW, nullptr);
  SqliteDb db(raw);
  if (rc != SQLITE_OK) return sqlite_error(db.get(), rc, "cannot open the store to read it", path);
  sqlite3_busy_timeout(db.get(), kStoreBusyTimeoutMs);
  return db;
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

Result<StoreCopy> write_store_copy(sqlite3* source, const std::string& source_path,
                                   const std::string& out_path, ExistingFile existing) {
  const std::string where = fmt::format("copying {} to {}", source_path, out_path);
  Result<StagedFile> staged = StagedFile::create(out_path, kPrivateDurableFile);
  if (!staged.ok()) return staged.error();
  StoreCopy copy;
  copy.path = out_path;
  {
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(staged->path().c_str(), &raw,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, nullptr);
    SqliteDb dest(raw);
    if (rc != SQLITE_OK) {
      return sqlite_error(dest.get(), rc, "cannot open the copy", staged->path())
          .with_context(where);
    }
    sqlite3_backup* backup = sqlite3_backup_init(dest.get(), "main", source, "main");
    if (backup == nullptr) {
      return sqlite_error(dest.get(), sqlite3_errcode(dest.get()), "cannot start the copy",
                          source_path)
          .with_context(where);
    }
    // One step: every page of one read snapshot. A lock taken by another
    // process at that moment (a checkpoint, a migration) is waited for.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kStoreBusyTimeoutMs);
    do {
      rc = sqlite3_backup_step(backup, -1);
      if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (std::chrono::steady_clock::now() < deadline);
    const int finished = sqlite3_backup_finish(backup);
    if (rc != SQLITE_DONE) {
      // A full disk, a read-only or missing directory is the copy's; the rest the store's.
      const int primary = rc & 0xff;
      const bool writing =
          primary == SQLITE_FULL || primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN;
      return sqlite_error(dest.get(), rc, "cannot copy the store", writing ? out_path : source_path)
          .with_context(where);
    }
    if (finished != SQLITE_OK) {
      return sqlite_error(dest.get(), finished, "cannot write the copy", out_path)
          .with_context(where);
    }
    if (Status counted = count_rows(dest.get(), staged->path(), copy); !counted.ok())
      return counted.error().with_context(where);
  }
  struct stat st {};
  if (fstat(staged->fd(), &st) == 0) copy.bytes = st.st_size;
  if (Status s = staged->commit(existing); !s.ok()) return s.error();
  // What SQLite kept beside the file replaced belonged to it: left there,
  // its WAL would be read into the copy.
  if (existing == ExistingFile::kReplace) {
    for (const char* suffix : {"-wal", "-shm", "-journal"}) ::unlink((out_path + suffix).c_str());
  }
  return copy;
}

Result<StoreCopy> backup_store(const std::string& store_path, const std::string& out_path,
                               ExistingFile existing) {
  if (Status s = check_regular_file(store_path, "run store"); !s.ok()) return s.error();
  // Never the store itself, nor its WAL or shared memory (by name, or the
  // same file by another): the service would lose what it writes.
  const auto normal = [](const std::string& p) {
    return std::filesystem::absolute(p).lexically_normal();
  };
  struct stat out {};
  const bool exists = ::lstat(out_path.c_str(), &out) == 0;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string own = store_path + suffix;
    struct stat part {};
    if (normal(own) == normal(out_path) ||
        (exists && ::stat(own.c_str(), &part) == 0 && same_file(part, out))) {
      return Error(fmt::format("{} is the store's own file{}: back it up somewhere else", out_path,
                               *suffix == '\0' ? "" : fmt::format(" ({})", suffix)));
    }
  }
  if (exists && existing == ExistingFile::kRefuse) {
    return Error(
        fmt::format("{} already exists: give a new file, or replace it with --force", out_path));
  }
  Result<SqliteDb> source = open_for_reading(store_path, "?mode=ro");
  if (!source.ok()) return source.error();
  if (Result<int> version = colo_schema_version(source->get(), store_path); !version.ok())
    return version.error();
  return write_store_copy(source->get(), store_path, out_path, existing);
}

Result<StoreCopy> check_store_copy(const std::string& path) {
  if (Status s = check_regular_file(path, "store copy"); !s.ok()) return s.error();
  // A copy at rest has no WAL: read it as a file nobody writes, which
  // creates no -wal or -shm beside it. One with a WAL (a colo opened it
  // since) is read through that WAL.
  struct stat wal {};
  const bool has_wal = ::lstat((path + "-wal").c_str(), &wal) == 0;
  Result<SqliteDb> db = open_for_reading(path, has_wal ? "?mode=ro" : "?immutable=1");
  if (!db.ok()) return db.error();
  StoreCopy copy;
  copy.path = path;
  if (Status counted = count_rows(db->get(), path, copy); !counted.ok()) return counted.error();
  auto check = Statement::prepare(db->get(), path, "PRAGMA integrity_check(20)");
  if (!check.ok()) return check.error();
  std::string problems;
  Status read = check->for_each_row([&]() -> Status {
    const std::string line = check->text_at(0);
    if (line != "ok") problems += (problems.empty() ? "" : "; ") + line;
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  if (!problems.empty()) {
    return Error(fmt::format("{} is damaged (SQLite's integrity check): {}", path, problems));
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) copy.bytes = st.st_size;
  return copy;
}

}  // namespace colo
