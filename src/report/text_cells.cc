#include "report/text_cells.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace colo {

std::string metric_text(double value) { return fmt::format("{:.4g}", value); }

std::string label_text(const RunLabel& label) {
  std::vector<std::string> words;
  if (!label.name.empty()) words.push_back(label.name);
  for (const auto& [key, value] : label.tags) words.push_back(key + "=" + value);
  return words.empty() ? std::string(kAbsentText) : fmt::format("{}", fmt::join(words, " "));
}

}  // namespace colo
