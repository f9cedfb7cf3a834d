// Running inside a Slurm allocation: which GPUs Slurm gave this job, and
// where the job is (Slurm job id, step, node) for the record.
//
// Slurm tells a job its GPUs three ways: SLURM_STEP_GPUS (inside an srun
// step) and SLURM_JOB_GPUS (the batch script) hold the node's global GPU
// indices; CUDA_VISIBLE_DEVICES holds the same indices when devices are not
// constrained by cgroups, and local ones (0..n-1) when they are, in which
// case NVML too sees only the allocated GPUs. A user may also narrow
// CUDA_VISIBLE_DEVICES, with indices or UUIDs. usable_devices() resolves all
// of this to NVML devices (identified by UUID from then on: the mechanism
// gives each job CUDA_VISIBLE_DEVICES=<uuid>). Indices are NVML's order
// (PCI bus order), which is the order Slurm's gres AutoDetect=nvml uses.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "gpu/gpu_backend.h"

namespace colo {

// The value of an environment variable, nullopt when unset. Tests pass a map.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process's own environment.
EnvLookup process_environment();

// Where this process runs inside Slurm, and what Slurm said about its GPUs.
struct SlurmAllocation {
  std::string job_id;             // "1234", or "1234_5" for element 5 of array job 1234
  std::string step;               // SLURM_STEP_ID ("0", ...), "batch" in a batch script
  std::string node;               // SLURMD_NODENAME
  int restart_count = 0;          // SLURM_RESTART_COUNT: how often Slurm requeued the job
  std::optional<int> array_task;  // SLURM_ARRAY_TASK_ID
  std::optional<std::vector<int>> gpu_indices;      // SLURM_STEP_GPUS, else SLURM_JOB_GPUS
  std::optional<std::string> cuda_visible_devices;  // as set in the environment
};

// The allocation this process runs in: nullopt outside Slurm, and also where
// SLURM_JOB_ID is set but the process is not on a node of the allocation (a
// salloc shell on the submit host: no SLURMD_NODENAME); `note` then says so.
// An error names a variable whose value cannot be read.
Result<std::optional<SlurmAllocation>> slurm_allocation(const EnvLookup& env,
                                                        std::string* note = nullptr);

// The devices of `found` this process may use: all of them outside Slurm,
// the GPUs Slurm gave the job inside (see the file comment), in index order.
// An error says which GPU Slurm named that the backend does not have, or that
// the job was given no GPU and how to ask for one.
Result<std::vector<DeviceInfo>> usable_devices(const std::vector<DeviceInfo>& found,
                                               const std::optional<SlurmAllocation>& allocation);

// Where colo keeps what must stay on this node and die with the job (the MPS
// daemon's pipe and log directories): <state dir> outside Slurm, else
// ${TMPDIR:-/tmp}/colo-<uid>, which is node-local even where the home
// directory (and so the state dir) is shared between nodes.
std::string node_local_state_dir(const std::optional<SlurmAllocation>& allocation,
                                 const EnvLookup& env);

}  // namespace colo
