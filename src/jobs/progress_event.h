// Progress events that jobs report while they run, and the one parser of the
// JSON lines jobs append to $COLO_PROGRESS_FILE (python/colo_progress.py
// writes them), e.g.
//   {"event":"epoch_end","epoch":2,"samples":50000,"time":1700000000.5,"metrics":{"loss":0.31}}
// Known events: "start", "epoch_start", "epoch_end", "step", "metric", "end".
// colo itself adds "requeued" and "throttled" (see progress.h), and
// kEarlyStoppedEvent.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace colo {

inline constexpr const char* kProgressFileEnv = "COLO_PROGRESS_FILE";

// colo's event when early stopping stops a trial (docs/early-stopping.md),
// at the time of the report that decided: the trial's results freeze there
// (what it reports while it stops does not count).
inline constexpr const char* kEarlyStoppedEvent = "early_stopped";

// The plausible ranges of what a job reports; anything outside makes the line
// malformed. They keep every sum colo makes of them far from overflowing.
inline constexpr int64_t kMaxEpoch = 1'000'000'000;                // an epoch number
inline constexpr int64_t kMaxStep = 1'000'000'000'000;             // a step number or count
inline constexpr int64_t kMaxSamplesPerEvent = 1'000'000'000'000;  // samples in one event
// A "time" is plausible from kMaxLineAgeMs before colo read the line (a line
// read late) to kMaxClockSkewMs after it: the job runs on colo's machine, so
// both read the same clock.
inline constexpr int64_t kMaxLineAgeMs = 24LL * 3600 * 1000;
inline constexpr int64_t kMaxClockSkewMs = 60'000;

// A metric's value in JSON: a number, or for a value that is not finite
// (a diverged loss) the string "nan", "inf" or "-inf" (JSON has no NaN;
// python/colo_progress.py writes these). metric_from_json reads either
// (the strings in any case: Python's "NaN", "Infinity"), else nullopt.
nlohmann::json metric_to_json(double value);
std::optional<double> metric_from_json(const nlohmann::json& value);
nlohmann::json metrics_to_json(const std::map<std::string, double>& metrics);

struct ProgressEvent {
  UnixMillis time_ms = 0;  // from the line's "time" (seconds, float) or when read
  std::string kind;        // "epoch_end", ...
  std::optional<int64_t> epoch;
  std::optional<int64_t> step;
  std::optional<int64_t> samples;  // samples processed in this epoch/step
  std::map<std::string, double> metrics;
};

// Parses one line. `read_time_ms` is used when the line has no "time".
// The line must be a JSON object with a non-empty string "event"; "epoch"
// (0..kMaxEpoch), "step" (0..kMaxStep) and "samples" (0..kMaxSamplesPerEvent)
// must be integers in range, and "time" a plausible number of seconds since
// the Unix epoch (see kMaxLineAgeMs) when present (null counts as absent);
// "metrics" must be an object. Finite numeric entries of "metrics", and of
// top-level keys other than the known ones, become metrics; other metric
// values are ignored (the line is still valid). Anything else is an Error
// saying what is wrong.
Result<ProgressEvent> parse_progress_line(std::string_view line, UnixMillis read_time_ms);

// What was held back from one job; all zero for a well-behaved one.
struct ThrottleCounts {
  int64_t skipped_bytes = 0;     // unread, to catch up with the job or at its end
  int64_t dropped_events = 0;    // lines not parsed, or events over the bucket
  int64_t coalesced_epochs = 0;  // epoch ends folded into a later one
  int64_t refused_files = 0;     // progress file or log refused (link, FIFO, device)
  int64_t dropped_metrics = 0;   // values of metric names beyond ProgressLimits::max_metric_names

  bool any() const {
    return skipped_bytes > 0 || dropped_events > 0 || coalesced_epochs > 0 || refused_files > 0 ||
           dropped_metrics > 0;
  }
  // "912.0 MiB skipped, 4021 events dropped, ..." for notes.
  std::string describe() const;
  // As the metrics of a "throttled" event, and back.
  ProgressEvent to_event(UnixMillis time_ms) const;
  static ThrottleCounts from_event(const ProgressEvent& event);
};

}  // namespace colo
