// `colo bench`: runs a predefined experiment (src/bench/) through the
// machinery of `colo run` and records it in the store as one experiment.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench/bench_runner.h"
#include "bench/planner.h"
#include "bench/suite.h"
#include "bench/trainer.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/paths.h"
#include "common/units.h"
#include "gpu/gpu_backend.h"

namespace colo {
namespace {

struct BenchFlags {
  std::string suite;
  std::string cases;
  int repeat = 1;
  std::string budget;
  int epochs = PlanOptions{}.epochs;
  bool dry_run = false;
  bool json = false;
  bool list = false;
  std::string trainer;
  std::string python = "python3";
  std::optional<double> dlrm_memory_gib;
  double dlrm_share_pct = 20;
  std::string db;
  std::string logs;
  int gpu = 0;
  bool plain = false;
  std::string sample_period = "500ms";
  BackendFlags backend;
};

int list_suites(const std::string& only) {
  for (const SuiteInfo& s : bench_suites()) {
    if (!only.empty() && s.name != only) continue;
    std::cout << s.name << ": " << s.description << "\n";
    Result<std::vector<BenchCase>> cases = expand_suite(s.name, ExpandOptions{});
    if (!cases.ok()) {
      std::cerr << "colo: " << cases.error().message() << "\n";
      return kExitBadInput;
    }
    for (const BenchCase& c : *cases) {
      std::cout << fmt::format("  {}{}\n", c.name, c.serial ? "  (jobs one after another)" : "");
    }
  }
  return kExitOk;
}

// `colo bench --dry-run --json`: the plan (docs/cli.md).
nlohmann::json plan_json(const BenchFlags& flags, const std::vector<BenchCase>& cases,
                         const Plan& plan) {
  nlohmann::json out = {{"suite", flags.suite},
                        {"epochs", plan.epochs},
                        {"solo_epoch_s", plan.solo_epoch_seconds},
                        {"estimated_total_s", plan.total_seconds},
                        {"epoch_samples", nlohmann::json::object()},
                        {"cases", nlohmann::json::array()}};
  for (const auto& [label, wp] : plan.workloads) out["epoch_samples"][label] = wp.epoch_samples;
  for (size_t i = 0; i < cases.size(); ++i) {
    const BenchCase& c = cases[i];
    out["cases"].push_back(
        {{"name", c.name},
         {"workload", c.workload},
         {"models", c.models},
         {"mechanism", c.mechanism},
         {"serial", c.serial},
         {"degree", c.degree},
         {"repetition", c.repetition},
         {"status", c.status},
         {"reason", c.reason},
         {"estimated_s", i < plan.case_seconds.size() ? plan.case_seconds[i] : 0.0}});
  }
  return out;
}

int bench_command(const BenchFlags& flags, const std::string& command_line) {
  if (flags.list) return list_suites(flags.suite);
  if (flags.json && !flags.dry_run) {
    std::cerr << "colo: --json goes with --dry-run (the plan); a run's results: colo show --json\n";
    return kExitBadInput;
  }
  if (flags.suite.empty()) {
    std::cerr << "colo: --suite is required (`colo bench --list` lists the suites)\n";
    return kExitBadInput;
  }
  std::optional<int64_t> budget_ms;
  if (!flags.budget.empty()) {
    budget_ms = duration_flag("--budget", flags.budget, 1);
    if (!budget_ms) return kExitBadInput;
  }
  std::optional<int64_t> period = duration_flag("--sample-period", flags.sample_period, 100);
  if (!period) return kExitBadInput;

  SystemClock clock;
  Result<std::unique_ptr<GpuBackend>> backend = open_backend(flags.backend, clock);
  if (!backend.ok()) {
    std::cerr << "colo: " << backend.error().message() << "\n";
    return kExitEnvironment;
  }
  OneDeviceBackend gpu(**backend, flags.gpu);
  Result<std::vector<DeviceInfo>> devices = gpu.devices();
  if (!devices.ok()) {
    std::cerr << "colo: " << devices.error().message() << "\n";
    return kExitEnvironment;
  }
  const DeviceInfo& device = devices->front();
  const bool simulated = (*backend)->simulated();

  const MechanismOptions mech_options = default_mechanism_options();
  Result<TrainerConfig> chosen =
      choose_trainer(TrainerChoice{flags.trainer, flags.python, flags.dlrm_memory_gib,
                                   flags.dlrm_share_pct, flags.suite},
                     device, simulated);
  if (!chosen.ok()) {
    std::cerr << "colo: " << chosen.error().message() << "\n";
    return flags.trainer.empty() && !find_bench_dir().ok() ? kExitEnvironment : kExitBadInput;
  }
  const TrainerConfig& trainer = *chosen;
  std::cerr << fmt::format("colo: jobs run {}{}\n", trainer.trainer,
                           trainer.sim_trainer
                               ? " (a stand-in that does tiny work and sleeps: for tests on the "
                                 "simulated backend; pass --trainer bench/train.py to train)"
                               : "");

  ExpandOptions expand;
  expand.repetitions = flags.repeat;
  expand.case_globs = split_globs(flags.cases);
  expand.mig_reason = mig_not_run_reason(device);
  if (!find_program(mech_options.mps_control_program)) {
    expand.mps_reason = fmt::format(
        "the MPS control program {} is not on PATH (install it, or set COLO_MPS_CONTROL)",
        mech_options.mps_control_program);
  }
  Result<std::vector<BenchCase>> cases = expand_suite(flags.suite, expand);
  if (!cases.ok()) {
    std::cerr << "colo: " << cases.error().message() << "\n";
    return kExitBadInput;
  }

  PlanOptions plan_options;
  plan_options.budget_ms = budget_ms;
  plan_options.epochs = flags.epochs;
  plan_options.startup_s = trainer.sim_trainer ? 1.0 : 15.0;
  // bench/sim_train.py's epochs are sleeps timed by the script itself: short
  // ones distort nothing, and CI needs them short.
  if (trainer.sim_trainer) plan_options.min_epoch_s = 0.2;
  Result<Plan> plan = make_plan(*cases, plan_options);
  if (!plan.ok()) {
    std::cerr << "colo: " << plan.error().message() << "\n";
    return kExitBadInput;
  }
  if (flags.json) {
    std::cout << plan_json(flags, *cases, *plan).dump(2) << "\n";
    return kExitOk;
  }
  if (flags.suite == "paper-recsys") {
    std::cout << fmt::format(
        "recommender: embedding tables of {:g} GiB ({:g}% of {}; with their dense gradients the "
        "job needs about {})\n",
        trainer.dlrm_memory_gib, flags.dlrm_share_pct, format_bytes(device.memory_total_bytes),
        format_bytes(default_memory_bytes(recsys_dlrm(), trainer.dlrm_memory_gib)));
  }
  std::cout << format_plan(flags.suite, *cases, *plan, device.memory_total_bytes,
                           trainer.dlrm_memory_gib);
  if (flags.dry_run) return kExitOk;

  std::string db_path = flags.db.empty() ? default_db_path() : flags.db;
  Result<std::unique_ptr<RunStore>> store = RunStore::open(db_path);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }

  nlohmann::json recorded = {{"suite", flags.suite},
                             {"cases", expand.case_globs},
                             {"repeat", flags.repeat},
                             {"epochs", flags.epochs},
                             {"trainer", trainer.trainer},
                             {"gpu", flags.gpu},
                             {"estimated_total_s", plan->total_seconds}};
  recorded["budget_ms"] = budget_ms ? nlohmann::json(*budget_ms) : nlohmann::json(nullptr);
  if (flags.suite == "paper-recsys") recorded["dlrm_memory_gib"] = trainer.dlrm_memory_gib;
  for (const auto& [label, wp] : plan->workloads) {
    recorded["epoch_samples"][label] = wp.epoch_samples;
  }

  BenchRunOptions options;
  options.suite = flags.suite;
  options.options_json = recorded.dump();
  options.trainer = trainer;
  options.gpu = flags.gpu;
  options.run.logs_root = flags.logs;
  options.run.sample_period_ms = *period;
  options.run.live_display = !flags.plain && can_redraw(STDOUT_FILENO);
  options.run.command_line = command_line;

  install_stop_handlers();
  BenchContext ctx{clock, **backend, **store, mech_options, std::cout, stop_requests()};
  Result<BenchOutcome> outcome = run_bench(*cases, *plan, options, ctx);
  if (!outcome.ok()) {
    std::cerr << "colo: " << outcome.error().message() << "\n";
    return kExitEnvironment;
  }
  std::cout << fmt::format("store: {} (experiment {})\n", db_path, outcome->experiment_id);
  if (outcome->state == "cancelled") return kExitCancelled;
  return outcome->state == "ok" ? kExitOk : kExitJobsFailed;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code, const std::string& command_line) {
  static BenchFlags flags;  // lives as long as the app: CLI11 writes into it during parse()
  CLI::App* cmd = app.add_subcommand(
      "bench", "Run a predefined experiment (the paper's) and record it as one experiment");
  std::string suites;
  for (const SuiteInfo& s : bench_suites()) suites += (suites.empty() ? "" : ", ") + s.name;
  cmd->add_option("--suite,-s", flags.suite, "the experiment: " + suites);
  cmd->add_option("--cases", flags.cases,
                  "only the cases whose names match one of these comma-separated globs, e.g. "
                  "'small/*' or '*/mps/*,*/exclusive/*' (--list shows the names)");
  cmd->add_option("--repeat,-r", flags.repeat, "run every case this many times")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--budget", flags.budget,
                  "total time to fit the suite in (e.g. 8m): sets the samples per epoch (solo "
                  "epochs of 5 s at least); default: a solo epoch of about 5 s");
  cmd->add_option("--epochs", flags.epochs, "epochs per job (the first is warm-up)")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  cmd->add_flag("--dry-run", flags.dry_run, "print the plan and the estimated time; run nothing");
  cmd->add_flag("--json", flags.json, "with --dry-run: the plan as JSON (docs/cli.md)");
  cmd->add_flag("--list", flags.list, "list the suites (or --suite's) and their case names");
  cmd->add_option("--trainer", flags.trainer,
                  "training script used instead of bench/train.py (same arguments); default "
                  "bench/sim_train.py on the simulated backend");
  cmd->add_option("--python", flags.python, "Python interpreter that runs the trainer")
      ->capture_default_str();
  cmd->add_option("--dlrm-memory-gib", flags.dlrm_memory_gib,
                  "paper-recsys: GiB of embedding tables (default: --dlrm-share of the GPU)")
      ->check(CLI::Range(0.5, 4096.0));
  cmd->add_option("--dlrm-share", flags.dlrm_share_pct,
                  "paper-recsys: embedding tables as a percentage of GPU memory (their dense "
                  "gradients take as much again)")
      ->check(CLI::Range(1.0, 45.0))
      ->capture_default_str();
  cmd->add_option("--db", flags.db, "run store (SQLite file); default " + default_db_path());
  cmd->add_option("--logs", flags.logs, "directory for job logs; default <state dir>/runs");
  cmd->add_option("--gpu", flags.gpu,
                  "the GPU the experiment uses, by index (the simulated GPU's model is "
                  "--gpu-model)")
      ->check(gpu_index())
      ->capture_default_str();
  cmd->add_option("--sample-period", flags.sample_period, "GPU sampling period")
      ->capture_default_str();
  cmd->add_flag("--plain", flags.plain,
                "print one line per event instead of redrawing the job table");
  add_backend_flags(*cmd, flags.backend);
  set_example(*cmd, "colo bench --suite paper-uniform --cases 'small/*' --dry-run");
  cmd->callback([&exit_code, command_line] { exit_code = bench_command(flags, command_line); });
}

}  // namespace colo
