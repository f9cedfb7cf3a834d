// GpuBackend: the one interface between colo and a GPU vendor library.
//
// Implementations: NvmlBackend (the real driver, loaded with dlopen at run
// time) and SimBackend (a deterministic simulated GPU for machines without one;
// everything it produces is labelled simulated), opened by open_gpu_backend()
// (open_backend.h). Every metric is optional: a metric the GPU or driver does
// not offer is absent (std::nullopt), never 0. Units are part of every field
// name.
//
// Threading: a backend is not thread-safe unless it says so. colo calls
// devices() once from the main thread before sampling starts, and afterwards
// only the monitor's sampling thread calls sample_device()/sample_processes()/
// poll_xid_events() (NVML calls serialize on a driver lock anyway).
// xid_events_status() is fixed once the backend is made. SimBackend's
// process_started()/process_exited()/inject_xid() may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "gpu/mig_control.h"

namespace colo {

// A MIG GPU-instance profile as the driver lists it (e.g. "3g.71gb", id 9).
struct MigProfile {
  int id = 0;           // the id nvidia-smi mig -lgip shows
  std::string name;     // "1g.18gb"
  int slice_count = 0;  // compute slices (the "1g" part)
  uint64_t memory_bytes = 0;
  int max_instances = 0;  // how many of this profile fit on an empty GPU
  int sm_count = 0;
};

// One place a GPU instance of a MIG profile may be created, in memory-slice
// units (nvmlGpuInstancePlacement_t): it occupies slices [start, start + size).
struct MigPlacementOption {
  int start = 0;
  int size = 0;
};

// Facts about a device that do not change while colo runs (read once).
struct DeviceInfo {
  int index = 0;     // NVML index
  std::string name;  // "NVIDIA H200"
  std::string uuid;  // "GPU-..."; what jobs get in CUDA_VISIBLE_DEVICES
  std::string pci_bus_id;
  uint64_t memory_total_bytes = 0;
  std::optional<double> power_limit_w;  // the enforced power limit
  std::optional<int> sm_count;
  std::optional<int> cuda_compute_major;
  std::optional<int> cuda_compute_minor;
  std::optional<bool> mig_enabled;       // current MIG mode
  std::vector<MigProfile> mig_profiles;  // empty when the GPU has no MIG
  bool gpm_supported = false;
  // Names of the DeviceSample fields this device answers ("sm_active_pct", ...).
  std::vector<std::string> supported_metrics;
};

// One reading of a device. Percentages are 0-100.
struct DeviceSample {
  UnixMillis time_ms = 0;
  int device = 0;
  std::optional<double> sm_active_pct;      // GPM SM_UTIL (DCGM SM_ACTIVE x100)
  std::optional<double> sm_occupancy_pct;   // GPM SM_OCCUPANCY
  std::optional<double> tensor_active_pct;  // GPM ANY_TENSOR_UTIL
  std::optional<double> dram_active_pct;    // GPM DRAM_BW_UTIL
  std::optional<double> gpu_util_pct;       // nvmlDeviceGetUtilizationRates .gpu
  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_total_bytes;
  std::optional<double> power_w;
  std::optional<uint64_t> energy_mj;        // counter since driver load
  std::optional<double> pcie_rx_mib_per_s;  // GPM PCIE_RX_PER_SEC
  std::optional<double> pcie_tx_mib_per_s;
  std::optional<uint32_t> sm_clock_mhz;
};

// One process using a device, as the driver sees it.
struct ProcessSample {
  UnixMillis time_ms = 0;
  int device = 0;
  uint32_t pid = 0;
  std::optional<uint64_t> used_memory_bytes;
  // Per-process SM utilization where NVML gives it. Under MPS NVML reports
  // the MPS server, not its clients, so clients have no value here.
  std::optional<double> sm_util_pct;
  bool mps_client = false;  // listed by nvmlDeviceGetMPSComputeRunningProcesses
};

// A critical error the driver reported on a GPU (an Xid: 13 graphics engine
// exception, 31 MMU fault, 43 GPU stopped processing, 45 preemptive cleanup,
// 79 fallen off the bus, ...; 999 when the driver does not know which).
struct XidEvent {
  int device = 0;          // the backend's device index; -1 when the driver named no GPU colo knows
  uint64_t xid = 0;        // the Xid number (nvmlEventData_t::eventData)
  UnixMillis time_ms = 0;  // when colo received it (the driver gives no time), wall clock
  // The MIG GPU and compute instance it is attributable to, when the driver says.
  std::optional<int> gpu_instance_id;
  std::optional<int> compute_instance_id;
};

// What a simulated backend is told about a process so it can model its load.
// Real backends ignore it.
struct SimLoadHint {
  uint64_t memory_bytes = 0;  // what the process would hold on the GPU
  double sm_active_pct = 0;   // its solo SM activity
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;

  // "nvml" or "sim".
  virtual std::string name() const = 0;
  // True for backends whose numbers are not measured on a real GPU.
  virtual bool simulated() const = 0;
  // e.g. "driver 580.159.04, NVML 12.580.159.04" or "simulated H200".
  virtual std::string version() const = 0;

  virtual Result<std::vector<DeviceInfo>> devices() = 0;
  virtual Result<DeviceSample> sample_device(int index) = 0;
  virtual Result<std::vector<ProcessSample>> sample_processes(int index) = 0;

  // The Xid events that arrived since the last call, oldest first; never
  // blocks, never fails (a driver that cannot report them gives none: see
  // xid_events_status()). Only the sampling thread calls it.
  virtual std::vector<XidEvent> poll_xid_events() { return {}; }
  // "" when poll_xid_events() watches every device, else one line saying
  // which GPUs are not watched and why. Fixed once the backend is made.
  virtual std::string xid_events_status() const {
    return "the '" + name() + "' backend does not report Xid events";
  }

  // Where a GPU instance of MIG profile `profile_id` (MigProfile::id) may be
  // placed on an empty device, in memory slices. Read-only: never changes the
  // MIG mode or creates instances. Drivers may refuse the query while MIG mode
  // is disabled; callers then need another source (see src/mig). The default
  // answers an Error saying the backend does not support it.
  virtual Result<std::vector<MigPlacementOption>> mig_placements(int /*device*/,
                                                                 int /*profile_id*/) {
    return Error("MIG placement queries are not supported by the '" + name() + "' backend");
  }

  // Creating and destroying MIG instances on this backend's devices, or
  // nullptr when the backend cannot (the simulated one). Owned by the backend.
  virtual MigControl* mig_control() { return nullptr; }

  // Simulation hooks; no-ops on real backends. process_started() again for
  // a (pid, device) it knows updates its load; a gang's process is started
  // once per GPU; process_exited() ends it on all of them.
  virtual void process_started(int /*device*/, uint32_t /*pid*/, const SimLoadHint& /*hint*/) {}
  virtual void process_exited(uint32_t /*pid*/) {}
};

}  // namespace colo
