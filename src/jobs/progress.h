// Progress events that jobs report while they run.
//
// Each job gets COLO_PROGRESS_FILE naming a file where it may append JSON
// lines (python/colo_progress.py writes them), e.g.
//   {"event":"epoch_end","epoch":2,"samples":50000,"time":1700000000.5,"metrics":{"loss":0.31}}
// Known events: "start", "epoch_start", "epoch_end", "step", "metric", "end".
// Unknown events and extra keys are kept; malformed lines are counted and
// ignored, never fatal. For scripts that cannot be changed, an epoch regex
// over stdout marks epoch ends instead.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"

namespace colo {

inline constexpr const char* kProgressFileEnv = "COLO_PROGRESS_FILE";

struct ProgressEvent {
  UnixMillis time_ms = 0;  // from the line's "time" (seconds, float) or when read
  std::string kind;        // "epoch_end", ...
  std::optional<int64_t> epoch;
  std::optional<int64_t> step;
  std::optional<int64_t> samples;  // samples processed in this epoch/step
  std::map<std::string, double> metrics;
};

// Parses one line. `read_time_ms` is used when the line has no "time".
// The line must be a JSON object with a non-empty string "event"; "epoch",
// "step" and "samples" must be integers and "time" a number of seconds when
// present (null counts as absent); "metrics" must be an object. Numeric
// entries of "metrics", and numeric top-level keys other than the known
// ones, become metrics; non-numeric metric values are ignored (the line is
// still valid). Anything else is an Error saying what is wrong.
Result<ProgressEvent> parse_progress_line(std::string_view line, UnixMillis read_time_ms);

// Follows a growing file and returns the complete lines appended since the
// last call (a partial last line waits for its newline). A missing file is
// not an error (the job has not written yet). Lines are returned without
// their "\n" (or "\r\n"). A file that shrank or was replaced (new inode) is
// read again from the start. A line that reaches 1 MiB without a newline is
// returned as it is. Not thread-safe; owns only its offset and buffer.
class LineFollower {
 public:
  explicit LineFollower(std::string path) : path_(std::move(path)) {}
  std::vector<std::string> read_new_lines();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  uint64_t offset_ = 0;
  uint64_t inode_ = 0;  // of the file last read; 0 before the first read
  std::string partial_;
};

// Turns a job's progress file (and optionally its stdout log, through an
// epoch regex) into events. Counts malformed lines; blank lines are skipped
// and not counted. Either path may be empty (not followed). Not thread-safe.
//
// Regex epochs: the epoch number is the first capture group when it is an
// integer, otherwise one more than the previous regex epoch (a running count
// that continues from the last numbered match). Only the first 4096 bytes of
// a log line are matched.
class ProgressReader {
 public:
  // `epoch_regex`, when set, is matched against each new line of `log_path`;
  // a match is an epoch_end, with the first capture group (if numeric) as the
  // epoch number. Fails on an invalid regex.
  static Result<ProgressReader> create(const std::string& progress_path,
                                       const std::string& log_path,
                                       const std::optional<std::string>& epoch_regex);

  std::vector<ProgressEvent> poll(UnixMillis now_ms);
  int64_t malformed_lines() const { return malformed_; }

 private:
  ProgressReader(std::string progress_path, std::string log_path, std::optional<std::regex> re);

  LineFollower progress_;
  LineFollower log_;
  std::optional<std::regex> epoch_regex_;
  int64_t regex_epochs_ = 0;
  int64_t malformed_ = 0;
};

}  // namespace colo
