// The "estimate" job event: the profile the auto policy placed a job by when
// it was estimated from the job's family (sched/family.h), recorded at the
// job's start so that what colo then measured can be compared with it
// (`colo profiles`). Its metrics: peak_memory_bytes, memory_uncertainty,
// sm_active_pct, sm_uncertainty, and, when known, gpu_util_pct,
// samples_per_s and rate_uncertainty.
#pragma once

#include <optional>

#include "common/clock.h"
#include "jobs/progress.h"
#include "sched/profile.h"

namespace colo {

inline constexpr const char* kEstimateEvent = "estimate";

ProgressEvent estimate_event(const JobProfile& estimate, UnixMillis time_ms);

// The profile an "estimate" event holds (its source says "estimate"); nullopt
// for any other event or one without peak memory.
std::optional<JobProfile> estimate_of(const ProgressEvent& event);

}  // namespace colo
