// A stand-in for libnvidia-ml.so.1, built as a shared library so NvmlBackend
// is tested through dlopen exactly as with the driver. It answers like the
// driver did on an H200 (shared/design/nvidia-interfaces.md) and can be told
// to misbehave through the fake_nvml_* control functions (fake_nvml.h).
// Built twice: fake_nvml exports everything NvmlBackend resolves;
// fake_nvml_minimal (FAKE_NVML_MINIMAL) only the oldest names and the few
// functions an old driver would have, to test "missing symbol = absent".
// Not thread-safe: the tests drive it from one thread.
#include "gpu/testing/fake_nvml.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/nvml_api.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct FakeDevice {
  int index = 0;
};

struct FakeProcess {
  unsigned int mode;
  unsigned int pid;
  unsigned long long used_bytes;
};

// Like the driver's, a sample is a snapshot of counters: here a sample number
// and the running sum of the "gpm_sm_util_pct" setting, so SM_UTIL between
// two samples is the average of the setting over the windows in between.
struct FakeGpmSample {
  long long sequence = 0;  // 0 until nvmlGpmSampleGet filled it
  long long sm_util_sum = 0;
};

struct FakeState {
  std::map<std::string, long long> settings;
  std::map<std::string, long long> counters;
  std::vector<FakeProcess> processes;
  std::vector<nvmlProcessUtilizationSample_t> utilization;
  std::map<FakeGpmSample*, std::unique_ptr<FakeGpmSample>> gpm_samples;  // by handle
  long long gpm_sequence = 0;
  long long gpm_sm_util_sum = 0;
  unsigned long long energy_mj = 5'000'000;

  long long setting(const std::string& key) const {
    auto it = settings.find(key);
    return it == settings.end() ? 0 : it->second;
  }
};

FakeDevice g_devices[4] = {{0}, {1}, {2}, {3}};
FakeState& state() {
  static FakeState s;
  return s;
}

void reset() {
  state() = FakeState{};
  state().settings = {{"device_count", 1},
                      {"process_stride", 24},
                      {"gpm_supported", 1},
                      {"gpm_sm_util_pct", 92},
                      {"gpm_tensor_result", NVML_ERROR_NOT_SUPPORTED}};
}

// The device behind a handle, or nullptr for a handle the fake did not hand out.
FakeDevice* device_of(nvmlDevice_t handle) {
  for (int i = 0; i < state().setting("device_count") && i < 4; ++i) {
    if (reinterpret_cast<nvmlDevice_t>(&g_devices[i]) == handle) return &g_devices[i];
  }
  return nullptr;
}

// NVML_SUCCESS, or why a query on `handle` fails.
nvmlReturn_t check(nvmlDevice_t handle) {
  if (device_of(handle) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (state().setting("gpu_lost") != 0) return NVML_ERROR_GPU_IS_LOST;
  return NVML_SUCCESS;
}

nvmlReturn_t copy_string(const char* text, char* buffer, unsigned int length) {
  if (std::strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::strcpy(buffer, text);  // NOLINT: length checked
  return NVML_SUCCESS;
}

constexpr unsigned long long kMiB = 1024ULL * 1024;
constexpr unsigned long long kTotalMiB = 143771;

#ifndef FAKE_NVML_MINIMAL
struct FakeProfile {
  unsigned int index, id, slices, instances, sms;
  unsigned long long memory_mib;
  const char* name;
};
// H200-like, as nvidia-smi mig -lgip showed them; memory sizes chosen near the real ones.
constexpr FakeProfile kProfiles[] = {
    {0, 19, 1, 7, 16, 16896, "MIG 1g.18gb"},   {1, 14, 2, 3, 32, 33792, "MIG 2g.35gb"},
    {2, 9, 3, 2, 60, 67840, "MIG 3g.71gb"},    {3, 5, 4, 1, 64, 67840, "MIG 4g.71gb"},
    {4, 0, 7, 1, 132, 137216, "MIG 7g.141gb"}, {7, 20, 1, 1, 16, 16896, "MIG 1g.18gb+me"},
    {9, 15, 1, 4, 16, 33792, "MIG 1g.35gb"}};

const FakeProfile* find_profile(unsigned int index) {
  for (const FakeProfile& p : kProfiles) {
    if (p.index == index) return &p;
  }
  return nullptr;
}
#endif

// Classic two-call list protocol: too small a buffer reports the size needed.
template <class Fill>
nvmlReturn_t answer_list(unsigned int needed, unsigned int* count, Fill fill) {
  if (*count < needed) {
    *count = needed;
    return needed == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *count = needed;
  fill();
  return NVML_SUCCESS;
}

std::vector<FakeProcess> processes_in(unsigned int mode) {
  std::vector<FakeProcess> selected;
  for (const FakeProcess& p : state().processes) {
    if (p.mode == mode) selected.push_back(p);
  }
  return selected;
}

nvmlReturn_t running_processes(nvmlDevice_t device, unsigned int mode, unsigned int* count,
                               nvmlProcessInfo_t* infos) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  const std::vector<FakeProcess> selected = processes_in(mode);
  const auto stride = static_cast<size_t>(state().setting("process_stride"));
  return answer_list(static_cast<unsigned int>(selected.size()), count, [&] {
    auto* bytes = reinterpret_cast<unsigned char*>(infos);
    for (size_t i = 0; i < selected.size(); ++i) {
      nvmlProcessDetail_v1_t entry{selected[i].pid, selected[i].used_bytes, 0xffffffff, 0xffffffff,
                                   0};
      std::memcpy(bytes + i * stride, &entry, stride);
    }
  });
}

}  // namespace

// ---- control ----

FAKE_EXPORT void fake_nvml_reset() { reset(); }
FAKE_EXPORT void fake_nvml_set(const char* key, long long value) { state().settings[key] = value; }
FAKE_EXPORT long long fake_nvml_get(const char* key) {
  if (std::string(key) == "gpm_samples_live")
    return static_cast<long long>(state().gpm_samples.size());
  return state().counters[key];
}
FAKE_EXPORT void fake_nvml_add_process(unsigned int mode, unsigned int pid,
                                       unsigned long long used_bytes) {
  state().processes.push_back({mode, pid, used_bytes});
}
FAKE_EXPORT void fake_nvml_add_utilization(unsigned int pid, unsigned int sm_util,
                                           unsigned long long timestamp_us) {
  state().utilization.push_back({pid, timestamp_us, sm_util, 0, 0, 0});
}

// ---- the NVML functions every driver has (under their oldest names when minimal) ----

#ifdef FAKE_NVML_MINIMAL
#define FAKE_NAME(modern, oldest) oldest
#else
#define FAKE_NAME(modern, oldest) modern
#endif

FAKE_EXPORT nvmlReturn_t FAKE_NAME(nvmlInit_v2, nvmlInit)() {
  if (state().settings.empty()) reset();
  ++state().counters["init_calls"];
  return static_cast<nvmlReturn_t>(state().setting("init_result"));
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown() {
  ++state().counters["shutdown_calls"];
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t FAKE_NAME(nvmlDeviceGetCount_v2, nvmlDeviceGetCount)(unsigned int* count) {
  *count = static_cast<unsigned int>(state().setting("device_count"));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t FAKE_NAME(nvmlDeviceGetHandleByIndex_v2,
                                   nvmlDeviceGetHandleByIndex)(unsigned int index,
                                                               nvmlDevice_t* device) {
  if (index >= state().setting("device_count") || index >= 4) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(&g_devices[index]);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  return copy_string("NVIDIA H200", name, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  *memory = {kTotalMiB * kMiB, (kTotalMiB - 1234) * kMiB, 1234 * kMiB};
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int* count,
                                                                 nvmlProcessInfo_t* infos) {
  return running_processes(device, NVML_PROCESS_MODE_COMPUTE, count, infos);
}

#ifndef FAKE_NVML_MINIMAL
// ---- what a current driver adds ----

FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t code) {
  switch (code) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return copy_string("580.95.05", version, length);
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return copy_string("13.580.95.05", version, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  const std::string text =
      "GPU-fa4e0000-0000-0000-0000-00000000000" + std::to_string(device_of(device)->index);
  return copy_string(text.c_str(), uuid, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  std::memset(pci, 0, sizeof *pci);
  std::strcpy(pci->busId, "00000000:19:00.0");  // NOLINT: fits busId[32]
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  memory->total = kTotalMiB * kMiB;
  memory->reserved = 512 * kMiB;
  memory->used = 2048 * kMiB;
  memory->free = memory->total - memory->reserved - memory->used;
  return NVML_SUCCESS;
}

// Like the driver on a whole (non-MIG) GPU.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t*) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  return NVML_ERROR_NOT_SUPPORTED;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                            int* minor) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  *major = 9;
  *minor = 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int* cores) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  *cores = 16896;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                              unsigned int* pending) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  *current = 0;
  *pending = 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device,
                                                             unsigned int index,
                                                             nvmlGpuInstanceProfileInfo_t* info) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  const FakeProfile* p = find_profile(index);
  if (p == nullptr) return index < 9 ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
  *info = {p->id, 0, p->slices, p->instances, p->sms, 2, 1, 0, 1, 0, p->memory_mib};
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(
    nvmlDevice_t device, unsigned int index, nvmlGpuInstanceProfileInfo_v2_t* info) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (nvmlReturn_t forced = static_cast<nvmlReturn_t>(state().setting("profile_info_v_result"))) {
    return forced;
  }
  if (info->version != nvmlGpuInstanceProfileInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const FakeProfile* p = find_profile(index);
  if (p == nullptr) return index < 9 ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
  info->id = p->id;
  info->sliceCount = p->slices;
  info->instanceCount = p->instances;
  info->multiprocessorCount = p->sms;
  info->memorySizeMB = p->memory_mib;
  std::strcpy(info->name, p->name);  // NOLINT: fits name[96]
  return NVML_SUCCESS;
}

// Placements by profile id as the MIG user guide lists them; the setting
// "placements_result" forces an error code (the driver with MIG disabled).
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstancePlacement_t* placements,
    unsigned int* count) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (nvmlReturn_t forced = static_cast<nvmlReturn_t>(state().setting("placements_result"))) {
    return forced;
  }
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<nvmlGpuInstancePlacement_t> answer;
  auto every = [&](unsigned int step, unsigned int last, unsigned int size) {
    for (unsigned int start = 0; start <= last; start += step) answer.push_back({start, size});
  };
  switch (profile_id) {
    case 19:
    case 20:
      every(1, 6, 1);
      break;
    case 15:
      every(2, 6, 2);
      break;
    case 14:
      every(2, 4, 2);
      break;
    case 9:
      every(4, 4, 4);
      break;
    case 5:
      answer.push_back({0, 4});
      break;
    case 0:
      answer.push_back({0, 8});
      break;
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (placements != nullptr) {
    std::copy(answer.begin(), answer.end(), placements);
  }
  *count = static_cast<unsigned int>(answer.size());
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                       nvmlUtilization_t* utilization) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  *utilization = {87, 30};
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (nvmlReturn_t forced = static_cast<nvmlReturn_t>(state().setting("power_result"))) {
    return forced;
  }
  *milliwatts = 412'500;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                             unsigned long long* millijoules) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  ++state().counters["energy_reads"];
  state().energy_mj += 1000;
  *millijoules = state().energy_mj;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type,
                                                unsigned int* mhz) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (type != NVML_CLOCK_SM) return NVML_ERROR_INVALID_ARGUMENT;
  *mhz = 1980;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                    unsigned int* count,
                                                                    nvmlProcessInfo_t* infos) {
  return running_processes(device, NVML_PROCESS_MODE_MPS, count, infos);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device,
                                                               nvmlProcessDetailList_v1_t* list) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (nvmlReturn_t forced = static_cast<nvmlReturn_t>(state().setting("detail_list_result"))) {
    return forced;
  }
  if (list->version != nvmlProcessDetailList_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (list->mode != NVML_PROCESS_MODE_COMPUTE && list->mode != NVML_PROCESS_MODE_MPS) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const std::vector<FakeProcess> selected = processes_in(list->mode);
  return answer_list(static_cast<unsigned int>(selected.size()), &list->numProcArrayEntries, [&] {
    for (size_t i = 0; i < selected.size(); ++i) {
      list->procArray[i] = {selected[i].pid, selected[i].used_bytes, 0xffffffff, 0xffffffff, 0};
    }
  });
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                         nvmlProcessUtilizationSample_t* samples,
                                                         unsigned int* count,
                                                         unsigned long long last_seen_us) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  state().counters["last_seen_timestamp_us"] = static_cast<long long>(last_seen_us);
  if (nvmlReturn_t forced =
          static_cast<nvmlReturn_t>(state().setting("process_utilization_result"))) {
    return forced;
  }
  std::vector<nvmlProcessUtilizationSample_t> newer;
  for (const auto& sample : state().utilization) {
    if (sample.timeStamp > last_seen_us) newer.push_back(sample);
  }
  if (newer.empty()) return NVML_ERROR_NOT_FOUND;
  return answer_list(static_cast<unsigned int>(newer.size()), count,
                     [&] { std::copy(newer.begin(), newer.end(), samples); });
}

FAKE_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* support) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  support->isSupportedDevice = state().setting("gpm_supported") != 0 ? 1 : 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  auto owned = std::make_unique<FakeGpmSample>();
  *sample = reinterpret_cast<nvmlGpmSample_t>(owned.get());
  state().gpm_samples.emplace(owned.get(), std::move(owned));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  auto* fake = reinterpret_cast<FakeGpmSample*>(sample);
  return state().gpm_samples.erase(fake) == 1 ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

FAKE_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  auto* fake = reinterpret_cast<FakeGpmSample*>(sample);
  if (state().gpm_samples.count(fake) == 0) return NVML_ERROR_INVALID_ARGUMENT;
  fake->sequence = ++state().gpm_sequence;
  state().gpm_sm_util_sum += state().setting("gpm_sm_util_pct");
  fake->sm_util_sum = state().gpm_sm_util_sum;
  return NVML_SUCCESS;
}

// Values as seen on the H200 under load; sample1 must be the older sample.
FAKE_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* request) {
  if (request->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  auto* older = reinterpret_cast<FakeGpmSample*>(request->sample1);
  auto* newer = reinterpret_cast<FakeGpmSample*>(request->sample2);
  if (state().gpm_samples.count(older) == 0 || state().gpm_samples.count(newer) == 0 ||
      older->sequence == 0 || older->sequence >= newer->sequence ||
      request->numMetrics > NVML_GPM_METRIC_MAX) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (unsigned int i = 0; i < request->numMetrics; ++i) {
    nvmlGpmMetric_t& metric = request->metrics[i];
    metric.nvmlReturn = NVML_SUCCESS;
    switch (metric.metricId) {
      case NVML_GPM_METRIC_SM_UTIL:
        metric.value = static_cast<double>(newer->sm_util_sum - older->sm_util_sum) /
                       static_cast<double>(newer->sequence - older->sequence);
        break;
      case NVML_GPM_METRIC_SM_OCCUPANCY:
        metric.value = 11.8;
        break;
      case NVML_GPM_METRIC_DRAM_BW_UTIL:
        metric.value = 7.4;
        break;
      case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
        metric.value = 38.0;
        break;
      case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
        metric.value = 60.0;
        break;
      case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
        metric.nvmlReturn = static_cast<nvmlReturn_t>(state().setting("gpm_tensor_result"));
        metric.value = 0.0;
        break;
      default:
        metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
  }
  return NVML_SUCCESS;
}
#endif  // FAKE_NVML_MINIMAL
