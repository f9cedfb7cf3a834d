// A consistent copy of a run store taken while colo writes it: `colo
// backup` of a running service's store, and the store a Slurm shard
// publishes as its run ends (RunStore::copy_to).
//
// The copy is SQLite's online backup (sqlite3_backup_*) of one read
// snapshot, in one step, rather than VACUUM INTO: both read one snapshot
// and, the store being in WAL mode, neither blocks the service's writes
// (the WAL grows meanwhile instead, and is checkpointed after). The backup
// copies the pages as they are, where VACUUM INTO rebuilds every table and
// index: on a service's store of millions of samples it holds its snapshot
// for less time, and the copy is the store page for page, as `sqlite3
// .backup` writes it. One step, because a backup taken in several steps
// starts over whenever another connection writes between them, which the
// service does every half second. The copy is written into a file colo
// creates (StagedFile: exclusively, mode 0600, never through a link) and
// opens without following links, then renamed onto the target: the target
// is never half a copy.
//
// Threading: each call opens what it needs and closes it; the source
// connection passed to write_store_copy is used on the caller's thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/replace_file.h"
#include "common/result.h"

struct sqlite3;

namespace colo {

// What a copy holds, read back from the copy itself.
struct StoreCopy {
  std::string path;
  int64_t bytes = 0;
  int schema_version = 0;
  int64_t runs = 0;
  int64_t jobs = 0;
};

// Copies the database of `source` (its main schema; `source_path` names it
// in messages) to `out_path`. `existing` says what happens to a file there;
// replaced, its -wal, -shm and -journal go with it.
Result<StoreCopy> write_store_copy(sqlite3* source, const std::string& source_path,
                                   const std::string& out_path, ExistingFile existing);

// `colo backup`: opens the colo store at `store_path` for reading only (it
// is never migrated or written, whatever its schema version; a link there
// is refused) and copies it to `out_path`, while its writers go on.
Result<StoreCopy> backup_store(const std::string& store_path, const std::string& out_path,
                               ExistingFile existing);

// `colo backup --check`: reads every page of the copy at `path` (PRAGMA
// integrity_check) without writing anything beside it; an error names the
// first problems found.
Result<StoreCopy> check_store_copy(const std::string& path);

}  // namespace colo
