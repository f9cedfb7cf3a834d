#include "gpu/nvml_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <initializer_list>

namespace colo {
namespace {

// The first of `names` the library exports, cast to the pointer type of `fn`.
template <class Fn>
void resolve(void* handle, Fn& fn, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* symbol = dlsym(handle, name)) {
      fn = reinterpret_cast<Fn>(symbol);
      return;
    }
  }
  fn = nullptr;
}

std::string dl_error_text() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown dlopen error";
}

}  // namespace

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::load(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Error(
        fmt::format("no NVIDIA driver found ({}); use --backend sim to run on the simulated GPU",
                    dl_error_text()));
  }
  auto library = std::make_unique<NvmlLibrary>(Passkey(), handle, path);
  NvmlApi& api = library->api_;

  resolve(handle, api.init, {"nvmlInit_v2", "nvmlInit"});
  resolve(handle, api.shutdown, {"nvmlShutdown"});
  resolve(handle, api.device_get_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  resolve(handle, api.device_get_handle_by_index,
          {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  if (api.init == nullptr || api.shutdown == nullptr || api.device_get_count == nullptr ||
      api.device_get_handle_by_index == nullptr) {
    return Error(fmt::format(
        "{} is not a usable NVIDIA Management Library (nvmlInit, nvmlShutdown, "
        "nvmlDeviceGetCount or nvmlDeviceGetHandleByIndex missing; a CUDA toolkit stub?); "
        "point colo at the driver's libnvidia-ml.so.1 or use --backend sim",
        path));
  }

  resolve(handle, api.error_string, {"nvmlErrorString"});
  resolve(handle, api.system_get_driver_version, {"nvmlSystemGetDriverVersion"});
  resolve(handle, api.system_get_nvml_version, {"nvmlSystemGetNVMLVersion"});
  resolve(handle, api.device_get_name, {"nvmlDeviceGetName"});
  resolve(handle, api.device_get_uuid, {"nvmlDeviceGetUUID"});
  resolve(handle, api.device_get_pci_info, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  resolve(handle, api.device_get_memory_info, {"nvmlDeviceGetMemoryInfo"});
  resolve(handle, api.device_get_memory_info_v2, {"nvmlDeviceGetMemoryInfo_v2"});
  resolve(handle, api.device_get_attributes, {"nvmlDeviceGetAttributes_v2"});
  resolve(handle, api.device_get_cuda_compute_capability, {"nvmlDeviceGetCudaComputeCapability"});
  resolve(handle, api.device_get_num_gpu_cores, {"nvmlDeviceGetNumGpuCores"});
  resolve(handle, api.device_get_mig_mode, {"nvmlDeviceGetMigMode"});
  resolve(handle, api.device_get_gpu_instance_profile_info,
          {"nvmlDeviceGetGpuInstanceProfileInfo"});
  resolve(handle, api.device_get_gpu_instance_profile_info_v,
          {"nvmlDeviceGetGpuInstanceProfileInfoV"});
  resolve(handle, api.device_get_gpu_instance_possible_placements,
          {"nvmlDeviceGetGpuInstancePossiblePlacements_v2"});
  resolve(handle, api.device_set_mig_mode, {"nvmlDeviceSetMigMode"});
  resolve(handle, api.device_create_gpu_instance_with_placement,
          {"nvmlDeviceCreateGpuInstanceWithPlacement"});
  resolve(handle, api.device_get_gpu_instances, {"nvmlDeviceGetGpuInstances"});
  resolve(handle, api.device_get_gpu_instance_by_id, {"nvmlDeviceGetGpuInstanceById"});
  resolve(handle, api.gpu_instance_get_info, {"nvmlGpuInstanceGetInfo"});
  resolve(handle, api.gpu_instance_destroy, {"nvmlGpuInstanceDestroy"});
  resolve(handle, api.gpu_instance_get_compute_instance_profile_info,
          {"nvmlGpuInstanceGetComputeInstanceProfileInfo"});
  resolve(handle, api.gpu_instance_create_compute_instance,
          {"nvmlGpuInstanceCreateComputeInstance"});
  resolve(handle, api.gpu_instance_get_compute_instances, {"nvmlGpuInstanceGetComputeInstances"});
  resolve(handle, api.gpu_instance_get_compute_instance_by_id,
          {"nvmlGpuInstanceGetComputeInstanceById"});
  // _v2 fills the placement too; the first version's struct lacks it.
  resolve(handle, api.compute_instance_get_info, {"nvmlComputeInstanceGetInfo_v2"});
  resolve(handle, api.compute_instance_destroy, {"nvmlComputeInstanceDestroy"});
  resolve(handle, api.device_get_max_mig_device_count, {"nvmlDeviceGetMaxMigDeviceCount"});
  resolve(handle, api.device_get_mig_device_handle_by_index,
          {"nvmlDeviceGetMigDeviceHandleByIndex"});
  resolve(handle, api.device_get_gpu_instance_id, {"nvmlDeviceGetGpuInstanceId"});
  resolve(handle, api.device_get_compute_instance_id, {"nvmlDeviceGetComputeInstanceId"});
  resolve(handle, api.device_get_utilization_rates, {"nvmlDeviceGetUtilizationRates"});
  resolve(handle, api.device_get_power_usage, {"nvmlDeviceGetPowerUsage"});
  resolve(handle, api.device_get_enforced_power_limit, {"nvmlDeviceGetEnforcedPowerLimit"});
  resolve(handle, api.device_get_total_energy_consumption, {"nvmlDeviceGetTotalEnergyConsumption"});
  resolve(handle, api.device_get_clock_info, {"nvmlDeviceGetClockInfo"});
  // _v2 and _v3 share the 24-byte entry layout.
  resolve(handle, api.device_get_compute_running_processes,
          {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  resolve(
      handle, api.device_get_mps_compute_running_processes,
      {"nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlDeviceGetMPSComputeRunningProcesses_v2"});
  resolve(handle, api.device_get_running_process_detail_list,
          {"nvmlDeviceGetRunningProcessDetailList"});
  resolve(handle, api.device_get_process_utilization, {"nvmlDeviceGetProcessUtilization"});
  resolve(handle, api.event_set_create, {"nvmlEventSetCreate"});
  resolve(handle, api.event_set_free, {"nvmlEventSetFree"});
  resolve(handle, api.device_get_supported_event_types, {"nvmlDeviceGetSupportedEventTypes"});
  resolve(handle, api.device_register_events, {"nvmlDeviceRegisterEvents"});
  // The first version writes the 24-byte event struct, a prefix of _v2's.
  resolve(handle, api.event_set_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  resolve(handle, api.gpm_query_device_support, {"nvmlGpmQueryDeviceSupport"});
  resolve(handle, api.gpm_sample_alloc, {"nvmlGpmSampleAlloc"});
  resolve(handle, api.gpm_sample_free, {"nvmlGpmSampleFree"});
  resolve(handle, api.gpm_sample_get, {"nvmlGpmSampleGet"});
  resolve(handle, api.gpm_metrics_get, {"nvmlGpmMetricsGet"});

  nvmlReturn_t status = api.init();
  if (status != NVML_SUCCESS) {
    return Error(fmt::format(
        "the NVIDIA driver library {} loaded but nvmlInit failed: {}; check that `nvidia-smi` "
        "works, or use --backend sim to run on the simulated GPU",
        path, library->describe(status)));
  }
  library->initialised_ = true;
  return library;
}

NvmlLibrary::~NvmlLibrary() {
  if (initialised_) api_.shutdown();
  dlclose(handle_);
}

std::string NvmlLibrary::describe(nvmlReturn_t code) const {
  const char* text = api_.error_string != nullptr ? api_.error_string(code) : nullptr;
  return fmt::format("{} (NVML error {})", text != nullptr ? text : "unknown error", code);
}

}  // namespace colo
