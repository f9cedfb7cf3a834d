// `colo simulate FILE --gpu-model MODEL`: every policy on the simulated clock.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stored.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/heap.h"
#include "common/paths.h"
#include "common/units.h"
#include "gpu/sim_backend.h"
#include "jobs/job_file.h"
#include "simulate/arrivals.h"
#include "simulate/parallel_policies.h"
#include "simulate/sim_jobs.h"
#include "simulate/simulator.h"
#include "store/run_store.h"

namespace colo {
namespace {

// The most GPUs `colo simulate` models (a cluster's).
constexpr int kMaxSimulatedGpus = 1024;

// What `colo simulate` built to simulate (the job file's jobs, each policy's
// scheduler): the command exits once it has printed, so these go back with
// the process, not freed one small allocation at a time (a 10,000-point
// grid's auto policy: about a tenth of its CPU time). Held from a static
// (reachable: not a leak to LeakSanitizer); several policies' threads add
// to it at once. With one policy, peak memory is about what it was (its
// scheduler lived until then anyway); with several, each one's scheduler
// stays until the end instead of going as the next one starts.
class KeptToExit {
 public:
  template <typename T>
  T& keep(std::unique_ptr<T> what) {
    T& kept = *what;
    std::lock_guard<std::mutex> lock(mutex_);
    kept_.push_back(std::shared_ptr<void>(std::move(what)));
    return kept;
  }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<void>> kept_;
};

KeptToExit& kept_to_exit() {
  static KeptToExit* kept = new KeptToExit;  // never destroyed: see above
  return *kept;
}

struct SimulateFlags {
  std::string file;
  std::string gpu_model = "H200";
  int gpu_count = 1;
  std::string policies;  // empty: the standard list
  int max_degree = 0;    // 0: min(jobs, 16)
  std::string db;
  bool no_store = false;
  std::string deadline;  // empty: no planning
  int max_gpus = 64;     // planning's upper bound
  bool json = false;
  std::string arrivals;  // empty: every job at the start (simulate/arrivals.h)
  uint64_t seed = 1;     // of generated arrivals
};

// `--deadline`: for each policy, the fewest GPUs that end every job in time.
void print_plans(const std::vector<SimJob>& jobs, const std::vector<PolicySpec>& policies,
                 const SimOptions& options, int64_t deadline_ms, int max_gpus) {
  std::cout << fmt::format("\nPLAN: the fewest GPUs (up to {}) that end every job within {}\n",
                           max_gpus, format_duration_ms(deadline_ms));
  ProgressLine progress("colo: simulate: ");
  for (const PolicySpec& p : policies) {
    progress.show(fmt::format("planning {}", p.name));
    GpuPlan plan = fewest_gpus(jobs, p, options, deadline_ms, max_gpus);
    progress.clear();
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

// Every policy, each on a thread of its own up to the cores this process may
// use (simulate/parallel_policies.h), with a progress line on a terminal.
std::vector<PolicyResult> simulate_all(const std::vector<SimJob>& jobs,
                                       const std::vector<PolicySpec>& policies,
                                       const SimOptions& options) {
  ProgressLine progress("colo: simulate: ");
  const std::string what = count_of(static_cast<int64_t>(jobs.size()), "job");
  progress.show(fmt::format("0 of {} policies done, {}", policies.size(), what));
  std::vector<PolicyResult> results =
      simulate_policies(jobs, policies, options, 0, [&](size_t finished, size_t total) {
        progress.show(fmt::format("{} of {} policies done, {}", finished, total, what));
      });
  return results;
}

int simulate_command(const SimulateFlags& flags) {
  // A 10,000-point sweep fills about 80 MB with small records read in no
  // order: in huge pages, about a fifth less CPU (common/heap.h).
  use_huge_pages_for_heap(size_t{256} << 20);
  std::optional<PlanningInput> planned = planning_input(
      flags.file, flags.gpu_model, flags.gpu_count, flags.deadline, flags.db, flags.no_store);
  if (!planned) return kExitBadInput;
  PlanningInput* input = &kept_to_exit().keep(std::make_unique<PlanningInput>(std::move(*planned)));
  input->node.keep_scheduler = [](std::unique_ptr<Scheduler> s) {
    kept_to_exit().keep(std::move(s));
  };
  const std::optional<int64_t>& deadline_ms = input->deadline_ms;
  const SimGpuModel& model = input->model;
  SimJobSet& set = input->set;
  const SimOptions& options = input->node;
  if (!flags.arrivals.empty()) {
    Result<std::vector<SimJob>> arriving = with_arrivals(set.jobs, flags.arrivals, flags.seed);
    if (!arriving.ok()) {
      std::cerr << "colo: simulate: " << arriving.error().message() << "\n";
      return kExitBadInput;
    }
    set.jobs = std::move(*arriving);
  }
  const int jobs_count = static_cast<int>(set.jobs.size());
  Result<std::vector<PolicySpec>> policies =
      flags.policies.empty()
          ? Result<std::vector<PolicySpec>>(standard_policies(
                flags.max_degree > 0 ? flags.max_degree : std::min(jobs_count, 16)))
          : parse_policies(flags.policies);
  if (!policies.ok()) {
    std::cerr << "colo: --policies: " << policies.error().message() << "\n";
    return kExitBadInput;
  }

  if (flags.json) {
    std::vector<PolicyResult> results = simulate_all(set.jobs, *policies, options);
    input->node.keep_scheduler = nullptr;  // --deadline's many trials free theirs as they go
    nlohmann::json out = {{"simulated", true},
                          {"job_file", flags.file},
                          {"jobs", jobs_count},
                          {"gpu_model", model.model},
                          {"gpu_count", flags.gpu_count},
                          {"arrivals", flags.arrivals.empty() ? nlohmann::json(nullptr)
                                                              : nlohmann::json(flags.arrivals)},
                          {"gpu_memory_bytes", model.memory_total_bytes},
                          {"sources", set.sources},
                          {"assumptions", set.assumptions},
                          {"interference_model", options.model.describe()},
                          {"policies", nlohmann::json::array()}};
    for (const PolicyResult& r : results) {
      out["policies"].push_back({{"policy", r.policy.name},
                                 {"makespan_ms", r.makespan_ms},
                                 {"mean_completion_ms", r.mean_completion_ms},
                                 {"mean_wait_ms", r.mean_wait_ms},
                                 {"gpu_hours", r.gpu_hours(flags.gpu_count)},
                                 {"jobs_ok", r.jobs_ok},
                                 {"jobs_failed", r.jobs_failed},
                                 {"retries", r.retries},
                                 {"stopped", r.stopped},
                                 {"floor_stops", r.floor_stops},
                                 {"failures", r.failures},
                                 {"notes", r.notes},
                                 {"starts", r.starts}});
      if (!r.protected_speeds.empty()) {
        nlohmann::json speeds = nlohmann::json::array();
        for (const PolicyResult::ProtectedSpeed& p : r.protected_speeds)
          speeds.push_back({{"job", p.job},
                            {"min_speed", p.min_speed},
                            {"speed", p.speed},
                            {"floor_stops", p.floor_stops}});
        out["policies"].back()["protected"] = speeds;
      }
    }
    if (deadline_ms) {
      out["deadline_ms"] = *deadline_ms;
      out["plans"] = nlohmann::json::array();
      ProgressLine progress("colo: simulate: ");
      for (const PolicySpec& p : *policies) {
        progress.show(fmt::format("planning {} (the fewest GPUs within {})", p.name,
                                  format_duration_ms(*deadline_ms)));
        GpuPlan plan = fewest_gpus(set.jobs, p, options, *deadline_ms, flags.max_gpus);
        nlohmann::json tried = nlohmann::json::array();
        for (const GpuPlan::Try& t : plan.tried) {
          tried.push_back(
              {{"gpu_count", t.gpus}, {"makespan_ms", t.makespan_ms}, {"all_ok", t.all_ok}});
        }
        out["plans"].push_back(
            {{"policy", p.name},
             {"gpu_count", plan.gpus ? nlohmann::json(*plan.gpus) : nlohmann::json(nullptr)},
             {"tried", tried}});
      }
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format(
      "SIMULATED: {} from {} on {} x {} ({} each); nothing here was measured\n",
      count_of(jobs_count, "job"), flags.file, flags.gpu_count, model.device_name,
      format_bytes(model.memory_total_bytes));
  if (!flags.arrivals.empty()) {
    std::cout << fmt::format("  arrivals: {}: submitted over {}\n", flags.arrivals,
                             format_duration_ms(set.jobs.back().submit_ms));
  }
  for (const std::string& line : set.sources) std::cout << "  " << line << "\n";
  for (const std::string& line : set.assumptions) std::cout << "  assumption: " << line << "\n";
  std::cout << fmt::format("  interference model: {}\n", options.model.describe());
  std::cout << "  auto: as the store knows these jobs now (cold for those it never measured: "
               "each starts by its prior and is measured where it runs); auto-warm: as if "
               "every job had been measured\n\n";

  std::vector<PolicyResult> results = simulate_all(set.jobs, *policies, options);
  input->node.keep_scheduler = nullptr;  // --deadline's many trials free theirs as they go
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
                             hours > 0 ? r.jobs_ok / hours : 0.0, vs, r.gpu_hours(flags.gpu_count),
                             r.jobs_ok, r.jobs_failed, r.retries);
  }
  if (!flags.arrivals.empty()) {
    std::cout << fmt::format("\n{:<11} {:>16} {:>10}   (jobs ended ok, from their submission)\n",
                             "POLICY", "MEAN COMPLETION", "MEAN WAIT");
    for (const PolicyResult& r : results) {
      std::cout << fmt::format("{:<11} {:>16} {:>10}\n", r.policy.name,
                               format_duration_ms(static_cast<int64_t>(r.mean_completion_ms)),
                               format_duration_ms(static_cast<int64_t>(r.mean_wait_ms)));
    }
  }
  if (std::any_of(results.begin(), results.end(),
                  [](const PolicyResult& r) { return !r.protected_speeds.empty(); })) {
    std::cout << fmt::format(
        "\n{:<11} {:<16} {:>5} {:>6} {:>5}   (speed: solo time over time taken, start-up "
        "left out; stops: opportunistic neighbours stopped for its floor)\n",
        "POLICY", "PROTECTED JOB", "FLOOR", "SPEED", "STOPS");
    for (const PolicyResult& r : results) {
      for (const PolicyResult::ProtectedSpeed& p : r.protected_speeds) {
        std::cout << fmt::format("{:<11} {:<16} {:>5.2f} {:>5.2f}x {:>5}{}\n", r.policy.name, p.job,
                                 p.min_speed, p.speed, p.floor_stops,
                                 p.speed + 1e-9 < p.min_speed ? "  below its floor" : "");
      }
    }
  }
  for (const PolicyResult& r : results) {
    for (const std::string& f : r.failures)
      std::cout << fmt::format("  {} failed: {}\n", r.policy.name, f);
    if (r.policy.kind != PolicyKind::kAuto) continue;
    for (const std::string& n : r.notes) std::cout << "  auto: " << n << "\n";
    std::cout << fmt::format(
        "  auto scheduler: {} events, {:.3f} ms in all, {:.1f} us per event on average, {:.1f} us "
        "at most (an event that started {}), {} events over 1 ms\n",
        r.events, r.scheduler_total_ms,
        1000.0 * r.scheduler_total_ms / std::max<int64_t>(1, r.events), 1000.0 * r.scheduler_max_ms,
        count_of(r.max_event_decisions, "job"), r.events_over_1ms);
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
  cmd->add_option("--gpu-model", flags.gpu_model, "GPU model: H200, H100 or A100-40GB")
      ->capture_default_str();
  add_deprecated_alias(*cmd, "--gpu", "--gpu-model", flags.gpu_model);
  cmd->add_option("--gpu-count", flags.gpu_count, "GPUs in the node (or cluster)")
      ->check(whole_number(1, kMaxSimulatedGpus))
      ->capture_default_str();
  add_deprecated_alias(*cmd, "--gpus", "--gpu-count", flags.gpu_count)
      ->check(whole_number(1, kMaxSimulatedGpus));
  cmd->add_option("--arrivals", flags.arrivals,
                  "when jobs are submitted: poisson:RATE (e.g. 120/h), diurnal:RATE (the same "
                  "rate on average, following the day), or a CSV trace FILE of time,job[,count] "
                  "lines (see docs/policy.md); default: every job at the start");
  cmd->add_option("--seed", flags.seed, "seed of generated arrivals")->capture_default_str();
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
      ->check(CLI::Range(1, kMaxSimulatedGpus))
      ->capture_default_str();
  set_example(
      *cmd, "colo simulate bench/policies/mixed.toml --gpu-model H200 --gpu-count 2 --deadline 2h");
  cmd->add_flag("--json", flags.json, "machine-readable output (docs/cli.md)");
  cmd->callback([&exit_code] { exit_code = simulate_command(flags); });
}

}  // namespace colo
