#include "cli/cli_common.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "analysis/stored.h"
#include "common/paths.h"
#include "common/units.h"
#include "run/leftovers.h"
#include "run/run_controller.h"

namespace colo {

void add_backend_flags(CLI::App& cmd, BackendFlags& flags) {
  cmd.add_option(
         "--backend", flags.backend,
         "nvml: the real GPU through the driver; sim: a simulated GPU (numbers are not measured); "
         "auto: nvml, or sim when no driver is found")
      ->check(CLI::IsMember({"nvml", "sim", "auto"}))
      ->capture_default_str();
  cmd.add_option("--sim-gpu", flags.sim_gpu,
                 "GPU model the simulated backend imitates (H200, H100, A100-40GB)")
      ->capture_default_str();
  cmd.add_option("--sim-devices", flags.sim_devices, "number of simulated GPUs")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

Result<std::unique_ptr<GpuBackend>> open_backend(const BackendFlags& flags, Clock& clock) {
  BackendOptions options;
  options.kind = flags.backend == "sim"    ? BackendKind::kSim
                 : flags.backend == "auto" ? BackendKind::kAuto
                                           : BackendKind::kNvml;
  options.sim_model = flags.sim_gpu;
  options.sim_device_count = flags.sim_devices;
  if (const char* lib = std::getenv("COLO_NVML_LIBRARY"); lib && *lib) options.nvml_library = lib;
  Result<std::unique_ptr<GpuBackend>> backend = make_gpu_backend(options, clock);
  if (backend.ok() && (*backend)->simulated()) {
    std::cerr << fmt::format(
        "colo: using the SIMULATED GPU backend ({}): GPU numbers are modelled, not measured\n",
        (*backend)->version());
  }
  return backend;
}

Result<OpenedGpu> open_gpu(const BackendFlags& flags, Clock& clock) {
  Result<std::unique_ptr<GpuBackend>> backend = open_backend(flags, clock);
  if (!backend.ok()) return backend.error();
  Result<std::vector<DeviceInfo>> devices = (*backend)->devices();
  if (!devices.ok()) return devices.error();
  return OpenedGpu{std::move(backend).value(), std::move(devices).value()};
}

MechanismOptions default_mechanism_options() {
  MechanismOptions options;
  options.state_dir = default_state_dir() + "/mps";
  if (const char* p = std::getenv("COLO_MPS_CONTROL"); p && *p) options.mps_control_program = p;
  return options;
}

std::optional<MechanismKind> choose_mechanism(const std::string& flag,
                                              const std::optional<std::string>& from_file,
                                              const std::string& file_path,
                                              const GpuBackend& backend,
                                              const MechanismOptions& options) {
  std::string name = !flag.empty() ? flag : from_file.value_or("");
  if (name.empty()) {
    MechanismKind kind = default_mechanism(backend, options.mps_control_program);
    std::cerr << fmt::format(
        "colo: mechanism {} (the default here; choose with --mechanism exclusive|naive|mps|mig)\n",
        to_string(kind));
    return kind;
  }
  Result<MechanismKind> parsed = parse_mechanism(name);
  if (!parsed.ok()) {
    std::cerr << "colo: " << (flag.empty() ? file_path + ": [run] mechanism: " : "--mechanism: ")
              << parsed.error().message() << "\n";
    return std::nullopt;
  }
  return *parsed;
}

std::optional<int64_t> duration_flag(std::string_view flag, const std::string& text, int64_t min_ms,
                                     std::string_view why) {
  Result<int64_t> ms = parse_duration_ms(text);
  if (ms.ok() && *ms >= min_ms) return *ms;
  std::string problem = !ms.ok()      ? ms.error().message()
                        : min_ms <= 1 ? std::string("must be longer than zero")
                                      : "must be at least " + format_duration_ms(min_ms);
  if (!why.empty()) problem += fmt::format(" ({})", why);
  std::cerr << "colo: " << flag << ": " << problem << "\n";
  return std::nullopt;
}

Result<std::unique_ptr<RunStore>> open_store_for_reading(const std::string& db_flag) {
  std::string path = db_flag.empty() ? default_db_path() : db_flag;
  if (access(path.c_str(), F_OK) != 0) {
    return Error(fmt::format(
        "no run store at {} yet: `colo run FILE` or `colo bench` creates it (or pass --db PATH)",
        path));
  }
  Result<std::unique_ptr<RunStore>> store = RunStore::open(path, StoreAccess::kRead);
  if (store.ok() && !(*store)->read_only_reason().empty()) {
    std::cerr << fmt::format(
        "colo: note: {} opened read-only ({}); runs of a colo that died show as it left them\n",
        path, (*store)->read_only_reason());
  }
  // What a colo that died left running is stopped by whichever command comes
  // next, not only by the next `colo run`.
  if (store.ok()) {
    for (const std::string& line : stop_leftovers_of_dead_colos(**store)) {
      std::cerr << "colo: " << line << "\n";
    }
  }
  return store;
}

std::vector<LearnedProfile> stored_profiles(const std::string& db, bool skip,
                                            std::vector<Collocation>& collocations) {
  if (skip) return {};
  std::string path = db.empty() ? default_db_path() : db;
  if (access(path.c_str(), F_OK) != 0) return {};
  Result<std::unique_ptr<RunStore>> store = RunStore::open(path);
  if (!store.ok()) {
    std::cerr << "colo: warning: ignoring the store: " << store.error().message() << "\n";
    return {};
  }
  Result<std::vector<LearnedProfile>> profiles = learn_profiles(**store);
  if (!profiles.ok()) {
    std::cerr << "colo: warning: ignoring the store: " << profiles.error().message() << "\n";
    return {};
  }
  std::vector<LearnedProfile> measured;
  std::copy_if(profiles->begin(), profiles->end(), std::back_inserter(measured),
               [](const LearnedProfile& p) { return !p.simulated; });
  if (Result<std::vector<Collocation>> c = measured_collocations(**store, measured); c.ok())
    collocations = std::move(*c);
  return *profiles;
}

}  // namespace colo
