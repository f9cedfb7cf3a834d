// Every validation error of one file, collected so that the user can fix them
// all in one go: each message is prefixed with "file:line: " (or "file: "
// where no line applies), the first kMaxReportedErrors are kept, and the
// rest are counted. Pure; used by the job file reader.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace colo {

class Diagnostics {
 public:
  static constexpr size_t kMaxReportedErrors = 20;

  explicit Diagnostics(std::string path) : path_(std::move(path)) {}

  // One error at `line` (0 or below: the file as a whole).
  void add(int line, std::string_view message);
  bool empty() const { return count_ == 0; }
  const std::string& path() const { return path_; }
  // The kept messages one a line, then "... and N more errors" if any were
  // left out.
  Error to_error() const;

 private:
  std::string path_;
  std::vector<std::string> messages_;
  size_t count_ = 0;
};

}  // namespace colo
