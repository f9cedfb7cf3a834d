// SimBackend: a deterministic simulated GPU for machines without one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "gpu/gpu_backend.h"

namespace colo {

// The published numbers of a GPU model the simulator imitates.
struct SimGpuModel {
  std::string model;        // "H200"
  std::string device_name;  // "Simulated NVIDIA H200"
  uint64_t memory_total_bytes = 0;
  int sm_count = 0;
  int cuda_compute_major = 0;
  int cuda_compute_minor = 0;
  double idle_power_w = 90;
  double max_power_w = 0;  // TDP
  uint32_t idle_sm_clock_mhz = 0;
  uint32_t busy_sm_clock_mhz = 0;
  std::vector<MigProfile> mig_profiles;
};

// "H200" (or "H200-141GB"), "H100" (or "H100-80GB") or "A100-40GB", ignoring
// case; an error listing those otherwise.
Result<SimGpuModel> sim_gpu_model(std::string_view model);

// Models load from the processes it is told about (process_started /
// process_exited), with no noise, so equal inputs and clocks give equal
// samples:
//   SM activity   = min(100, sum of the processes' solo SM activity); when the
//                   sum exceeds 100 each process gets its proportional share.
//   memory used   = sum of the processes' memory + 500 MiB CUDA context each,
//                   capped at the device's memory.
//   power         = idle + (TDP - idle) x SM activity / 100.
//   energy        = power integrated over the Clock since the backend was made.
//   GPU util      = min(100, twice the summed solo SM activity) while any
//                   process runs, else 0 (as measured: a job 19% SM active
//                   kept the GPU busy 37% of the time).
//   occupancy, tensor and DRAM activity, PCIe and SM clock follow from SM
//   activity and the process count by fixed factors (see sim_backend.cc).
// Everything is labelled simulated: name() "sim", version() "simulated H200",
// device names "Simulated NVIDIA H200".
//
// Simulated GPUs belong to a scope, not to the machine: their UUIDs
// (GPU-xxxxxxxx-xxxx-4xxx-8xxx-51D00000000N, N the index) derive from
// `uuid_scope`, which colo sets to its state directory ($COLO_HOME). Colo
// processes of one COLO_HOME thus see the same simulated GPUs (and exclude
// each other through their locks), those of another COLO_HOME other ones; the
// UUIDs are stable for a scope, across runs. An empty scope gives the UUIDs
// GPU-00000000-0000-4000-8000-51D00000000N.
//
// Thread-safety: thread-safe (one mutex). Ownership: the Clock must outlive
// the backend.
// The memory a simulated process holds beyond what it states: its CUDA context.
inline constexpr uint64_t kSimContextBytes = 500ull << 20;

// The most GPUs one simulated backend has (a 64-GPU service's scale tests).
inline constexpr int kMaxSimDevices = 256;

class SimBackend final : public GpuBackend {
 public:
  static Result<std::unique_ptr<SimBackend>> create(std::string_view model, int device_count,
                                                    Clock& clock, std::string_view uuid_scope = {});
  SimBackend(SimGpuModel model, int device_count, Clock& clock, std::string_view uuid_scope = {});

  std::string name() const override { return "sim"; }
  bool simulated() const override { return true; }
  std::string version() const override { return "simulated " + model_.model; }

  Result<std::vector<DeviceInfo>> devices() override;
  Result<DeviceSample> sample_device(int index) override;
  Result<std::vector<ProcessSample>> sample_processes(int index) override;
  // The placements NVIDIA documents for the profile ids every simulated model
  // shares (19, 20, 15, 14, 9, 5, 0); answered even though MIG is "disabled".
  Result<std::vector<MigPlacementOption>> mig_placements(int device, int profile_id) override;

  // A pid registered twice replaces its earlier hint and device. Hints for a
  // device the simulator does not have are kept but never sampled.
  void process_started(int device, uint32_t pid, const SimLoadHint& hint) override;
  void process_exited(uint32_t pid) override;

  // Xid events: what inject_xid() queued (for tests: a simulated GPU never
  // faults by itself), stamped with the Clock's time at injection.
  std::vector<XidEvent> poll_xid_events() override;
  std::string xid_events_status() const override { return ""; }
  void inject_xid(int device, uint64_t xid);

 private:
  struct SimProcess {
    int device = 0;
    SimLoadHint hint;
  };
  struct DeviceLoad {
    int process_count = 0;
    double sm_demand_pct = 0;   // sum of solo SM activity
    uint64_t memory_bytes = 0;  // before the cap
  };

  DeviceLoad load_of(int device) const;  // requires mu_
  double power_w_of(int device) const;   // requires mu_
  void integrate_energy_to_now();        // requires mu_
  Status check_index(int index) const;

  const SimGpuModel model_;
  const int device_count_;
  const uint64_t uuid_hash_;  // of the scope; 0 for the empty one
  Clock& clock_;
  mutable std::mutex mu_;
  // By pid; a gang's process once per GPU it runs on. Guarded by mu_.
  std::multimap<uint32_t, SimProcess> processes_;
  std::vector<double> energy_mj_;     // guarded by mu_; per device
  std::vector<XidEvent> xid_events_;  // guarded by mu_; oldest first
  int64_t energy_integrated_to_ms_;   // guarded by mu_; monotonic
};

}  // namespace colo
