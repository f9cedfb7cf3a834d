// Tables of text cells as colo's reports write them: `Table`, the rows a
// report's page shows and writes as CSV, and `TextTable`, the fixed-width
// tables of `colo show`, `colo runs` and summary.txt. Pure.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

namespace colo {

// Rows of text cells with a header; numbers in full precision (number_cell),
// absent values empty.
struct Table {
  std::string name;  // file stem: csv/<name>.csv
  std::string title;
  std::string caption;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  bool show_in_page = true;  // false: written as CSV only
  int link_column = -1;      // its cells are files (absolute paths), shown as links to them
};

// RFC 4180 CSV: header line, one line per row, quoted where needed.
std::string to_csv(const Table& table);

// A number as a Table holds it: the shortest text that reads back to the
// same value; an absent one as "".
std::string number_cell(double value);
template <class T>
std::string number_cell(const std::optional<T>& value) {
  return value ? fmt::format("{}", *value) : std::string();
}

// Columns padded to their widest cell (in bytes), two spaces apart, each
// aligned left or right; one line per row, the header's first; no trailing
// spaces. A row with fewer cells than columns is padded with empty ones;
// cells past the last column are dropped.
class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string header;
    Align align = Align::kLeft;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void add_row(std::vector<std::string> cells);
  std::string render() const;

 private:
  std::string render_row(const std::vector<std::string>& cells,
                         const std::vector<size_t>& widths) const;

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace colo
