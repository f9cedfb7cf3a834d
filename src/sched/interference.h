// InterferenceModel: how fast each of several jobs sharing one GPU runs,
// relative to running alone (its "normalized rate", 1.0 = solo speed).
//
// Two ways of sharing, matching colo's mechanisms:
//   spatial (MPS): kernels of different jobs run at the same time. The GPU
//     delivers up to `spatial_capacity_pct` of summed solo SM activity; beyond
//     that every job slows in proportion, so the summed progress stays flat.
//     Each extra job costs a little more (`spatial_overhead`: memory
//     bandwidth, caches, context switches between MPS clients).
//   time-sliced (naive sharing): the GPU runs one context at a time. Jobs
//     share the time the GPU is busy (solo busy shares summed; beyond 100%
//     every job slows in proportion), and sharing itself loses
//     `sliced_switch_loss` (context switches), plus `sliced_overhead` per job
//     beyond the second.
//
// The defaults are calibrate()'s fit to colo's H100 measurements of the
// collocated speed-up (docs/results/2026-11-23-h100-study: nine collocations of
// resnet50, cait_xxs24 and a resnet26+resnet50 mix): under MPS the summed
// progress levels off where the summed solo SM activity reaches about 93%
// (cait_xxs24, 82% SM alone: 1.14x at 2 jobs, 1.19x at 3; resnet50, 22%:
// 4.30x at 7); naive sharing loses 15% to time slicing (cait 0.89x and 0.90x
// at 2 and 3 jobs). The fit found no measurable cost per extra job; the
// defaults keep a small one (0.5% under MPS, 2% naive beyond two jobs), so
// that past the level more jobs predict less work and admission stops there.
// calibrate() refits capacity and overheads from a store's measurements.
// Pure value type; thread-safe to share read-only.
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
  double spatial_capacity_pct = 93.0;  // summed SM activity MPS can deliver
  double spatial_overhead = 0.005;     // rate lost per extra job under MPS
  double sliced_switch_loss = 0.15;    // rate lost by time slicing at all
  double sliced_overhead = 0.02;       // rate lost per job beyond the second
  std::string source = "defaults (H100 collocated speed-ups, 2026-11-23)";

  // "defaults (...) (MPS: level beyond 93% summed SM activity, ...)".
  std::string describe() const;
  // Each job's normalized rate when `jobs` share one GPU (same order).
  std::vector<double> rates(ShareMode mode, std::span<const SoloLoad> jobs) const;
  // The same rate, which every one of `jobs` gets (1 for none).
  double rate_of_each(ShareMode mode, std::span<const SoloLoad> jobs) const;
  // Summed normalized rate: the GPU's throughput in "solo jobs".
  double total(ShareMode mode, std::span<const SoloLoad> jobs) const;
  // The GPU's useful work: each job's normalized rate weighted by its solo
  // load (weight()), in GPUs' worth of solo work. Unlike total(), it does not
  // fall when a job heavier than the others joins a full GPU: that job's
  // progress counts for more. Beyond the capacity it stays level, less the
  // per-job overhead.
  double work(ShareMode mode, std::span<const SoloLoad> jobs) const;
  // The largest work() over the first k jobs, k = 1..n: what the GPU would
  // do at its best with these jobs added in this order (0 for none). O(n).
  double peak_work(ShareMode mode, std::span<const SoloLoad> jobs) const;
  // A job's weight: its solo SM activity (spatial) or busy share (time
  // slicing), as a fraction of the GPU.
  static double weight(ShareMode mode, const SoloLoad& job);

 private:
  // Every job's normalized rate when n jobs of summed `load` (SM activity
  // under spatial sharing, busy share under time slicing) share the GPU.
  double rate_each(ShareMode mode, size_t n, double load) const;
};

// One measured collocation: `jobs` shared a GPU and together ran at
// `measured_total` solo jobs' worth of progress.
struct Collocation {
  ShareMode mode = ShareMode::kSpatial;
  std::vector<SoloLoad> jobs;
  double measured_total = 0;
  std::string source;  // where it was measured: "run 12 (mps, 7 jobs)"
};

// Fits the model to `measurements` by least squares over a grid: the
// spatial capacity and per-job overhead (MPS), and the per-job overhead of
// time slicing; a mode without measurements keeps `base`'s values. The
// result's source says how many measurements it used.
InterferenceModel calibrate(const InterferenceModel& base,
                            std::span<const Collocation> measurements);

}  // namespace colo
