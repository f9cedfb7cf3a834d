// The one place that knows every GpuBackend (NvmlBackend, SimBackend): opens
// the one the options name. gpu_backend.h is the interface alone; the backends
// include it and this unit includes them, so the includes run one way.
#pragma once

#include <memory>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"

namespace colo {

enum class BackendKind { kNvml, kSim, kAuto };

struct BackendOptions {
  BackendKind kind = BackendKind::kNvml;
  // Path or soname of the NVML library (tests point it at a stand-in).
  std::string nvml_library = "libnvidia-ml.so.1";
  // SimBackend: GPU model to imitate ("H200", "H100", "A100-40GB") and count.
  std::string sim_model = "H200";
  int sim_device_count = 1;
  // What the simulated GPUs' UUIDs derive from (SimBackend): colo's state
  // directory, so that each COLO_HOME has simulated GPUs of its own.
  std::string sim_uuid_scope;
};

// kNvml fails with one line naming the cause and suggesting `--backend sim`
// when no driver can be loaded; kAuto falls back to the simulated backend in
// that case (the caller says so to the user). `clock` must outlive the
// backend.
Result<std::unique_ptr<GpuBackend>> open_gpu_backend(const BackendOptions& options, Clock& clock);

}  // namespace colo
