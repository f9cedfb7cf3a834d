#include "run/mechanism_inputs.h"

namespace colo {

MechanismInputs mechanism_inputs(const JobFile& file, GpuBackend& backend) {
  MechanismInputs inputs;
  inputs.backend = &backend;
  for (const JobSpec& job : file.jobs) {
    inputs.jobs.push_back({job.name, job.mig_profile, job.gpu_memory_bytes, job.mig_group});
  }
  return inputs;
}

}  // namespace colo
