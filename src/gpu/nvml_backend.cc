#include "gpu/nvml_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "common/text.h"
#include "common/units.h"
#include "gpu/device_metrics.h"

namespace colo {
namespace {

// GPM averages between two samples; NVML wants them more than 100 ms apart.
constexpr int64_t kMinGpmIntervalMs = 100;
constexpr int64_t kGpmPrimingSleepMs = kMinGpmIntervalMs + 10;
// nvmlDeviceGetTotalEnergyConsumption costs ~3.6 ms; read it at most this often.
constexpr int64_t kEnergyReadIntervalMs = 1000;
// Tries for the two-call "how many? / fill" list queries when the list grows in between.
constexpr int kListAttempts = 3;
constexpr unsigned int kListHeadroom = 8;
// Xid events taken per poll_xid_events(); the rest wait in the driver's queue.
constexpr int kMaxXidEventsPerPoll = 64;
// nvmlEventData_t's instance ids when the event is not attributable to one.
constexpr unsigned int kNoInstanceId = 0xFFFFFFFF;

struct GpmSampleDeleter {
  nvmlGpmSampleFree_fn free = nullptr;
  void operator()(nvmlGpmSample_st* sample) const {
    if (free != nullptr && sample != nullptr) free(sample);
  }
};
using GpmSamplePtr = std::unique_ptr<nvmlGpmSample_st, GpmSampleDeleter>;

// GPM metrics colo asks for, and where each goes.
struct GpmValues {
  std::optional<double> sm_active_pct;
  std::optional<double> sm_occupancy_pct;
  std::optional<double> tensor_active_pct;
  std::optional<double> dram_active_pct;
  std::optional<double> pcie_tx_mib_per_s;
  std::optional<double> pcie_rx_mib_per_s;
};

constexpr unsigned int kGpmMetricIds[] = {
    NVML_GPM_METRIC_SM_UTIL,      NVML_GPM_METRIC_SM_OCCUPANCY,    NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    NVML_GPM_METRIC_DRAM_BW_UTIL, NVML_GPM_METRIC_PCIE_TX_PER_SEC, NVML_GPM_METRIC_PCIE_RX_PER_SEC};

std::optional<double>* gpm_slot(GpmValues& values, unsigned int metric_id) {
  switch (metric_id) {
    case NVML_GPM_METRIC_SM_UTIL:
      return &values.sm_active_pct;
    case NVML_GPM_METRIC_SM_OCCUPANCY:
      return &values.sm_occupancy_pct;
    case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
      return &values.tensor_active_pct;
    case NVML_GPM_METRIC_DRAM_BW_UTIL:
      return &values.dram_active_pct;
    case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
      return &values.pcie_tx_mib_per_s;
    case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
      return &values.pcie_rx_mib_per_s;
    default:
      return nullptr;
  }
}

void apply(const GpmValues& values, DeviceSample& sample) {
  sample.sm_active_pct = values.sm_active_pct;
  sample.sm_occupancy_pct = values.sm_occupancy_pct;
  sample.tensor_active_pct = values.tensor_active_pct;
  sample.dram_active_pct = values.dram_active_pct;
  sample.pcie_tx_mib_per_s = values.pcie_tx_mib_per_s;
  sample.pcie_rx_mib_per_s = values.pcie_rx_mib_per_s;
}

// Codes meaning "this GPU or driver does not offer that": the metric is absent.
bool means_absent(nvmlReturn_t code) {
  return code == NVML_ERROR_NOT_SUPPORTED || code == NVML_ERROR_NO_PERMISSION ||
         code == NVML_ERROR_NOT_FOUND || code == NVML_ERROR_FUNCTION_NOT_FOUND ||
         code == NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

// Collects the outcome of the queries behind one sample: a sample fails only
// when the GPU is lost or nothing at all could be read.
class QueryLog {
 public:
  bool ok(nvmlReturn_t code) {
    if (code == NVML_SUCCESS) {
      any_success_ = true;
      return true;
    }
    if (!means_absent(code) && (first_failure_ == NVML_SUCCESS || code == NVML_ERROR_GPU_IS_LOST)) {
      first_failure_ = code;
    }
    return false;
  }
  bool failed() const {
    return first_failure_ == NVML_ERROR_GPU_IS_LOST ||
           (!any_success_ && first_failure_ != NVML_SUCCESS);
  }
  nvmlReturn_t first_failure() const { return first_failure_; }

 private:
  bool any_success_ = false;
  nvmlReturn_t first_failure_ = NVML_SUCCESS;
};

// FP32 cores per SM by compute capability, for deriving the SM count from
// nvmlDeviceGetNumGpuCores where nvmlDeviceGetAttributes does not answer.
std::optional<unsigned int> cores_per_sm(int major, int minor) {
  static const std::map<std::pair<int, int>, unsigned int> kCoresPerSm = {
      {{7, 0}, 64},  {{7, 5}, 64},  {{8, 0}, 64},   {{8, 6}, 128},
      {{8, 9}, 128}, {{9, 0}, 128}, {{10, 0}, 128}, {{12, 0}, 128}};
  auto it = kCoresPerSm.find({major, minor});
  if (it == kCoresPerSm.end()) return std::nullopt;
  return it->second;
}

std::optional<uint64_t> memory_or_absent(unsigned long long bytes) {
  if (bytes == NVML_VALUE_NOT_AVAILABLE) return std::nullopt;
  return bytes;
}

// Reads the entries of a *RunningProcesses_v3 answer of `count` entries whose
// stride the driver did not say (24 bytes per NVML's header; 32 on some R535+
// drivers). With 32-byte entries read at 24, the second pid falls on the low
// half of usedGpuCcProtectedMemory, which is 0 outside confidential computing.
std::vector<nvmlProcessInfo_t> decode_process_infos(const unsigned char* bytes,
                                                    unsigned int count) {
  auto pid_at = [&](size_t offset) {
    unsigned int pid;
    std::memcpy(&pid, bytes + offset, sizeof pid);
    return pid;
  };
  size_t stride = sizeof(nvmlProcessInfo_t);
  if (count >= 2) {
    bool zero_pid_at_24 = false;
    bool zero_pid_at_32 = false;
    for (unsigned int i = 0; i < count; ++i) {
      zero_pid_at_24 |= pid_at(i * sizeof(nvmlProcessInfo_t)) == 0;
      zero_pid_at_32 |= pid_at(i * sizeof(nvmlProcessDetail_v1_t)) == 0;
    }
    if (zero_pid_at_24 && !zero_pid_at_32) stride = sizeof(nvmlProcessDetail_v1_t);
  }
  std::vector<nvmlProcessInfo_t> infos(count);
  for (unsigned int i = 0; i < count; ++i) {
    std::memcpy(&infos[i], bytes + i * stride, sizeof(nvmlProcessInfo_t));
  }
  return infos;
}

}  // namespace

struct NvmlBackend::DeviceState {
  nvmlDevice_t handle = nullptr;
  bool gpm_supported = false;
  GpmSamplePtr gpm_previous;
  GpmSamplePtr gpm_current;
  std::optional<int64_t> gpm_previous_ms;            // monotonic time of gpm_previous
  GpmValues gpm_last;                                // repeated when sampled again within 100 ms
  std::unique_ptr<nvmlGpmMetricsGet_t> gpm_request;  // ~13 KB, reused
  std::optional<int64_t> energy_read_ms;
  unsigned long long process_utilization_seen_us = 0;
};

std::string compose_mig_profile_name(unsigned int slice_count, uint64_t profile_memory_mib,
                                     uint64_t device_memory_mib, unsigned int profile_index) {
  std::string name;
  if (device_memory_mib == 0) {
    name = fmt::format("{}g.{}gb", slice_count, (profile_memory_mib + 1023) / 1024);
  } else {
    const uint64_t nominal_gib = (device_memory_mib + 1023) / 1024;
    const double eighths = std::clamp(
        std::round(8.0 * static_cast<double>(profile_memory_mib) / device_memory_mib), 1.0, 8.0);
    const auto gb = static_cast<uint64_t>(std::floor(nominal_gib * eighths / 8.0 + 0.5));
    name = fmt::format("{}g.{}gb", slice_count, gb);
  }
  if (profile_index == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1) name += "+me";
  if (profile_index >= 10 && profile_index <= 12) name += "+gfx";  // *_SLICE_GFX
  if (profile_index == NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME) name += "-me";
  return name;
}

Result<std::unique_ptr<NvmlBackend>> NvmlBackend::create(const std::string& library_path,
                                                         Clock& clock) {
  auto library = NvmlLibrary::load(library_path);
  if (!library.ok()) return library.error();
  auto backend = std::make_unique<NvmlBackend>(Passkey(), std::move(library).value(), clock);
  const NvmlApi& api = backend->library_->api();

  unsigned int count = 0;
  nvmlReturn_t code = api.device_get_count(&count);
  if (code != NVML_SUCCESS) {
    return Error(fmt::format("NVML could not count the GPUs: {}; check that `nvidia-smi` works",
                             backend->library_->describe(code)));
  }
  if (count == 0) {
    return Error(
        "the NVIDIA driver is loaded but reports no GPUs; check `nvidia-smi`, or use "
        "--backend sim to run on the simulated GPU");
  }
  for (unsigned int i = 0; i < count; ++i) {
    auto state = std::make_unique<DeviceState>();
    code = api.device_get_handle_by_index(i, &state->handle);
    if (code != NVML_SUCCESS) {
      return Error(fmt::format("NVML could not open GPU {}: {}; check `nvidia-smi -i {}`", i,
                               backend->library_->describe(code), i));
    }
    if (api.gpm_query_device_support != nullptr && api.gpm_sample_alloc != nullptr &&
        api.gpm_sample_free != nullptr && api.gpm_sample_get != nullptr &&
        api.gpm_metrics_get != nullptr) {
      nvmlGpmSupport_t support{};
      support.version = NVML_GPM_SUPPORT_VERSION;
      state->gpm_supported =
          api.gpm_query_device_support(state->handle, &support) == NVML_SUCCESS &&
          support.isSupportedDevice != 0;
    }
    backend->devices_.push_back(std::move(state));
  }
  backend->watch_xid_events();
  std::vector<nvmlDevice_t> handles;
  for (const auto& state : backend->devices_) handles.push_back(state->handle);
  backend->mig_ = std::make_unique<NvmlMigControl>(*backend->library_, std::move(handles));

  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  char nvml[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE] = {};
  const bool has_driver = api.system_get_driver_version != nullptr &&
                          api.system_get_driver_version(driver, sizeof driver) == NVML_SUCCESS;
  const bool has_nvml = api.system_get_nvml_version != nullptr &&
                        api.system_get_nvml_version(nvml, sizeof nvml) == NVML_SUCCESS;
  backend->version_ =
      fmt::format("driver {}, NVML {}", has_driver ? c_string(driver, sizeof driver) : "unknown",
                  has_nvml ? c_string(nvml, sizeof nvml) : "unknown");
  return backend;
}

NvmlBackend::NvmlBackend(Passkey, std::unique_ptr<NvmlLibrary> library, Clock& clock)
    : library_(std::move(library)), clock_(clock) {}

// GPM samples (in devices_) are freed before library_ shuts NVML down.
NvmlBackend::~NvmlBackend() = default;

void NvmlBackend::watch_xid_events() {
  const NvmlApi& api = library_->api();
  if (api.event_set_create == nullptr || api.event_set_free == nullptr ||
      api.device_register_events == nullptr || api.event_set_wait == nullptr) {
    xid_events_status_ =
        "Xid events (GPU faults) are not watched: this NVIDIA driver lacks the NVML event "
        "functions (nvmlEventSetCreate, nvmlDeviceRegisterEvents, nvmlEventSetWait)";
    return;
  }
  nvmlEventSet_t raw = nullptr;
  const nvmlReturn_t created = api.event_set_create(&raw);
  if (created != NVML_SUCCESS || raw == nullptr) {
    xid_events_status_ =
        fmt::format("Xid events (GPU faults) are not watched: nvmlEventSetCreate failed: {}",
                    library_->describe(created));
    return;
  }
  std::unique_ptr<nvmlEventSet_st, NvmlEventSetFree> set(raw, NvmlEventSetFree{api.event_set_free});
  std::string unwatched;  // "GPU 1 (why), GPU 2 (why)"
  size_t unwatched_count = 0;
  auto leave_unwatched = [&](size_t index, const std::string& why) {
    unwatched += fmt::format("{}GPU {} ({})", unwatched.empty() ? "" : ", ", index, why);
    ++unwatched_count;
  };
  for (size_t i = 0; i < devices_.size(); ++i) {
    const nvmlDevice_t handle = devices_[i]->handle;
    unsigned long long supported = 0;
    if (api.device_get_supported_event_types != nullptr &&
        api.device_get_supported_event_types(handle, &supported) == NVML_SUCCESS &&
        (supported & nvmlEventTypeXidCriticalError) == 0) {
      leave_unwatched(i, "the driver offers no Xid events there");
      continue;
    }
    const nvmlReturn_t code =
        api.device_register_events(handle, nvmlEventTypeXidCriticalError, set.get());
    if (code != NVML_SUCCESS) {
      leave_unwatched(i, library_->describe(code));
    }
  }
  if (!unwatched.empty()) {
    xid_events_status_ = fmt::format("Xid events (GPU faults) are not watched on {}", unwatched);
  }
  if (unwatched_count < devices_.size()) xid_event_set_ = std::move(set);
}

int NvmlBackend::device_index_of(nvmlDevice_t handle) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i]->handle == handle) return static_cast<int>(i);
  }
  return -1;
}

std::vector<XidEvent> NvmlBackend::poll_xid_events() {
  std::vector<XidEvent> events;
  if (!xid_event_set_) return events;
  const NvmlApi& api = library_->api();
  for (int taken = 0; taken < kMaxXidEventsPerPoll; ++taken) {
    nvmlEventData_t data{};
    data.gpuInstanceId = kNoInstanceId;  // the first nvmlEventSetWait leaves them
    data.computeInstanceId = kNoInstanceId;
    // NVML_ERROR_TIMEOUT: nothing queued. Any other failure: try again at the next poll.
    if (api.event_set_wait(xid_event_set_.get(), &data, 0) != NVML_SUCCESS) break;
    if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    XidEvent event;
    event.device = device_index_of(data.device);
    event.xid = data.eventData;
    event.time_ms = clock_.now_ms();
    if (data.gpuInstanceId != kNoInstanceId) {
      event.gpu_instance_id = static_cast<int>(data.gpuInstanceId);
    }
    if (data.computeInstanceId != kNoInstanceId) {
      event.compute_instance_id = static_cast<int>(data.computeInstanceId);
    }
    events.push_back(event);
  }
  return events;
}

Result<NvmlBackend::DeviceState*> NvmlBackend::device_state(int index) {
  if (index < 0 || index >= static_cast<int>(devices_.size())) {
    return Error(
        fmt::format("GPU {} does not exist; NVML lists GPUs 0..{}", index, devices_.size() - 1));
  }
  return devices_[index].get();
}

Result<std::vector<DeviceInfo>> NvmlBackend::devices() {
  if (device_infos_) return *device_infos_;
  std::vector<DeviceInfo> infos;
  for (size_t i = 0; i < devices_.size(); ++i) {
    infos.push_back(read_device_info(static_cast<int>(i), *devices_[i]));
  }
  // Discover the metrics by sampling: twice where GPM needs two samples.
  for (size_t i = 0; i < devices_.size(); ++i) {
    std::vector<std::string> seen;
    const int samples = devices_[i]->gpm_supported ? 2 : 1;
    for (int s = 0; s < samples; ++s) {
      if (s > 0) clock_.sleep_for_ms(kGpmPrimingSleepMs);
      auto sample = sample_device(static_cast<int>(i));
      if (!sample.ok()) return sample.error();
      for (std::string& name : present_metric_names(*sample)) seen.push_back(std::move(name));
    }
    infos[i].supported_metrics = canonical_metric_order(seen);
  }
  device_infos_ = infos;
  return infos;
}

DeviceInfo NvmlBackend::read_device_info(int index, DeviceState& device) {
  const NvmlApi& api = library_->api();
  DeviceInfo info;
  info.index = index;
  info.gpm_supported = device.gpm_supported;

  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  info.name = api.device_get_name != nullptr &&
                      api.device_get_name(device.handle, name, sizeof name) == NVML_SUCCESS
                  ? c_string(name, sizeof name)
                  : "NVIDIA GPU";
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  if (api.device_get_uuid != nullptr &&
      api.device_get_uuid(device.handle, uuid, sizeof uuid) == NVML_SUCCESS) {
    info.uuid = c_string(uuid, sizeof uuid);
  }
  nvmlPciInfo_t pci{};
  if (api.device_get_pci_info != nullptr &&
      api.device_get_pci_info(device.handle, &pci) == NVML_SUCCESS) {
    info.pci_bus_id = c_string(pci.busId, sizeof pci.busId);
  }

  nvmlMemory_v2_t memory_v2{};
  memory_v2.version = nvmlMemory_v2;
  nvmlMemory_t memory_v1{};
  if (api.device_get_memory_info_v2 != nullptr &&
      api.device_get_memory_info_v2(device.handle, &memory_v2) == NVML_SUCCESS) {
    info.memory_total_bytes = memory_v2.total;
  } else if (api.device_get_memory_info != nullptr &&
             api.device_get_memory_info(device.handle, &memory_v1) == NVML_SUCCESS) {
    info.memory_total_bytes = memory_v1.total;
  }

  unsigned int power_limit_mw = 0;
  if (api.device_get_enforced_power_limit != nullptr &&
      api.device_get_enforced_power_limit(device.handle, &power_limit_mw) == NVML_SUCCESS &&
      power_limit_mw > 0) {
    info.power_limit_w = power_limit_mw / 1000.0;
  }

  int major = 0;
  int minor = 0;
  if (api.device_get_cuda_compute_capability != nullptr &&
      api.device_get_cuda_compute_capability(device.handle, &major, &minor) == NVML_SUCCESS) {
    info.cuda_compute_major = major;
    info.cuda_compute_minor = minor;
  }

  // nvmlDeviceGetAttributes is documented for MIG device handles; on a whole
  // GPU fall back to CUDA cores / cores per SM for architectures colo knows.
  nvmlDeviceAttributes_t attributes{};
  unsigned int cores = 0;
  if (api.device_get_attributes != nullptr &&
      api.device_get_attributes(device.handle, &attributes) == NVML_SUCCESS &&
      attributes.multiprocessorCount > 0) {
    info.sm_count = static_cast<int>(attributes.multiprocessorCount);
  } else if (info.cuda_compute_major && api.device_get_num_gpu_cores != nullptr &&
             api.device_get_num_gpu_cores(device.handle, &cores) == NVML_SUCCESS) {
    auto per_sm = cores_per_sm(major, minor);
    if (per_sm && cores > 0 && cores % *per_sm == 0) {
      info.sm_count = static_cast<int>(cores / *per_sm);
    }
  }

  unsigned int mig_current = 0;
  unsigned int mig_pending = 0;
  if (api.device_get_mig_mode != nullptr &&
      api.device_get_mig_mode(device.handle, &mig_current, &mig_pending) == NVML_SUCCESS) {
    info.mig_enabled = mig_current == NVML_DEVICE_MIG_ENABLE;
  }

  std::set<int> seen_ids;
  const uint64_t device_memory_mib = info.memory_total_bytes / kMiB;
  for (unsigned int profile = 0; profile < NVML_GPU_INSTANCE_PROFILE_COUNT_QUERIED; ++profile) {
    MigProfile mig;
    nvmlGpuInstanceProfileInfo_v2_t v2{};
    v2.version = nvmlGpuInstanceProfileInfo_v2;
    nvmlGpuInstanceProfileInfo_t v1{};
    if (api.device_get_gpu_instance_profile_info_v != nullptr &&
        api.device_get_gpu_instance_profile_info_v(device.handle, profile, &v2) == NVML_SUCCESS) {
      mig = {static_cast<int>(v2.id),
             c_string(v2.name, sizeof v2.name),
             static_cast<int>(v2.sliceCount),
             v2.memorySizeMB * kMiB,
             static_cast<int>(v2.instanceCount),
             static_cast<int>(v2.multiprocessorCount)};
      // nvidia-smi shows "MIG 1g.18gb"; colo uses the profile part.
      if (mig.name.rfind("MIG ", 0) == 0) mig.name.erase(0, 4);
      if (mig.name.empty()) {
        mig.name =
            compose_mig_profile_name(v2.sliceCount, v2.memorySizeMB, device_memory_mib, profile);
      }
    } else if (api.device_get_gpu_instance_profile_info != nullptr &&
               api.device_get_gpu_instance_profile_info(device.handle, profile, &v1) ==
                   NVML_SUCCESS) {
      mig = {static_cast<int>(v1.id),
             compose_mig_profile_name(v1.sliceCount, v1.memorySizeMB, device_memory_mib, profile),
             static_cast<int>(v1.sliceCount),
             v1.memorySizeMB * kMiB,
             static_cast<int>(v1.instanceCount),
             static_cast<int>(v1.multiprocessorCount)};
    } else {
      continue;  // NOT_SUPPORTED / INVALID_ARGUMENT: no such profile on this GPU
    }
    if (seen_ids.insert(mig.id).second) info.mig_profiles.push_back(std::move(mig));
  }
  return info;
}

void NvmlBackend::read_gpm(DeviceState& device, DeviceSample& sample) {
  if (!device.gpm_supported) return;
  const NvmlApi& api = library_->api();
  const int64_t now_ms = clock_.monotonic_ms();
  auto alloc = [&](GpmSamplePtr& slot) {
    if (slot) return true;
    nvmlGpmSample_t raw = nullptr;
    if (api.gpm_sample_alloc(&raw) != NVML_SUCCESS || raw == nullptr) return false;
    slot = GpmSamplePtr(raw, GpmSampleDeleter{api.gpm_sample_free});
    return true;
  };

  if (!device.gpm_previous_ms) {
    if (alloc(device.gpm_previous) &&
        api.gpm_sample_get(device.handle, device.gpm_previous.get()) == NVML_SUCCESS) {
      device.gpm_previous_ms = now_ms;
    }
    return;
  }
  if (now_ms - *device.gpm_previous_ms <= kMinGpmIntervalMs) {
    apply(device.gpm_last, sample);
    return;
  }
  if (!alloc(device.gpm_current) ||
      api.gpm_sample_get(device.handle, device.gpm_current.get()) != NVML_SUCCESS) {
    return;
  }
  if (!device.gpm_request) device.gpm_request = std::make_unique<nvmlGpmMetricsGet_t>();
  nvmlGpmMetricsGet_t& request = *device.gpm_request;
  std::memset(&request, 0, sizeof request);
  request.version = NVML_GPM_METRICS_GET_VERSION;
  request.numMetrics = std::size(kGpmMetricIds);
  request.sample1 = device.gpm_previous.get();
  request.sample2 = device.gpm_current.get();
  for (size_t i = 0; i < std::size(kGpmMetricIds); ++i) {
    request.metrics[i].metricId = kGpmMetricIds[i];
  }
  const nvmlReturn_t code = api.gpm_metrics_get(&request);
  std::swap(device.gpm_previous, device.gpm_current);
  device.gpm_previous_ms = now_ms;

  device.gpm_last = GpmValues{};
  if (code == NVML_SUCCESS) {
    for (size_t i = 0; i < std::size(kGpmMetricIds); ++i) {
      const nvmlGpmMetric_t& metric = request.metrics[i];
      std::optional<double>* slot = gpm_slot(device.gpm_last, metric.metricId);
      if (slot != nullptr && metric.nvmlReturn == NVML_SUCCESS && std::isfinite(metric.value)) {
        *slot = metric.value;
      }
    }
  }
  apply(device.gpm_last, sample);
}

Result<DeviceSample> NvmlBackend::sample_device(int index) {
  auto state = device_state(index);
  if (!state.ok()) return state.error();
  DeviceState& device = **state;
  const NvmlApi& api = library_->api();
  QueryLog log;

  DeviceSample sample;
  sample.time_ms = clock_.now_ms();
  sample.device = index;
  read_gpm(device, sample);

  nvmlMemory_v2_t memory_v2{};
  memory_v2.version = nvmlMemory_v2;
  nvmlMemory_t memory_v1{};
  if (api.device_get_memory_info_v2 != nullptr &&
      log.ok(api.device_get_memory_info_v2(device.handle, &memory_v2))) {
    sample.memory_used_bytes = memory_v2.used;
    sample.memory_total_bytes = memory_v2.total;
  } else if (api.device_get_memory_info != nullptr &&
             log.ok(api.device_get_memory_info(device.handle, &memory_v1))) {
    sample.memory_used_bytes = memory_v1.used;
    sample.memory_total_bytes = memory_v1.total;
  }

  nvmlUtilization_t utilization{};
  if (api.device_get_utilization_rates != nullptr &&
      log.ok(api.device_get_utilization_rates(device.handle, &utilization))) {
    sample.gpu_util_pct = std::min(100u, utilization.gpu);
  }
  unsigned int power_mw = 0;
  if (api.device_get_power_usage != nullptr &&
      log.ok(api.device_get_power_usage(device.handle, &power_mw))) {
    sample.power_w = power_mw / 1000.0;
  }
  const int64_t now_ms = clock_.monotonic_ms();
  if (api.device_get_total_energy_consumption != nullptr &&
      (!device.energy_read_ms || now_ms - *device.energy_read_ms >= kEnergyReadIntervalMs)) {
    device.energy_read_ms = now_ms;
    unsigned long long energy_mj = 0;
    if (log.ok(api.device_get_total_energy_consumption(device.handle, &energy_mj))) {
      sample.energy_mj = energy_mj;
    }
  }
  unsigned int sm_clock_mhz = 0;
  if (api.device_get_clock_info != nullptr &&
      log.ok(api.device_get_clock_info(device.handle, NVML_CLOCK_SM, &sm_clock_mhz))) {
    sample.sm_clock_mhz = sm_clock_mhz;
  }

  if (log.failed()) {
    return Error(fmt::format("GPU {}: reading metrics failed: {}; check `nvidia-smi -i {}`{}",
                             index, library_->describe(log.first_failure()), index,
                             log.first_failure() == NVML_ERROR_GPU_IS_LOST
                                 ? " and the kernel log (the GPU may have fallen off the bus)"
                                 : ""));
  }
  return sample;
}

Result<std::optional<std::vector<NvmlBackend::ProcessEntry>>> NvmlBackend::list_processes(
    DeviceState& device, unsigned int mode) {
  const NvmlApi& api = library_->api();
  std::vector<ProcessEntry> entries;

  if (api.device_get_running_process_detail_list != nullptr) {
    std::vector<nvmlProcessDetail_v1_t> details;
    nvmlProcessDetailList_v1_t list{};
    nvmlReturn_t code = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < kListAttempts && code == NVML_ERROR_INSUFFICIENT_SIZE;
         ++attempt) {
      list.version = nvmlProcessDetailList_v1;
      list.mode = mode;
      list.procArray = details.empty() ? nullptr : details.data();
      list.numProcArrayEntries = static_cast<unsigned int>(details.size());
      code = api.device_get_running_process_detail_list(device.handle, &list);
      if (code == NVML_ERROR_INSUFFICIENT_SIZE)
        details.resize(list.numProcArrayEntries + kListHeadroom);
    }
    if (code == NVML_SUCCESS) {
      const unsigned int count =
          list.procArray == nullptr
              ? 0
              : std::min<unsigned int>(list.numProcArrayEntries, details.size());
      for (unsigned int i = 0; i < count; ++i) {
        entries.push_back({details[i].pid, memory_or_absent(details[i].usedGpuMemory)});
      }
      return std::optional(std::move(entries));
    }
    // Refused (older driver, unsupported mode): fall back to the classic lists.
  }

  nvmlDeviceGetRunningProcesses_fn classic = mode == NVML_PROCESS_MODE_MPS
                                                 ? api.device_get_mps_compute_running_processes
                                                 : api.device_get_compute_running_processes;
  if (classic == nullptr) {
    if (mode == NVML_PROCESS_MODE_MPS) return std::optional<std::vector<ProcessEntry>>();
    return Error(
        "this NVIDIA driver offers no compute process list "
        "(nvmlDeviceGetComputeRunningProcesses_v3 missing); update the driver");
  }
  // Room for 32-byte entries in case the driver writes those (see decode_process_infos).
  std::vector<nvmlProcessDetail_v1_t> buffer;
  unsigned int count = 0;
  nvmlReturn_t code = NVML_ERROR_INSUFFICIENT_SIZE;
  for (int attempt = 0; attempt < kListAttempts && code == NVML_ERROR_INSUFFICIENT_SIZE;
       ++attempt) {
    count = static_cast<unsigned int>(buffer.size());
    code = classic(device.handle, &count,
                   buffer.empty() ? nullptr : reinterpret_cast<nvmlProcessInfo_t*>(buffer.data()));
    if (code == NVML_ERROR_INSUFFICIENT_SIZE) buffer.resize(count + kListHeadroom);
  }
  if (code == NVML_ERROR_NOT_SUPPORTED && mode == NVML_PROCESS_MODE_MPS) {
    return std::optional<std::vector<ProcessEntry>>();
  }
  if (code != NVML_SUCCESS) {
    return Error(fmt::format("listing the {} processes failed: {}",
                             mode == NVML_PROCESS_MODE_MPS ? "MPS" : "compute",
                             library_->describe(code)));
  }
  if (buffer.empty()) count = 0;
  count = std::min<unsigned int>(count, buffer.size());
  for (const nvmlProcessInfo_t& info :
       decode_process_infos(reinterpret_cast<const unsigned char*>(buffer.data()), count)) {
    entries.push_back({info.pid, memory_or_absent(info.usedGpuMemory)});
  }
  return std::optional(std::move(entries));
}

Result<std::vector<MigPlacementOption>> NvmlBackend::mig_placements(int index, int profile_id) {
  auto state = device_state(index);
  if (!state.ok()) return state.error();
  const NvmlApi& api = library_->api();
  if (api.device_get_gpu_instance_possible_placements == nullptr) {
    return Error(
        "this NVIDIA driver has no nvmlDeviceGetGpuInstancePossiblePlacements_v2 (MIG placements)");
  }
  const auto id = static_cast<unsigned int>(profile_id);
  unsigned int count = 0;
  nvmlReturn_t code =
      api.device_get_gpu_instance_possible_placements((*state)->handle, id, nullptr, &count);
  if (code != NVML_SUCCESS) {
    return Error(fmt::format("NVML refused the placements of MIG profile {} on GPU {}: {}",
                             profile_id, index, library_->describe(code)));
  }
  // A GPU has 8 memory slices, so at most 8 placements; the buffer is never
  // smaller than that in case the driver writes more than it counted.
  constexpr unsigned int kMinCapacity = 16;
  std::vector<nvmlGpuInstancePlacement_t> raw(std::max(count, kMinCapacity));
  count = static_cast<unsigned int>(raw.size());
  code = api.device_get_gpu_instance_possible_placements((*state)->handle, id, raw.data(), &count);
  if (code != NVML_SUCCESS) {
    return Error(fmt::format("NVML refused the placements of MIG profile {} on GPU {}: {}",
                             profile_id, index, library_->describe(code)));
  }
  std::vector<MigPlacementOption> options;
  for (unsigned int i = 0; i < count && i < raw.size(); ++i) {
    options.push_back({static_cast<int>(raw[i].start), static_cast<int>(raw[i].size)});
  }
  return options;
}

Result<std::vector<ProcessSample>> NvmlBackend::sample_processes(int index) {
  auto state = device_state(index);
  if (!state.ok()) return state.error();
  DeviceState& device = **state;
  const NvmlApi& api = library_->api();
  const UnixMillis now_ms = clock_.now_ms();

  std::map<uint32_t, ProcessSample> by_pid;
  auto add = [&](const ProcessEntry& entry, bool mps_client) {
    ProcessSample& sample = by_pid[entry.pid];
    sample.time_ms = now_ms;
    sample.device = index;
    sample.pid = entry.pid;
    if (entry.used_memory_bytes) sample.used_memory_bytes = entry.used_memory_bytes;
    sample.mps_client = sample.mps_client || mps_client;
  };
  auto compute = list_processes(device, NVML_PROCESS_MODE_COMPUTE);
  if (!compute.ok()) return compute.error().with_context(fmt::format("GPU {}", index));
  for (const ProcessEntry& entry : **compute) add(entry, false);
  auto mps = list_processes(device, NVML_PROCESS_MODE_MPS);
  if (!mps.ok()) return mps.error().with_context(fmt::format("GPU {}", index));
  if (*mps) {
    for (const ProcessEntry& entry : **mps) add(entry, true);
  }

  // Per-process SM%: samples newer than the previous call, latest per pid.
  bool utilization_known = false;
  std::map<uint32_t, nvmlProcessUtilizationSample_t> latest;
  if (api.device_get_process_utilization != nullptr) {
    const unsigned long long last_seen_us = device.process_utilization_seen_us;
    device.process_utilization_seen_us = static_cast<unsigned long long>(now_ms) * 1000;
    std::vector<nvmlProcessUtilizationSample_t> samples;
    unsigned int count = 0;
    nvmlReturn_t code = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < kListAttempts && code == NVML_ERROR_INSUFFICIENT_SIZE;
         ++attempt) {
      count = static_cast<unsigned int>(samples.size());
      code = api.device_get_process_utilization(
          device.handle, samples.empty() ? nullptr : samples.data(), &count, last_seen_us);
      if (code == NVML_ERROR_INSUFFICIENT_SIZE) samples.resize(count + kListHeadroom);
    }
    if (code == NVML_SUCCESS || code == NVML_ERROR_NOT_FOUND) {
      utilization_known = true;
      if (code == NVML_SUCCESS) {
        count = std::min<unsigned int>(count, samples.size());
        for (unsigned int i = 0; i < count; ++i) {
          auto [it, inserted] = latest.try_emplace(samples[i].pid, samples[i]);
          if (!inserted && samples[i].timeStamp > it->second.timeStamp) it->second = samples[i];
        }
      }
    }
  }

  std::vector<ProcessSample> result;
  for (auto& [pid, sample] : by_pid) {
    if (utilization_known && !sample.mps_client) {
      auto it = latest.find(pid);
      sample.sm_util_pct = it == latest.end() ? 0.0 : std::min(100u, it->second.smUtil);
    }
    result.push_back(sample);
  }
  return result;
}

}  // namespace colo
