// MigControl: the narrow seam through which colo changes a GPU's MIG
// partitioning: GPU instances (memory and SM slices), compute instances inside
// them (SM slices sharing the GPU instance's memory), the MIG devices jobs see,
// and, only when the user passes an explicit flag, MIG mode.
//
// Instances are named by ids (GPU instance id per device, compute instance id
// per GPU instance), never by driver handles, so a later colo process can find
// what an earlier one created. Every call reads the driver afresh; nothing is
// cached.
//
// Errors are values whose messages say what to do: no permission (root is
// needed), not supported (no MIG, or MIG mode off), not enough free slices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace colo {

struct MigModeState {
  bool current = false;  // MIG mode in effect now
  bool pending = false;  // MIG mode after the next GPU reset
};

// A GPU instance: memory slices [start, start + size) of the device.
struct MigGpuInstance {
  int id = 0;
  int profile_id = 0;  // MigProfile::id, as nvidia-smi mig -lgip shows it
  int start = 0;
  int size = 0;
};

// A compute instance inside GPU instance `gpu_instance_id`.
struct MigComputeInstance {
  int gpu_instance_id = 0;
  int id = 0;
  int profile_id = 0;
  int slice_count = 0;  // compute slices it holds
};

// What CUDA sees: one MIG device per compute instance.
struct MigDevice {
  std::string uuid;  // "MIG-..."; what a job gets in CUDA_VISIBLE_DEVICES
  int gpu_instance_id = 0;
  int compute_instance_id = 0;
  std::optional<uint64_t> memory_used_bytes;  // of the GPU instance's memory
  std::optional<uint64_t> memory_total_bytes;
};

// Threading: implementations call only the (thread-safe) driver and keep no
// state of their own, so they may be used while the sampler thread samples.
class MigControl {
 public:
  virtual ~MigControl() = default;

  virtual Result<MigModeState> mig_mode(int device) = 0;
  // Changes MIG mode. Only ever called behind an explicit user flag: the
  // change takes effect after a GPU reset, which colo never does itself.
  virtual Status set_mig_mode(int device, bool enabled) = 0;

  virtual Result<std::vector<MigGpuInstance>> gpu_instances(int device) = 0;
  // Creates a GPU instance of `profile_id` at memory slice `start`.
  virtual Result<MigGpuInstance> create_gpu_instance(int device, int profile_id, int start) = 0;
  // Destroys it. true: destroyed; false: there was no such instance.
  virtual Result<bool> destroy_gpu_instance(int device, int gpu_instance_id) = 0;

  virtual Result<std::vector<MigComputeInstance>> compute_instances(int device,
                                                                    int gpu_instance_id) = 0;
  // Creates a compute instance of `slice_count` compute slices (1, 2, 3, 4 or
  // 7) inside the GPU instance, sharing its memory with its siblings.
  virtual Result<MigComputeInstance> create_compute_instance(int device, int gpu_instance_id,
                                                             int slice_count) = 0;
  // true: destroyed; false: there was no such instance.
  virtual Result<bool> destroy_compute_instance(int device, int gpu_instance_id,
                                                int compute_instance_id) = 0;

  // The MIG devices of `device`, with their UUIDs and memory use.
  virtual Result<std::vector<MigDevice>> mig_devices(int device) = 0;
};

}  // namespace colo
