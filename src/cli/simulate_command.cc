// `colo simulate FILE --gpu MODEL`: every policy on the simulated clock.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stored.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/paths.h"
#include "common/units.h"
#include "gpu/sim_backend.h"
#include "jobs/job_file.h"
#include "simulate/sim_jobs.h"
#include "simulate/simulator.h"
#include "store/run_store.h"

namespace colo {
namespace {

struct SimulateFlags {
  std::string file;
  std::string gpu = "H200";
  int gpus = 1;
  std::string policies;  // empty: the standard list
  int max_degree = 0;    // 0: min(jobs, 16)
  std::string db;
  bool no_store = false;
  std::string deadline;  // empty: no planning
  int max_gpus = 64;     // planning's upper bound
};

// `--deadline`: for each policy, the fewest GPUs that end every job in time.
void print_plans(const std::vector<SimJob>& jobs, const std::vector<PolicySpec>& policies,
                 const SimOptions& options, int64_t deadline_ms, int max_gpus) {
  std::cout << fmt::format("\nPLAN: the fewest GPUs (up to {}) that end every job within {}\n",
                           max_gpus, format_duration_ms(deadline_ms));
  for (const PolicySpec& p : policies) {
    GpuPlan plan = fewest_gpus(jobs, p, options, deadline_ms, max_gpus);
    std::string tried;
    for (const GpuPlan::Try& t : plan.tried) {
      tried +=
          fmt::format("{}{} GPU{} {}{}", tried.empty() ? "" : ", ", t.gpus, t.gpus == 1 ? "" : "s",
                      format_duration_ms(t.makespan_ms), t.all_ok ? "" : " (jobs failed)");
    }
    std::cout << fmt::format("{:<11} {}  (simulated: {})\n", p.name,
                             plan.gpus
                                 ? fmt::format("{} GPU{}", *plan.gpus, *plan.gpus == 1 ? "" : "s")
                                 : fmt::format("not within {} GPUs", max_gpus),
                             tried);
  }
}

int simulate_command(const SimulateFlags& flags) {
  std::optional<int64_t> deadline_ms;
  if (!flags.deadline.empty()) {
    deadline_ms = duration_flag("--deadline", flags.deadline, 1);
    if (!deadline_ms) return kExitBadInput;
  }
  Result<JobFile> file = load_job_file(flags.file);
  if (!file.ok()) {
    std::cerr << "colo: " << file.error().message() << "\n";
    return kExitBadInput;
  }
  Result<SimGpuModel> model = sim_gpu_model(flags.gpu);
  if (!model.ok()) {
    std::cerr << "colo: --gpu: " << model.error().message() << "\n";
    return kExitBadInput;
  }
  const int jobs_count = static_cast<int>(file->jobs.size());
  Result<std::vector<PolicySpec>> policies =
      flags.policies.empty()
          ? Result<std::vector<PolicySpec>>(standard_policies(
                flags.max_degree > 0 ? flags.max_degree : std::min(jobs_count, 16)))
          : parse_policies(flags.policies);
  if (!policies.ok()) {
    std::cerr << "colo: --policies: " << policies.error().message() << "\n";
    return kExitBadInput;
  }
  std::vector<Collocation> collocations;
  std::vector<LearnedProfile> stored = stored_profiles(flags.db, flags.no_store, collocations);
  const std::map<std::string, JobProfile> known =
      known_profiles(stored, file->jobs, model->model, true);
  std::map<std::string, std::vector<FamilyInstance>> families =
      family_instances(stored, file->jobs, model->model, true);
  SimJobSet set = make_sim_jobs(*file, known, usable_profiles(known, families, file->jobs));

  SimOptions options;
  options.family_instances = std::move(families);
  options.gpus = flags.gpus;
  options.gpu_memory_bytes = model->memory_total_bytes;
  options.model = calibrate(InterferenceModel{}, collocations);

  std::cout << fmt::format(
      "SIMULATED: {} jobs from {} on {} x {} ({} each); nothing here was measured\n", jobs_count,
      flags.file, flags.gpus, model->device_name, format_bytes(model->memory_total_bytes));
  for (const std::string& line : set.sources) std::cout << "  " << line << "\n";
  for (const std::string& line : set.assumptions) std::cout << "  assumption: " << line << "\n";
  std::cout << fmt::format("  interference model: {}\n\n", options.model.describe());

  std::vector<PolicyResult> results;
  for (const PolicySpec& p : *policies) results.push_back(simulate_policy(set.jobs, p, options));
  const PolicyResult* exclusive = nullptr;
  for (const PolicyResult& r : results) {
    if (r.policy.kind == PolicyKind::kExclusive) exclusive = &r;
  }
  std::cout << fmt::format("{:<11} {:>10} {:>8} {:>13} {:>10} {:>5} {:>7} {:>8}\n", "POLICY",
                           "MAKESPAN", "JOBS/H", "VS EXCLUSIVE", "GPU-HOURS", "OK", "FAILED",
                           "RETRIES");
  for (const PolicyResult& r : results) {
    double hours = static_cast<double>(r.makespan_ms) / 3.6e6;
    std::string vs = exclusive != nullptr && r.makespan_ms > 0
                         ? fmt::format("{:.2f}x", static_cast<double>(exclusive->makespan_ms) /
                                                      static_cast<double>(r.makespan_ms))
                         : "-";
    std::cout << fmt::format("{:<11} {:>10} {:>8.1f} {:>13} {:>10.3f} {:>5} {:>7} {:>8}\n",
                             r.policy.name, format_duration_ms(r.makespan_ms),
                             hours > 0 ? r.jobs_ok / hours : 0.0, vs, r.gpu_hours(flags.gpus),
                             r.jobs_ok, r.jobs_failed, r.retries);
  }
  for (const PolicyResult& r : results) {
    for (const std::string& f : r.failures)
      std::cout << fmt::format("  {} failed: {}\n", r.policy.name, f);
    if (r.policy.kind != PolicyKind::kAuto) continue;
    for (const std::string& n : r.notes) std::cout << "  auto: " << n << "\n";
    std::cout << fmt::format(
        "  auto scheduler: {} events, {:.3f} ms in all, {:.1f} us per event on average, {:.1f} us "
        "at most (an event that started {} jobs), {} events over 1 ms\n",
        r.events, r.scheduler_total_ms,
        1000.0 * r.scheduler_total_ms / std::max<int64_t>(1, r.events), 1000.0 * r.scheduler_max_ms,
        r.max_event_decisions, r.events_over_1ms);
  }
  if (deadline_ms) print_plans(set.jobs, *policies, options, *deadline_ms, flags.max_gpus);
  return kExitOk;
}

}  // namespace

void add_simulate_commands(CLI::App& app, int& exit_code) {
  static SimulateFlags flags;
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Plan on a simulated clock: makespan, throughput and GPU-hours of a job file under every "
      "policy (exclusive, naive-all, mps-all, mps-K, auto)");
  cmd->add_option("file", flags.file, "job file (see docs/job-file.md)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--gpu", flags.gpu, "GPU model: H200, H100 or A100-40GB")->capture_default_str();
  cmd->add_option("--gpus", flags.gpus, "GPUs in the node")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--policies", flags.policies,
                  "comma-separated: exclusive, naive-all, mps-all, mps-K, auto (default: all, "
                  "mps-2 up to --max-degree)");
  cmd->add_option("--max-degree", flags.max_degree,
                  fmt::format("largest fixed degree tried, 1 to {} (MPS's client limit; default: "
                              "the number of jobs, at most 16)",
                              kMaxMpsDegree))
      ->check(CLI::Range(1, kMaxMpsDegree));
  cmd->add_option("--db", flags.db,
                  "run store whose measured profiles and collocations calibrate the simulation; "
                  "default " +
                      default_db_path());
  cmd->add_flag("--no-store", flags.no_store, "ignore the store: hints and defaults only");
  cmd->add_option("--deadline", flags.deadline,
                  "plan: for each policy, the fewest GPUs that end every job within this "
                  "(e.g. 3d, 36h, 90m); limit the policies with --policies");
  cmd->add_option("--max-gpus", flags.max_gpus, "planning's upper bound on GPUs")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->callback([&exit_code] { exit_code = simulate_command(flags); });
}

}  // namespace colo
