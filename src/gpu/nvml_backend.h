// NvmlBackend: GpuBackend over the real NVIDIA driver, loaded at run time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "gpu/gpu_backend.h"
#include "gpu/nvml_api.h"
#include "gpu/nvml_library.h"
#include "gpu/nvml_mig_control.h"

namespace colo {

// Frees an NVML event set (the deleter of NvmlBackend's).
struct NvmlEventSetFree {
  nvmlEventSetFree_fn free = nullptr;
  void operator()(nvmlEventSet_st* set) const {
    if (free != nullptr && set != nullptr) free(set);
  }
};

// Reads devices, device metrics and process lists through NVML.
//
// Metric sources: GPM (Hopper and later) for SM activity, SM occupancy,
// tensor activity, DRAM activity and PCIe throughput; the classic queries for
// memory, utilization rates, power, energy and SM clock. A metric whose
// function is missing or answers NOT_SUPPORTED / NO_PERMISSION / NOT_FOUND is
// absent. GPM values are averages between two samples taken more than 100 ms
// apart, so the first sample_device() of a device has no GPM metrics and a call
// sooner than 100 ms after the last GPM sample repeats the previous values.
// The total-energy counter costs ~3.6 ms per read, so it is read at most once
// per second and absent from the samples in between.
//
// Process lists: nvmlDeviceGetRunningProcessDetailList (mode compute and MPS)
// when the driver has it, else the *RunningProcesses_v3 lists, whose entry
// stride is checked (some R535+ drivers write 32-byte entries under the 24-byte
// name: if the 24-byte reading gives pid 0 where the 32-byte reading does not,
// 32 is used). Per-process SM% comes from nvmlDeviceGetProcessUtilization with
// the previous call's time as last-seen timestamp; a listed process without a
// sample since then gets 0, MPS clients get none (NVML reports their server).
//
// Xid events: create() makes one event set and registers
// nvmlEventTypeXidCriticalError on every device that offers it;
// poll_xid_events() takes what is queued with nvmlEventSetWait_v2 and a zero
// timeout (at most 64 per call; the rest stay queued for the next call). A
// driver without the event functions, or refusing a device (NOT_SUPPORTED,
// NO_PERMISSION in some containers), leaves that device unwatched, which
// xid_events_status() names; it never fails the backend.
//
// Thread-safety: not thread-safe; see GpuBackend. Ownership: owns the
// NvmlLibrary; GPM samples and the event set are freed before NVML is shut
// down. The Clock must outlive the backend.
class NvmlBackend final : public GpuBackend {
 public:
  // Loads `library_path`, initialises NVML and opens every device. Fails with
  // one line (no driver, unusable library, no GPUs).
  static Result<std::unique_ptr<NvmlBackend>> create(const std::string& library_path, Clock& clock);

  ~NvmlBackend() override;

  std::string name() const override { return "nvml"; }
  bool simulated() const override { return false; }
  std::string version() const override { return version_; }

  // Read once and cached. Also primes GPM, so the sampler's first sample has
  // GPM metrics; takes ~110 ms per GPM-capable device.
  Result<std::vector<DeviceInfo>> devices() override;
  Result<DeviceSample> sample_device(int index) override;
  Result<std::vector<ProcessSample>> sample_processes(int index) override;
  // nvmlDeviceGetGpuInstancePossiblePlacements_v2; an Error naming the NVML
  // code when the driver lacks the function or refuses (e.g. MIG disabled).
  Result<std::vector<MigPlacementOption>> mig_placements(int device, int profile_id) override;
  // Always present: each MIG call fails naming the NVML function the driver lacks.
  MigControl* mig_control() override { return mig_.get(); }
  std::vector<XidEvent> poll_xid_events() override;
  std::string xid_events_status() const override { return xid_events_status_; }

  struct DeviceState;  // per-device handle, GPM samples and rate-limiting state

  class Passkey {
    explicit Passkey() = default;
    friend class NvmlBackend;
  };
  NvmlBackend(Passkey, std::unique_ptr<NvmlLibrary> library, Clock& clock);

 private:
  struct ProcessEntry {
    uint32_t pid = 0;
    std::optional<uint64_t> used_memory_bytes;
  };

  Result<DeviceState*> device_state(int index);
  // Creates the event set and registers Xid events on every device (create()).
  void watch_xid_events();
  int device_index_of(nvmlDevice_t handle) const;  // -1 when none
  DeviceInfo read_device_info(int index, DeviceState& device);
  void read_gpm(DeviceState& device, DeviceSample& sample);
  // std::nullopt when the driver has no list for `mode`.
  Result<std::optional<std::vector<ProcessEntry>>> list_processes(DeviceState& device,
                                                                  unsigned int mode);

  std::unique_ptr<NvmlLibrary> library_;  // declared first: destroyed last
  Clock& clock_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
  std::unique_ptr<NvmlMigControl> mig_;  // borrows library_ and the device handles
  std::optional<std::vector<DeviceInfo>> device_infos_;
  std::string version_;
  // Null when no device is watched; freed before library_ shuts NVML down.
  std::unique_ptr<nvmlEventSet_st, NvmlEventSetFree> xid_event_set_;
  std::string xid_events_status_;  // "" when every device is watched
};

// The nvidia-smi style name of a MIG GPU-instance profile ("3g.71gb") from
// the numbers of nvmlGpuInstanceProfileInfo_t, for drivers whose profile info
// has no name. Memory is named after the board's nominal size (whole GiB,
// rounded up) times the profile's share of memory in eighths, rounded half up:
// H200 1g.18gb, 1g.35gb, 3g.71gb, 7g.141gb; H100 1g.10gb, 3g.40gb, 7g.80gb.
// `profile_index` adds the "+me" / "-me" / "+gfx" suffixes of the variant profiles.
std::string compose_mig_profile_name(unsigned int slice_count, uint64_t profile_memory_mib,
                                     uint64_t device_memory_mib, unsigned int profile_index);

}  // namespace colo
