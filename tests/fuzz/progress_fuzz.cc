// Fuzz target: any bytes as what a job writes. The first line is taken as a
// step_regex (when RE2 accepts it); the whole input is then followed as a
// progress file and as the job's log (through that pattern, timm's and an
// epoch_regex with named groups), with small limits so that every bound is
// reached. Nothing may crash, and every event colo keeps must be plausible.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_target.h"
#include "jobs/progress.h"

namespace {

// One file per process, rewritten for each input and removed when the
// process exits.
const std::string& scratch_path() {
  static const std::string path = [] {
    std::string templ = "/tmp/colo-progress-fuzz.XXXXXX";
    int fd = mkstemp(templ.data());
    if (fd >= 0) ::close(fd);
    return templ;
  }();
  static const bool removed_at_exit = [] {
    return std::atexit([] { ::unlink(path.c_str()); }) == 0;
  }();
  (void)removed_at_exit;
  return path;
}

void check(const colo::ProgressEvent& e) {
  if (e.samples && (*e.samples < 0)) std::abort();
  if (e.epoch && (*e.epoch < 0 || *e.epoch > colo::kMaxEpoch)) std::abort();
  if (e.step && (*e.step < 0 || *e.step > colo::kMaxStep)) std::abort();
  if (e.kind.empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string& path = scratch_path();
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return 0;
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    ::close(fd);
    return 0;
  }
  ::close(fd);

  std::optional<std::string> step_regex =
      R"(Train: (?P<epoch>\d+) \[\s*(?P<step>\d+)/(?P<steps>\d+) .*Loss: (?P<loss>[0-9.]+))";
  const std::string first_line(text.substr(0, std::min(text.find('\n'), size_t{200})));
  if (colo::OutputPattern::compile(colo::PatternKind::kStep, first_line).ok()) {
    step_regex = first_line;
  }
  colo::ProgressLimits limits;
  limits.progress_file = colo::FollowLimits{256, 4096, 8192, 16384};
  limits.log = colo::FollowLimits{128, 4096, 8192, 16384};
  limits.parse_bytes_per_poll = 1024;
  limits.epoch_end_burst = 4;
  limits.other_event_burst = 4;
  const colo::UnixMillis start = 1'700'000'000'000;
  colo::Result<colo::ProgressReader> reader = colo::ProgressReader::create(
      {path, path, R"(Epoch (?P<epoch>\d+)(?: (?P<samples>\d+))?)", step_regex, 1000}, start,
      limits);
  if (!reader.ok()) std::abort();
  for (int poll = 0; poll < 3; ++poll) {
    for (const colo::ProgressEvent& e : reader->poll(start + 500 * poll, poll == 2)) check(e);
  }
  if (reader->malformed_lines() < 0 || reader->throttled().skipped_bytes < 0) std::abort();
  (void)reader->take_notices();
  return 0;
}
