#include "jobs/file_diagnostics.h"

#include <fmt/format.h>

namespace colo {

void Diagnostics::add(int line, std::string_view message) {
  ++count_;
  if (messages_.size() >= kMaxReportedErrors) return;
  if (line > 0) {
    messages_.push_back(fmt::format("{}:{}: {}", path_, line, message));
  } else {
    messages_.push_back(fmt::format("{}: {}", path_, message));
  }
}

Error Diagnostics::to_error() const {
  std::string text;
  for (const std::string& m : messages_) {
    if (!text.empty()) text += '\n';
    text += m;
  }
  if (count_ > messages_.size()) {
    text += fmt::format("\n... and {} more errors", count_ - messages_.size());
  }
  return Error(std::move(text));
}

}  // namespace colo
