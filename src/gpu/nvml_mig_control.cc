#include "gpu/nvml_mig_control.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/text.h"

namespace colo {
namespace {

// nvmlDeviceGetGpuInstanceProfileInfo indices colo asks about (see nvml_api.h).
constexpr unsigned int kGpuInstanceProfileIndices = NVML_GPU_INSTANCE_PROFILE_COUNT_QUERIED;
// nvmlGpuInstanceGetComputeInstanceProfileInfo indices: 1, 2, 3, 4, 7, 8, 6
// slices and 1 slice rev1.
constexpr unsigned int kComputeInstanceProfileIndices = 8;
// A GPU holds at most 7 compute slices, so at most 7 instances of a profile.
constexpr unsigned int kMaxInstancesPerProfile = 8;

// Codes meaning "there is no such instance".
bool means_gone(nvmlReturn_t code) {
  return code == NVML_ERROR_NOT_FOUND || code == NVML_ERROR_INVALID_ARGUMENT;
}

// What the user can do about `code`.
std::string advice(nvmlReturn_t code, int device) {
  switch (code) {
    case NVML_ERROR_NO_PERMISSION:
      return "changing MIG instances or MIG mode needs root: run colo as root (sudo), or give its "
             "user the MIG config capability (/proc/driver/nvidia/capabilities/mig/config)";
    case NVML_ERROR_NOT_SUPPORTED:
      return fmt::format(
          "GPU {0} has no MIG or its MIG mode is disabled; check with `nvidia-smi -i {0} "
          "--query-gpu=mig.mode.current,mig.mode.pending --format=csv`",
          device);
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "not enough free MIG slices: other instances occupy them; list them with "
             "`nvidia-smi mig -lgi` and `nvidia-smi mig -lci`, or plan a smaller layout with "
             "`colo mig plan`";
    case NVML_ERROR_IN_USE:
      return "processes still use the instance; stop them (`nvidia-smi` lists them) and retry";
    case NVML_ERROR_RESET_REQUIRED:
      return fmt::format(
          "GPU {} must be reset first (`nvidia-smi -i {} -r` as root, with no "
          "process using it)",
          device, device);
    default:
      return "check `nvidia-smi mig -lgi`";
  }
}

}  // namespace

int compute_instance_profile_index(int slice_count) {
  switch (slice_count) {
    case 1:
      return static_cast<int>(NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
    case 2:
      return static_cast<int>(NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE);
    case 3:
      return static_cast<int>(NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
    case 4:
      return static_cast<int>(NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE);
    case 7:
      return static_cast<int>(NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE);
    default:
      return -1;
  }
}

Error NvmlMigControl::failure(int device, const std::string& what, const char* call,
                              nvmlReturn_t code) const {
  return Error(fmt::format("GPU {}: {} failed: {}: {}; {}", device, what, call,
                           library_.describe(code), advice(code, device)));
}

Result<nvmlDevice_t> NvmlMigControl::handle(int device) const {
  if (device < 0 || device >= static_cast<int>(devices_.size())) {
    return Error(fmt::format("GPU {} does not exist; NVML lists GPUs 0..{}", device,
                             static_cast<int>(devices_.size()) - 1));
  }
  return devices_[static_cast<size_t>(device)];
}

// A missing function is reported the same way everywhere.
#define COLO_REQUIRE_NVML(fn, name)                                                           \
  if (api.fn == nullptr) {                                                                    \
    return Error(fmt::format("this NVIDIA driver has no {} (MIG); update the driver", name)); \
  }

Result<MigModeState> NvmlMigControl::mig_mode(int device) {
  auto h = handle(device);
  if (!h.ok()) return h.error();
  const NvmlApi& api = library_.api();
  COLO_REQUIRE_NVML(device_get_mig_mode, "nvmlDeviceGetMigMode");
  unsigned int current = 0;
  unsigned int pending = 0;
  nvmlReturn_t code = api.device_get_mig_mode(*h, &current, &pending);
  if (code != NVML_SUCCESS) {
    return failure(device, "reading MIG mode", "nvmlDeviceGetMigMode", code);
  }
  return MigModeState{current == NVML_DEVICE_MIG_ENABLE, pending == NVML_DEVICE_MIG_ENABLE};
}

Status NvmlMigControl::set_mig_mode(int device, bool enabled) {
  auto h = handle(device);
  if (!h.ok()) return h.error();
  const NvmlApi& api = library_.api();
  COLO_REQUIRE_NVML(device_set_mig_mode, "nvmlDeviceSetMigMode");
  nvmlReturn_t activation = NVML_SUCCESS;
  nvmlReturn_t code = api.device_set_mig_mode(
      *h, enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE, &activation);
  if (code != NVML_SUCCESS) {
    return failure(device, enabled ? "enabling MIG mode" : "disabling MIG mode",
                   "nvmlDeviceSetMigMode", code);
  }
  return OkStatus();  // `activation` may say a reset is pending; mig_mode() tells
}

Result<std::vector<MigGpuInstance>> NvmlMigControl::gpu_instances(int device) {
  auto h = handle(device);
  if (!h.ok()) return h.error();
  const NvmlApi& api = library_.api();
  COLO_REQUIRE_NVML(device_get_gpu_instance_profile_info, "nvmlDeviceGetGpuInstanceProfileInfo");
  COLO_REQUIRE_NVML(device_get_gpu_instances, "nvmlDeviceGetGpuInstances");
  COLO_REQUIRE_NVML(gpu_instance_get_info, "nvmlGpuInstanceGetInfo");
  std::vector<MigGpuInstance> instances;
  std::vector<unsigned int> seen_profiles;
  for (unsigned int index = 0; index < kGpuInstanceProfileIndices; ++index) {
    nvmlGpuInstanceProfileInfo_t profile{};
    if (api.device_get_gpu_instance_profile_info(*h, index, &profile) != NVML_SUCCESS) continue;
    if (std::find(seen_profiles.begin(), seen_profiles.end(), profile.id) != seen_profiles.end()) {
      continue;
    }
    seen_profiles.push_back(profile.id);
    nvmlGpuInstance_t handles[kMaxInstancesPerProfile] = {};
    unsigned int count = kMaxInstancesPerProfile;
    nvmlReturn_t code = api.device_get_gpu_instances(*h, profile.id, handles, &count);
    if (code != NVML_SUCCESS) {
      return failure(device, "listing MIG GPU instances", "nvmlDeviceGetGpuInstances", code);
    }
    for (unsigned int i = 0; i < count && i < kMaxInstancesPerProfile; ++i) {
      nvmlGpuInstanceInfo_t info{};
      code = api.gpu_instance_get_info(handles[i], &info);
      if (code != NVML_SUCCESS) {
        return failure(device, "reading a MIG GPU instance", "nvmlGpuInstanceGetInfo", code);
      }
      instances.push_back({static_cast<int>(info.id), static_cast<int>(info.profileId),
                           static_cast<int>(info.placement.start),
                           static_cast<int>(info.placement.size)});
    }
  }
  std::sort(instances.begin(), instances.end(),
            [](const MigGpuInstance& a, const MigGpuInstance& b) { return a.id < b.id; });
  return instances;
}

Result<MigGpuInstance> NvmlMigControl::create_gpu_instance(int device, int profile_id, int start) {
  auto h = handle(device);
  if (!h.ok()) return h.error();
  const NvmlApi& api = library_.api();
  COLO_REQUIRE_NVML(device_create_gpu_instance_with_placement,
                    "nvmlDeviceCreateGpuInstanceWithPlacement");
  COLO_REQUIRE_NVML(gpu_instance_get_info, "nvmlGpuInstanceGetInfo");
  const std::string what = fmt::format(
      "creating a GPU instance of MIG profile {} at memory slice {}", profile_id, start);
  nvmlGpuInstancePlacement_t placement{static_cast<unsigned int>(start), 0};
  nvmlGpuInstance_t instance = nullptr;
  nvmlReturn_t code = api.device_create_gpu_instance_with_placement(
      *h, static_cast<unsigned int>(profile_id), &placement, &instance);
  if (code != NVML_SUCCESS) {
    return failure(device, what, "nvmlDeviceCreateGpuInstanceWithPlacement", code);
  }
  nvmlGpuInstanceInfo_t info{};
  code = api.gpu_instance_get_info(instance, &info);
  if (code != NVML_SUCCESS) return failure(device, what, "nvmlGpuInstanceGetInfo", code);
  return MigGpuInstance{static_cast<int>(info.id), static_cast<int>(info.profileId),
                        static_cast<int>(info.placement.start),
                        static_cast<int>(info.placement.size)};
}

Result<nvmlGpuInstance_t> NvmlMigControl::gpu_instance(int device, int gpu_instance_id) const {
  auto h = handle(device);
  if (!h.ok()) return h.error();
  const NvmlApi& api = library_.api();
  COLO_REQUIRE_NVML(device_get_gpu_instance_by_id, "nvmlDeviceGetGpuInstanceById");
  nvmlGpuInstance_t instance = nullptr;
  nvmlReturn_t code =
      api.device_get_gpu_instance_by_id(*h, static_cast<unsigned int>(gpu_instance_id), &instance);
  if (code != NVML_SUCCESS) {
    return failure(device, fmt::format("finding MIG GPU instance {}", gpu_instance_id),
                   "nvmlDeviceGetGpuInstanceById", code);
  }
  return instance;
}

Result<bool> NvmlMigControl::destroy_gpu_instance(int device, int gpu_instance_id) {
  auto h = handle(device);
  if (!h.ok()) return h.error();
  const NvmlApi& api = library_.api();
  COLO_REQUIRE_NVML(device_get_gpu_instance_by_id, "nvmlDeviceGetGpuInstanceById");
  COLO_REQUIRE_NVML(gpu_instance_destroy, "nvmlGpuInstanceDestroy");
  nvmlGpuInstance_t instance = nullptr;
  nvmlReturn_t code =
      api.device_get_gpu_instance_by_id(*h, static_cast<unsigned int>(gpu_instance_id), &instance);
  if (means_gone(code)) return false;
  const std::string what = fmt::format("destroying MIG GPU instance {}", gpu_instance_id);
  if (code != NVML_SUCCESS) return failure(device, what, "nvmlDeviceGetGpuInstanceById", code);
  code = api.gpu_instance_destroy(instance);
  if (code != NVML_SUCCESS) return failure(device, what, "nvmlGpuInstanceDestroy", code);
  return true;
}

Result<std::vector<MigComputeInstance>> NvmlMigControl::compute_instances(int device,
                                                                          int gpu_instance_id) {
  const NvmlApi& api = library_.api();
  COLO_REQUIRE_NVML(gpu_instance_get_compute_instance_profile_info,
                    "nvmlGpuInstanceGetComputeInstanceProfileInfo");
  COLO_REQUIRE_NVML(gpu_instance_get_compute_instances, "nvmlGpuInstanceGetComputeInstances");
  COLO_REQUIRE_NVML(compute_instance_get_info, "nvmlComputeInstanceGetInfo_v2");
  auto gi = gpu_instance(device, gpu_instance_id);
  if (!gi.ok()) return gi.error();
  const std::string what =
      fmt::format("listing the compute instances of MIG GPU instance {}", gpu_instance_id);
  std::vector<MigComputeInstance> instances;
  for (unsigned int index = 0; index < kComputeInstanceProfileIndices; ++index) {
    nvmlComputeInstanceProfileInfo_t profile{};
    if (api.gpu_instance_get_compute_instance_profile_info(
            *gi, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &profile) != NVML_SUCCESS) {
      continue;  // no such compute-instance profile in this GPU instance
    }
    nvmlComputeInstance_t handles[kMaxInstancesPerProfile] = {};
    unsigned int count = kMaxInstancesPerProfile;
    nvmlReturn_t code = api.gpu_instance_get_compute_instances(*gi, profile.id, handles, &count);
    if (code != NVML_SUCCESS) {
      return failure(device, what, "nvmlGpuInstanceGetComputeInstances", code);
    }
    for (unsigned int i = 0; i < count && i < kMaxInstancesPerProfile; ++i) {
      nvmlComputeInstanceInfo_t info{};
      code = api.compute_instance_get_info(handles[i], &info);
      if (code != NVML_SUCCESS) return failure(device, what, "nvmlComputeInstanceGetInfo_v2", code);
      instances.push_back({gpu_instance_id, static_cast<int>(info.id),
                           static_cast<int>(info.profileId), static_cast<int>(profile.sliceCount)});
    }
  }
  std::sort(instances.begin(), instances.end(),
            [](const MigComputeInstance& a, const MigComputeInstance& b) { return a.id < b.id; });
  return instances;
}

Result<MigComputeInstance> NvmlMigControl::create_compute_instance(int device, int gpu_instance_id,
                                                                   int slice_count) {
  const NvmlApi& api = library_.api();
  COLO_REQUIRE_NVML(gpu_instance_get_compute_instance_profile_info,
                    "nvmlGpuInstanceGetComputeInstanceProfileInfo");
  COLO_REQUIRE_NVML(gpu_instance_create_compute_instance, "nvmlGpuInstanceCreateComputeInstance");
  COLO_REQUIRE_NVML(compute_instance_get_info, "nvmlComputeInstanceGetInfo_v2");
  const int index = compute_instance_profile_index(slice_count);
  if (index < 0) {
    return Error(fmt::format("a MIG compute instance holds 1, 2, 3, 4 or 7 compute slices, not {}",
                             slice_count));
  }
  auto gi = gpu_instance(device, gpu_instance_id);
  if (!gi.ok()) return gi.error();
  const std::string what = fmt::format(
      "creating a {}-slice compute instance in MIG GPU instance {}", slice_count, gpu_instance_id);
  nvmlComputeInstanceProfileInfo_t profile{};
  nvmlReturn_t code = api.gpu_instance_get_compute_instance_profile_info(
      *gi, static_cast<unsigned int>(index), NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &profile);
  if (code != NVML_SUCCESS) {
    return failure(device, what, "nvmlGpuInstanceGetComputeInstanceProfileInfo", code);
  }
  nvmlComputeInstance_t instance = nullptr;
  code = api.gpu_instance_create_compute_instance(*gi, profile.id, &instance);
  if (code != NVML_SUCCESS) {
    return failure(device, what, "nvmlGpuInstanceCreateComputeInstance", code);
  }
  nvmlComputeInstanceInfo_t info{};
  code = api.compute_instance_get_info(instance, &info);
  if (code != NVML_SUCCESS) return failure(device, what, "nvmlComputeInstanceGetInfo_v2", code);
  return MigComputeInstance{gpu_instance_id, static_cast<int>(info.id),
                            static_cast<int>(info.profileId), slice_count};
}

Result<bool> NvmlMigControl::destroy_compute_instance(int device, int gpu_instance_id,
                                                      int compute_instance_id) {
  const NvmlApi& api = library_.api();
  COLO_REQUIRE_NVML(device_get_gpu_instance_by_id, "nvmlDeviceGetGpuInstanceById");
  COLO_REQUIRE_NVML(gpu_instance_get_compute_instance_by_id,
                    "nvmlGpuInstanceGetComputeInstanceById");
  COLO_REQUIRE_NVML(compute_instance_destroy, "nvmlComputeInstanceDestroy");
  auto h = handle(device);
  if (!h.ok()) return h.error();
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t code =
      api.device_get_gpu_instance_by_id(*h, static_cast<unsigned int>(gpu_instance_id), &gi);
  if (means_gone(code)) return false;  // its GPU instance is gone, and it with it
  const std::string what = fmt::format("destroying compute instance {} of MIG GPU instance {}",
                                       compute_instance_id, gpu_instance_id);
  if (code != NVML_SUCCESS) return failure(device, what, "nvmlDeviceGetGpuInstanceById", code);
  nvmlComputeInstance_t ci = nullptr;
  code = api.gpu_instance_get_compute_instance_by_id(
      gi, static_cast<unsigned int>(compute_instance_id), &ci);
  if (means_gone(code)) return false;
  if (code != NVML_SUCCESS) {
    return failure(device, what, "nvmlGpuInstanceGetComputeInstanceById", code);
  }
  code = api.compute_instance_destroy(ci);
  if (code != NVML_SUCCESS) return failure(device, what, "nvmlComputeInstanceDestroy", code);
  return true;
}

Result<std::vector<MigDevice>> NvmlMigControl::mig_devices(int device) {
  auto h = handle(device);
  if (!h.ok()) return h.error();
  const NvmlApi& api = library_.api();
  COLO_REQUIRE_NVML(device_get_max_mig_device_count, "nvmlDeviceGetMaxMigDeviceCount");
  COLO_REQUIRE_NVML(device_get_mig_device_handle_by_index, "nvmlDeviceGetMigDeviceHandleByIndex");
  COLO_REQUIRE_NVML(device_get_gpu_instance_id, "nvmlDeviceGetGpuInstanceId");
  COLO_REQUIRE_NVML(device_get_compute_instance_id, "nvmlDeviceGetComputeInstanceId");
  COLO_REQUIRE_NVML(device_get_uuid, "nvmlDeviceGetUUID");
  const std::string what = "listing MIG devices";
  unsigned int max_count = 0;
  nvmlReturn_t code = api.device_get_max_mig_device_count(*h, &max_count);
  if (code != NVML_SUCCESS) return failure(device, what, "nvmlDeviceGetMaxMigDeviceCount", code);
  std::vector<MigDevice> out;
  for (unsigned int i = 0; i < max_count; ++i) {
    nvmlDevice_t mig = nullptr;
    code = api.device_get_mig_device_handle_by_index(*h, i, &mig);
    if (code == NVML_ERROR_NOT_FOUND) continue;  // no MIG device at this index
    if (code != NVML_SUCCESS) {
      return failure(device, what, "nvmlDeviceGetMigDeviceHandleByIndex", code);
    }
    MigDevice d;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    unsigned int gi = 0;
    unsigned int ci = 0;
    if ((code = api.device_get_uuid(mig, uuid, sizeof uuid)) != NVML_SUCCESS ||
        (code = api.device_get_gpu_instance_id(mig, &gi)) != NVML_SUCCESS ||
        (code = api.device_get_compute_instance_id(mig, &ci)) != NVML_SUCCESS) {
      return failure(device, what, "reading a MIG device handle", code);
    }
    d.uuid = c_string(uuid, sizeof uuid);
    d.gpu_instance_id = static_cast<int>(gi);
    d.compute_instance_id = static_cast<int>(ci);
    nvmlMemory_v2_t memory{};
    memory.version = nvmlMemory_v2;
    nvmlMemory_t memory_v1{};
    if (api.device_get_memory_info_v2 != nullptr &&
        api.device_get_memory_info_v2(mig, &memory) == NVML_SUCCESS) {
      d.memory_used_bytes = memory.used;
      d.memory_total_bytes = memory.total;
    } else if (api.device_get_memory_info != nullptr &&
               api.device_get_memory_info(mig, &memory_v1) == NVML_SUCCESS) {
      d.memory_used_bytes = memory_v1.used;
      d.memory_total_bytes = memory_v1.total;
    }
    out.push_back(std::move(d));
  }
  return out;
}

#undef COLO_REQUIRE_NVML

}  // namespace colo
