// NvmlMigControl: MigControl over NVML, the same calls nvidia-mig-parted makes.
#pragma once

#include <string>
#include <vector>

#include "gpu/mig_control.h"
#include "gpu/nvml_api.h"
#include "gpu/nvml_library.h"

namespace colo {

// Every NVML MIG function is optional: a call whose function the driver lacks
// fails naming it. GPU instances are enumerated per profile id, so the profile
// ids are read from the driver on each listing (indices 0..13 of
// nvmlDeviceGetGpuInstanceProfileInfo).
//
// Borrows `library` and the device handles, which must outlive it (NvmlBackend
// owns all three). Thread-safety: see MigControl.
class NvmlMigControl final : public MigControl {
 public:
  NvmlMigControl(const NvmlLibrary& library, std::vector<nvmlDevice_t> devices)
      : library_(library), devices_(std::move(devices)) {}

  Result<MigModeState> mig_mode(int device) override;
  Status set_mig_mode(int device, bool enabled) override;
  Result<std::vector<MigGpuInstance>> gpu_instances(int device) override;
  Result<MigGpuInstance> create_gpu_instance(int device, int profile_id, int start) override;
  Result<bool> destroy_gpu_instance(int device, int gpu_instance_id) override;
  Result<std::vector<MigComputeInstance>> compute_instances(int device,
                                                            int gpu_instance_id) override;
  Result<MigComputeInstance> create_compute_instance(int device, int gpu_instance_id,
                                                     int slice_count) override;
  Result<bool> destroy_compute_instance(int device, int gpu_instance_id,
                                        int compute_instance_id) override;
  Result<std::vector<MigDevice>> mig_devices(int device) override;

 private:
  Result<nvmlDevice_t> handle(int device) const;
  Result<nvmlGpuInstance_t> gpu_instance(int device, int gpu_instance_id) const;
  // The error for `code` returned by `call` while doing `what` on GPU `device`.
  Error failure(int device, const std::string& what, const char* call, nvmlReturn_t code) const;

  const NvmlLibrary& library_;
  std::vector<nvmlDevice_t> devices_;
};

// Compute-slice count -> NVML compute-instance profile index (1 -> 0, 2 -> 1,
// 3 -> 2, 4 -> 3, 7 -> 4); -1 for other counts.
int compute_instance_profile_index(int slice_count);

}  // namespace colo
