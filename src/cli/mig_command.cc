// `colo mig plan` and `colo mig profiles`: MIG layouts planned offline from the
// built-in tables (--gpu MODEL) or from the live device. Read-only: never
// changes the MIG mode and never creates instances.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/units.h"
#include "mig/mig_planner.h"
#include "mig/mig_profiles.h"

namespace colo {
namespace {

struct MigFlags {
  std::vector<std::string> profiles;  // "3g.40gb", "1g.10gb:2", ...
  std::string memory;                 // "10GiB,20GiB": jobs' memory needs
  std::string gpu;                    // built-in model; empty: the live device
  int device = 0;
  bool json = false;
  BackendFlags backend;
};

// The geometry the flags name: the built-in table of --gpu, else the live device.
Result<MigGeometry> geometry_for(const MigFlags& flags) {
  if (!flags.gpu.empty()) return builtin_mig_geometry(flags.gpu);
  SystemClock clock;
  Result<OpenedGpu> gpu = open_gpu(flags.backend, clock);
  if (!gpu.ok())
    return gpu.error().with_context("reading the live MIG profiles (or use --gpu MODEL)");
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

int profiles_command(const MigFlags& flags) {
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

int plan_command(const MigFlags& flags) {
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

}  // namespace

void add_mig_command(CLI::App& app, int& exit_code) {
  static MigFlags plan;
  static MigFlags profiles;
  CLI::App* mig = app.add_subcommand(
      "mig", "Plan MIG layouts (read-only: never changes MIG mode, never creates instances)");
  mig->require_subcommand(1);

  CLI::App* plan_cmd = mig->add_subcommand(
      "plan",
      "Find non-overlapping placements for MIG GPU instances, or say why none exists. "
      "Exit 0: placed; 1: no layout exists; 2: bad input. Read-only: creating the instances "
      "is not implemented yet (next part of issue 5).");
  plan_cmd->add_option("profiles", plan.profiles,
                       "GPU-instance profiles, NAME[:COUNT], e.g. 3g.40gb 2g.20gb 1g.10gb:2");
  plan_cmd->add_option("--memory", plan.memory,
                       "jobs' memory needs, e.g. 10GiB,20GiB: each gets the smallest profile "
                       "that holds it");
  plan_cmd->add_option("--gpu", plan.gpu,
                       "plan offline for a built-in model: A100-40GB, A100-80GB, H100-80GB, "
                       "H200-141GB (default: the live device)");
  plan_cmd->add_option("--device", plan.device, "GPU index for the live device")
      ->capture_default_str();
  plan_cmd->add_flag("--json", plan.json, "machine-readable output");
  add_backend_flags(*plan_cmd, plan.backend);
  plan_cmd->callback([&exit_code] { exit_code = plan_command(plan); });

  CLI::App* profiles_cmd = mig->add_subcommand(
      "profiles",
      "List the MIG GPU-instance profiles and their placements (compare with nvidia-smi mig "
      "-lgip and -lgipp)");
  profiles_cmd->add_option("--gpu", profiles.gpu,
                           "a built-in model instead of the live device: A100-40GB, A100-80GB, "
                           "H100-80GB, H200-141GB");
  profiles_cmd->add_option("--device", profiles.device, "GPU index for the live device")
      ->capture_default_str();
  profiles_cmd->add_flag("--json", profiles.json, "machine-readable output");
  add_backend_flags(*profiles_cmd, profiles.backend);
  profiles_cmd->callback([&exit_code] { exit_code = profiles_command(profiles); });
}

}  // namespace colo
