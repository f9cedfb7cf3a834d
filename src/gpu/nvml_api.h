// colo's own declarations of the part of NVML it uses. There is no nvml.h at
// build time: NVML is loaded with dlopen (see NvmlLibrary), so these types,
// constants and function-pointer types are written from NVIDIA's published
// header layouts (docs/nvidia-interfaces.md). The static_asserts pin
// every layout colo reads; a mismatch with the real driver corrupts memory, so
// change them only against a real nvml.h.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlGpmSample_t = struct nvmlGpmSample_st*;
using nvmlGpuInstance_t = struct nvmlGpuInstance_st*;
using nvmlComputeInstance_t = struct nvmlComputeInstance_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;

// Return codes colo distinguishes.
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_RESET_REQUIRED = 16;
inline constexpr nvmlReturn_t NVML_ERROR_IN_USE = 19;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_RESOURCES = 23;
inline constexpr nvmlReturn_t NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

// Versioned structs carry sizeof(struct) | (version << 24) in their first field.
constexpr unsigned int nvml_struct_version(std::size_t size, unsigned int version) {
  return static_cast<unsigned int>(size) | (version << 24);
}

inline constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 80;
inline constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned int NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80;
// usedGpuMemory when the driver cannot say (NVML_VALUE_NOT_AVAILABLE).
inline constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

inline constexpr unsigned int NVML_CLOCK_SM = 1;  // nvmlClockType_t
inline constexpr unsigned int NVML_DEVICE_MIG_DISABLE = 0;
inline constexpr unsigned int NVML_DEVICE_MIG_ENABLE = 1;

// nvmlProcessMode_t for nvmlDeviceGetRunningProcessDetailList.
inline constexpr unsigned int NVML_PROCESS_MODE_COMPUTE = 0;
inline constexpr unsigned int NVML_PROCESS_MODE_MPS = 2;

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
inline constexpr unsigned int nvmlMemory_v2 = 0x02000028;

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

// Filled by nvmlDeviceGetAttributes_v2 (NVML documents it for MIG device handles).
struct nvmlDeviceAttributes_t {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
};

// nvmlProcessInfo_v2_t / _v3 (same layout): entries of the *RunningProcesses_v3 lists.
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// Entries of nvmlDeviceGetRunningProcessDetailList. Some R535+ drivers also
// write this 32-byte layout into the *_v3 lists (see NvmlBackend).
struct nvmlProcessDetail_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
};

struct nvmlProcessDetailList_v1_t {
  unsigned int version;
  unsigned int mode;
  unsigned int numProcArrayEntries;
  nvmlProcessDetail_v1_t* procArray;
};
inline constexpr unsigned int nvmlProcessDetailList_v1 = 0x01000018;

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp in microseconds
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

// Profile indices passed to nvmlDeviceGetGpuInstanceProfileInfo*.
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 7;    // "+me"
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME = 13;  // "-me"
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_COUNT_QUERIED = 14;

struct nvmlGpuInstanceProfileInfo_t {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
};

struct nvmlGpuInstanceProfileInfo_v2_t {
  unsigned int version;
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
};
inline constexpr unsigned int nvmlGpuInstanceProfileInfo_v2 = 0x02000098;

// One possible GPU-instance placement, in memory slices
// (nvmlDeviceGetGpuInstancePossiblePlacements_v2).
struct nvmlGpuInstancePlacement_t {
  unsigned int start;
  unsigned int size;
};

// A GPU instance as nvmlGpuInstanceGetInfo describes it.
struct nvmlGpuInstanceInfo_t {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
};

// Compute-instance profile indices (nvmlGpuInstanceGetComputeInstanceProfileInfo)
// and the one engine profile colo uses.
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE = 0;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE = 1;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE = 2;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE = 3;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE = 4;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0;

struct nvmlComputeInstanceProfileInfo_t {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
};

// Compute slices [start, start + size) of the parent GPU instance.
struct nvmlComputeInstancePlacement_t {
  unsigned int start;
  unsigned int size;
};

// A compute instance as nvmlComputeInstanceGetInfo_v2 describes it.
struct nvmlComputeInstanceInfo_t {
  nvmlDevice_t device;
  nvmlGpuInstance_t gpuInstance;
  unsigned int id;
  unsigned int profileId;
  nvmlComputeInstancePlacement_t placement;
};

// GPM (Hopper and later). GPM structs use a plain version number.
inline constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;
inline constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;
// The driver's metric array grew across versions (98, 210, 333); colo
// allocates at least the largest known size.
inline constexpr unsigned int NVML_GPM_METRIC_MAX = 333;

inline constexpr unsigned int NVML_GPM_METRIC_GRAPHICS_UTIL = 1;
inline constexpr unsigned int NVML_GPM_METRIC_SM_UTIL = 2;
inline constexpr unsigned int NVML_GPM_METRIC_SM_OCCUPANCY = 3;
inline constexpr unsigned int NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5;
inline constexpr unsigned int NVML_GPM_METRIC_DRAM_BW_UTIL = 10;
inline constexpr unsigned int NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20;
inline constexpr unsigned int NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21;

struct nvmlGpmSupport_t {
  unsigned int version;
  unsigned int isSupportedDevice;
};

struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

struct nvmlGpmMetricsGet_t {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
};

// Event sets. Only Xid critical errors are registered; eventData is the Xid
// (999 when unknown). gpuInstanceId / computeInstanceId name the MIG instance
// an Xid is attributable to, else 0xFFFFFFFF; nvmlEventSetWait (v1) writes
// only the first three fields.
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x0000000000000008ULL;

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// Function-pointer types, named after the symbol they are resolved from.
using nvmlInit_fn = nvmlReturn_t (*)();
using nvmlShutdown_fn = nvmlReturn_t (*)();
using nvmlErrorString_fn = const char* (*)(nvmlReturn_t);
using nvmlSystemGetVersion_fn = nvmlReturn_t (*)(char*, unsigned int);
using nvmlDeviceGetCount_fn = nvmlReturn_t (*)(unsigned int*);
using nvmlDeviceGetHandleByIndex_fn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using nvmlDeviceGetString_fn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using nvmlDeviceGetPciInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using nvmlDeviceGetMemoryInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using nvmlDeviceGetMemoryInfo_v2_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*);
using nvmlDeviceGetAttributes_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlDeviceAttributes_t*);
using nvmlDeviceGetCudaComputeCapability_fn = nvmlReturn_t (*)(nvmlDevice_t, int*, int*);
using nvmlDeviceGetNumGpuCores_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetMigMode_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
using nvmlDeviceGetGpuInstanceProfileInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                                nvmlGpuInstanceProfileInfo_t*);
using nvmlDeviceGetGpuInstanceProfileInfoV_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                                 nvmlGpuInstanceProfileInfo_v2_t*);
// (device, profileId, placements or NULL to ask the count, count out).
using nvmlDeviceGetGpuInstancePossiblePlacements_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                                       nvmlGpuInstancePlacement_t*,
                                                                       unsigned int*);
using nvmlDeviceGetUtilizationRates_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using nvmlDeviceGetPowerUsage_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetEnforcedPowerLimit_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetTotalEnergyConsumption_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using nvmlDeviceGetClockInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int*);
using nvmlDeviceGetRunningProcesses_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*,
                                                          nvmlProcessInfo_t*);
using nvmlDeviceGetRunningProcessDetailList_fn = nvmlReturn_t (*)(nvmlDevice_t,
                                                                  nvmlProcessDetailList_v1_t*);
using nvmlDeviceGetProcessUtilization_fn = nvmlReturn_t (*)(nvmlDevice_t,
                                                            nvmlProcessUtilizationSample_t*,
                                                            unsigned int*, unsigned long long);
// MIG instances (the calls nvidia-mig-parted makes). Handles of GPU and
// compute instances are only valid until the instance is destroyed.
using nvmlDeviceSetMigMode_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int mode,
                                                 nvmlReturn_t* activationStatus);
using nvmlDeviceCreateGpuInstanceWithPlacement_fn = nvmlReturn_t (*)(
    nvmlDevice_t, unsigned int profileId, const nvmlGpuInstancePlacement_t*, nvmlGpuInstance_t*);
// (device, profileId, instances, count in: capacity / out: how many).
using nvmlDeviceGetGpuInstances_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int profileId,
                                                      nvmlGpuInstance_t*, unsigned int*);
using nvmlDeviceGetGpuInstanceById_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int id,
                                                         nvmlGpuInstance_t*);
using nvmlGpuInstanceGetInfo_fn = nvmlReturn_t (*)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*);
using nvmlGpuInstanceDestroy_fn = nvmlReturn_t (*)(nvmlGpuInstance_t);
// (gpuInstance, profile index, engine profile, info).
using nvmlGpuInstanceGetComputeInstanceProfileInfo_fn =
    nvmlReturn_t (*)(nvmlGpuInstance_t, unsigned int profile, unsigned int engProfile,
                     nvmlComputeInstanceProfileInfo_t*);
using nvmlGpuInstanceCreateComputeInstance_fn = nvmlReturn_t (*)(nvmlGpuInstance_t,
                                                                 unsigned int profileId,
                                                                 nvmlComputeInstance_t*);
// (gpuInstance, profileId, instances, count in: capacity / out: how many).
using nvmlGpuInstanceGetComputeInstances_fn = nvmlReturn_t (*)(nvmlGpuInstance_t,
                                                               unsigned int profileId,
                                                               nvmlComputeInstance_t*,
                                                               unsigned int*);
using nvmlGpuInstanceGetComputeInstanceById_fn = nvmlReturn_t (*)(nvmlGpuInstance_t,
                                                                  unsigned int id,
                                                                  nvmlComputeInstance_t*);
using nvmlComputeInstanceGetInfo_fn = nvmlReturn_t (*)(nvmlComputeInstance_t,
                                                       nvmlComputeInstanceInfo_t*);
using nvmlComputeInstanceDestroy_fn = nvmlReturn_t (*)(nvmlComputeInstance_t);
// (device, out): nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetGpuInstanceId and
// nvmlDeviceGetComputeInstanceId (the last two on a MIG device handle).
using nvmlDeviceGetUint_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetMigDeviceHandleByIndex_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int index,
                                                                nvmlDevice_t* migDevice);
using nvmlEventSetCreate_fn = nvmlReturn_t (*)(nvmlEventSet_t*);
using nvmlEventSetFree_fn = nvmlReturn_t (*)(nvmlEventSet_t);
using nvmlDeviceGetSupportedEventTypes_fn = nvmlReturn_t (*)(nvmlDevice_t,
                                                             unsigned long long* eventTypes);
using nvmlDeviceRegisterEvents_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long eventTypes,
                                                     nvmlEventSet_t);
// (set, data out, timeout in ms: 0 returns at once, NVML_ERROR_TIMEOUT when none is ready).
using nvmlEventSetWait_fn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*,
                                             unsigned int timeoutms);
using nvmlGpmQueryDeviceSupport_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSupport_t*);
using nvmlGpmSampleAlloc_fn = nvmlReturn_t (*)(nvmlGpmSample_t*);
using nvmlGpmSampleFree_fn = nvmlReturn_t (*)(nvmlGpmSample_t);
using nvmlGpmSampleGet_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSample_t);
using nvmlGpmMetricsGet_fn = nvmlReturn_t (*)(nvmlGpmMetricsGet_t*);

}  // extern "C"

static_assert(sizeof(nvmlMemory_v2_t) == 0x28);
static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(sizeof(nvmlDeviceAttributes_t) == 40);
static_assert(sizeof(nvmlProcessInfo_t) == 24);
static_assert(sizeof(nvmlProcessDetail_v1_t) == 32);
static_assert(sizeof(nvmlProcessDetailList_v1_t) == (nvmlProcessDetailList_v1 & 0xffffff));
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) ==
              (nvmlGpuInstanceProfileInfo_v2 & 0xffffff));
static_assert(sizeof(nvmlGpuInstancePlacement_t) == 8);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36);
static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32);
static_assert(sizeof(nvmlGpmMetric_t) == 40);
static_assert(sizeof(nvmlEventData_t) == 32);
static_assert(offsetof(nvmlEventData_t, eventData) == 16);
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24);
