// A stand-in for libnvidia-ml.so.1, built as a shared library so NvmlBackend
// is tested through dlopen exactly as with the driver. It answers like the
// driver did on an H200 (docs/nvidia-interfaces.md) and can be told
// to misbehave through the fake_nvml_* control functions (fake_nvml.h).
// Built twice: fake_nvml exports everything NvmlBackend resolves;
// fake_nvml_minimal (FAKE_NVML_MINIMAL) only the oldest names and the few
// functions an old driver would have, to test "missing symbol = absent".
// Not thread-safe: the tests drive it from one thread.
//
// MIG (full build only): the GPU model (H200-141GB by default, A100-40GB,
// H100-80GB), MIG mode, permission and the GPU and compute instances form the
// "MIG state". Its placement rules are the built-in tables of src/mig
// (mig_profiles.cc is compiled in). When $FAKE_NVML_STATE names a file the
// MIG state lives there (JSON, read on every call, written after every
// change), so it survives the process: a test sets it up, runs colo as a
// child, kills it, and looks at what was left. A "kill_at" setting makes the
// library SIGKILL its own process at one step of creating instances.
#include "fake_nvml/fake_nvml.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/nvml_api.h"
#ifndef FAKE_NVML_MINIMAL
#include <nlohmann/json.hpp>

#include "mig/mig_profiles.h"
#endif

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

// An event set: the devices registered on it and the events queued for it.
struct FakeEventSet {
  std::vector<int> devices;
  std::vector<nvmlEventData_t> queue;  // oldest first
};

struct FakeState {
  std::map<std::string, long long> settings;
  std::map<std::string, long long> counters;
  std::vector<FakeProcess> processes;
  std::vector<nvmlProcessUtilizationSample_t> utilization;
  std::map<FakeGpmSample*, std::unique_ptr<FakeGpmSample>> gpm_samples;  // by handle
  std::map<FakeEventSet*, std::unique_ptr<FakeEventSet>> event_sets;     // by handle
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
// ---- MIG state ----

// A GPU model the fake can be: its MIG geometry comes from src/mig's tables.
struct FakeModel {
  const char* geometry;
  const char* device_name;
  unsigned long long total_mib;
  int cc_major;
  unsigned int cores;
};
constexpr FakeModel kModels[] = {{"H200-141GB", "NVIDIA H200", 143771, 9, 16896},
                                 {"H100-80GB", "NVIDIA H100 80GB HBM3", 81559, 9, 16896},
                                 {"A100-40GB", "NVIDIA A100-SXM4-40GB", 40960, 8, 6912}};

// nvmlDeviceGetGpuInstanceProfileInfo index of each profile id of the tables.
constexpr std::pair<unsigned int, unsigned int> kProfileIndexOfId[] = {
    {19, 0}, {14, 1}, {9, 2}, {5, 3}, {0, 4}, {20, 7}, {15, 9}};

struct FakeComputeInstance {
  unsigned int id = 0;
  unsigned int slices = 0;
  unsigned int start = 0;
};

struct FakeGpuInstance {
  unsigned int device = 0;
  unsigned int id = 0;
  unsigned int profile_id = 0;
  unsigned int start = 0;
  unsigned int size = 0;
  std::vector<FakeComputeInstance> cis;
};

struct FakeMig {
  std::string model = "H200-141GB";
  bool mode = false;     // current MIG mode
  bool pending = false;  // after the next reset
  bool permission = true;
  std::string kill_at;  // "gi_create:before", "gi_create:after", "ci_create:after"
  std::vector<FakeGpuInstance> gis;
};

const char* state_file() {
  const char* path = std::getenv("FAKE_NVML_STATE");
  return path != nullptr && *path != 0 ? path : nullptr;
}

FakeMig& mig_memory() {
  static FakeMig m;
  return m;
}

// Identity of the state file's current version: save_mig() replaces the file
// (rename), so any change by any process changes it.
struct FileVersion {
  ino_t inode = 0;
  long long mtime_ns = -1;
  off_t size = -1;
  bool operator==(const FileVersion&) const = default;
};
FileVersion& loaded_version() {
  static FileVersion v;
  return v;
}
FileVersion version_of(const char* path) {
  struct stat st {};
  if (stat(path, &st) != 0) return {};
  return {st.st_ino, st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec, st.st_size};
}

// The MIG state. With $FAKE_NVML_STATE it is read again when the file changed
// since this process last read or wrote it, so references stay valid within a
// call of this process.
FakeMig& mig() {
  FakeMig& m = mig_memory();
  const char* path = state_file();
  if (path == nullptr) return m;
  const FileVersion now = version_of(path);
  if (now.mtime_ns < 0 || now == loaded_version()) return m;
  loaded_version() = now;
  std::ifstream in(path);
  m = FakeMig{};
  if (!in) return m;
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) return m;
  m.model = j.value("model", m.model);
  m.mode = j.value("mode", false);
  m.pending = j.value("pending", false);
  m.permission = j.value("permission", true);
  m.kill_at = j.value("kill_at", "");
  for (const auto& g : j.value("gpu_instances", nlohmann::json::array())) {
    FakeGpuInstance gi{g["device"], g["id"], g["profile_id"], g["start"], g["size"], {}};
    for (const auto& c : g["compute_instances"])
      gi.cis.push_back({c["id"], c["slices"], c["start"]});
    m.gis.push_back(gi);
  }
  return m;
}

void save_mig() {
  const char* path = state_file();
  if (path == nullptr) return;
  const FakeMig& m = mig_memory();
  nlohmann::json gis = nlohmann::json::array();
  for (const FakeGpuInstance& g : m.gis) {
    nlohmann::json cis = nlohmann::json::array();
    for (const FakeComputeInstance& c : g.cis) {
      cis.push_back({{"id", c.id}, {"slices", c.slices}, {"start", c.start}});
    }
    gis.push_back({{"device", g.device},
                   {"id", g.id},
                   {"profile_id", g.profile_id},
                   {"start", g.start},
                   {"size", g.size},
                   {"compute_instances", cis}});
  }
  nlohmann::json j = {{"model", m.model},           {"mode", m.mode},       {"pending", m.pending},
                      {"permission", m.permission}, {"kill_at", m.kill_at}, {"gpu_instances", gis}};
  const std::string tmp = std::string(path) + ".tmp";
  std::ofstream(tmp) << j.dump(1) << "\n";
  std::rename(tmp.c_str(), path);
  loaded_version() = version_of(path);
}

// Dies like a colo killed with SIGKILL at this step, if told to.
void maybe_die(const char* step) {
  FakeMig& m = mig_memory();
  if (m.kill_at != step) return;
  m.kill_at.clear();
  save_mig();
  raise(SIGKILL);
}

const FakeModel& model() {
  const std::string& name = mig().model;
  for (const FakeModel& m : kModels) {
    if (name == m.geometry) return m;
  }
  return kModels[0];
}

const colo::MigGeometry& geometry() {
  static std::map<std::string, colo::MigGeometry> cache;
  const FakeModel& m = model();
  auto it = cache.find(m.geometry);
  if (it == cache.end())
    it = cache.emplace(m.geometry, *colo::builtin_mig_geometry(m.geometry)).first;
  return it->second;
}

const colo::MigProfileSpec* profile_by_id(unsigned int id) {
  for (const colo::MigProfileSpec& p : geometry().profiles) {
    if (static_cast<unsigned int>(p.id) == id) return &p;
  }
  return nullptr;
}

const colo::MigProfileSpec* profile_by_index(unsigned int index) {
  for (const auto& [id, i] : kProfileIndexOfId) {
    if (i == index) return profile_by_id(id);
  }
  return nullptr;
}

// Handles of GPU instances, compute instances and MIG devices: fixed slots
// naming (device, GPU instance id, compute instance id); every call looks the
// instance up in the MIG state, so a handle of a destroyed instance fails.
struct FakeMigHandle {
  unsigned int device = 0;
  unsigned int gi = 0;
  unsigned int ci = 0;
};
constexpr unsigned int kMaxGi = 32;
constexpr unsigned int kMaxCi = 8;
FakeMigHandle g_gi_handles[4][kMaxGi];
FakeMigHandle g_ci_handles[4][kMaxGi][kMaxCi];
FakeMigHandle g_mig_device_handles[4][kMaxCi];

// Whether p points into `slots`, an array of handles of any rank.
template <typename Slots>
bool in_slots(const void* p, const Slots& slots) {
  return p >= static_cast<const void*>(std::begin(slots)) &&
         p < static_cast<const void*>(std::end(slots));
}

FakeMigHandle* gi_handle(unsigned int device, unsigned int id) {
  FakeMigHandle* h = &g_gi_handles[device][id];
  *h = {device, id, 0};
  return h;
}
FakeMigHandle* ci_handle(unsigned int device, unsigned int gi, unsigned int ci) {
  FakeMigHandle* h = &g_ci_handles[device][gi][ci];
  *h = {device, gi, ci};
  return h;
}
// The MIG device handle behind `handle`, or nullptr.
const FakeMigHandle* mig_device_of(const void* handle) {
  for (auto& row : g_mig_device_handles) {
    if (in_slots(handle, row)) return static_cast<const FakeMigHandle*>(handle);
  }
  return nullptr;
}

FakeGpuInstance* find_gi(unsigned int device, unsigned int id) {
  for (FakeGpuInstance& g : mig_memory().gis) {
    if (g.device == device && g.id == id) return &g;
  }
  return nullptr;
}
FakeGpuInstance* gi_of(nvmlGpuInstance_t handle) {
  if (!in_slots(handle, g_gi_handles)) return nullptr;
  mig();  // reload
  const auto* h = reinterpret_cast<const FakeMigHandle*>(handle);
  return find_gi(h->device, h->gi);
}
FakeComputeInstance* find_ci(FakeGpuInstance& g, unsigned int id) {
  for (FakeComputeInstance& c : g.cis) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

std::string mig_uuid(unsigned int device, unsigned int gi, unsigned int ci) {
  char text[64];
  std::snprintf(text, sizeof text, "MIG-fa4e%04x-%04x-4%03x-8%03x-000000000000", device, gi, ci,
                device);
  return text;
}

// Compute slices of compute-instance profile `index`, or 0.
unsigned int ci_slices_of_index(unsigned int index) {
  constexpr unsigned int kSlices[] = {1, 2, 3, 4, 7};
  return index < 5 ? kSlices[index] : 0;
}
bool ci_fits(unsigned int slices, unsigned int gi_slices) {
  return colo::compute_instance_fits(static_cast<int>(slices), static_cast<int>(gi_slices));
}
unsigned int compute_slices_of(const FakeGpuInstance& g) {
  const colo::MigProfileSpec* p = profile_by_id(g.profile_id);
  return p == nullptr ? 0 : static_cast<unsigned int>(p->compute_slices);
}

// Creates a GPU instance after the driver's checks; its id, or an error code.
nvmlReturn_t create_gi(unsigned int device, unsigned int profile_id, unsigned int start,
                       unsigned int* id) {
  FakeMig& m = mig();
  if (!m.mode) return NVML_ERROR_NOT_SUPPORTED;
  const colo::MigProfileSpec* p = profile_by_id(profile_id);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (std::find(p->starts.begin(), p->starts.end(), static_cast<int>(start)) == p->starts.end()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const unsigned int size = static_cast<unsigned int>(p->memory_slices);
  int compute = 0;
  int same_profile = 0;
  for (const FakeGpuInstance& g : m.gis) {
    if (g.device != device) continue;
    if (start < g.start + g.size && g.start < start + size)
      return NVML_ERROR_INSUFFICIENT_RESOURCES;
    compute += static_cast<int>(compute_slices_of(g));
    same_profile += g.profile_id == profile_id;
  }
  if (compute + p->compute_slices > geometry().compute_slices || same_profile >= p->max_count) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  unsigned int free_id = 1;
  while (find_gi(device, free_id) != nullptr) ++free_id;
  if (free_id >= kMaxGi) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  m.gis.push_back({device, free_id, profile_id, start, size, {}});
  *id = free_id;
  return NVML_SUCCESS;
}

nvmlReturn_t create_ci(FakeGpuInstance& g, unsigned int slices, unsigned int* id) {
  const unsigned int gi_slices = compute_slices_of(g);
  if (!ci_fits(slices, gi_slices)) return NVML_ERROR_NOT_SUPPORTED;
  unsigned int used = 0;
  for (const FakeComputeInstance& c : g.cis) used += c.slices;
  if (used + slices > gi_slices) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  unsigned int free_id = 0;
  while (find_ci(g, free_id) != nullptr) ++free_id;
  if (free_id >= kMaxCi) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  g.cis.push_back({free_id, slices, used});
  *id = free_id;
  return NVML_SUCCESS;
}

// The compute instances of `device` in MIG-device order (GPU instance id,
// then compute instance id).
std::vector<FakeMigHandle> mig_devices_of(unsigned int device) {
  std::vector<FakeMigHandle> out;
  for (const FakeGpuInstance& g : mig().gis) {
    if (g.device != device) continue;
    for (const FakeComputeInstance& c : g.cis) out.push_back({device, g.id, c.id});
  }
  std::sort(out.begin(), out.end(), [](const FakeMigHandle& a, const FakeMigHandle& b) {
    return a.gi != b.gi ? a.gi < b.gi : a.ci < b.ci;
  });
  return out;
}
#endif

#ifdef FAKE_NVML_MINIMAL
const char* device_name() { return "NVIDIA H200"; }
unsigned long long total_mib() { return kTotalMiB; }
#else
const char* device_name() { return model().device_name; }
unsigned long long total_mib() { return model().total_mib; }
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

FAKE_EXPORT void fake_nvml_reset() {
  reset();
#ifndef FAKE_NVML_MINIMAL
  mig_memory() = FakeMig{};
  save_mig();
#endif
}
FAKE_EXPORT void fake_nvml_set(const char* key, long long value) { state().settings[key] = value; }
FAKE_EXPORT long long fake_nvml_get(const char* key) {
  if (std::string(key) == "gpm_samples_live")
    return static_cast<long long>(state().gpm_samples.size());
  if (std::string(key) == "event_sets_live")
    return static_cast<long long>(state().event_sets.size());
  return state().counters[key];
}
FAKE_EXPORT void fake_nvml_add_process(unsigned int mode, unsigned int pid,
                                       unsigned long long used_bytes) {
  state().processes.push_back({mode, pid, used_bytes});
}
// Like the driver: the Xid reaches every event set `device` is registered on,
// and is lost when none is.
FAKE_EXPORT void fake_nvml_inject_xid(unsigned int device, unsigned long long xid) {
  if (device >= std::size(g_devices)) return;
  for (auto& [handle, set] : state().event_sets) {
    if (std::find(set->devices.begin(), set->devices.end(), static_cast<int>(device)) ==
        set->devices.end()) {
      continue;
    }
    nvmlEventData_t data{};
    data.device = reinterpret_cast<nvmlDevice_t>(&g_devices[device]);
    data.eventType = nvmlEventTypeXidCriticalError;
    data.eventData = xid;
    data.gpuInstanceId = 0xFFFFFFFF;
    data.computeInstanceId = 0xFFFFFFFF;
    set->queue.push_back(data);
  }
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
  return copy_string(device_name(), name, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  *memory = {total_mib() * kMiB, (total_mib() - 1234) * kMiB, 1234 * kMiB};
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
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_RESET_REQUIRED:
      return "Reset Required";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient Resources";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
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
  if (const FakeMigHandle* h = mig_device_of(device)) {
    return copy_string(mig_uuid(h->device, h->gi, h->ci).c_str(), uuid, length);
  }
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
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (const FakeMigHandle* h = mig_device_of(device)) {
    mig();
    const FakeGpuInstance* g = find_gi(h->device, h->gi);
    const colo::MigProfileSpec* p = g != nullptr ? profile_by_id(g->profile_id) : nullptr;
    if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = p->memory_bytes;
    memory->reserved = 0;
    memory->used = 300 * kMiB;  // the CUDA context of an idle MIG device, roughly
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
  }
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  memory->total = total_mib() * kMiB;
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
  *major = model().cc_major;
  *minor = 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int* cores) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  *cores = model().cores;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                              unsigned int* pending) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  *current = mig().mode ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  *pending = mig().pending ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device,
                                                             unsigned int index,
                                                             nvmlGpuInstanceProfileInfo_t* info) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  const colo::MigProfileSpec* p = profile_by_index(index);
  if (p == nullptr) return index < 9 ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
  *info = {static_cast<unsigned int>(p->id),
           0,
           static_cast<unsigned int>(p->compute_slices),
           static_cast<unsigned int>(p->max_count),
           static_cast<unsigned int>(p->sm_count),
           2,
           1,
           0,
           1,
           0,
           p->memory_bytes / kMiB};
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(
    nvmlDevice_t device, unsigned int index, nvmlGpuInstanceProfileInfo_v2_t* info) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (nvmlReturn_t forced = static_cast<nvmlReturn_t>(state().setting("profile_info_v_result"))) {
    return forced;
  }
  if (info->version != nvmlGpuInstanceProfileInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const colo::MigProfileSpec* p = profile_by_index(index);
  if (p == nullptr) return index < 9 ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
  info->id = static_cast<unsigned int>(p->id);
  info->sliceCount = static_cast<unsigned int>(p->compute_slices);
  info->instanceCount = static_cast<unsigned int>(p->max_count);
  info->multiprocessorCount = static_cast<unsigned int>(p->sm_count);
  info->memorySizeMB = p->memory_bytes / kMiB;
  std::snprintf(info->name, sizeof info->name, "MIG %s", p->name.c_str());
  return NVML_SUCCESS;
}

// Placements by profile id from the model's table; the setting
// "placements_result" forces an error code (the driver with MIG disabled).
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstancePlacement_t* placements,
    unsigned int* count) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (nvmlReturn_t forced = static_cast<nvmlReturn_t>(state().setting("placements_result"))) {
    return forced;
  }
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const colo::MigProfileSpec* p = profile_by_id(profile_id);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<nvmlGpuInstancePlacement_t> answer;
  for (int start : p->starts) {
    answer.push_back(
        {static_cast<unsigned int>(start), static_cast<unsigned int>(p->memory_slices)});
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

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device,
                                                         unsigned int* milliwatts) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  *milliwatts = 700'000;
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
// ---- events ----

FAKE_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (nvmlReturn_t forced = static_cast<nvmlReturn_t>(state().setting("event_set_create_result"))) {
    return forced;
  }
  auto owned = std::make_unique<FakeEventSet>();
  *set = reinterpret_cast<nvmlEventSet_t>(owned.get());
  state().event_sets.emplace(owned.get(), std::move(owned));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  auto* fake = reinterpret_cast<FakeEventSet*>(set);
  return state().event_sets.erase(fake) == 1 ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

// Xid only when "supported_event_types" is unset; PState and Clock always.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                          unsigned long long* types) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  auto it = state().settings.find("supported_event_types");
  *types = it != state().settings.end() ? static_cast<unsigned long long>(it->second)
                                        : 0x4ULL | nvmlEventTypeXidCriticalError | 0x10ULL;
  return NVML_SUCCESS;
}

// "register_events_result" (all devices) or "register_events_result_gpuN"
// forces an error code, as drivers in containers answer NOT_SUPPORTED or
// NO_PERMISSION.
FAKE_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                                  nvmlEventSet_t set) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  const int index = device_of(device)->index;
  const std::string per_device = "register_events_result_gpu" + std::to_string(index);
  if (nvmlReturn_t forced = static_cast<nvmlReturn_t>(state().setting(per_device))) return forced;
  if (nvmlReturn_t forced = static_cast<nvmlReturn_t>(state().setting("register_events_result"))) {
    return forced;
  }
  auto* fake = reinterpret_cast<FakeEventSet*>(set);
  if (state().event_sets.count(fake) == 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (types != nvmlEventTypeXidCriticalError) return NVML_ERROR_NOT_SUPPORTED;  // all colo asks
  fake->devices.push_back(index);
  return NVML_SUCCESS;
}

// Never sleeps: answers NVML_ERROR_TIMEOUT at once when nothing is queued.
// Counts the calls ("event_waits") and keeps the largest timeout asked for
// ("event_wait_max_timeout_ms").
FAKE_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                             unsigned int timeout_ms) {
  ++state().counters["event_waits"];
  long long& max_timeout = state().counters["event_wait_max_timeout_ms"];
  max_timeout = std::max<long long>(max_timeout, timeout_ms);
  auto* fake = reinterpret_cast<FakeEventSet*>(set);
  if (state().event_sets.count(fake) == 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (fake->queue.empty()) return NVML_ERROR_TIMEOUT;
  *data = fake->queue.front();
  fake->queue.erase(fake->queue.begin());
  return NVML_SUCCESS;
}

// ---- MIG instances ----

namespace {
unsigned int device_index(nvmlDevice_t device) {
  return static_cast<unsigned int>(device_of(device)->index);
}
nvmlReturn_t check_mig_change(nvmlDevice_t device) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (!mig().permission) return NVML_ERROR_NO_PERMISSION;
  return NVML_SUCCESS;
}
}  // namespace

FAKE_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                              nvmlReturn_t* activation_status) {
  if (nvmlReturn_t c = check_mig_change(device); c != NVML_SUCCESS) return c;
  if (mode > NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_INVALID_ARGUMENT;
  mig_memory().pending = mode == NVML_DEVICE_MIG_ENABLE;  // takes effect at the next reset
  save_mig();
  *activation_status = NVML_ERROR_RESET_REQUIRED;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profile_id, const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* instance) {
  if (nvmlReturn_t c = check_mig_change(device); c != NVML_SUCCESS) return c;
  if (placement == nullptr || instance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  maybe_die("gi_create:before");
  unsigned int id = 0;
  const unsigned int d = device_index(device);
  if (nvmlReturn_t c = create_gi(d, profile_id, placement->start, &id); c != NVML_SUCCESS) {
    return c;
  }
  save_mig();
  *instance = reinterpret_cast<nvmlGpuInstance_t>(gi_handle(d, id));
  maybe_die("gi_create:after");
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profile_id,
                                                   nvmlGpuInstance_t* instances,
                                                   unsigned int* count) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!mig().mode) return NVML_ERROR_NOT_SUPPORTED;
  const unsigned int d = device_index(device);
  unsigned int n = 0;
  for (const FakeGpuInstance& g : mig_memory().gis) {
    if (g.device != d || g.profile_id != profile_id) continue;
    if (n >= *count) return NVML_ERROR_INSUFFICIENT_SIZE;
    instances[n++] = reinterpret_cast<nvmlGpuInstance_t>(gi_handle(d, g.id));
  }
  *count = n;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                      nvmlGpuInstance_t* instance) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (!mig().mode) return NVML_ERROR_NOT_SUPPORTED;
  const unsigned int d = device_index(device);
  if (id >= kMaxGi || find_gi(d, id) == nullptr) return NVML_ERROR_NOT_FOUND;
  *instance = reinterpret_cast<nvmlGpuInstance_t>(gi_handle(d, id));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t instance,
                                                nvmlGpuInstanceInfo_t* info) {
  const FakeGpuInstance* g = gi_of(instance);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  info->device = reinterpret_cast<nvmlDevice_t>(&g_devices[g->device]);
  info->id = g->id;
  info->profileId = g->profile_id;
  info->placement = {g->start, g->size};
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t instance) {
  const FakeGpuInstance* g = gi_of(instance);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!mig_memory().permission) return NVML_ERROR_NO_PERMISSION;
  if (!g->cis.empty()) return NVML_ERROR_IN_USE;
  auto& gis = mig_memory().gis;
  gis.erase(
      std::find_if(gis.begin(), gis.end(), [&](const FakeGpuInstance& x) { return &x == g; }));
  save_mig();
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t instance, unsigned int profile, unsigned int eng_profile,
    nvmlComputeInstanceProfileInfo_t* info) {
  const FakeGpuInstance* g = gi_of(instance);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (eng_profile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED) return NVML_ERROR_NOT_SUPPORTED;
  const unsigned int slices = ci_slices_of_index(profile);
  const unsigned int gi_slices = compute_slices_of(*g);
  if (!ci_fits(slices, gi_slices)) return NVML_ERROR_NOT_SUPPORTED;
  const colo::MigProfileSpec* p = profile_by_id(g->profile_id);
  *info = {profile,
           slices,
           gi_slices / slices,
           static_cast<unsigned int>(p->sm_count) * slices / gi_slices,
           1,
           0,
           0,
           0,
           0};
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t instance,
                                                              unsigned int profile_id,
                                                              nvmlComputeInstance_t* ci) {
  FakeGpuInstance* g = gi_of(instance);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!mig_memory().permission) return NVML_ERROR_NO_PERMISSION;
  unsigned int id = 0;
  if (nvmlReturn_t c = create_ci(*g, ci_slices_of_index(profile_id), &id); c != NVML_SUCCESS) {
    return c;
  }
  save_mig();
  *ci = reinterpret_cast<nvmlComputeInstance_t>(ci_handle(g->device, g->id, id));
  maybe_die("ci_create:after");
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t instance,
                                                            unsigned int profile_id,
                                                            nvmlComputeInstance_t* cis,
                                                            unsigned int* count) {
  const FakeGpuInstance* g = gi_of(instance);
  if (g == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = 0;
  for (const FakeComputeInstance& c : g->cis) {
    if (c.slices != ci_slices_of_index(profile_id)) continue;
    if (n >= *count) return NVML_ERROR_INSUFFICIENT_SIZE;
    cis[n++] = reinterpret_cast<nvmlComputeInstance_t>(ci_handle(g->device, g->id, c.id));
  }
  *count = n;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t instance,
                                                               unsigned int id,
                                                               nvmlComputeInstance_t* ci) {
  FakeGpuInstance* g = gi_of(instance);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (id >= kMaxCi || find_ci(*g, id) == nullptr) return NVML_ERROR_NOT_FOUND;
  *ci = reinterpret_cast<nvmlComputeInstance_t>(ci_handle(g->device, g->id, id));
  return NVML_SUCCESS;
}

namespace {
// The GPU instance and compute instance behind a compute-instance handle.
std::pair<FakeGpuInstance*, FakeComputeInstance*> ci_of(nvmlComputeInstance_t handle) {
  if (!in_slots(handle, g_ci_handles)) return {nullptr, nullptr};
  mig();
  const auto* h = reinterpret_cast<const FakeMigHandle*>(handle);
  FakeGpuInstance* g = find_gi(h->device, h->gi);
  return {g, g != nullptr ? find_ci(*g, h->ci) : nullptr};
}
}  // namespace

FAKE_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t instance,
                                                       nvmlComputeInstanceInfo_t* info) {
  auto [g, c] = ci_of(instance);
  if (c == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  info->device = reinterpret_cast<nvmlDevice_t>(&g_devices[g->device]);
  info->gpuInstance = reinterpret_cast<nvmlGpuInstance_t>(gi_handle(g->device, g->id));
  info->id = c->id;
  const unsigned int slices[] = {1, 2, 3, 4, 7};
  info->profileId = static_cast<unsigned int>(
      std::find(std::begin(slices), std::end(slices), c->slices) - std::begin(slices));
  info->placement = {c->start, c->slices};
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t instance) {
  auto [g, c] = ci_of(instance);
  if (c == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!mig_memory().permission) return NVML_ERROR_NO_PERMISSION;
  g->cis.erase(g->cis.begin() + (c - g->cis.data()));
  save_mig();
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  *count = 7;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                             unsigned int index,
                                                             nvmlDevice_t* mig_device) {
  if (nvmlReturn_t c = check(device); c != NVML_SUCCESS) return c;
  if (!mig().mode) return NVML_ERROR_NOT_SUPPORTED;
  const unsigned int d = device_index(device);
  const std::vector<FakeMigHandle> all = mig_devices_of(d);
  if (index >= all.size() || index >= kMaxCi) return NVML_ERROR_NOT_FOUND;
  g_mig_device_handles[d][index] = all[index];
  *mig_device = reinterpret_cast<nvmlDevice_t>(&g_mig_device_handles[d][index]);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  const FakeMigHandle* h = mig_device_of(device);
  if (h == nullptr)
    return device_of(device) != nullptr ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
  *id = h->gi;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  const FakeMigHandle* h = mig_device_of(device);
  if (h == nullptr)
    return device_of(device) != nullptr ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
  *id = h->ci;
  return NVML_SUCCESS;
}

// ---- MIG control (tests) ----

FAKE_EXPORT void fake_nvml_mig_set(const char* key, const char* value) {
  FakeMig& m = mig();
  const std::string k = key;
  const std::string v = value;
  if (k == "model") m.model = v;
  if (k == "mode") m.mode = m.pending = v == "1";
  if (k == "pending") m.pending = v == "1";
  if (k == "permission") m.permission = v == "1";
  if (k == "kill_at") m.kill_at = v;
  save_mig();
}

FAKE_EXPORT int fake_nvml_mig_add_gpu_instance(unsigned int device, unsigned int profile_id,
                                               unsigned int start, unsigned int compute_instances) {
  unsigned int id = 0;
  if (nvmlReturn_t c = create_gi(device, profile_id, start, &id); c != NVML_SUCCESS) return -c;
  FakeGpuInstance* g = find_gi(device, id);
  const unsigned int slices = compute_slices_of(*g);
  for (unsigned int k = 0; k < compute_instances; ++k) {
    unsigned int ci = 0;
    (void)create_ci(*g, compute_instances == 1 ? slices : 1, &ci);
  }
  save_mig();
  return static_cast<int>(id);
}

FAKE_EXPORT unsigned int fake_nvml_mig_describe(char* buffer, unsigned int length) {
  std::vector<const FakeGpuInstance*> gis;
  for (const FakeGpuInstance& g : mig().gis) gis.push_back(&g);
  std::sort(gis.begin(), gis.end(), [](const FakeGpuInstance* a, const FakeGpuInstance* b) {
    return a->device != b->device ? a->device < b->device : a->id < b->id;
  });
  std::string text;
  for (const FakeGpuInstance* g : gis) {
    if (!text.empty()) text += "; ";
    text += "gpu" + std::to_string(g->device) + " gi" + std::to_string(g->id) + " p" +
            std::to_string(g->profile_id) + " @" + std::to_string(g->start) + " [";
    for (size_t i = 0; i < g->cis.size(); ++i) {
      text += (i > 0 ? " ci" : "ci") + std::to_string(g->cis[i].id) + "/" +
              std::to_string(g->cis[i].slices);
    }
    text += "]";
  }
  if (buffer != nullptr && length > 0) {
    std::snprintf(buffer, length, "%s", text.c_str());
  }
  return static_cast<unsigned int>(text.size() + 1);
}

#endif  // FAKE_NVML_MINIMAL
