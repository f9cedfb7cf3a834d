// `colo mig plan` and `colo mig profiles`: MIG layouts planned offline from the
// built-in tables (--gpu-model MODEL) or from the live device; read-only.
// `colo mig status` (read-only) lists instances and MIG devices; `colo mig
// cleanup` destroys what a killed colo left; `colo mig enable|disable
// --yes-i-know` is the only path in colo that changes MIG mode.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/units.h"
#include "mig/mig_planner.h"
#include "mig/mig_profiles.h"
#include "sharing/make_mechanism.h"
#include "sharing/mechanism.h"

namespace colo {
namespace {

struct MigFlags {
  std::vector<std::string> profiles;  // "3g.40gb", "1g.10gb:2", ...
  std::string memory;                 // "10GiB,20GiB": jobs' memory needs
  std::string gpu;                    // built-in model; empty: the live device
  std::string gpu_text;               // --gpu: an index, or (deprecated) a model
  int device = 0;
  bool json = false;
  BackendFlags backend;
};

// --gpu N is the live device's index; older colos took --gpu MODEL here,
// which still works, with a note. With --backend sim, --gpu-model names the simulated GPU, whose
// live profiles are then read like a real one's.
MigFlags resolved(MigFlags flags) {
  if (flags.backend.backend == "sim" && !flags.gpu.empty()) {
    flags.backend.sim_gpu = flags.gpu;
    flags.gpu.clear();
  }
  if (flags.gpu_text.empty()) return flags;
  const bool index = std::all_of(flags.gpu_text.begin(), flags.gpu_text.end(),
                                 [](unsigned char c) { return std::isdigit(c) != 0; });
  if (index && flags.gpu_text.size() < 5) {
    flags.device = std::stoi(flags.gpu_text);
  } else {
    std::cerr << fmt::format(
        "colo: note: --gpu MODEL is deprecated here; write --gpu-model {} (--gpu N now names a "
        "GPU by index)\n",
        flags.gpu_text);
    flags.gpu = flags.gpu_text;
  }
  return flags;
}

// The geometry the flags name: the built-in table of --gpu-model, else the live device.
Result<MigGeometry> geometry_for(const MigFlags& flags) {
  if (!flags.gpu.empty()) return builtin_mig_geometry(flags.gpu);
  SystemClock clock;
  Result<OpenedGpu> gpu = open_gpu(flags.backend, clock);
  if (!gpu.ok())
    return gpu.error().with_context("reading the live MIG profiles (or use --gpu-model MODEL)");
  if (flags.device < 0 || flags.device >= static_cast<int>(gpu->devices.size())) {
    return Error(fmt::format("GPU {} does not exist; the backend lists GPUs 0..{}", flags.device,
                             gpu->devices.size() - 1));
  }
  return live_mig_geometry(*gpu->backend, gpu->devices[static_cast<size_t>(flags.device)]);
}

std::string gib(uint64_t bytes) {
  return fmt::format("{:.2f}", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string starts_text(const MigProfileSpec& p) {
  std::string out;
  for (int s : p.starts) out += out.empty() ? std::to_string(s) : "," + std::to_string(s);
  return fmt::format("{{{}}}:{}", out, p.memory_slices);
}

int profiles_command(const MigFlags& given) {
  const MigFlags flags = resolved(given);
  Result<MigGeometry> g = geometry_for(flags);
  if (!g.ok()) {
    std::cerr << "colo: " << g.error().message() << "\n";
    return kExitEnvironment;
  }
  if (flags.json) {
    nlohmann::json out = {{"gpu", g->model},
                          {"source", g->source},
                          {"compute_slices", g->compute_slices},
                          {"memory_slices", g->memory_slices},
                          {"profiles", nlohmann::json::array()}};
    for (const MigProfileSpec& p : g->profiles) {
      out["profiles"].push_back({{"id", p.id},
                                 {"name", p.name},
                                 {"compute_slices", p.compute_slices},
                                 {"memory_slices", p.memory_slices},
                                 {"memory_bytes", p.memory_bytes},
                                 {"sm_count", p.sm_count},
                                 {"max_count", p.max_count},
                                 {"starts", p.starts}});
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{}: {} compute slices, {} memory slices\nsource: {}\n", g->model,
                           g->compute_slices, g->memory_slices, g->source);
  std::cout << fmt::format("{:<12} {:>3} {:>9} {:>10} {:>5} {:>8}  {}\n", "profile", "id",
                           "instances", "memory GiB", "SMs", "compute", "placements {starts}:size");
  for (const MigProfileSpec& p : g->profiles) {
    std::cout << fmt::format("{:<12} {:>3} {:>9} {:>10} {:>5} {:>8}  {}\n", p.name, p.id,
                             p.max_count, gib(p.memory_bytes), p.sm_count, p.compute_slices,
                             starts_text(p));
  }
  return kExitOk;
}

int plan_command(const MigFlags& given) {
  const MigFlags flags = resolved(given);
  Result<MigGeometry> g = geometry_for(flags);
  if (!g.ok()) {
    std::cerr << "colo: " << g.error().message() << "\n";
    return flags.gpu.empty() ? kExitEnvironment : kExitBadInput;
  }
  Result<std::vector<MigRequest>> requests = parse_mig_requests(*g, flags.profiles);
  if (!requests.ok()) {
    std::cerr << "colo: " << requests.error().message() << "\n";
    return kExitBadInput;
  }
  if (!flags.memory.empty()) {
    Result<std::vector<uint64_t>> needs = parse_memory_needs(flags.memory);
    if (!needs.ok()) {
      std::cerr << "colo: " << needs.error().message() << "\n";
      return kExitBadInput;
    }
    Result<std::vector<MigRequest>> by_memory = mig_requests_for_memory(*g, *needs);
    if (!by_memory.ok()) {
      std::cerr << "colo: " << by_memory.error().message() << "\n";
      return kExitJobsFailed;
    }
    requests->insert(requests->end(), by_memory->begin(), by_memory->end());
  }
  if (requests->empty()) {
    std::cerr << "colo: nothing to plan: name MIG profiles (e.g. 3g.40gb 1g.10gb:2) or --memory\n";
    return kExitBadInput;
  }
  Result<std::vector<MigPlacement>> plan = plan_mig(*g, *requests);
  if (flags.json) {
    nlohmann::json out = {{"gpu", g->model},
                          {"source", g->source},
                          {"request", describe_requests(*requests)},
                          {"ok", plan.ok()}};
    if (plan.ok()) {
      out["placements"] = nlohmann::json::array();
      for (const MigPlacement& p : *plan) {
        nlohmann::json j = {{"profile", p.profile},
                            {"profile_id", p.profile_id},
                            {"start", p.start},
                            {"size", p.size},
                            {"compute_slices", p.compute_slices},
                            {"memory_bytes", p.memory_bytes}};
        if (p.needed_bytes) j["needed_bytes"] = *p.needed_bytes;
        out["placements"].push_back(j);
      }
    } else {
      out["reason"] = plan.error().message();
    }
    std::cout << out.dump(2) << "\n";
    return plan.ok() ? kExitOk : kExitJobsFailed;
  }
  if (!plan.ok()) {
    std::cerr << fmt::format("colo: no MIG layout on {}: {}\n(source: {})\n", g->model,
                             plan.error().message(), g->source);
    return kExitJobsFailed;
  }
  std::cout << fmt::format("MIG plan for {} on {}\nsource: {}\n", describe_requests(*requests),
                           g->model, g->source);
  std::cout << fmt::format("{:>5} {:>4}  {:<12} {:>3} {:>7} {:>10}  {}\n", "start", "size",
                           "profile", "id", "compute", "memory GiB", "for need");
  int compute = 0;
  int memory = 0;
  for (const MigPlacement& p : *plan) {
    compute += p.compute_slices;
    memory += p.size;
    std::cout << fmt::format("{:>5} {:>4}  {:<12} {:>3} {:>7} {:>10}  {}\n", p.start, p.size,
                             p.profile, p.profile_id, p.compute_slices, gib(p.memory_bytes),
                             p.needed_bytes ? format_bytes(*p.needed_bytes) : "");
  }
  std::cout << fmt::format("uses {} of {} compute slices and {} of {} memory slices\n", compute,
                           g->compute_slices, memory, g->memory_slices);
  return kExitOk;
}

struct MigChangeFlags {
  int device = 0;
  bool yes = false;
  bool json = false;
  BackendFlags backend;
};

// The live device `device` and the backend's MIG seam, or the error to print.
struct LiveMig {
  OpenedGpu gpu;
  MigControl* control = nullptr;
};
Result<LiveMig> open_mig(const BackendFlags& flags, int device, Clock& clock) {
  Result<OpenedGpu> gpu = open_gpu(flags, clock);
  if (!gpu.ok()) return gpu.error();
  if (device < 0 || device >= static_cast<int>(gpu->devices.size())) {
    return Error(fmt::format("GPU {} does not exist; the backend lists GPUs 0..{}", device,
                             gpu->devices.size() - 1));
  }
  MigControl* control = gpu->backend->mig_control();
  if (control == nullptr) {
    return Error(fmt::format("the {} backend has no MIG; use the nvml backend on a GPU with MIG",
                             gpu->backend->name()));
  }
  return LiveMig{std::move(gpu).value(), control};
}

// MIG mode changes only take effect at a GPU reset, which colo never does.
int set_mode_command(const MigChangeFlags& flags, bool enable) {
  const char* what = enable ? "enable" : "disable";
  if (!flags.yes) {
    std::cerr << fmt::format(
        "colo: `colo mig {0}` changes the MIG mode of GPU {1}. The change takes effect only "
        "after a GPU reset (`nvidia-smi -i {1} -r` as root, with no process using the GPU) or a "
        "reboot, and {2}. Pass --yes-i-know to proceed.\n",
        what, flags.device,
        enable ? "while MIG mode is on the GPU runs only jobs placed on MIG instances"
               : "every MIG instance on it must be destroyed first");
    return kExitBadInput;
  }
  SystemClock clock;
  Result<LiveMig> mig = open_mig(flags.backend, flags.device, clock);
  if (!mig.ok()) {
    std::cerr << "colo: " << mig.error().message() << "\n";
    return kExitEnvironment;
  }
  if (Status set = mig->control->set_mig_mode(flags.device, enable); !set.ok()) {
    std::cerr << "colo: " << set.error().message() << "\n";
    return kExitEnvironment;
  }
  Result<MigModeState> mode = mig->control->mig_mode(flags.device);
  if (!mode.ok()) {
    std::cerr << "colo: " << mode.error().message() << "\n";
    return kExitEnvironment;
  }
  auto on_off = [](bool on) { return on ? "enabled" : "disabled"; };
  std::cout << fmt::format("GPU {}: MIG mode now {}, after the next reset {}\n", flags.device,
                           on_off(mode->current), on_off(mode->pending));
  if (mode->current != mode->pending) {
    std::cout << fmt::format(
        "reset the GPU for it to take effect: `nvidia-smi -i {} -r` as root with no process using "
        "the GPU, or reboot; colo never resets a GPU itself\n",
        flags.device);
  }
  return kExitOk;
}

int status_command(const MigChangeFlags& flags) {
  SystemClock clock;
  Result<LiveMig> mig = open_mig(flags.backend, flags.device, clock);
  if (!mig.ok()) {
    std::cerr << "colo: " << mig.error().message() << "\n";
    return kExitEnvironment;
  }
  const DeviceInfo& device = mig->gpu.devices[static_cast<size_t>(flags.device)];
  Result<MigModeState> mode = mig->control->mig_mode(flags.device);
  if (!mode.ok()) {
    std::cerr << "colo: " << mode.error().message() << "\n";
    return kExitEnvironment;
  }
  std::vector<MigGpuInstance> gis;
  std::vector<MigDevice> devices;
  if (mode->current) {
    Result<std::vector<MigGpuInstance>> listed = mig->control->gpu_instances(flags.device);
    Result<std::vector<MigDevice>> mig_devices = mig->control->mig_devices(flags.device);
    if (!listed.ok() || !mig_devices.ok()) {
      std::cerr << "colo: " << (listed.ok() ? mig_devices.error() : listed.error()).message()
                << "\n";
      return kExitEnvironment;
    }
    gis = std::move(listed).value();
    devices = std::move(mig_devices).value();
  }
  auto profile_name = [&](int id) {
    for (const MigProfile& p : device.mig_profiles) {
      if (p.id == id) return p.name;
    }
    return std::to_string(id);
  };
  if (flags.json) {
    nlohmann::json out = {{"gpu", flags.device},
                          {"name", device.name},
                          {"mig_mode", mode->current},
                          {"mig_mode_after_reset", mode->pending},
                          {"gpu_instances", nlohmann::json::array()}};
    for (const MigGpuInstance& gi : gis) {
      nlohmann::json j = {{"id", gi.id},
                          {"profile", profile_name(gi.profile_id)},
                          {"profile_id", gi.profile_id},
                          {"start", gi.start},
                          {"size", gi.size},
                          {"compute_instances", nlohmann::json::array()}};
      for (const MigDevice& d : devices) {
        if (d.gpu_instance_id != gi.id) continue;
        auto nullable = [](const std::optional<uint64_t>& v) {
          return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
        };
        j["compute_instances"].push_back({{"id", d.compute_instance_id},
                                          {"uuid", d.uuid},
                                          {"memory_used_bytes", nullable(d.memory_used_bytes)},
                                          {"memory_total_bytes", nullable(d.memory_total_bytes)}});
      }
      out["gpu_instances"].push_back(j);
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("GPU {} ({}): MIG mode {}{}\n", flags.device, device.name,
                           mode->current ? "enabled" : "disabled",
                           mode->current != mode->pending ? " (changes at the next reset)" : "");
  if (!mode->current) return kExitOk;
  if (gis.empty()) std::cout << "no GPU instances\n";
  for (const MigGpuInstance& gi : gis) {
    std::cout << fmt::format("GPU instance {}: {} at memory slices {}-{}\n", gi.id,
                             profile_name(gi.profile_id), gi.start, gi.start + gi.size - 1);
    for (const MigDevice& d : devices) {
      if (d.gpu_instance_id != gi.id) continue;
      std::cout << fmt::format("  compute instance {}: {}  memory {} of {}\n",
                               d.compute_instance_id, d.uuid,
                               d.memory_used_bytes ? format_bytes(*d.memory_used_bytes) : "-",
                               d.memory_total_bytes ? format_bytes(*d.memory_total_bytes) : "-");
    }
  }
  return kExitOk;
}

int cleanup_command(const MigChangeFlags& flags) {
  SystemClock clock;
  Result<std::unique_ptr<GpuBackend>> backend = open_backend(flags.backend, clock);
  if (!backend.ok()) {
    std::cerr << "colo: " << backend.error().message() << "\n";
    return kExitEnvironment;
  }
  Result<std::vector<std::string>> lines =
      cleanup_stale_mig_instances(MechanismOptions{}, **backend);
  if (!lines.ok()) {
    std::cerr << "colo: " << lines.error().message() << "\n";
    return kExitEnvironment;
  }
  for (const std::string& line : *lines) std::cout << line << "\n";
  if (lines->empty()) std::cout << "no MIG instances left by a killed colo\n";
  return kExitOk;
}

// --gpu N (the GPU's index; --device N is its old spelling).
void add_gpu_index_flag(CLI::App& cmd, int& device) {
  cmd.add_option("--gpu", device, "GPU index (as `colo devices` lists them)")
      ->check(gpu_index())
      ->capture_default_str();
  add_deprecated_alias(cmd, "--device", "--gpu", device)->check(gpu_index());
}

// --gpu-model MODEL (plan offline from the built-in table) or --gpu N (the
// live device's index).
void add_mig_gpu_flags(CLI::App& cmd, MigFlags& flags) {
  cmd.add_option("--gpu-model", flags.gpu,
                 "plan offline for a built-in model: A100-40GB, A100-80GB, H100-80GB (or H100), "
                 "H200-141GB (or H200); default: the live device");
  cmd.add_option("--gpu", flags.gpu_text, "the live device's index (default 0)");
  add_deprecated_alias(cmd, "--device", "--gpu", flags.device)->check(gpu_index());
}

}  // namespace

void add_mig_command(CLI::App& app, int& exit_code) {
  static MigFlags plan;
  static MigFlags profiles;
  CLI::App* mig = app.add_subcommand(
      "mig",
      "MIG layouts, instances and mode (colo run --mechanism mig creates instances for a run)");
  mig->require_subcommand(1);
  set_example(*mig, "colo mig plan 3g.40gb 1g.10gb:2 --gpu-model H100");

  CLI::App* plan_cmd = mig->add_subcommand(
      "plan",
      "Find non-overlapping placements for MIG GPU instances, or say why none exists. "
      "Exit 0: placed; 1: no layout exists; 2: bad input. Read-only.");
  plan_cmd->add_option("profiles", plan.profiles,
                       "GPU-instance profiles, NAME[:COUNT], e.g. 3g.40gb 2g.20gb 1g.10gb:2");
  plan_cmd->add_option("--memory", plan.memory,
                       "jobs' memory needs, e.g. 10GiB,20GiB: each gets the smallest profile "
                       "that holds it");
  add_mig_gpu_flags(*plan_cmd, plan);
  plan_cmd->add_flag("--json", plan.json, "machine-readable output");
  add_backend_flags(*plan_cmd, plan.backend, /*model_flag=*/false);
  set_example(*plan_cmd, "colo mig plan 3g.40gb 1g.10gb:2 --gpu-model H100");
  plan_cmd->callback([&exit_code] { exit_code = plan_command(plan); });

  CLI::App* profiles_cmd = mig->add_subcommand(
      "profiles",
      "List the MIG GPU-instance profiles and their placements (compare with nvidia-smi mig "
      "-lgip and -lgipp)");
  add_mig_gpu_flags(*profiles_cmd, profiles);
  profiles_cmd->add_flag("--json", profiles.json, "machine-readable output");
  add_backend_flags(*profiles_cmd, profiles.backend, /*model_flag=*/false);
  set_example(*profiles_cmd, "colo mig profiles --gpu-model H200-141GB --json");
  profiles_cmd->callback([&exit_code] { exit_code = profiles_command(profiles); });

  static MigChangeFlags status;
  CLI::App* status_cmd = mig->add_subcommand(
      "status", "MIG mode, GPU and compute instances, and each MIG device's memory (read-only)");
  add_gpu_index_flag(*status_cmd, status.device);
  status_cmd->add_flag("--json", status.json, "machine-readable output (docs/cli.md)");
  add_backend_flags(*status_cmd, status.backend);
  set_example(*status_cmd, "colo mig status --gpu 0");
  status_cmd->callback([&exit_code] { exit_code = status_command(status); });

  static MigChangeFlags cleanup;
  CLI::App* cleanup_cmd = mig->add_subcommand(
      "cleanup",
      "Destroy the MIG instances a killed colo created (found through its records; colo run does "
      "this at start too). Never touches other instances.");
  add_backend_flags(*cleanup_cmd, cleanup.backend);
  set_example(*cleanup_cmd, "colo mig cleanup");
  cleanup_cmd->callback([&exit_code] { exit_code = cleanup_command(cleanup); });

  static MigChangeFlags enable;
  static MigChangeFlags disable;
  for (auto [name, flags, on] :
       {std::tuple{"enable", &enable, true}, std::tuple{"disable", &disable, false}}) {
    CLI::App* cmd = mig->add_subcommand(
        name, fmt::format("{} MIG mode on a GPU (needs root and --yes-i-know; takes effect after "
                          "a GPU reset, which colo never does)",
                          on ? "Enable" : "Disable"));
    add_gpu_index_flag(*cmd, flags->device);
    cmd->add_flag("--yes-i-know", flags->yes,
                  "confirm: the change needs a GPU reset to take effect and affects everyone "
                  "using the GPU");
    add_backend_flags(*cmd, flags->backend);
    set_example(*cmd, fmt::format("colo mig {} --gpu 0 --yes-i-know", name));
    cmd->callback(
        [&exit_code, flags = flags, on = on] { exit_code = set_mode_command(*flags, on); });
  }
}

}  // namespace colo
