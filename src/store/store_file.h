// The run store's file: how colo opens it, and whether it is still the file
// it opened (RunStore::open, RunStore::file_damage).
//
// A store is opened without following a link (one at --db in a directory
// others may write would make colo, maybe root, create or write the store
// where it points), readable by its owner only, and its connection is used
// by one thread at a time (SQLITE_OPEN_NOMUTEX: reading a service's millions
// of samples spent an eighth of its time locking and unlocking one).
// Errors are values naming the path and what to do.
#pragma once

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "store/sqlite_util.h"

namespace colo {

// How long a write waits for another process's lock before it fails with a
// transient error (the caller may try again later).
inline constexpr int kStoreBusyTimeoutMs = 5000;

// Whether `path` names no file of its own: "", ":memory:" or a "file:" URI.
bool is_in_memory_store(const std::string& path);

// Opens the store at `path` for writing (creating it when `create`) and
// configures it: WAL (colos creating one store at once wait for each other,
// up to kStoreBusyTimeoutMs), the latest schema (migrate_schema), synchronous
// NORMAL, foreign keys on. An error when the file is read-only or is not a
// database.
Result<SqliteDb> open_store_writable(const std::string& path, bool create);

// Opens an existing store read-only: through the WAL when its shared-memory
// file can be used, else as an immutable file (a read-only file system).
// Refuses a schema other than the latest (it cannot be migrated).
Result<SqliteDb> open_store_read_only(const std::string& path);

// The store's file at `path`, opened (created 0600 when missing) without
// following a link, its group and other permissions taken away when this
// process owns it: held as long as the store, since closing any descriptor
// of the file would drop the locks SQLite holds on it. An error when `path`
// is a symbolic link; an invalid descriptor when it cannot be opened
// otherwise (SQLite then says why).
Result<UniqueFd> hold_store_file(const std::string& path);

// Why the SQLite file held as `fd`, opened at `path`, is no longer sound,
// "" while it is (or when `fd` is invalid): deleted, moved away or replaced
// at `path`, truncated, or overwritten (SQLite's header, its page count, the
// schema page), as "was deleted under the service". Reads through `fd`
// only, never opening the file again.
std::string store_file_damage(int fd, const std::string& path);

// Whether two consecutive store_file_damage() verdicts, `before` then `now`,
// confirm damage: the same verdict twice. A checkpoint that extends the file
// (colo's own, or another process's on the same store) writes page 1, whose
// header counts the new pages, before the pages past the old end: for that
// while the file is shorter than its header says, but it grows, so the
// verdict (which names the size) changes from one check to the next.
bool store_damage_confirmed(const std::string& before, const std::string& now);

}  // namespace colo
