// A protected job's speed against its floor (docs/policy.md, "Protected and
// opportunistic jobs"): the one definition of what counts, shared by the
// closed loop that holds the floor while the job runs (run/floor_watch.h) and
// by what `colo show` derives from the store afterwards.
//
//   - An epoch's rate is its samples over the time since the previous epoch's
//     end in the same attempt. The first epoch of each attempt (start-up) has
//     none; an attempt ends at a "requeued" event.
//   - A steady epoch is one the job does not mark as a checkpoint's or an
//     evaluation's (steady_epoch_end); only steady epochs count, for or
//     against the floor.
//   - Its speed is its rate over the solo rate; it is below the floor when
//     speed < min_speed. The share below is the steady time spent below over
//     the steady time measured, each epoch weighted by its length.
//
// Pure: no clock, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "jobs/progress_event.h"

namespace colo {

// One epoch's rate, as it ended.
struct EpochRate {
  UnixMillis ended_ms = 0;
  int64_t epoch_ms = 0;  // how long it took
  double samples_per_s = 0;
  bool steady = true;  // not a checkpoint's or an evaluation's
  int attempt = 1;     // the attempt it belongs to (1 for the first)
};

// Whether an epoch_end with these metrics ended a steady epoch: not when the
// job marks it as a checkpoint's or an evaluation's with a non-zero metric
// "checkpoint", "eval" or "evaluation" (colo_progress: epoch_end(epoch,
// samples, checkpoint=1)). The attempt's first epoch (start-up) has no rate.
bool steady_epoch_end(const std::map<std::string, double>& metrics);

// The rated epochs of a job's events (every attempt, in the order given:
// oldest first), steady or not: each epoch_end with samples that follows an
// earlier epoch_end of its attempt, ended after it.
std::vector<EpochRate> epoch_rates(const std::vector<ProgressEvent>& events);

// Below the floor: speed < min_speed.
bool below_floor(double speed, double min_speed);

// Steady time measured against a floor, and of it the time below.
struct FloorTime {
  int64_t steady_ms = 0;
  int64_t below_ms = 0;
  // Counts one steady epoch (non-positive lengths are ignored).
  void add(int64_t epoch_ms, bool below);
  // below_ms / steady_ms (0..1); nullopt before any steady time.
  std::optional<double> below_share() const;
  bool operator==(const FloorTime&) const = default;
};

// One steady epoch judged against the floor.
struct FloorPoint {
  UnixMillis ended_ms = 0;
  int attempt = 1;
  int64_t epoch_ms = 0;
  double speed = 0;  // its rate over the solo rate
  bool operator==(const FloorPoint&) const = default;
};

// A protected job's steady epochs against its floor.
struct FloorHistory {
  double min_speed = 0;
  double solo_samples_per_s = 0;
  std::vector<FloorPoint> points;  // its steady epochs, oldest first
  FloorTime time;
  // The latest steady epoch's speed; nullopt before one.
  std::optional<double> latest_speed() const;
  // The steady epochs' speeds' median (lower middle of an even count); nullopt before one.
  std::optional<double> median_speed() const;
  std::optional<double> lowest_speed() const;
};

// The history of `rates` (epoch_rates) against `min_speed` x
// `solo_samples_per_s`; nullopt when the solo rate is not positive (nothing
// can be judged).
std::optional<FloorHistory> floor_history(const std::vector<EpochRate>& rates, double min_speed,
                                          double solo_samples_per_s);

}  // namespace colo
