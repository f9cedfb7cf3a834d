// FloorWatch: whether a protected job keeps its floor (docs/policy.md,
// "Protected and opportunistic jobs"): its measured rate against `min_speed`
// x its solo rate, over its steady epochs.
//
// It is fed the job's epoch rates as the engine computes them from the job's
// reports (samples of the epoch over the time since the previous epoch's
// end), each with its duration and whether it was steady: the attempt's
// first epoch (start-up), and epochs the job marks as a checkpoint's or an
// evaluation's, are not, and do not count for or against the floor. Until a
// solo rate is known (the store's, else the job's hint; solo()), it measures
// nothing: reports before then are ignored.
//
// The job is below its floor once its steady epochs in a row have been below
// it for the window: at least `reports` of them (2) and at least `window_ms`
// (10 s) of steady time, whichever is later. A steady epoch at or above the
// floor ends the run; an epoch that is not steady neither ends nor extends
// it. report() says so once per run: after it fired, a new run of the window
// must pass before it fires again (time for a stop to take effect).
//
// It keeps the share of the job's steady time spent below the floor and its
// latest speed (the engine's view: colo queue, top, the dashboard, /metrics).
// What counts as steady, as an epoch's rate and as below is
// analysis/floor_history.h's, which `colo show` derives from the store with.
// Pure: times are passed in (wall clock, UnixMillis). Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/floor_history.h"
#include "common/clock.h"

namespace colo {

struct FloorOptions {
  int reports = 2;             // steady epochs in a row below the floor, at least
  int64_t window_ms = 10'000;  // and this much steady time below it, at least
};

// What report() found: the job has been below its floor for the window.
struct FloorBreach {
  double floor = 0;      // min_speed
  double speed = 0;      // its latest steady rate over its solo rate
  int64_t below_ms = 0;  // steady time below the floor in this run
  int reports = 0;       // steady epochs below it in this run
  bool operator==(const FloorBreach&) const = default;
};

class FloorWatch {
 public:
  FloorWatch(double min_speed, std::optional<double> solo_samples_per_s,
             const FloorOptions& options = {});

  // Its solo rate became known (or was measured anew); a non-positive one is ignored.
  void solo(double samples_per_s);
  std::optional<double> solo_rate() const { return solo_; }
  double min_speed() const { return min_speed_; }

  // One epoch ended; a breach when this report completes a run of the window.
  std::optional<FloorBreach> report(const EpochRate& epoch);

  // The share of its measured steady time spent below the floor (0..1);
  // nullopt before any steady epoch was measured against a solo rate.
  std::optional<double> below_share() const { return time_.below_share(); }
  int64_t steady_ms() const { return time_.steady_ms; }
  int64_t below_ms() const { return time_.below_ms; }
  // Its latest steady rate over its solo rate; nullopt before one.
  std::optional<double> latest_speed() const { return latest_speed_; }

 private:
  double min_speed_;
  std::optional<double> solo_;
  FloorOptions options_;
  FloorTime time_;      // measured steady time, and of it below the floor
  int64_t run_ms_ = 0;  // the current run below the floor
  int run_reports_ = 0;
  std::optional<double> latest_speed_;
};

// "stopped for job 12's floor 0.90: it ran at 0.84 beside this job", the
// reason an opportunistic neighbour is stopped for (`protected_label`: how
// the protected job is named, "job 12").
std::string floor_stop_reason(const std::string& protected_label, const FloorBreach& breach);

}  // namespace colo
