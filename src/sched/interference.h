// InterferenceModel: how fast each of several jobs sharing one GPU runs,
// relative to running alone (its "normalized rate", 1.0 = solo speed).
//
// Two ways of sharing, matching colo's mechanisms:
//   spatial (MPS): kernels of different jobs run at the same time. The GPU
//     delivers up to `spatial_capacity_pct` of summed solo SM activity; beyond
//     that every job slows in proportion. Each extra job costs a little
//     (`spatial_overhead`: memory bandwidth, caches).
//   time-sliced (naive sharing): the GPU runs one context at a time. Jobs
//     share the time the GPU is busy (solo busy shares summed; beyond 100%
//     every job slows in proportion), and sharing itself loses
//     `sliced_switch_loss` (context switches), plus `sliced_overhead` per job
//     beyond the second.
//
// The defaults are calibrated from colo's H200 measurements
// (docs/results/2026-11-22-h200-paper-suites: resnet26 at 19% SM activity
// reached 3.5-4.2x under MPS with 7 jobs and 2.1x under naive sharing;
// cait_xxs24 at 81% reached 1.13x under MPS and 0.85x under naive with 2);
// calibrate() refits the two overheads from a store's measurements. Pure
// value type; thread-safe to share read-only.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace colo {

enum class ShareMode { kSpatial, kTimeSliced };

// One job's solo load, the model's only input per job.
struct SoloLoad {
  double sm_active_pct = 0;  // 0-100
  double gpu_busy_pct = 0;   // 0-100
};

struct InterferenceModel {
  double spatial_capacity_pct = 100.0;  // summed SM activity MPS can deliver
  double spatial_overhead = 0.05;       // rate lost per extra job under MPS
  double sliced_switch_loss = 0.15;     // rate lost by time slicing at all
  double sliced_overhead = 0.02;        // rate lost per job beyond the second
  std::string source = "defaults (H200 measurements, 2026-11-22)";

  // Each job's normalized rate when `jobs` share one GPU (same order).
  std::vector<double> rates(ShareMode mode, std::span<const SoloLoad> jobs) const;
  // Summed normalized rate: the GPU's throughput in "solo jobs".
  double total(ShareMode mode, std::span<const SoloLoad> jobs) const;
};

// One measured collocation: `jobs` shared a GPU and together ran at
// `measured_total` solo jobs' worth of progress.
struct Collocation {
  ShareMode mode = ShareMode::kSpatial;
  std::vector<SoloLoad> jobs;
  double measured_total = 0;
};

// Fits the per-job overhead of each mode to `measurements` (least squares
// over a grid); a mode without measurements keeps `base`'s value. The
// result's source says how many measurements it used.
InterferenceModel calibrate(const InterferenceModel& base,
                            std::span<const Collocation> measurements);

}  // namespace colo
