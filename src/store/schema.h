// The run store's schema as an ordered list of migrations.
//
// Migration i (0-based) takes a database from schema version i to i + 1;
// `PRAGMA user_version` records the version reached. Migrations are only ever
// appended: a released migration is never edited. Each runs in its own
// transaction, so a crash leaves the database at a whole version.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

struct sqlite3;

namespace colo {

// Marks a database as colo's (`PRAGMA application_id`), so another program's
// SQLite file is refused rather than written into. ASCII "colo".
inline constexpr int kColoApplicationId = 0x636f6c6f;

// The SQL of each migration, oldest first.
const std::vector<std::string>& schema_migrations();

// The version a fully migrated database has (the number of migrations).
int latest_schema_version();

// Reads `PRAGMA user_version`.
Result<int> read_schema_version(sqlite3* db, const std::string& path);

// Brings the database to latest_schema_version(). Refuses, without changing
// anything, a database newer than this colo knows (says to upgrade colo) and
// a SQLite file that belongs to another program.
Status migrate_schema(sqlite3* db, const std::string& path);

}  // namespace colo
