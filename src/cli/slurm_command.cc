// `colo slurm submit | status | resubmit | collect`: a sweep as a Slurm job
// array of node-sized shards, each run by `colo run` on its node, a shard
// run again as a new attempt, and the shards' stores merged into one (see
// src/slurm/ and docs/slurm.md).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/paths.h"
#include "common/units.h"
#include "gpu/sim_backend.h"
#include "jobs/job_file.h"
#include "simulate/sim_jobs.h"
#include "slurm/collect.h"
#include "slurm/shard_plan.h"
#include "slurm/slurm_client.h"
#include "slurm/submission.h"

namespace colo {
namespace {

struct SubmitFlags {
  std::string file;
  std::string partition;
  int gpus_per_node = 1;
  std::optional<int> nodes;
  std::string deadline;
  int max_nodes = 64;
  std::string mechanism;
  std::string policy;
  std::string dir;
  std::string time_limit;
  std::vector<std::string> sbatch_options;
  std::string db;
  bool dry_run = false;
  BackendFlags backend;
};

std::string this_executable() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("colo") : exe.string();
}

std::string default_submission_dir(const std::string& file) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  return absolute_path(
      fmt::format("colo-slurm-{}-{}", std::filesystem::path(file).stem().string(), stamp));
}

int submit_command(const SubmitFlags& flags) {
  std::optional<PlanningInput> input =
      planning_input(flags.file, flags.backend.sim_gpu, flags.gpus_per_node, flags.deadline,
                     flags.db, /*no_store=*/false);
  if (!input) return kExitBadInput;
  const std::optional<int64_t>& deadline_ms = input->deadline_ms;
  const JobFile* file = &input->file;
  const SimJobSet& set = input->set;
  const SimOptions& node = input->node;
  // Each shard runs on one node: a gang needs its GPUs there.
  for (const JobSpec& job : file->jobs) {
    if (job.gpus <= flags.gpus_per_node) continue;
    std::cerr << fmt::format(
        "colo: {}: job '{}' needs {} GPUs at once (gpus = {}) and each node of the array asks "
        "for {}; pass --gpus-per-node {} or more\n",
        job.source, job.name, job.gpus, job.gpus, flags.gpus_per_node, job.gpus);
    return kExitBadInput;
  }
  const std::string mechanism =
      !flags.mechanism.empty() ? flags.mechanism : file->mechanism.value_or("");
  const std::string policy = !flags.policy.empty() ? flags.policy : file->policy.value_or("");
  std::string policy_note;
  PolicySpec planning =
      planning_policy(mechanism, policy, flags.backend.backend == "sim", &policy_note);

  ProgressLine progress("colo: slurm submit: ");
  progress.show(fmt::format("planning the shards of {} on a simulated clock ({})",
                            count_of(static_cast<int64_t>(set.jobs.size()), "job"), planning.name));
  Result<NodePlan> nodes =
      plan_nodes(set.jobs, planning, node, flags.nodes, deadline_ms, flags.max_nodes);
  progress.clear();
  if (!nodes.ok()) {
    std::cerr << "colo: " << nodes.error().message() << "\n";
    return kExitBadInput;
  }

  const std::string dir =
      flags.dir.empty() ? default_submission_dir(flags.file) : absolute_path(flags.dir);
  if (std::filesystem::exists(plan_path(dir))) {
    std::cerr << fmt::format(
        "colo: {} already holds a submission (plan.json): choose another --dir\n", dir);
    return kExitBadInput;
  }
  ShardPlan plan = make_shard_plan(absolute_path(flags.file), *file, *nodes);
  plan.mechanism = flags.mechanism;
  plan.policy = flags.policy;
  plan.gpus_per_node = flags.gpus_per_node;
  plan.colo_binary = this_executable();
  plan.run_arguments = {"--backend", flags.backend.backend};
  if (flags.backend.backend == "sim") {
    // A simulated node has the GPUs each node of the array asks for.
    plan.run_arguments.insert(plan.run_arguments.end(),
                              {"--gpu-model", flags.backend.sim_gpu, "--sim-devices",
                               std::to_string(flags.gpus_per_node)});
  }
  // Each shard runs with a store of its own: what the store planned with
  // knows goes along, so that a shard's auto policy does not probe it again.
  const std::string planned_with = absolute_path(flags.db.empty() ? default_db_path() : flags.db);
  if (std::filesystem::exists(planned_with))
    plan.run_arguments.insert(plan.run_arguments.end(), {"--profiles-from", planned_with});
  SbatchOptions sbatch;
  sbatch.partition = flags.partition;
  sbatch.time_limit = flags.time_limit;
  sbatch.job_name = "colo-" + std::filesystem::path(flags.file).stem().string();
  sbatch.extra = flags.sbatch_options;
  Result<Submission> submission = write_submission(std::move(plan), dir, sbatch);
  if (!submission.ok()) {
    std::cerr << "colo: " << submission.error().message() << "\n";
    return kExitEnvironment;
  }
  const ShardPlan& written = submission->plan;

  std::cout << fmt::format("{} from {} as {} of up to {} each ({})\n",
                           count_of(written.total_jobs, "job"), flags.file,
                           count_of(static_cast<int64_t>(written.shards.size()), "shard"),
                           count_of(written.gpus_per_node, "GPU"), written.how);
  for (const std::string& line : set.sources) std::cout << "  " << line << "\n";
  for (const std::string& line : set.assumptions) std::cout << "  assumption: " << line << "\n";
  if (!policy_note.empty()) std::cout << "  note: " << policy_note << "\n";
  for (size_t i = 0; i < written.shards.size(); ++i) {
    std::cout << fmt::format("  shard {}: {}, about {} on one node (simulated, {})\n", i,
                             count_of(static_cast<int64_t>(written.shards[i].jobs.size()), "job"),
                             format_duration_ms(written.shards[i].estimated_ms), planning.name);
  }
  std::cout << fmt::format("plan: {}\nbatch script: {}\n", plan_path(dir), submission->script_path);
  if (flags.dry_run) {
    std::cout << fmt::format("not submitted (--dry-run): sbatch {} submits it\n",
                             submission->script_path);
    return kExitOk;
  }
  SystemClock clock;
  if (Status s = submit_array(*submission, process_runner(clock), clock); !s.ok()) {
    std::cerr << "colo: " << s.error().message() << "\n";
    return kExitEnvironment;
  }
  std::cout << fmt::format(
      "submitted array job {} ({} elements)\n  colo slurm status {}\n  colo slurm collect {}   "
      "(once they ended; then colo show --db {}/colo.db)\n",
      submission->plan.array_job_id, written.shards.size(), dir, dir, dir);
  return kExitOk;
}

// The NOTE column of a shard: what went wrong, or what Slurm does with it.
std::string shard_note(const ShardStatus& s) {
  std::string note = !s.error.empty()                         ? s.error
                     : s.slurm && s.slurm->state == "PENDING" ? "waiting: " + s.slurm->reason
                     : s.slurm && s.slurm->state == "RUNNING"
                         ? (s.attempts.empty() ? "running; results when it ends"
                            : s.resubmitted    ? "running again; results when it ends"
                                               : "running again (requeued)")
                         : "";
  if (!s.resubmitted) return note;
  std::string resubmitted = fmt::format("resubmitted as array job {}, attempts from {}",
                                        s.resubmitted->array_job_id, s.resubmitted->first_attempt);
  return note.empty() ? resubmitted : resubmitted + "; " + note;
}

int status_command(const std::string& dir_flag) {
  const std::string dir = absolute_path(dir_flag);
  Result<ShardPlan> plan = read_plan(plan_path(dir));
  if (!plan.ok()) {
    std::cerr << "colo: " << plan.error().message() << "\n";
    return kExitBadInput;
  }
  SystemClock clock;
  SweepStatus status = sweep_status(*plan, dir, process_runner(clock));
  std::cout << fmt::format("array job {}: {} of {} in {} ({})\n",
                           plan->array_job_id.empty() ? "-" : plan->array_job_id,
                           count_of(plan->total_jobs, "job"), plan->job_file,
                           count_of(static_cast<int64_t>(plan->shards.size()), "shard"), plan->how);
  for (const std::string& note : status.notes) std::cout << "  note: " << note << "\n";
  std::cout << fmt::format("{:<6} {:<12} {:<10} {:>5} {:<9} {:<10} {:>4} {:>7}  {}\n", "SHARD",
                           "SLURM", "NODE", "JOBS", "ATTEMPTS", "RUN", "OK", "NOT OK", "NOTE");
  for (const ShardStatus& s : status.shards) {
    std::string attempts;
    for (int a : s.attempts) attempts += fmt::format("{}{}", attempts.empty() ? "" : ",", a);
    std::string node = s.slurm && !s.slurm->node.empty() ? s.slurm->node : s.node;
    std::cout << fmt::format(
        "{:<6} {:<12} {:<10} {:>5} {:<9} {:<10} {:>4} {:>7}  {}\n", s.shard,
        s.slurm ? s.slurm->state : "-", node.empty() ? "-" : node, s.jobs,
        attempts.empty() ? "-" : attempts, s.run_state.empty() ? "-" : s.run_state,
        s.run_state.empty() ? "-" : std::to_string(s.jobs_ok),
        s.run_state.empty() ? "-" : std::to_string(s.jobs_not_ok), shard_note(s));
  }
  return kExitOk;
}

int resubmit_command(const std::string& dir_flag, const std::vector<int>& shards, bool force) {
  const std::string dir = absolute_path(dir_flag);
  Result<ShardPlan> plan = read_plan(plan_path(dir));
  if (!plan.ok()) {
    std::cerr << "colo: " << plan.error().message() << "\n";
    return kExitBadInput;
  }
  if (plan->array_job_id.empty()) {
    std::cerr << fmt::format(
        "colo: slurm resubmit: {} was never submitted (colo slurm submit --dry-run?): sbatch "
        "{}/shard.sbatch submits every shard\n",
        dir, dir);
    return kExitBadInput;
  }
  const int count = static_cast<int>(plan->shards.size());
  for (int shard : shards) {
    if (shard >= count) {
      std::cerr << fmt::format("colo: slurm resubmit: there is no shard {}: {} has {} (0 to {})\n",
                               shard, dir, count_of(count, "shard"), count - 1);
      return kExitBadInput;
    }
  }
  SystemClock clock;
  const CommandRunner run = process_runner(clock);
  // Whether each may run again, from what Slurm says of every array of the
  // submission (its queue must answer: a shard it still has is never
  // submitted twice).
  if (Result<std::vector<ElementState>> queued = queued_shards(*plan, dir, run); !queued.ok()) {
    std::cerr << fmt::format("colo: slurm resubmit: cannot tell whether the shards still run: {}\n",
                             queued.error().message());
    return kExitEnvironment;
  }
  SweepStatus status = sweep_status(*plan, dir, run);
  for (int shard : shards) {
    const ShardStatus& s = status.shards[static_cast<size_t>(shard)];
    switch (resubmittable(s, force)) {
      case Resubmittable::kStillInSlurm:
        std::cerr << fmt::format(
            "colo: slurm resubmit: shard {} is still {} in Slurm (job {}): wait until it ends, "
            "or scancel {} first\n",
            shard, s.slurm->state, s.slurm->job_id, s.slurm->job_id);
        return kExitNotYet;
      case Resubmittable::kEndedOk:
        std::cerr << fmt::format(
            "colo: slurm resubmit: shard {}'s attempt {} ended ok, every job of it; --force runs "
            "it again anyway\n",
            shard, s.attempts.back());
        return kExitBadInput;
      case Resubmittable::kYes:
        break;
    }
  }
  Submission submission{dir, dir + "/shard.sbatch", *plan};
  for (int shard : shards) {
    Result<Resubmission> r = resubmit_shard(submission, shard, run, clock);
    if (!r.ok()) {
      std::cerr << fmt::format("colo: slurm resubmit: shard {}: {}\n", shard, r.error().message());
      return kExitEnvironment;
    }
    std::cout << fmt::format(
        "shard {}: submitted again as array job {}, attempt {} (its earlier attempts stay in "
        "{}/shards/{}/)\n",
        shard, r->array_job_id, r->first_attempt, dir, shard);
  }
  std::cout << fmt::format("  colo slurm status {}\n  colo slurm collect {}   (once it ended)\n",
                           dir, dir);
  return kExitOk;
}

int collect_command(const std::string& dir_flag, const std::string& db, bool partial,
                    const std::string& command_line) {
  const std::string dir = absolute_path(dir_flag);
  Result<ShardPlan> plan = read_plan(plan_path(dir));
  if (!plan.ok()) {
    std::cerr << "colo: " << plan.error().message() << "\n";
    return kExitBadInput;
  }
  std::vector<ElementState> queued;
  if (!plan->array_job_id.empty()) {
    SystemClock clock;
    Result<std::vector<ElementState>> q = queued_shards(*plan, dir, process_runner(clock));
    if (q.ok()) {
      queued = std::move(*q);
    } else if (!partial) {
      std::cerr << fmt::format(
          "colo: cannot tell whether shards are still running: {}\n  (pass --partial to merge "
          "what was published anyway)\n",
          q.error().message());
      return kExitEnvironment;
    }
  }
  Result<JobFile> file = load_job_file(plan->job_file);  // for jobs no store holds; optional
  CollectOptions options;
  options.out_path = db.empty() ? "" : absolute_path(db);
  options.partial = partial;
  options.command_line = command_line;
  Result<CollectResult> result =
      collect_shards(*plan, dir, queued, file.ok() ? &*file : nullptr, options);
  if (!result.ok()) {
    std::cerr << "colo: " << result.error().message() << "\n";
    // Refused because shards still run: not yet.
    return !queued.empty() && !partial ? kExitNotYet : kExitEnvironment;
  }
  for (const std::string& line : result->lines) std::cout << line << "\n";
  std::cout << fmt::format(
      "merged {} jobs of {} planned into run {} of {}: {} ok, {} not ok{}\n  colo show --db {}\n",
      result->jobs, plan->total_jobs, result->run_id, result->out_path, result->jobs_ok,
      result->jobs - result->jobs_ok,
      result->jobs_missing > 0
          ? fmt::format(" ({} recorded by no shard: failed, with the reason)", result->jobs_missing)
          : "",
      result->out_path);
  return result->jobs_ok == result->jobs ? kExitOk : kExitJobsFailed;
}

}  // namespace

void add_slurm_command(CLI::App& app, int& exit_code, const std::string& command_line) {
  CLI::App* slurm = app.add_subcommand(
      "slurm", "Run a sweep on a Slurm cluster: one array element per node, collected after");
  slurm->require_subcommand(1);
  set_example(*slurm, "colo slurm submit sweep.toml --gpus-per-node 4 --deadline 12h");

  static SubmitFlags submit;
  CLI::App* submit_cmd = slurm->add_subcommand(
      "submit",
      "Split a sweep into node-sized shards (learned profiles; --deadline: colo simulate's "
      "planner picks the node count) and submit them as one Slurm job array");
  submit_cmd->add_option("file", submit.file, "job file (see docs/job-file.md)")
      ->required()
      ->check(CLI::ExistingFile);
  submit_cmd->add_option("--partition,-p", submit.partition, "Slurm partition");
  submit_cmd->add_option("--gpus-per-node", submit.gpus_per_node, "GPUs each element asks for")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  CLI::Option* nodes = submit_cmd->add_option("--nodes,-N", submit.nodes, "shards (nodes) to use")
                           ->check(CLI::Range(1, 100000));
  submit_cmd
      ->add_option("--deadline", submit.deadline,
                   "the fewest nodes whose shards all end within this (e.g. 2d, 36h), simulated")
      ->excludes(nodes);
  submit_cmd->add_option("--max-nodes", submit.max_nodes, "--deadline: at most this many nodes")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  submit_cmd->add_option("--mechanism,-m", submit.mechanism,
                         "passed to colo run on each node (exclusive, naive, mps, mig)");
  submit_cmd->add_option("--policy", submit.policy, "passed to colo run (fixed, auto)");
  submit_cmd->add_option("--dir", submit.dir,
                         "submission directory, on a filesystem every node sees; default "
                         "./colo-slurm-<file>-<time>");
  submit_cmd->add_option("--time,-t", submit.time_limit, "Slurm time limit of each element");
  submit_cmd->add_option("--sbatch-option", submit.sbatch_options,
                         "another #SBATCH option, e.g. --sbatch-option=--account=proj "
                         "(repeatable)");
  submit_cmd
      ->add_option("--gpu-model", submit.backend.sim_gpu,
                   "GPU model for planning (and, with --backend sim, the simulated GPU): H200, "
                   "H100, A100-40GB")
      ->capture_default_str();
  add_deprecated_alias(*submit_cmd, "--gpu", "--gpu-model", submit.backend.sim_gpu);
  submit_cmd->add_option(
      "--db", submit.db,
      "store whose learned profiles size the shards; default " + default_db_path());
  submit_cmd->add_flag("--dry-run", submit.dry_run,
                       "write the plan and the batch script, do not submit");
  add_backend_flags(*submit_cmd, submit.backend, /*model_flag=*/false);
  set_example(*submit_cmd, "colo slurm submit sweep.toml --gpus-per-node 4 --deadline 12h -p gpu");
  submit_cmd->callback([&exit_code] { exit_code = submit_command(submit); });

  static std::string status_dir;
  CLI::App* status_cmd = slurm->add_subcommand(
      "status", "Each shard: Slurm's state (squeue, sacct) and what its stores recorded");
  status_cmd->add_option("dir", status_dir, "the submission directory")->required();
  set_example(*status_cmd, "colo slurm status colo-slurm-sweep-20261124-101500");
  status_cmd->callback([&exit_code] { exit_code = status_command(status_dir); });

  static std::string resubmit_dir;
  static std::vector<int> resubmit_shards;
  static bool resubmit_force = false;
  CLI::App* resubmit_cmd = slurm->add_subcommand(
      "resubmit",
      "Run a cancelled or failed shard again as a new attempt beside its earlier ones (a "
      "one-element array of the same batch script)");
  resubmit_cmd->add_option("dir", resubmit_dir, "the submission directory")->required();
  resubmit_cmd
      ->add_option("shard", resubmit_shards, "the shards (as colo slurm status numbers them)")
      ->required()
      ->check(whole_number(0));
  resubmit_cmd->add_flag("--force", resubmit_force,
                         "run a shard whose last attempt ended ok again too");
  set_example(*resubmit_cmd, "colo slurm resubmit colo-slurm-sweep-20261124-101500 1");
  resubmit_cmd->callback([&exit_code] {
    exit_code = resubmit_command(resubmit_dir, resubmit_shards, resubmit_force);
  });

  static std::string collect_dir;
  static std::string collect_db;
  static bool partial = false;
  CLI::App* collect_cmd = slurm->add_subcommand(
      "collect",
      "Merge each shard's last attempt into one store, so colo show and colo report cover the "
      "whole sweep");
  collect_cmd->add_option("dir", collect_dir, "the submission directory")->required();
  collect_cmd->add_option("--db", collect_db, "merged store; default <dir>/colo.db");
  collect_cmd->add_flag("--partial", partial,
                        "merge although shards are still queued or running (or Slurm cannot be "
                        "asked)");
  set_example(*collect_cmd, "colo slurm collect colo-slurm-sweep-20261124-101500");
  collect_cmd->callback([&exit_code, command_line] {
    exit_code = collect_command(collect_dir, collect_db, partial, command_line);
  });
}

}  // namespace colo
