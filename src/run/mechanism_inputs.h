// What a run's mechanism needs from the run beyond its options: the backend
// and the jobs' MIG demands (only the mig mechanism uses them).
#pragma once

#include "gpu/gpu_backend.h"
#include "jobs/job_spec.h"
#include "sharing/mechanism.h"

namespace colo {

// One MigJobDemand per job of `file` (mig_profile, gpu_memory, mig_group),
// and `backend`, which must outlive the mechanism made from the result.
MechanismInputs mechanism_inputs(const JobFile& file, GpuBackend& backend);

}  // namespace colo
