#include "store/store_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "store/schema.h"

namespace colo {
namespace {

constexpr int kOneThread = SQLITE_OPEN_NOMUTEX;

}  // namespace

bool is_in_memory_store(const std::string& path) {
  return path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0;
}

Result<SqliteDb> open_store_writable(const std::string& path, bool create) {
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW | kOneThread |
              (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  SqliteDb db(raw);
  if (rc != SQLITE_OK) return sqlite_error(db.get(), rc, "cannot open the run store", path);
  if (sqlite3_db_readonly(db.get(), "main") == 1) {
    return Error(
        fmt::format("{}: cannot open the run store for writing: the file is read-only", path));
  }
  sqlite3_busy_timeout(db.get(), kStoreBusyTimeoutMs);

  // The first statements read the file: a file that is not a database fails here.
  // Switching to WAL takes an exclusive lock without waiting on the busy
  // handler: colos creating one store at once wait for each other here.
  if (!is_in_memory_store(path)) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kStoreBusyTimeoutMs);
    while (true) {
      Status wal =
          exec_sql(db.get(), path, "PRAGMA journal_mode = WAL", "cannot open the run store");
      if (wal.ok()) break;
      if (!wal.error().transient() || std::chrono::steady_clock::now() >= deadline)
        return wal.error();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  Status status = migrate_schema(db.get(), path);
  if (!status.ok()) return status.error();
  status = exec_sql(db.get(), path, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
                    "cannot configure the run store");
  if (!status.ok()) return status.error();
  return db;
}

Result<SqliteDb> open_store_read_only(const std::string& path) {
  Error last("");
  for (const char* query : {"?mode=ro", "?immutable=1"}) {
    std::string uri = sqlite_uri(path, query);
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(
        uri.c_str(), &raw,
        SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW | kOneThread, nullptr);
    SqliteDb db(raw);
    if (rc != SQLITE_OK) {
      last = sqlite_error(db.get(), rc, "cannot open the run store read-only", path);
      continue;
    }
    sqlite3_busy_timeout(db.get(), kStoreBusyTimeoutMs);
    Result<int> version = read_schema_version(db.get(), path);
    if (!version.ok()) {
      last = version.error();
      continue;
    }
    if (*version != latest_schema_version()) {
      return Error(fmt::format(
          "{} has schema version {} and this colo reads version {}; it cannot be migrated while "
          "it is read-only: open it once where it can be written (any colo command does), or "
          "use a colo of its version",
          path, *version, latest_schema_version()));
    }
    return db;
  }
  return last;
}

Result<UniqueFd> hold_store_file(const std::string& path) {
  UniqueFd file(::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (file.get() < 0 && errno == ELOOP) {
    return Error(fmt::format(
        "{} is a symbolic link: colo opens a run store only at its real path (pass that with "
        "--db)",
        path));
  }
  struct stat st {};
  if (file.get() >= 0 && fstat(file.get(), &st) == 0 && st.st_uid == geteuid() &&
      (st.st_mode & 077) != 0)
    fchmod(file.get(), st.st_mode & 0700);
  return file;
}

std::string store_file_damage(int fd, const std::string& path) {
  if (fd < 0) return "";
  struct stat held {};
  if (fstat(fd, &held) != 0) return "";
  if (held.st_nlink == 0) return "was deleted under the service";
  struct stat now {};
  if (::lstat(path.c_str(), &now) != 0) return "was moved away under the service";
  if (now.st_dev != held.st_dev || now.st_ino != held.st_ino)
    return "was replaced under the service by another file";
  std::array<unsigned char, 101> header{};
  const ssize_t n = ::pread(fd, header.data(), header.size(), 0);
  if (n < static_cast<ssize_t>(header.size()))
    return fmt::format("was truncated under the service to {} bytes", held.st_size);
  if (std::memcmp(header.data(), "SQLite format 3", 16) != 0)
    return "was overwritten under the service: it no longer starts with SQLite's header";
  // The header's page count is valid when its "version valid for" matches
  // its change counter; the file holds at least that many pages.
  const auto be32 = [&](size_t at) {
    return (uint32_t{header[at]} << 24) | (uint32_t{header[at + 1]} << 16) |
           (uint32_t{header[at + 2]} << 8) | uint32_t{header[at + 3]};
  };
  const uint32_t page_size_field = (uint32_t{header[16]} << 8) | header[17];
  const uint64_t page_size = page_size_field == 1 ? 65536 : page_size_field;
  const uint64_t pages = be32(28);
  if (be32(92) == be32(24) && static_cast<uint64_t>(held.st_size) < pages * page_size) {
    return fmt::format(
        "was truncated under the service: {} bytes, where its header counts {} pages of {} bytes",
        held.st_size, pages, page_size);
  }
  // Page 1 is the schema's table: its b-tree page starts after the header.
  if (header[100] != 0x0d && header[100] != 0x05)
    return "was overwritten under the service: its first page is no longer SQLite's schema table";
  return "";
}

bool store_damage_confirmed(const std::string& before, const std::string& now) {
  return !now.empty() && now == before;
}

}  // namespace colo
