// Reading a store the way a user with sqlite3 would, for end-to-end tests.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

namespace colo {

// The rows of `query` on the SQLite file `db` (opened read-only), each row's
// columns joined by '|'; none when the file cannot be opened or read.
inline std::vector<std::string> sql_rows(const std::string& db, const std::string& query) {
  std::vector<std::string> rows;
  sqlite3* handle = nullptr;
  if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(handle);
    return rows;
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(handle, query.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        const unsigned char* text = sqlite3_column_text(stmt, c);
        row += (c ? "|" : "") + std::string(text ? reinterpret_cast<const char*>(text) : "");
      }
      rows.push_back(row);
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(handle);
  return rows;
}

}  // namespace colo
