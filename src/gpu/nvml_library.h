// NvmlLibrary: owns the dlopen handle of the NVIDIA Management Library and the
// symbols colo resolved from it, and keeps NVML initialised while it lives.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "common/result.h"
#include "gpu/nvml_api.h"

namespace colo {

// Resolved NVML entry points. Required ones are never null after load();
// every other one is null when the driver does not export it, which callers
// treat as "metric absent". Where NVML has versioned names the newest known
// one is tried first (nvmlInit_v2 before nvmlInit, ...).
struct NvmlApi {
  // Required.
  nvmlInit_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlDeviceGetCount_fn device_get_count = nullptr;
  nvmlDeviceGetHandleByIndex_fn device_get_handle_by_index = nullptr;
  // Optional.
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetVersion_fn system_get_driver_version = nullptr;
  nvmlSystemGetVersion_fn system_get_nvml_version = nullptr;
  nvmlDeviceGetString_fn device_get_name = nullptr;
  nvmlDeviceGetString_fn device_get_uuid = nullptr;
  nvmlDeviceGetPciInfo_fn device_get_pci_info = nullptr;
  nvmlDeviceGetMemoryInfo_fn device_get_memory_info = nullptr;
  nvmlDeviceGetMemoryInfo_v2_fn device_get_memory_info_v2 = nullptr;
  nvmlDeviceGetAttributes_fn device_get_attributes = nullptr;
  nvmlDeviceGetCudaComputeCapability_fn device_get_cuda_compute_capability = nullptr;
  nvmlDeviceGetNumGpuCores_fn device_get_num_gpu_cores = nullptr;
  nvmlDeviceGetMigMode_fn device_get_mig_mode = nullptr;
  nvmlDeviceGetGpuInstanceProfileInfo_fn device_get_gpu_instance_profile_info = nullptr;
  nvmlDeviceGetGpuInstanceProfileInfoV_fn device_get_gpu_instance_profile_info_v = nullptr;
  nvmlDeviceGetGpuInstancePossiblePlacements_fn device_get_gpu_instance_possible_placements =
      nullptr;
  nvmlDeviceGetUtilizationRates_fn device_get_utilization_rates = nullptr;
  nvmlDeviceGetPowerUsage_fn device_get_power_usage = nullptr;
  nvmlDeviceGetEnforcedPowerLimit_fn device_get_enforced_power_limit = nullptr;
  nvmlDeviceGetTotalEnergyConsumption_fn device_get_total_energy_consumption = nullptr;
  nvmlDeviceGetClockInfo_fn device_get_clock_info = nullptr;
  nvmlDeviceGetRunningProcesses_fn device_get_compute_running_processes = nullptr;
  nvmlDeviceGetRunningProcesses_fn device_get_mps_compute_running_processes = nullptr;
  nvmlDeviceGetRunningProcessDetailList_fn device_get_running_process_detail_list = nullptr;
  nvmlDeviceGetProcessUtilization_fn device_get_process_utilization = nullptr;
  // MIG instances: all optional; MigControl says which one is missing.
  nvmlDeviceSetMigMode_fn device_set_mig_mode = nullptr;
  nvmlDeviceCreateGpuInstanceWithPlacement_fn device_create_gpu_instance_with_placement = nullptr;
  nvmlDeviceGetGpuInstances_fn device_get_gpu_instances = nullptr;
  nvmlDeviceGetGpuInstanceById_fn device_get_gpu_instance_by_id = nullptr;
  nvmlGpuInstanceGetInfo_fn gpu_instance_get_info = nullptr;
  nvmlGpuInstanceDestroy_fn gpu_instance_destroy = nullptr;
  nvmlGpuInstanceGetComputeInstanceProfileInfo_fn gpu_instance_get_compute_instance_profile_info =
      nullptr;
  nvmlGpuInstanceCreateComputeInstance_fn gpu_instance_create_compute_instance = nullptr;
  nvmlGpuInstanceGetComputeInstances_fn gpu_instance_get_compute_instances = nullptr;
  nvmlGpuInstanceGetComputeInstanceById_fn gpu_instance_get_compute_instance_by_id = nullptr;
  nvmlComputeInstanceGetInfo_fn compute_instance_get_info = nullptr;
  nvmlComputeInstanceDestroy_fn compute_instance_destroy = nullptr;
  nvmlDeviceGetUint_fn device_get_max_mig_device_count = nullptr;
  nvmlDeviceGetMigDeviceHandleByIndex_fn device_get_mig_device_handle_by_index = nullptr;
  nvmlDeviceGetUint_fn device_get_gpu_instance_id = nullptr;
  nvmlDeviceGetUint_fn device_get_compute_instance_id = nullptr;
  // Events (Xid critical errors): all optional.
  nvmlEventSetCreate_fn event_set_create = nullptr;
  nvmlEventSetFree_fn event_set_free = nullptr;
  nvmlDeviceGetSupportedEventTypes_fn device_get_supported_event_types = nullptr;
  nvmlDeviceRegisterEvents_fn device_register_events = nullptr;
  nvmlEventSetWait_fn event_set_wait = nullptr;
  nvmlGpmQueryDeviceSupport_fn gpm_query_device_support = nullptr;
  nvmlGpmSampleAlloc_fn gpm_sample_alloc = nullptr;
  nvmlGpmSampleFree_fn gpm_sample_free = nullptr;
  nvmlGpmSampleGet_fn gpm_sample_get = nullptr;
  nvmlGpmMetricsGet_fn gpm_metrics_get = nullptr;
};

// Thread-safety: immutable after load(); the NVML functions themselves are
// thread-safe but serialize on a driver lock. Ownership: the library stays
// loaded and initialised until the NvmlLibrary is destroyed, so everything
// holding NVML handles or GPM samples must be destroyed first.
class NvmlLibrary {
 public:
  // Opens `path` (a soname such as "libnvidia-ml.so.1" or a file path),
  // resolves the symbols and calls nvmlInit. Fails with one line that names the
  // cause and suggests `--backend sim`.
  static Result<std::unique_ptr<NvmlLibrary>> load(const std::string& path);

  // Only load() can make a Passkey, so only load() constructs.
  class Passkey {
    explicit Passkey() = default;
    friend class NvmlLibrary;
  };
  NvmlLibrary(Passkey, void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  ~NvmlLibrary();  // nvmlShutdown, then dlclose
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlApi& api() const { return api_; }
  const std::string& path() const { return path_; }

  // "Not Supported (NVML error 3)"; works when nvmlErrorString is missing.
  std::string describe(nvmlReturn_t code) const;

 private:
  void* handle_;  // from dlopen; closed in the destructor
  std::string path_;
  NvmlApi api_;
  bool initialised_ = false;
};

}  // namespace colo
