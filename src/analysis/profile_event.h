// Profile events: job events that record a profile with the job, so that
// later runs and `colo profiles` see it.
//   "probe"     what the job measured while the auto policy probed it (its
//               GPU its own: peak memory, SM activity, utilization, rate,
//               start-up); the latest one is the probe's final measurement.
//   "estimate"  the profile the auto policy placed it by when that was
//               estimated from its family (sched/family.h), to be compared
//               with what the job then measured.
// Metrics: peak_memory_bytes, memory_uncertainty, sm_active_pct,
// sm_uncertainty, and when known gpu_util_pct, samples_per_s,
// rate_uncertainty, startup_ms.
#pragma once

#include <optional>
#include <string_view>

#include "common/clock.h"
#include "jobs/progress.h"
#include "sched/profile.h"

namespace colo {

inline constexpr std::string_view kProbeEvent = "probe";
inline constexpr std::string_view kEstimateEvent = "estimate";

ProgressEvent profile_event(std::string_view kind, const JobProfile& profile, UnixMillis time_ms);

// The profile an event of `kind` holds (its source is the kind); nullopt for
// another event, or one without peak memory.
std::optional<JobProfile> profile_in(const ProgressEvent& event, std::string_view kind);

}  // namespace colo
