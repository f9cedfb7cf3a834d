// Reading what a job reports while it runs: the JSON lines it appends to
// $COLO_PROGRESS_FILE (progress_event.h), and its output through the job
// file's epoch_regex and step_regex (output_patterns.h).
//
// Whatever a job writes, reading it costs colo bounded memory and bounded
// time per poll (ProgressLimits), so the run loop keeps recording other jobs'
// ends on time. A job that reports faster than that is throttled: colo then
// keeps its epoch ends (coalescing them beyond a rate) and skips or drops the
// rest, and says so once (take_notices(), and a "throttled" event).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "jobs/line_follower.h"
#include "jobs/output_patterns.h"
#include "jobs/progress_event.h"

namespace colo {

// Bounds on what colo takes from one job. Defaults suit every real training
// script by a wide margin; tests shrink them.
struct ProgressLimits {
  FollowLimits progress_file;  // the JSON lines
  // The job's output log: regexes see at most the first 4096 bytes of a line.
  FollowLimits log{4096, 16ULL << 20, 64ULL << 20, 256ULL << 20};
  // JSON lines parsed per poll; beyond this, only epoch_end lines are parsed
  // (up to as many bytes again) and the others are dropped.
  uint64_t parse_bytes_per_poll = 4ULL << 20;
  // Step events: at most one per interval; the steps between are coalesced
  // into it (samples summed, the latest step's number, time and metrics).
  int64_t step_interval_ms = 1000;
  // Steps that carry metrics (a loss per step) also pass through a token
  // bucket: a short run keeps every step it logged (up to the burst), a long
  // one about one a second more, so its curve and best value are not those
  // of a one-a-second sample (400 steps logged in 5 s kept 5).
  double metric_steps_per_s = 1;
  int64_t metric_step_burst = 2000;
  // Epoch ends: a token bucket; ends beyond it are coalesced into the next
  // one let through (samples summed, "coalesced_epochs" = how many it holds).
  double epoch_ends_per_s = 20;
  int64_t epoch_end_burst = 200;
  // Any other event (start, metric, end, custom ones): beyond this bucket they
  // are dropped.
  double other_events_per_s = 10;
  int64_t other_event_burst = 100;
  // Distinct metric names taken from one job (its first ones); the values of
  // any other name are dropped and counted (ThrottleCounts::dropped_metrics).
  size_t max_metric_names = 1000;
};

// What to follow for one job.
struct ProgressSources {
  std::string progress_path;  // JSON lines; empty: not followed
  std::string log_path;       // the job's output; read only with a regex
  std::optional<std::string> epoch_regex;
  std::optional<std::string> step_regex;
  std::optional<int64_t> epoch_samples;  // for epoch ends that do not say
};

// Bounds the events of one job: see ProgressLimits. Time is colo's (when it
// read the lines), never the job's. Not thread-safe.
class EventThrottle {
 public:
  EventThrottle(const ProgressLimits& limits, UnixMillis now_ms);

  // Takes one event read at `now_ms`; appends what may be recorded to `out`.
  void add(ProgressEvent event, UnixMillis now_ms, std::vector<ProgressEvent>& out);
  // Appends coalesced events that are due (all of them with `final`).
  void flush(UnixMillis now_ms, bool final, std::vector<ProgressEvent>& out);
  // An event that was not even parsed (over the per-poll budget).
  void count_dropped() { ++dropped_; }

  int64_t dropped_events() const { return dropped_; }
  int64_t coalesced_epochs() const { return coalesced_epochs_; }

 private:
  struct Bucket {
    double tokens = 0;
    UnixMillis refilled_ms = 0;
    bool take(double per_s, int64_t burst, UnixMillis now_ms);
  };
  void emit_epoch(std::vector<ProgressEvent>& out);
  void emit_step(UnixMillis now_ms, std::vector<ProgressEvent>& out);

  ProgressLimits limits_;
  Bucket epoch_bucket_;
  Bucket other_bucket_;
  Bucket metric_step_bucket_;
  std::optional<ProgressEvent> pending_step_;
  UnixMillis last_step_ms_ = 0;  // when a step was last let through
  std::optional<ProgressEvent> pending_epoch_;
  int64_t pending_epochs_ = 0;  // epoch ends pending_epoch_ holds
  int64_t dropped_ = 0;
  int64_t coalesced_epochs_ = 0;
};

// Turns a job's progress file and output into events. Counts malformed
// lines (blank lines are skipped and not counted). Not thread-safe.
//
// Event times: a JSON line's "time" when it has one, else when colo read the
// line; never before the reader was created (the job had not started). Log
// lines read in one poll were written since the poll before: each is stamped
// at its share of that time by its place in the bytes read (on a busy
// machine colo may read seconds of a job's output at once; stamped all at
// once, its epochs bunched, and a speed-up figure from them read 2.1 where
// the job's own times gave 3.2).
//
// epoch_regex epochs: the `epoch` group (or, without named groups, the first
// group when it is an integer), otherwise one more than the previous regex
// epoch; samples from the `samples` group, else epoch_samples. step_regex:
// see StepTracker. With both, epoch ends come from epoch_regex only.
class ProgressReader {
 public:
  // Fails when a regex does not compile (job files are checked earlier, so
  // this is for callers that skip that).
  static Result<ProgressReader> create(const ProgressSources& sources, UnixMillis now_ms,
                                       const ProgressLimits& limits = {});

  // Reads what is new. With `job_exited`, reads the rest (up to the final
  // budget, skipping what is beyond) and lets every held-back event out.
  std::vector<ProgressEvent> poll(UnixMillis now_ms, bool job_exited = false);

  // Follows a new log path from its start (a retried job logs elsewhere).
  void follow_log(const std::string& log_path);
  // The log was cut in place to `size` bytes (jobs/log_cap.h): reading goes
  // on from there, without reading its kept tail again.
  void log_cut(uint64_t size) { log_.resume_at(size); }

  int64_t malformed_lines() const { return malformed_; }
  ThrottleCounts throttled() const;
  // Things to tell the job's owner, each once: a refused file, and the first
  // time its progress was throttled.
  std::vector<std::string> take_notices();

 private:
  ProgressReader(const ProgressSources& sources, UnixMillis now_ms, const ProgressLimits& limits,
                 std::optional<OutputPattern> epoch_pattern,
                 std::optional<OutputPattern> step_pattern);
  void read_progress_line(std::string_view line, bool truncated, UnixMillis now_ms,
                          std::vector<ProgressEvent>& out);
  // A line of the log read at `now_ms` (the throttle's time), written at
  // about `line_ms` (its events' time).
  void read_log_line(std::string_view line, UnixMillis line_ms, UnixMillis now_ms,
                     std::vector<ProgressEvent>& out);
  void take(ProgressEvent event, UnixMillis now_ms, std::vector<ProgressEvent>& out);

  ProgressLimits limits_;
  UnixMillis created_ms_;
  UnixMillis last_poll_ms_;  // the poll before (created_ms_ before the first)
  LineFollower progress_;
  LineFollower log_;
  std::optional<OutputPattern> epoch_pattern_;
  std::optional<OutputPattern> step_pattern_;
  std::optional<int64_t> epoch_samples_;
  StepTracker steps_;
  EventThrottle throttle_;
  int64_t regex_epochs_ = 0;
  int64_t malformed_ = 0;
  std::unordered_set<std::string> metric_names_;  // at most limits_.max_metric_names
  int64_t dropped_metrics_ = 0;
  bool metrics_noted_ = false;
  uint64_t parsed_bytes_ = 0;  // in this poll
  bool throttle_noted_ = false;
};

// Appends "colo: <note>" as a line to a job's log, so that whoever reads the
// log learns what colo did about the job (e.g. throttled its progress). Only
// a regular file is written (never through a link); failures are ignored.
void append_note_to_log(const std::string& log_path, const std::string& note);

}  // namespace colo
