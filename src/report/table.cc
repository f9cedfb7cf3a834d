#include "report/table.h"

#include <algorithm>

namespace colo {

std::string to_csv(const Table& table) {
  auto field = [](const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) {
      if (c == '"') quoted += '"';
      quoted += c;
    }
    return quoted + "\"";
  };
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + field(cells[i]);
    return out + "\n";
  };
  std::string out = line(table.header);
  for (const auto& row : table.rows) out += line(row);
  return out;
}

std::string number_cell(double value) { return fmt::format("{}", value); }

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::render() const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = columns_[c].header.size();
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  std::vector<std::string> header;
  for (const Column& column : columns_) header.push_back(column.header);
  std::string out = render_row(header, widths);
  for (const auto& row : rows_) out += render_row(row, widths);
  return out;
}

std::string TextTable::render_row(const std::vector<std::string>& cells,
                                  const std::vector<size_t>& widths) const {
  std::string line;
  for (size_t c = 0; c < cells.size(); ++c) {
    if (c > 0) line += "  ";
    const size_t pad = widths[c] - cells[c].size();
    if (columns_[c].align == Align::kRight) {
      line += std::string(pad, ' ') + cells[c];
    } else {
      line += cells[c];
      if (c + 1 < cells.size()) line += std::string(pad, ' ');
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

}  // namespace colo
