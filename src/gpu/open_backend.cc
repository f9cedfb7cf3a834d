#include "gpu/open_backend.h"

#include "gpu/nvml_backend.h"
#include "gpu/sim_backend.h"

namespace colo {

Result<std::unique_ptr<GpuBackend>> open_gpu_backend(const BackendOptions& options, Clock& clock) {
  if (options.kind != BackendKind::kSim) {
    auto nvml = NvmlBackend::create(options.nvml_library, clock);
    if (nvml.ok()) return std::unique_ptr<GpuBackend>(std::move(nvml).value());
    if (options.kind == BackendKind::kNvml) return nvml.error();
  }
  auto sim = SimBackend::create(options.sim_model, options.sim_device_count, clock,
                                options.sim_uuid_scope);
  if (!sim.ok()) return sim.error();
  return std::unique_ptr<GpuBackend>(std::move(sim).value());
}

}  // namespace colo
