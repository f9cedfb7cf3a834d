// MIG geometry: which GPU-instance profiles a GPU model offers and where each
// may be placed. Built-in tables allow planning without a GPU; the live
// geometry comes from NVML through a GpuBackend.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gpu/gpu_backend.h"

namespace colo {

// One GPU-instance profile and its placement rule. An instance of it occupies
// memory slices [start, start + memory_slices) for one start in `starts`.
struct MigProfileSpec {
  int id = 0;                 // the id nvidia-smi mig -lgip shows
  std::string name;           // "3g.20gb"
  int compute_slices = 0;     // the "3g" part
  int memory_slices = 0;      // eighths of the GPU's memory
  uint64_t memory_bytes = 0;  // usable memory of one instance
  int sm_count = 0;           // 0 when unknown
  std::vector<int> starts;    // allowed start slices, ascending
  int max_count = 0;          // instances that fit on an empty GPU
};

// The MIG layout rules of one GPU model. Value type; pure data.
struct MigGeometry {
  std::string model;                     // "A100-40GB", or the device name for a live geometry
  int compute_slices = 7;                // compute slices of the whole GPU
  int memory_slices = 8;                 // memory slices of the whole GPU
  std::vector<MigProfileSpec> profiles;  // in nvidia-smi mig -lgip order
  std::string source;                    // where profiles and placements came from, for the user

  // The profile called `name` (case-insensitive; a leading "MIG " is ignored),
  // or nullptr.
  const MigProfileSpec* find_profile(std::string_view name) const;
  // "1g.5gb, 1g.5gb+me, 1g.10gb, ..." for error messages.
  std::string profile_names() const;
};

// Whether a GPU instance of `gpu_instance_slices` compute slices offers
// compute instances of `slices` compute slices, as `nvidia-smi mig -lcip`
// lists them: 1 and 2 wherever they fit, 3 in 3g and 7g, 4 in 4g and 7g,
// 7 in 7g.
bool compute_instance_fits(int slices, int gpu_instance_slices);

// The built-in tables: A100-40GB, A100-80GB, H100-80GB, H200-141GB.
const std::vector<MigGeometry>& builtin_mig_geometries();

// The built-in table for a model name ("A100-40GB", "h200") or an NVML device
// name ("NVIDIA H200", "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"),
// case-insensitive. An A100 name without its memory size is resolved with
// `memory_total_bytes` when it is non-zero. Fails naming the known models.
Result<MigGeometry> builtin_mig_geometry(std::string_view name, uint64_t memory_total_bytes = 0);

// The geometry of a live device, read-only: profiles from `device.mig_profiles`
// and placements from backend.mig_placements(). Where the backend refuses the
// placement query (drivers may while MIG mode is disabled), the placements come
// from the built-in table of the matched model and `source` says so. Profiles
// with no known placements are left out (named in `source`). Fails when the
// device lists no MIG profiles, or placements are unavailable and the model has
// no built-in table.
Result<MigGeometry> live_mig_geometry(GpuBackend& backend, const DeviceInfo& device);

}  // namespace colo
