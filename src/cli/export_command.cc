// `colo export mlflow TARGET... --to DIR`: runs and experiments written as an
// MLflow file store (see export/mlflow_export.h), for `mlflow ui`.
#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/paths.h"
#include "export/mlflow_export.h"
#include "run/log_layout.h"

namespace colo {
namespace {

struct MlflowFlags {
  std::vector<std::string> targets;
  std::string to;
  std::string db;
  std::string user;
  std::string system_interval = "10s";
};

// Who MLflow itself would record as the user: getpass.getuser() reads
// $LOGNAME, $USER, then the password database.
std::string login_name() {
  for (const char* name : {"LOGNAME", "USER"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return value;
  }
  if (const passwd* pw = getpwuid(geteuid()); pw != nullptr) return pw->pw_name;
  return "";
}

// `path` as one shell word, for a command line people copy.
std::string shell_word(const std::string& path) {
  constexpr std::string_view kPlain =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+:@%,=";
  if (!path.empty() && path.find_first_not_of(kPlain) == std::string::npos) return path;
  std::string out = "'";
  for (char c : path) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// What `text` names: run:ID, exp:ID, last-run and last-exp as
// parse_mlflow_target() reads them; else a target as every command takes
// one (common/target_syntax.h): an id, last, a name of the caller's own, or
// RUN/SUB (a submission: only its jobs).
Result<MlflowTarget> resolve_mlflow_target(RunStore& store, const std::string& text) {
  if (text.starts_with("run:") || text.starts_with("exp:") || text.starts_with("last-"))
    return parse_mlflow_target(text);
  Result<StoredTarget> found = resolve_stored_target(
      store, text,
      TargetForms{.last = true,
                  .id = true,
                  .submission = true,
                  .name = true,
                  .command = "colo export mlflow (besides exp:ID and last-exp)"});
  if (!found.ok()) return found.error();
  MlflowTarget target{MlflowTarget::Kind::kRun, found->run_id, std::nullopt};
  if (!found->submission) return target;
  const SubmissionRow& sub = *found->submission;
  target.submission = sub.id;
  if (target.id == 0) {
    // A submission by name: the run holding its jobs (the newest, when a
    // restarted service continued some in a later run).
    Result<std::vector<SubmissionJob>> jobs = store.submission_jobs(sub.id);
    if (!jobs.ok()) return jobs.error();
    for (const SubmissionJob& j : *jobs) target.id = std::max(target.id, j.run_id);
    if (target.id == 0) {
      return Error(
          fmt::format("'{}': submission {} has no run to export yet (none of its {} "
                      "jobs started)",
                      text, sub.id, sub.jobs));
    }
  }
  return target;
}

int export_mlflow_command(const MlflowFlags& flags) {
  std::optional<int64_t> interval_ms = duration_flag("--system-interval", flags.system_interval, 0);
  if (!interval_ms) return kExitBadInput;
  Result<std::unique_ptr<RunStore>> store = open_store_for_reading(flags.db);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  std::vector<MlflowTarget> targets;
  for (const std::string& text : flags.targets) {
    Result<MlflowTarget> target = resolve_mlflow_target(**store, text);
    if (!target.ok()) {
      std::cerr << "colo: export mlflow: " << target.error().message() << "\n";
      return kExitBadInput;
    }
    targets.push_back(*target);
  }
  SystemClock clock;
  MlflowExportOptions options;
  options.dir = flags.to;
  options.user = login_name();
  options.user_override = flags.user;
  options.system_interval_ms = *interval_ms;
  options.now_ms = clock.now_ms();
  ProgressLine progress("colo: export: ");
  options.progress = [&progress](const std::string& step) { progress.show(step); };
  options.profile_dir_of = [](const std::string& log) {
    return job_dir_of_log(log, JobDir::kProfile);
  };

  Result<MlflowExportPlan> plan = plan_mlflow_export(**store, targets, options);
  if (!plan.ok()) {
    std::cerr << "colo: export mlflow: " << plan.error().message() << "\n";
    return kExitBadInput;
  }
  Result<MlflowExportOutcome> outcome = write_mlflow_export(**store, *plan, options);
  progress.clear();
  if (!outcome.ok()) {
    std::cerr << "colo: export mlflow: " << outcome.error().message() << "\n";
    return kExitEnvironment;
  }
  for (const MlflowExportedExperiment& e : outcome->experiments) {
    std::cout << fmt::format("  experiment {} '{}': {} runs{}\n", e.id, e.name, e.jobs,
                             e.replaces ? " (replaced its earlier export)" : "");
  }
  std::cout << fmt::format(
      "exported {} runs ({} metrics points) to {}; view: mlflow ui "
      "--backend-store-uri {}\n",
      outcome->runs, outcome->metric_points, outcome->dir, shell_word(outcome->dir));
  return kExitOk;
}

}  // namespace

void add_export_command(CLI::App& app, int& exit_code) {
  CLI::App* export_cmd =
      app.add_subcommand("export", "Export runs and experiments to other tools (MLflow)");
  export_cmd->require_subcommand(1);
  set_example(*export_cmd, "colo export mlflow last --to mlruns");

  // Flags live as long as the app: CLI11 writes into them during parse().
  static MlflowFlags flags;
  CLI::App* mlflow = export_cmd->add_subcommand(
      "mlflow",
      "Write runs as an MLflow file store for `mlflow ui --backend-store-uri DIR`, each job one "
      "MLflow run (no MLflow needed)");
  mlflow->footer(
      "Each job becomes an MLflow run: its grid values as params; what it reported (joined with "
      "the attempts it resumes), the GPU readings while it ran (system/) and colo's summary of "
      "it (colo/) as metrics; its state, GPU, mechanism and submission as tags, who ran it as "
      "its user; its log as an artifact. Exporting a target again replaces its earlier export (the "
      "same ids); other experiments in DIR are left alone (docs/export.md).\n\nExample:\n  "
      "colo export mlflow 12 exp:3 --to mlruns && mlflow ui --backend-store-uri mlruns");
  mlflow
      ->add_option("targets", flags.targets,
                   "RUN (an id, run:ID, last or a name of yours), RUN/SUB (a submission: its "
                   "jobs alone; or a submission's name) or exp:ID (a colo bench experiment with "
                   "its cases' runs; last-exp); each becomes one MLflow experiment")
      ->required();
  mlflow
      ->add_option("--to", flags.to,
                   "the MLflow store's directory: new, empty, or an existing MLflow file store "
                   "(./mlruns)")
      ->required();
  mlflow->add_option("--db", flags.db, "run store; default " + default_db_path());
  mlflow->add_option("--user", flags.user,
                     "every run's MLflow user; default: who ran the job (a service job's "
                     "submitter, else the run's owner; else you)");
  mlflow
      ->add_option("--system-interval", flags.system_interval,
                   "average the GPU readings over windows this long, as MLflow's own system "
                   "metrics are (0: every reading)")
      ->capture_default_str();
  mlflow->callback([&exit_code] { exit_code = export_mlflow_command(flags); });
}

}  // namespace colo
