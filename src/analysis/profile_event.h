// Profile events: job events that record a profile with the job, so that
// later runs and `colo profiles` see it.
//   "probe"     what a job colo had never seen measured where it ran (peak
//               memory, SM activity, utilization, rate, start-up; with their
//               uncertainties when other jobs ran beside it); the latest one
//               is its final measurement.
//   "estimate"  the profile the auto policy placed it by when that was
//               estimated from its family (sched/family.h), to be compared
//               with what the job then measured.
//   "prior"     the prior (sched/prior.h) a job colo had never seen started
//               by, beside what it then measured.
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
inline constexpr std::string_view kPriorEvent = "prior";

ProgressEvent profile_event(std::string_view kind, const JobProfile& profile, UnixMillis time_ms);

// The profile an event of `kind` holds (its source is the kind); nullopt for
// another event, or one without peak memory.
std::optional<JobProfile> profile_in(const ProgressEvent& event, std::string_view kind);

}  // namespace colo
