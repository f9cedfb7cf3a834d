// LiveDisplay: what `colo run` shows while jobs run. On a terminal, one line
// per job redrawn in place; otherwise (a pipe, a log file, CI) plain lines,
// one per event, that read well in a log.
//
// Not thread-safe; the run engine's thread owns it.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace colo {

struct JobLine {
  std::string name;
  std::string state;  // "queued", "running", "ok", ...
  std::optional<int> device;
  int64_t elapsed_ms = 0;
  int64_t epochs = 0;
  std::optional<int64_t> last_epoch_ms;
  std::optional<double> samples_per_s;  // of the last epoch
  std::string note;                     // reason for a failure, etc.
};

class LiveDisplay {
 public:
  LiveDisplay(std::ostream& out, bool in_place) : out_(out), in_place_(in_place) {}

  // A one-off line (job started, epoch ended, warning). In place mode it is
  // printed above the job table.
  void event(const std::string& line);
  // Redraws the table (in place mode only; plain mode ignores it).
  void redraw(const std::string& header, const std::vector<JobLine>& jobs);
  // Leaves the last table on screen and moves below it.
  void finish();

 private:
  void erase_table();
  std::ostream& out_;
  bool in_place_;
  int drawn_lines_ = 0;
};

// One table row, also used by tests: "resnet26#1  running  gpu0  1m05s  epoch
// 3  4.1s/epoch  12.3k/s".
std::string format_job_line(const JobLine& job, size_t name_width);

}  // namespace colo
