// JobProfile: what colo knows about one kind of job running alone on one GPU
// model (its "signature": command, parameters, environment; see
// job_signature() in jobs/), and where that knowledge came from.
//
// Profiles come from earlier runs in the store (analysis/profiles), from a short
// probe at the job's start (run/), or from hints in the job file; measured
// numbers win over hints field by field (merge_profiles).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace colo {

// The uncertainty of a rate measured beside other jobs (slowed by them: no
// solo rate, run/in_place_measurement.h) and the least of a prior's
// (sched/prior.h); a rate this uncertain stands for no solo rate.
inline constexpr double kNoSoloRateUncertainty = 0.5;

struct JobProfile {
  std::optional<uint64_t> peak_memory_bytes;  // peak GPU memory of its processes
  std::optional<double> sm_active_pct;        // solo SM activity, 0-100
  std::optional<double> gpu_util_pct;         // solo share of time the GPU is busy, 0-100
  std::optional<double> samples_per_s;        // solo progress rate (steady epochs)
  std::optional<double> epoch_ms;             // solo time per steady epoch
  std::optional<int64_t> solo_ms;             // solo duration (planning and simulation)
  std::optional<int64_t> startup_ms;          // of solo_ms, start-up before the GPU works
  std::string source;                         // "store: run 12 job 40", "hint: jobs.toml:3"
  // Relative uncertainty of an estimate (0.1: within 10%), sched/family.h;
  // 0 for what was measured or stated.
  double memory_uncertainty = 0;
  double sm_uncertainty = 0;
  double rate_uncertainty = 0;

  // Its rate stands for a solo rate: known, and less uncertain than a rate
  // measured beside other jobs (kNoSoloRateUncertainty).
  bool has_solo_rate() const;
  // Enough to decide admission: memory and SM activity are known.
  bool admissible() const { return peak_memory_bytes.has_value() && sm_active_pct.has_value(); }
  // Time-busy share used for time-sliced sharing: measured, else SM activity
  // doubled (on the H200 measurements resnet26 was 19% SM active and 37% busy,
  // cait 81% and 100%), capped at 100.
  double gpu_busy_pct() const;
  bool operator==(const JobProfile&) const = default;
};

// Profiles by signature, hashed: looked up, never walked in order (a sweep's
// thousands of signatures share their length and leading text, so a tree
// of them compares keys a cache miss apart at every level).
using ProfilesBySignature = std::unordered_map<std::string, JobProfile>;

// `measured` wins field by field over `hint` (an uncertainty goes with its
// field); sources are joined ("store: run 3 job 7 + hint: jobs.toml:4") when
// both contribute.
JobProfile merge_profiles(const JobProfile& measured, const JobProfile& hint);

}  // namespace colo
