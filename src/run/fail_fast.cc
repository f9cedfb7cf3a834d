#include "run/fail_fast.h"

#include <fmt/format.h>

namespace colo {

std::string job_file_of(const JobSpec& spec) {
  return spec.source.substr(0, spec.source.rfind(':'));
}

std::optional<std::string> FailFast::ended(const std::string& file, JobState state,
                                           const std::string& note) {
  File& f = files_[file];
  if (f.settled) return std::nullopt;
  if (state == JobState::kOk || state == JobState::kStopped) {
    f.settled = true;  // one ended well: the file's jobs can run
    return std::nullopt;
  }
  if (state != JobState::kFailed) return std::nullopt;  // cancelled, out of memory, ...
  if (!f.reasons.empty() && note != f.reasons.front()) {
    f.settled = true;  // failures of different kinds: not one cause
    return std::nullopt;
  }
  f.reasons.push_back(note);
  if (static_cast<int>(f.reasons.size()) < kFailFastJobs) return std::nullopt;
  f.settled = true;
  return fmt::format("the first {} jobs of {} to end all failed the same way ({})", kFailFastJobs,
                     file, f.reasons.front());
}

}  // namespace colo
