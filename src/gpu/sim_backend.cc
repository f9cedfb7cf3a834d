#include "gpu/sim_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "common/units.h"
#include "gpu/device_metrics.h"

namespace colo {
namespace {

constexpr uint64_t kContextBytes = kSimContextBytes;  // CUDA context per process
// Fixed factors of the load model (fractions of SM activity, MiB/s per process).
constexpr double kOccupancyPerSmActive = 0.3;
constexpr double kTensorPerSmActive = 0.5;
constexpr double kDramPerSmActive = 0.4;
constexpr double kPcieRxMibPerProcess = 40;
constexpr double kPcieTxMibPerProcess = 25;

// A profile whose memory is `eighths` of the device's eight memory slices.
MigProfile profile(int id, std::string name, int slices, int eighths, int max_instances,
                   int sm_count, uint64_t memory_total_bytes) {
  const uint64_t memory = memory_total_bytes / 8 * eighths / kMiB * kMiB;
  return {id, std::move(name), slices, memory, max_instances, sm_count};
}

SimGpuModel h200() {
  SimGpuModel m{"H200", "Simulated NVIDIA H200", 143771 * kMiB, 132, 9, 0, 90, 700, 345, 1980, {}};
  const uint64_t t = m.memory_total_bytes;
  m.mig_profiles = {
      profile(19, "1g.18gb", 1, 1, 7, 16, t), profile(20, "1g.18gb+me", 1, 1, 1, 16, t),
      profile(15, "1g.35gb", 1, 2, 4, 16, t), profile(14, "2g.35gb", 2, 2, 3, 32, t),
      profile(9, "3g.71gb", 3, 4, 2, 60, t),  profile(5, "4g.71gb", 4, 4, 1, 64, t),
      profile(0, "7g.141gb", 7, 8, 1, 132, t)};
  return m;
}

SimGpuModel h100() {
  SimGpuModel m{"H100", "Simulated NVIDIA H100", 81559 * kMiB, 132, 9, 0, 90, 700, 345, 1980, {}};
  const uint64_t t = m.memory_total_bytes;
  m.mig_profiles = {profile(19, "1g.10gb", 1, 1, 7, 16, t), profile(15, "1g.20gb", 1, 2, 4, 16, t),
                    profile(14, "2g.20gb", 2, 2, 3, 32, t), profile(9, "3g.40gb", 3, 4, 2, 60, t),
                    profile(5, "4g.40gb", 4, 4, 1, 64, t),  profile(0, "7g.80gb", 7, 8, 1, 132, t)};
  return m;
}

SimGpuModel a100_40gb() {
  SimGpuModel m{
      "A100-40GB", "Simulated NVIDIA A100-SXM4-40GB", 40960 * kMiB, 108, 8, 0, 90, 400, 210, 1410,
      {}};
  const uint64_t t = m.memory_total_bytes;
  m.mig_profiles = {profile(19, "1g.5gb", 1, 1, 7, 14, t),  profile(15, "1g.10gb", 1, 2, 4, 14, t),
                    profile(14, "2g.10gb", 2, 2, 3, 28, t), profile(9, "3g.20gb", 3, 4, 2, 42, t),
                    profile(5, "4g.20gb", 4, 4, 1, 56, t),  profile(0, "7g.40gb", 7, 8, 1, 98, t)};
  return m;
}

bool same_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

Result<SimGpuModel> sim_gpu_model(std::string_view model) {
  // The MIG tables' names (colo mig plan --gpu-model) name the same models.
  constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kAliases = {
      {{"H200-141GB", "H200"}, {"H100-80GB", "H100"}}};
  for (const auto& [alias, name] : kAliases) {
    if (same_ignoring_case(model, alias)) model = name;
  }
  for (SimGpuModel candidate : {h200(), h100(), a100_40gb()}) {
    if (same_ignoring_case(model, candidate.model)) return candidate;
  }
  return Error(fmt::format(
      "unknown simulated GPU model '{}'; choose H200 (or H200-141GB), H100 (or H100-80GB) or "
      "A100-40GB",
      model));
}

Result<std::unique_ptr<SimBackend>> SimBackend::create(std::string_view model, int device_count,
                                                       Clock& clock, std::string_view uuid_scope) {
  auto found = sim_gpu_model(model);
  if (!found.ok()) return found.error();
  if (device_count < 1 || device_count > kMaxSimDevices) {
    return Error(fmt::format("simulated GPU count must be between 1 and {}, got {}", kMaxSimDevices,
                             device_count));
  }
  return std::make_unique<SimBackend>(std::move(found).value(), device_count, clock, uuid_scope);
}

namespace {

// FNV-1a (64 bits) of the scope; 0 for the empty scope.
uint64_t scope_hash(std::string_view scope) {
  if (scope.empty()) return 0;
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : scope) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

SimBackend::SimBackend(SimGpuModel model, int device_count, Clock& clock,
                       std::string_view uuid_scope)
    : model_(std::move(model)),
      device_count_(device_count),
      uuid_hash_(scope_hash(uuid_scope)),
      clock_(clock),
      energy_mj_(device_count, 0.0),
      energy_integrated_to_ms_(clock.monotonic_ms()) {}

Status SimBackend::check_index(int index) const {
  if (index < 0 || index >= device_count_) {
    return Error(fmt::format("GPU {} does not exist; the simulated {} has GPUs 0..{}", index,
                             model_.model, device_count_ - 1));
  }
  return OkStatus();
}

SimBackend::DeviceLoad SimBackend::load_of(int device) const {
  DeviceLoad load;
  for (const auto& [pid, process] : processes_) {
    if (process.device != device) continue;
    ++load.process_count;
    load.sm_demand_pct += std::max(0.0, process.hint.sm_active_pct);
    load.memory_bytes += process.hint.memory_bytes + kContextBytes;
  }
  return load;
}

double SimBackend::power_w_of(int device) const {
  const double sm_active = std::min(100.0, load_of(device).sm_demand_pct);
  return model_.idle_power_w + (model_.max_power_w - model_.idle_power_w) * sm_active / 100.0;
}

void SimBackend::integrate_energy_to_now() {
  const int64_t now_ms = clock_.monotonic_ms();
  const int64_t elapsed_ms = now_ms - energy_integrated_to_ms_;
  if (elapsed_ms <= 0) return;
  for (int d = 0; d < device_count_; ++d)
    energy_mj_[d] += power_w_of(d) * elapsed_ms;  // W x ms = mJ
  energy_integrated_to_ms_ = now_ms;
}

Result<std::vector<DeviceInfo>> SimBackend::devices() {
  std::vector<DeviceInfo> infos;
  for (int d = 0; d < device_count_; ++d) {
    DeviceInfo info;
    info.index = d;
    info.name = model_.device_name;
    info.uuid =
        fmt::format("GPU-{:08x}-{:04x}-4{:03x}-8{:03x}-51D{:09d}", uuid_hash_ >> 32,
                    (uuid_hash_ >> 16) & 0xffff, (uuid_hash_ >> 4) & 0xfff, uuid_hash_ & 0xfff, d);
    info.pci_bus_id = fmt::format("00000000:{:02X}:00.0", 0x18 + d);
    info.memory_total_bytes = model_.memory_total_bytes;
    info.sm_count = model_.sm_count;
    info.power_limit_w = model_.max_power_w;
    info.cuda_compute_major = model_.cuda_compute_major;
    info.cuda_compute_minor = model_.cuda_compute_minor;
    info.mig_enabled = false;
    info.mig_profiles = model_.mig_profiles;
    info.gpm_supported = true;
    info.supported_metrics = all_metric_names();
    infos.push_back(std::move(info));
  }
  return infos;
}

Result<DeviceSample> SimBackend::sample_device(int index) {
  if (Status valid = check_index(index); !valid.ok()) return valid.error();
  std::lock_guard lock(mu_);
  integrate_energy_to_now();
  const DeviceLoad load = load_of(index);
  const double sm_active = std::min(100.0, load.sm_demand_pct);

  DeviceSample sample;
  sample.time_ms = clock_.now_ms();
  sample.device = index;
  sample.sm_active_pct = sm_active;
  sample.sm_occupancy_pct = sm_active * kOccupancyPerSmActive;
  sample.tensor_active_pct = sm_active * kTensorPerSmActive;
  sample.dram_active_pct = sm_active * kDramPerSmActive;
  // Busy time grows with the load as measured (resnet26: 19% SM active, 37%
  // busy; cait_xxs24: 81% and 100% on an H100): about twice the SM activity.
  sample.gpu_util_pct = load.process_count > 0 ? std::min(100.0, 2.0 * load.sm_demand_pct) : 0.0;
  sample.memory_used_bytes = std::min(load.memory_bytes, model_.memory_total_bytes);
  sample.memory_total_bytes = model_.memory_total_bytes;
  sample.power_w = power_w_of(index);
  sample.energy_mj = static_cast<uint64_t>(energy_mj_[index]);
  sample.pcie_rx_mib_per_s = kPcieRxMibPerProcess * load.process_count;
  sample.pcie_tx_mib_per_s = kPcieTxMibPerProcess * load.process_count;
  sample.sm_clock_mhz =
      load.process_count > 0 ? model_.busy_sm_clock_mhz : model_.idle_sm_clock_mhz;
  return sample;
}

Result<std::vector<MigPlacementOption>> SimBackend::mig_placements(int device, int profile_id) {
  if (Status valid = check_index(device); !valid.ok()) return valid.error();
  // Profile id -> allowed starts and size, as NVIDIA's MIG user guide lists
  // them for A100 and H100/H200 (every simulated model uses the same ids).
  struct Row {
    int id;
    std::vector<int> starts;
    int size;
  };
  static const std::vector<Row> kRows = {{19, {0, 1, 2, 3, 4, 5, 6}, 1},
                                         {20, {0, 1, 2, 3, 4, 5, 6}, 1},
                                         {15, {0, 2, 4, 6}, 2},
                                         {14, {0, 2, 4}, 2},
                                         {9, {0, 4}, 4},
                                         {5, {0}, 4},
                                         {0, {0}, 8}};
  for (const Row& row : kRows) {
    if (row.id != profile_id) continue;
    std::vector<MigPlacementOption> options;
    for (int start : row.starts) options.push_back({start, row.size});
    return options;
  }
  return Error(
      fmt::format("the simulated {} has no MIG profile with id {}", model_.model, profile_id));
}

Result<std::vector<ProcessSample>> SimBackend::sample_processes(int index) {
  if (Status valid = check_index(index); !valid.ok()) return valid.error();
  std::lock_guard lock(mu_);
  const DeviceLoad load = load_of(index);
  const double share = load.sm_demand_pct > 100.0 ? 100.0 / load.sm_demand_pct : 1.0;
  std::vector<ProcessSample> samples;
  for (const auto& [pid, process] : processes_) {
    if (process.device != index) continue;
    ProcessSample sample;
    sample.time_ms = clock_.now_ms();
    sample.device = index;
    sample.pid = pid;
    sample.used_memory_bytes = process.hint.memory_bytes + kContextBytes;
    sample.sm_util_pct = std::max(0.0, process.hint.sm_active_pct) * share;
    samples.push_back(sample);
  }
  return samples;
}

void SimBackend::process_started(int device, uint32_t pid, const SimLoadHint& hint) {
  std::lock_guard lock(mu_);
  integrate_energy_to_now();
  // Called again for a process it knows (its load changed): updated in place.
  for (auto [it, end] = processes_.equal_range(pid); it != end; ++it) {
    if (it->second.device == device) {
      it->second.hint = hint;
      return;
    }
  }
  processes_.emplace(pid, SimProcess{device, hint});
}

void SimBackend::process_exited(uint32_t pid) {
  std::lock_guard lock(mu_);
  integrate_energy_to_now();
  processes_.erase(pid);
}

std::vector<XidEvent> SimBackend::poll_xid_events() {
  std::lock_guard lock(mu_);
  return std::exchange(xid_events_, {});
}

void SimBackend::inject_xid(int device, uint64_t xid) {
  std::lock_guard lock(mu_);
  XidEvent event;
  event.device = device;
  event.xid = xid;
  event.time_ms = clock_.now_ms();
  xid_events_.push_back(event);
}

}  // namespace colo
