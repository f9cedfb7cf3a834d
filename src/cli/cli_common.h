// What the GPU-facing subcommands share: the backend flags and opening the
// backend the same way everywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/profiles.h"
#include "common/clock.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "sched/interference.h"
#include "sharing/mechanism.h"
#include "store/run_store.h"

namespace CLI {
class App;
}

namespace colo {

// --backend, --sim-gpu, --sim-devices.
struct BackendFlags {
  std::string backend = "nvml";
  std::string sim_gpu = "H200";
  int sim_devices = 1;
};

void add_backend_flags(CLI::App& cmd, BackendFlags& flags);

// Opens the backend the flags name ($COLO_NVML_LIBRARY overrides the NVML
// library), and says on stderr when its numbers will be simulated.
Result<std::unique_ptr<GpuBackend>> open_backend(const BackendFlags& flags, Clock& clock);

// A backend and the devices it found.
struct OpenedGpu {
  std::unique_ptr<GpuBackend> backend;
  std::vector<DeviceInfo> devices;
};

// open_backend, then the device list; either step's error is returned.
Result<OpenedGpu> open_gpu(const BackendFlags& flags, Clock& clock);

// Where the mechanisms keep their state (<state dir>/mps, /mig) and which MPS
// control program they run ($COLO_MPS_CONTROL overrides it, for tests).
MechanismOptions default_mechanism_options();

// The mechanism `flag` names, else the job file's `from_file`, else the
// default for this backend (said on stderr); nullopt after saying what is
// wrong with the name.
std::optional<MechanismKind> choose_mechanism(const std::string& flag,
                                              const std::optional<std::string>& from_file,
                                              const std::string& file_path,
                                              const GpuBackend& backend,
                                              const MechanismOptions& options);

// A duration flag's value in milliseconds, at least `min_ms`; nullopt after
// saying on stderr what is wrong with it ("colo: --interval: must be at least
// 100ms", then " (`why`)" when given).
std::optional<int64_t> duration_flag(std::string_view flag, const std::string& text, int64_t min_ms,
                                     std::string_view why = "");

// Opens the existing store that `db_flag` names (default_db_path() when empty)
// for reading: colo runs, show and report. When it can only be read (a
// read-only or full file system), says so on stderr and reads it anyway.
// Stops what colos that died left running (run/leftovers.h), saying so on
// stderr.
Result<std::unique_ptr<RunStore>> open_store_for_reading(const std::string& db_flag);

// The profiles the store at `db` (default: the default store) learned, and
// its measured collocations (of measured, not simulated, profiles) into
// `collocations`; none, with a warning on stderr, when it cannot be read;
// none when `skip` or when there is no store yet.
std::vector<LearnedProfile> stored_profiles(const std::string& db, bool skip,
                                            std::vector<Collocation>& collocations);

}  // namespace colo
