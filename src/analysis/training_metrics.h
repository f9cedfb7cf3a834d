// What a job learned, as it reported it: its training metrics (loss,
// accuracy, val_*, anything it names), as opposed to colo's own figures
// about it (rates, memory, time). A job reports them through the Python
// client (colo_progress.log(loss=...), epoch_end(..., loss=...)) or through
// named groups of its epoch_regex/step_regex; they arrive in the metrics of
// its progress events, each with the event's time, step and epoch.
//
// Pure: from progress events, no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "jobs/progress_event.h"

namespace colo {

// False for the metrics colo or its reference scripts report about the run
// itself rather than about learning: rates and times (img_per_s,
// samples_per_s, epoch_time_s, total_time_s), memory (max_memory_*), the
// simulated backend's inputs (simulated_*), and any name ending in a unit of
// memory, rate or time (_mib, _gib, _kib, _mb, _gb, _bytes, _per_s, _time_s:
// device_used_mib, tokens_per_s).
bool is_training_metric(std::string_view name);

// Whether a smaller value is better: names that contain loss, error, err,
// mse, mae, rmse, perplexity or ppl (case-insensitive, as a word part:
// "val_loss", "top1_err"); larger is better for every other name (accuracy,
// f1, bleu, reward, ...). The rule `colo show` states in its help.
bool lower_is_better(std::string_view name);

struct MetricPoint {
  UnixMillis time_ms = 0;
  std::optional<int64_t> step;   // the event's step, when it had one
  std::optional<int64_t> epoch;  // the event's epoch, when it had one
  double value = 0;
};

// A value reported at an epoch end (with an epoch and no step): a series
// over steps has no place for it (the last step stored is not its own), so
// the report draws these over epochs, and the MLflow export keeps them
// apart (NAME_epoch), when the same metric also has values at steps.
inline bool is_epoch_end_point(const MetricPoint& p) { return p.epoch && !p.step; }

struct MetricSeries {
  std::string name;
  bool lower_is_better = false;
  bool declared = false;            // lower_is_better as the job file declared it
  std::vector<MetricPoint> points;  // oldest first
  double last = 0;                  // the newest point's value (NaN when it diverged)
  double best = 0;        // the smallest or largest finite value, by lower_is_better; NaN when none
  bool diverged = false;  // some value was not finite (NaN, inf): the training diverged
};

// What a job file declared better for its metrics ([objective]): name ->
// whether lower is better. It overrides lower_is_better()'s name rule.
using MetricGoals = std::map<std::string, bool, std::less<>>;

// When a trial's results froze: the time of its first kEarlyStoppedEvent at
// or after `since_ms` (early stopping stopped it there), else nullopt. What it
// reports after it, while it stops, is not its result (as Ray Tune ignores a
// trial's results after STOP).
std::optional<UnixMillis> results_frozen_at(const std::vector<ProgressEvent>& events,
                                            std::optional<UnixMillis> since_ms);

// The training metrics in the events a job writes (start, epoch_end, step,
// metric, end; not colo's own: a probe's or prior's figures, retries) among
// `events`, at or after `since_ms` (a job's last attempt: an earlier
// attempt's curve is not this one's) and, for a trial early stopping
// stopped, not after its results froze (results_frozen_at), one series per
// name, in name order. A series has at least one point. `goals`: the job's
// declared ones.
std::vector<MetricSeries> training_metrics(const std::vector<ProgressEvent>& events,
                                           std::optional<UnixMillis> since_ms,
                                           const MetricGoals& goals = {});

// The warning for a job whose file declares the [objective] `objective`
// and which reports the training metrics `reported` (names, in order) but not
// it, e.g. "objective 'val_acc' not reported by w[lr=0.1]: it reports loss,
// val_loss; early stopping cannot judge it, nor colo show rank by it";
// nullopt when `reported` is empty or holds it. colo run says it as the job
// reports (run/objective_watch.h), colo show again from what was stored.
std::optional<std::string> objective_not_reported(std::string_view objective, std::string_view job,
                                                  const std::vector<std::string>& reported);

// The series named `name`, or nullptr; `metrics` in name order, as
// training_metrics gives them (a binary search: a job may have 1,000 names).
const MetricSeries* find_metric(const std::vector<MetricSeries>& metrics, std::string_view name);

// Whether a chart of values from `low` to `high` (its smallest and largest
// finite ones) reads better on a logarithmic value axis: all above zero and
// the largest at least kLogAxisSpan times the smallest (two orders of
// magnitude or more: a loss from 25 to 0.013 is a flat line at zero on a
// linear axis). The report's charts and the dashboard's both draw so.
inline constexpr double kLogAxisSpan = 100;
bool wants_log_axis(double low, double high);
// The same over a series' finite values (a diverged job's others are left
// out, as charts leave them out); false for fewer than two.
bool wants_log_axis(const std::vector<MetricPoint>& points);

}  // namespace colo
