#include "cli/commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <deque>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/job_selection.h"
#include "analysis/stored.h"
#include "cli/cli_common.h"
#include "common/clock.h"
#include "common/paths.h"
#include "common/stop_signal.h"
#include "common/target_syntax.h"
#include "common/units.h"
#include "gpu/device_json.h"
#include "gpu/gpu_backend.h"
#include "jobs/job_file.h"
#include "profiling/windows.h"
#include "report/data_report.h"
#include "report/run_comparison.h"
#include "report/run_profiling.h"
#include "report/text_report.h"
#include "run/log_layout.h"
#include "run/mechanism_inputs.h"
#include "run/resume.h"
#include "run/run_controller.h"
#include "sharing/make_mechanism.h"
#include "sharing/mechanism.h"
#include "slurm/allocation.h"
#include "slurm/shard_run.h"
#include "store/run_filter.h"
#include "store/run_store.h"

namespace colo {
namespace {

std::atomic<int> g_stop_requests{0};

void on_stop_signal(int signo) {
  note_stop_signal(signo);
  g_stop_requests.fetch_add(1);
}

std::string opt(const std::optional<double>& v, const char* spec = "{:.1f}") {
  return v ? fmt::format(fmt::runtime(spec), *v) : "-";
}

// ---- colo run -------------------------------------------------------------

struct RunFlags {
  std::string file;
  std::string mechanism;
  std::string db;
  std::string logs;
  std::optional<int> max_per_gpu;
  std::vector<int> gpus;
  std::string policy;
  std::string sample_period = "500ms";
  std::string grace = "10s";
  std::string stall_timeout;
  DiskFlags disk;
  bool plain = false;
  bool local = false;
  bool no_wait = false;
  std::string lock_dir;
  std::string socket;
  BackendFlags backend;
  std::string shard_plan;       // `colo slurm submit`'s plan: run one shard of it
  std::optional<int> shard;     // which; default: the Slurm array element
  int shard_first_attempt = 0;  // its attempts are numbered from this (plus Slurm's requeues)
  std::string profiles_from;    // another store whose profiles the auto policy may use
  // Run again the jobs of this run that did not end well: its id, last or its name.
  std::optional<std::string> resume;
  LabelFlags label;
  QosFlags qos;  // every job's class, over the file's
};

// The code a finished run exits with.
int run_exit_code(RunState state) {
  switch (state) {
    case RunState::kOk:
      return kExitOk;
    case RunState::kCancelled:
      return kExitCancelled;
    default:
      return kExitJobsFailed;
  }
}

int run_command(const RunFlags& flags, const std::string& command_line) {
  if (flags.file.empty() == !flags.resume) {
    std::cerr << "colo: run needs a job file, or --resume RUN (the jobs of a run that did not end "
                 "ok), not both\n";
    return kExitBadInput;
  }
  if (flags.resume && flags.qos.given()) {
    std::cerr << "colo: --qos and --min-speed are for a job file; a resumed job keeps the class "
                 "it ran with\n";
    return kExitBadInput;
  }
  std::optional<ResumePlan> resume;
  if (flags.resume) {
    const std::string db = !flags.db.empty() ? flags.db : default_db_path();
    Result<std::unique_ptr<RunStore>> from = RunStore::open(db);
    // A submission is resumed through the service (colo submit --resume).
    Result<StoredTarget> target =
        from.ok() ? resolve_stored_target(
                        **from, *flags.resume,
                        TargetForms{.last = true, .id = true, .name = true, .command = "--resume"})
                  : Result<StoredTarget>(from.error());
    Result<RunRow> run =
        target.ok() ? (*from)->run(target->run_id) : Result<RunRow>(target.error());
    Result<ResumePlan> plan =
        run.ok() ? plan_resume(**from, run->id) : Result<ResumePlan>(run.error());
    if (!plan.ok()) {
      std::cerr << "colo: --resume " << *flags.resume << ": " << plan.error().message() << "\n";
      return kExitBadInput;
    }
    resume = std::move(plan).value();
    std::cout << fmt::format(
        "resuming run {} ({}): {} that did not end ok, each with its checkpoint directory; {} "
        "ended ok and {} not run again\n",
        run->id, resume->file.path, count_of(static_cast<int64_t>(resume->file.jobs.size()), "job"),
        count_of(resume->ended_well, "job"), resume->ended_well == 1 ? "is" : "are");
  }
  // A resumed run carries the name and tags of the run it resumes; the flags
  // change them as they would a new run's.
  Result<RunLabel> label = apply_label_flags(flags.label, resume ? resume->label : RunLabel{});
  if (!label.ok()) {
    std::cerr << "colo: " << label.error().message() << "\n";
    return kExitBadInput;
  }
  Result<JobFile> file = resume ? Result<JobFile>(resume->file) : load_job_file(flags.file);
  if (!file.ok()) {
    std::cerr << "colo: " << file.error().message() << "\n";
    return kExitBadInput;
  }
  if (Status qos = apply_qos_flags(flags.qos, *file); !qos.ok()) {
    std::cerr << "colo: " << qos.error().message() << "\n";
    return kExitBadInput;
  }
  // Inside a Slurm allocation: only its GPUs, and where it ran is recorded.
  const EnvLookup env = process_environment();
  std::optional<SlurmAllocation> slurm;
  if (!read_slurm_allocation(env, slurm)) return kExitEnvironment;
  // Outside Slurm, a colo serve on this machine owns its GPUs: the jobs go there.
  if (!flags.local && !slurm && flags.shard_plan.empty() && !resume) {
    if (std::optional<int> code = run_through_service(flags.file, flags.socket, *label, flags.qos))
      return *code;
  }
  std::optional<ShardRun> shard;
  if (!flags.shard_plan.empty()) {
    Result<ShardRun> prepared = prepare_shard_run(flags.shard_plan, flags.shard,
                                                  flags.shard_first_attempt, *file, slurm, env);
    if (!prepared.ok()) {
      std::cerr << "colo: " << prepared.error().message() << "\n";
      return kExitBadInput;
    }
    shard = std::move(prepared).value();
    file = shard->file;
    std::cout << fmt::format("shard {} of {} (attempt {}): {}; its store is published as {}\n",
                             shard->shard, flags.shard_plan, shard->attempt,
                             count_of(static_cast<int64_t>(file->jobs.size()), "job"),
                             shard->published_db);
  }
  std::optional<int64_t> period =
      duration_flag("--sample-period", flags.sample_period, 100, "GPM needs that");
  if (!period) return kExitBadInput;
  std::optional<int64_t> grace = duration_flag("--grace", flags.grace, 0);
  if (!grace) return kExitBadInput;

  SystemClock clock;
  Result<std::unique_ptr<GpuBackend>> backend = open_backend(flags.backend, clock);
  if (!backend.ok()) {
    std::cerr << "colo: " << backend.error().message() << "\n";
    return kExitEnvironment;
  }

  MechanismOptions mech_options = default_mechanism_options();
  mech_options.state_dir = node_local_state_dir(slurm, env) + "/mps";
  std::optional<MechanismKind> kind =
      choose_mechanism(flags.mechanism, file->mechanism, file->path, **backend, mech_options);
  if (!kind) return kExitBadInput;
  Result<std::unique_ptr<Mechanism>> mechanism =
      make_mechanism(*kind, mech_options, mechanism_inputs(*file, **backend));
  if (!mechanism.ok()) {
    std::cerr << "colo: " << mechanism.error().message() << "\n";
    return kExitEnvironment;
  }

  std::string db_path = !flags.db.empty() ? flags.db : shard ? shard->local_db : default_db_path();
  Result<std::unique_ptr<RunStore>> store = RunStore::open(db_path);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }

  RunOptions options;
  options.logs_root = !flags.logs.empty() ? flags.logs : shard ? shard->logs_root : "";
  options.max_jobs_per_gpu = flags.max_per_gpu;
  options.only_devices = flags.gpus;
  if (!flags.policy.empty()) options.policy = flags.policy;
  options.sample_period_ms = *period;
  options.stop_grace_ms = *grace;
  if (!stall_timeout_flag(flags.stall_timeout, options.stall)) return kExitBadInput;
  if (!disk_flags(flags.disk, options.max_log_bytes, options.keep_checkpoints_ms))
    return kExitBadInput;
  options.live_display = !flags.plain && can_redraw(STDOUT_FILENO);
  options.command_line = command_line;
  options.locks.dir = flags.lock_dir;
  options.locks.wait = !flags.no_wait;
  options.slurm = slurm;
  if (!flags.profiles_from.empty()) options.profiles_elsewhere = profiles_from(flags.profiles_from);
  if (resume) {
    options.checkpoint_dirs = resume->checkpoint_dirs;
    options.resumes_run = resume->run_id;
    options.resumes_jobs = resume->job_ids;
  }
  options.label = std::move(label).value();

  install_stop_handlers();
  RunContext ctx{clock, **backend, **store, **mechanism, mech_options, std::cout, g_stop_requests};
  Result<RunOutcome> outcome = run_job_file(*file, options, ctx);
  int code = kExitEnvironment;
  if (!outcome.ok()) {
    std::cerr << "colo: " << outcome.error().message() << "\n";
  } else {
    Result<RunSummary> summary = analyse_run(**store, outcome->run_id);
    // Its jobs in the order colo show gives them: by the declared objective.
    if (summary.ok()) (void)order_as_shown(*summary);
    if (summary.ok()) {
      std::cout << "\n" << format_run_summary(*summary);
    } else {
      std::cerr << "colo: could not summarize run " << outcome->run_id << ": "
                << summary.error().message() << "\n";
    }
    if (!shard)
      std::cout << fmt::format("store: {} (colo show {} --db {})\n", db_path, outcome->run_id,
                               db_path);
    code = run_exit_code(outcome->state);
  }
  if (shard) {
    // However the run ended, collect must find what it recorded.
    Status published = publish_shard_store(**store, *shard);
    store->reset();
    remove_shard_local_dir(*shard);
    if (!published.ok()) {
      std::cerr << "colo: shard " << shard->shard << ": " << published.error().message() << "\n";
      return kExitEnvironment;
    }
    std::cout << fmt::format("store: published as {}\n", shard->published_db);
  }
  return code;
}

// ---- colo devices ---------------------------------------------------------

struct DevicesFlags {
  BackendFlags backend;
  bool json = false;
};

int devices_command(const DevicesFlags& flags) {
  SystemClock clock;
  Result<OpenedGpu> gpu = open_gpu(flags.backend, clock);
  if (!gpu.ok()) {
    std::cerr << "colo: " << gpu.error().message() << "\n";
    return kExitEnvironment;
  }
  const std::unique_ptr<GpuBackend>& backend = gpu->backend;
  const std::vector<DeviceInfo>& devices = gpu->devices;
  bool mps = find_program("nvidia-cuda-mps-control").has_value();
  if (flags.json) {
    nlohmann::json out = {{"backend", backend->name()},
                          {"simulated", backend->simulated()},
                          {"version", backend->version()},
                          {"mps_control_on_path", mps},
                          {"devices", nlohmann::json::array()}};
    for (const DeviceInfo& d : devices) {
      out["devices"].push_back(device_to_json(d));
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{} backend: {}{}\n", backend->name(), backend->version(),
                           backend->simulated() ? "  [SIMULATED]" : "");
  std::cout << fmt::format(
      "MPS: {}\n", mps ? "nvidia-cuda-mps-control found on PATH (--mechanism mps available)"
                       : "nvidia-cuda-mps-control not on PATH (--mechanism mps unavailable)");
  for (const DeviceInfo& d : devices) {
    std::cout << fmt::format("\ngpu{}  {}  {}\n", d.index, d.name, d.uuid);
    std::cout << fmt::format("  memory     {}\n", format_bytes(d.memory_total_bytes));
    std::cout << fmt::format("  SMs        {}\n", d.sm_count ? std::to_string(*d.sm_count) : "-");
    if (d.cuda_compute_major) {
      std::cout << fmt::format("  compute    {}.{}\n", *d.cuda_compute_major,
                               d.cuda_compute_minor.value_or(0));
    }
    if (!d.pci_bus_id.empty()) std::cout << fmt::format("  PCI        {}\n", d.pci_bus_id);
    std::cout << fmt::format("  MIG        {}\n", !d.mig_enabled   ? "not supported"
                                                  : *d.mig_enabled ? "enabled"
                                                                   : "disabled");
    if (!d.mig_profiles.empty()) {
      std::string list;
      for (const MigProfile& p : d.mig_profiles) {
        list += fmt::format("{}{} x{} (id {})", list.empty() ? "" : ", ", p.name, p.max_instances,
                            p.id);
      }
      std::cout << "  profiles   " << list << "\n";
    }
    std::cout << fmt::format("  GPM        {}\n", d.gpm_supported ? "supported" : "not supported");
    std::string metrics;
    for (const std::string& m : d.supported_metrics) metrics += (metrics.empty() ? "" : ", ") + m;
    std::cout << "  metrics    " << (metrics.empty() ? "-" : metrics) << "\n";
  }
  return kExitOk;
}

// ---- colo monitor ---------------------------------------------------------

struct MonitorFlags {
  BackendFlags backend;
  std::string interval = "1s";
  int count = 0;
  bool json = false;
  bool processes = false;
};

int monitor_command(const MonitorFlags& flags) {
  std::optional<int64_t> interval = duration_flag("--interval", flags.interval, 100);
  if (!interval) return kExitBadInput;
  SystemClock clock;
  Result<OpenedGpu> gpu = open_gpu(flags.backend, clock);
  if (!gpu.ok()) {
    std::cerr << "colo: " << gpu.error().message() << "\n";
    return kExitEnvironment;
  }
  const std::unique_ptr<GpuBackend>& backend = gpu->backend;
  const std::vector<DeviceInfo>& devices = gpu->devices;
  install_stop_handlers();
  bool sim = backend->simulated();
  if (!flags.json) {
    std::cout << fmt::format(
        "# {:<8} {:>3} {:>5} {:>5} {:>6} {:>5} {:>5} {:>10} {:>7} {:>10} {:>8} {:>8} {:>5}{}\n",
        "time", "gpu", "sm%", "occ%", "tens%", "dram%", "util%", "mem_used", "power_w", "energy_j",
        "pcie_rx", "pcie_tx", "smclk", sim ? "  (SIMULATED)" : "");
  }
  for (int n = 0; flags.count == 0 || n < flags.count; ++n) {
    if (n > 0) {
      for (int64_t slept = 0; slept < *interval && g_stop_requests.load() == 0; slept += 50)
        clock.sleep_for_ms(50);
    }
    if (g_stop_requests.load() > 0) break;
    for (const DeviceInfo& d : devices) {
      Result<DeviceSample> s = backend->sample_device(d.index);
      if (!s.ok()) {
        std::cerr << fmt::format("colo: gpu{}: {}\n", d.index, s.error().message());
        continue;
      }
      if (flags.json) {
        nlohmann::json j = device_sample_to_json(*s);
        j["simulated"] = sim;
        std::cout << j.dump() << "\n";
      } else {
        time_t secs = static_cast<time_t>(s->time_ms / 1000);
        struct tm tm {};
        localtime_r(&secs, &tm);
        std::cout << fmt::format(
            "  {:02}:{:02}:{:02} {:>3} {:>5} {:>5} {:>6} {:>5} {:>5} {:>10} {:>7} {:>10} {:>8} "
            "{:>8} {:>5}\n",
            tm.tm_hour, tm.tm_min, tm.tm_sec, d.index, opt(s->sm_active_pct),
            opt(s->sm_occupancy_pct), opt(s->tensor_active_pct), opt(s->dram_active_pct),
            opt(s->gpu_util_pct), s->memory_used_bytes ? format_bytes(*s->memory_used_bytes) : "-",
            opt(s->power_w),
            s->energy_mj ? fmt::format("{:.0f}", static_cast<double>(*s->energy_mj) / 1000.0) : "-",
            opt(s->pcie_rx_mib_per_s), opt(s->pcie_tx_mib_per_s),
            s->sm_clock_mhz ? std::to_string(*s->sm_clock_mhz) : "-");
      }
      if (flags.processes) {
        Result<std::vector<ProcessSample>> procs = backend->sample_processes(d.index);
        if (!procs.ok()) {
          std::cerr << fmt::format("colo: gpu{} processes: {}\n", d.index, procs.error().message());
          continue;
        }
        for (const ProcessSample& p : *procs) {
          if (flags.json) {
            nlohmann::json j = {{"time_ms", p.time_ms},
                                {"gpu", p.device},
                                {"pid", p.pid},
                                {"mps_client", p.mps_client},
                                {"simulated", sim}};
            j["used_memory_bytes"] = p.used_memory_bytes ? nlohmann::json(*p.used_memory_bytes)
                                                         : nlohmann::json(nullptr);
            j["sm_util_pct"] =
                p.sm_util_pct ? nlohmann::json(*p.sm_util_pct) : nlohmann::json(nullptr);
            std::cout << j.dump() << "\n";
          } else {
            std::cout << fmt::format("      pid {:>7}  mem {:>10}  sm {:>5}{}\n", p.pid,
                                     p.used_memory_bytes ? format_bytes(*p.used_memory_bytes) : "-",
                                     opt(p.sm_util_pct), p.mps_client ? "  mps client" : "");
          }
        }
      }
    }
    std::cout.flush();
  }
  return kExitOk;
}

// ---- colo runs / colo show ------------------------------------------------

// The newest `limit` runs that `filter` matches.
int runs_command(const std::string& db, int limit, const RunFilter& filter, bool json) {
  Result<std::unique_ptr<RunStore>> store = open_store_for_reading(db);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  // Filtered: every run is looked at (runs are few beside their jobs).
  Result<std::vector<RunRow>> runs =
      (*store)->list_runs(filter.any() ? std::numeric_limits<int>::max() : limit);
  if (!runs.ok()) {
    std::cerr << "colo: " << runs.error().message() << "\n";
    return kExitEnvironment;
  }
  // A service's run holds every submission: its named ones are listed under it.
  std::map<int64_t, std::vector<SubmissionRow>> submissions;
  std::vector<RunRow> kept;
  for (RunRow& r : *runs) {
    if (static_cast<int>(kept.size()) >= limit) break;
    if (r.job_file.empty()) {  // a service's run has none
      Result<std::vector<SubmissionRow>> named = (*store)->named_submissions_of(r.id, 20);
      if (!named.ok()) {
        std::cerr << "colo: " << named.error().message() << "\n";
        return kExitEnvironment;
      }
      if (!named->empty()) submissions[r.id] = std::move(named).value();
    }
    auto subs = submissions.find(r.id);
    if (!filter.matches(r, subs == submissions.end() ? std::vector<SubmissionRow>{} : subs->second))
      continue;
    kept.push_back(std::move(r));
  }
  runs = std::move(kept);
  if (json) {
    nlohmann::json out = {{"runs", nlohmann::json::array()}};
    for (const RunRow& r : *runs) {
      nlohmann::json row = to_json(r);
      if (auto subs = submissions.find(r.id); subs != submissions.end()) {
        for (const SubmissionRow& sub : subs->second) row["submissions"].push_back(to_json(sub));
      }
      out["runs"].push_back(std::move(row));
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << format_runs_table(*runs, submissions);
  return kExitOk;
}

struct ShowFlags {
  std::vector<std::string> runs;  // none: the most recent; two: compared
  bool json = false;
  bool csv = false;
  std::string sort;
  std::vector<std::string> filters;
};

// What `colo show` was asked for: a run, or one submission's part of a
// service's run.
using ShowTarget = StoredTarget;

// The run or submission that `text` names for `colo show`, `colo label`.
Result<ShowTarget> resolve_target(RunStore& store, const std::string& text) {
  return resolve_stored_target(
      store, text,
      TargetForms{
          .last = true, .id = true, .submission = true, .name = true, .command = "colo show"});
}

// The run of a target, or the run holding a submission's jobs (the newest,
// when a restarted service continued some in a later run) restricted to
// them. A warning names the other runs that hold some of them.
Result<RunSummary> analyse_target(RunStore& store, const ShowTarget& target) {
  if (!target.submission) return analyse_run(store, target.run_id);
  const SubmissionRow& sub = *target.submission;
  Result<std::vector<SubmissionJob>> jobs = store.submission_jobs(sub.id);
  if (!jobs.ok()) return jobs.error();
  int64_t run = target.run_id;
  if (run == 0) {
    run = sub.run_id.value_or(0);
    for (const SubmissionJob& j : *jobs) run = std::max(run, j.run_id);
  }
  if (run == 0) {
    return Error(fmt::format("submission {} has no run to show yet (none of its {} jobs started)",
                             sub.id, sub.jobs));
  }
  Result<RunSummary> summary = analyse_run(store, run);
  if (!summary.ok()) return summary.error();
  std::set<int64_t> here;
  std::set<int64_t> elsewhere;
  for (const SubmissionJob& j : *jobs) {
    if (j.run_id == run) {
      here.insert(j.job_id);
    } else {
      elsewhere.insert(j.run_id);
    }
  }
  if (!elsewhere.empty()) {
    std::cerr << fmt::format(
        "colo: note: some of submission {}'s jobs were recorded in run{} {} (a service that "
        "restarted continues them in its new run): `colo show` each for them\n",
        sub.id, elsewhere.size() == 1 ? "" : "s", fmt::join(elsewhere, ", "));
  }
  restrict_to_submission(*summary, sub, here);
  return summary;
}

// `colo show A B`.
int compare_command(RunStore& store, const ShowFlags& flags) {
  std::vector<RunSummary> summaries;
  for (const std::string& text : flags.runs) {
    Result<ShowTarget> target = resolve_target(store, text);
    Result<RunSummary> summary =
        target.ok() ? analyse_target(store, *target) : Result<RunSummary>(target.error());
    if (!summary.ok()) {
      std::cerr << "colo: " << summary.error().message() << "\n";
      return kExitBadInput;
    }
    summaries.push_back(std::move(summary).value());
  }
  std::string metric = flags.sort;
  if (!metric.empty() && metric.front() == '-') metric.erase(0, 1);
  if (metric.empty()) metric = declared_objective(summaries[0]);
  if (metric.empty()) metric = declared_objective(summaries[1]);
  if (flags.json) {
    nlohmann::json j = {{"runs", {to_json(summaries[0]), to_json(summaries[1])}},
                        {"metric", metric}};
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << format_run_comparison(compare_runs(summaries[0], summaries[1], metric));
  return kExitOk;
}

int show_command(const std::string& db, const ShowFlags& flags) {
  std::vector<JobFilter> filters;
  for (const std::string& text : flags.filters) {
    Result<JobFilter> f = parse_job_filter(text);
    if (!f.ok()) {
      std::cerr << "colo: " << f.error().message() << "\n";
      return kExitBadInput;
    }
    filters.push_back(std::move(f).value());
  }
  if (flags.runs.size() > 2) {
    std::cerr << "colo: show takes one run, or two to compare\n";
    return kExitBadInput;
  }
  if (flags.runs.size() == 2 && (flags.csv || !filters.empty())) {
    std::cerr << "colo: --csv and --filter show one run; compare two without them\n";
    return kExitBadInput;
  }
  Result<std::unique_ptr<RunStore>> store = open_store_for_reading(db);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  if (flags.runs.size() == 2) return compare_command(**store, flags);
  Result<ShowTarget> target = resolve_target(**store, flags.runs.empty() ? "" : flags.runs.front());
  Result<RunSummary> summary =
      target.ok() ? analyse_target(**store, *target) : Result<RunSummary>(target.error());
  if (!summary.ok()) {
    std::cerr << "colo: " << summary.error().message() << "\n";
    return kExitBadInput;
  }
  const size_t all_jobs = summary->jobs.size();
  // Ranked by the declared objective unless --sort says otherwise.
  if (Status s = order_as_shown(*summary, filters, flags.sort); !s.ok()) {
    std::cerr << "colo: " << s.error().message() << "\n";
    return kExitBadInput;
  }
  if (flags.csv) {
    std::cout << format_jobs_csv(*summary);
    return kExitOk;
  }
  Result<std::vector<DataLoaderRow>> loaders = (*store)->data_loaders(summary->run.id);
  if (!loaders.ok()) std::cerr << "colo: warning: " << loaders.error().message() << "\n";
  const std::vector<DataLoaderRow> none;
  const std::vector<DataLoaderRow>& data = loaders.ok() ? *loaders : none;
  std::vector<std::string> problems;
  const RunProfiling profiling = run_profiling(**store, *summary, problems);
  for (const std::string& p : problems) std::cerr << "colo: warning: " << p << "\n";
  if (flags.json) {
    nlohmann::json j = to_json(*summary);
    if (!data.empty()) j["data_loaders"] = data_loaders_json(data);
    if (!profiling.jobs.empty()) j["profiles"] = profile_windows_json(profiling.jobs);
    if (!profiling.interference.empty()) j["interference"] = profiling.interference;
    if (!filters.empty()) j["filtered_from_jobs"] = all_jobs;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << format_run_summary(*summary) << format_data_loaders(data)
              << format_profile_windows(profiling.jobs) << profiling.interference_text;
    if (!filters.empty()) {
      std::cout << fmt::format(
          "showing {} of {} jobs (--filter); the run's totals above count them all\n",
          summary->jobs.size(), all_jobs);
    }
  }
  return kExitOk;
}

// `colo label RUN`: changes what the flags set, keeps the rest.
int label_command(const std::string& db, const std::string& run, const LabelFlags& flags) {
  if (!flags.name && flags.tags.empty() && !flags.note) {
    std::cerr << "colo: label needs --name, --tag or --note\n";
    return kExitBadInput;
  }
  Result<std::unique_ptr<RunStore>> store = RunStore::open(!db.empty() ? db : default_db_path());
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  Result<ShowTarget> target = resolve_target(**store, run);
  if (target.ok() && target->submission) {
    std::cerr << "colo: label names runs; a submission is named when it is submitted (colo "
                 "submit --name)\n";
    return kExitBadInput;
  }
  Result<RunRow> row = target.ok() ? (*store)->run(target->run_id) : Result<RunRow>(target.error());
  if (!row.ok()) {
    std::cerr << "colo: " << row.error().message() << "\n";
    return kExitBadInput;
  }
  Result<RunLabel> label = apply_label_flags(flags, row->label);
  if (!label.ok()) {
    std::cerr << "colo: " << label.error().message() << "\n";
    return kExitBadInput;
  }
  if (Status set = (*store)->set_label(row->id, *label); !set.ok()) {
    std::cerr << "colo: " << set.error().message() << "\n";
    return kExitEnvironment;
  }
  row->label = std::move(label).value();
  std::cout << format_runs_table({*row});
  return kExitOk;
}

}  // namespace

const std::atomic<int>& stop_requests() { return g_stop_requests; }

int exit_code_of(const Error& error, int otherwise) {
  return error.permission_denied() ? kExitPermission : otherwise;
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

void add_commands(CLI::App& app, int& exit_code, const std::string& command_line) {
  // Flags live as long as the app: CLI11 writes into them during parse().
  static RunFlags run;
  static DevicesFlags devices;
  static MonitorFlags monitor;
  static std::string db;
  static int runs_limit = 30;
  static bool runs_json = false;
  static std::string runs_name;
  static std::vector<std::string> runs_tags;
  static std::optional<std::string> runs_state;
  static ShowFlags show;

  CLI::App* run_cmd =
      app.add_subcommand("run", "Run the jobs of a TOML job file, collocated on the GPUs");
  run_cmd->add_option("file", run.file, "job file (see docs/job-file.md)")
      ->check(CLI::ExistingFile);
  run_cmd->add_option(
      "--resume", run.resume,
      "instead of a job file: run again the jobs of run RUN (in --db: its id, last or its name) "
      "that did not end ok or "
      "stopped early (failed, cancelled, interrupted, ...), as they were submitted and each with "
      "the checkpoint directory it had (COLO_CHECKPOINT_DIR); a new run, on the old run's "
      "mechanism unless --mechanism says otherwise, with its name and tags, whose `colo show` "
      "joins each job's epochs and metrics with the old run's");
  run_cmd
      ->add_option(
          "--mechanism,-m", run.mechanism,
          "exclusive: one job per GPU at a time (the baseline); naive: jobs share the GPU as plain "
          "processes; mps: through a private MPS daemon colo starts and stops; mig: each job on "
          "its own MIG instance colo creates and destroys (needs MIG mode on and root). "
          "Default: the job file's [run] mechanism, else mps where available, else naive")
      ->check(CLI::IsMember({"exclusive", "naive", "mps", "mig"}));
  run_cmd->add_option("--db", run.db, "run store (SQLite file); default " + default_db_path());
  run_cmd->add_option(
      "--logs", run.logs,
      "directory for job logs; default <state dir>/runs (then <store name>-<hash>/<run id>)");
  run_cmd
      ->add_option("--max-per-gpu", run.max_per_gpu,
                   "at most this many jobs on one GPU at once (overrides the file)")
      ->check(whole_number(1));
  run_cmd
      ->add_option("--gpus", run.gpus,
                   "use only these GPUs (indices as `colo devices` lists them, e.g. --gpus 0,2); "
                   "default: every GPU")
      ->delimiter(',')
      ->check(gpu_index());
  run_cmd
      ->add_option("--policy", run.policy,
                   "fixed: up to --max-per-gpu jobs per GPU; auto: colo decides from job profiles "
                   "(store, probes, hints) and measured progress, retries out-of-memory ends (see "
                   "docs/policy.md). Default: the job file's [run] policy, else auto")
      ->check(CLI::IsMember({"fixed", "auto"}));
  run_cmd->add_option("--sample-period", run.sample_period, "GPU sampling period")
      ->capture_default_str();
  run_cmd->add_option("--grace", run.grace, "time between TERM and KILL when stopping jobs")
      ->capture_default_str();
  run_cmd->add_option("--stall-timeout", run.stall_timeout, kStallTimeoutHelp);
  add_disk_flags(*run_cmd, run.disk);
  run_cmd->add_flag("--plain", run.plain,
                    "print one line per event instead of redrawing the job table");
  run_cmd->add_flag("--local", run.local,
                    "run here even when a colo serve runs on this machine (by default the jobs "
                    "are submitted to it and followed)");
  run_cmd->add_option("--socket", run.socket, "the colo serve to submit to (see colo submit)");
  run_cmd->add_flag("--no-wait", run.no_wait,
                    "refuse to start when another colo holds a GPU, instead of waiting for it");
  run_cmd->add_option("--lock-dir", run.lock_dir,
                      "machine-wide GPU lock directory; default $COLO_LOCK_DIR, else "
                      "/run/colo/locks or /tmp/colo-locks");
  add_backend_flags(*run_cmd, run.backend);
  run_cmd->add_option("--shard-plan", run.shard_plan,
                      "run one shard of the plan `colo slurm submit` wrote (its batch script "
                      "passes this): only that shard's jobs, the store published into the "
                      "submission directory");
  run_cmd
      ->add_option("--shard", run.shard,
                   "which shard of --shard-plan; default: the Slurm array element "
                   "(SLURM_ARRAY_TASK_ID)")
      ->check(whole_number(0));
  run_cmd
      ->add_option("--shard-first-attempt", run.shard_first_attempt,
                   "the number of the shard's first attempt here, to which Slurm's requeues add "
                   "(the batch script passes it: 0, or what colo slurm resubmit chose)")
      ->check(whole_number(0))
      ->capture_default_str();
  run_cmd->add_option("--profiles-from", run.profiles_from,
                      "another store (read only) whose measured profiles the auto policy uses "
                      "for jobs this run's store does not know, instead of probing them alone "
                      "(`colo slurm submit` passes the store it planned with)");
  add_label_flags(*run_cmd, run.label);
  add_qos_flags(*run_cmd, run.qos);
  set_example(*run_cmd, "colo run examples/quickstart.toml --backend sim --mechanism naive");
  run_cmd->callback([&exit_code, command_line] { exit_code = run_command(run, command_line); });

  add_bench_command(app, exit_code, command_line);
  add_report_command(app, exit_code);
  add_export_command(app, exit_code);
  add_mig_command(app, exit_code);
  add_simulate_commands(app, exit_code);
  add_profiles_command(app, exit_code);
  add_store_commands(app, exit_code);
  add_serve_commands(app, exit_code, command_line);
  add_top_command(app, exit_code);
  add_profile_command(app, exit_code);
  add_slurm_command(app, exit_code, command_line);
  add_data_command(app, exit_code);

  CLI::App* devices_cmd = app.add_subcommand(
      "devices", "List the GPUs: memory, SMs, MIG mode and profiles, MPS, metrics");
  add_backend_flags(*devices_cmd, devices.backend);
  devices_cmd->add_flag("--json", devices.json, "machine-readable output");
  set_example(*devices_cmd, "colo devices --json");
  devices_cmd->callback([&exit_code] { exit_code = devices_command(devices); });

  CLI::App* monitor_cmd =
      app.add_subcommand("monitor", "Print GPU metrics periodically (like nvidia-smi dmon)");
  add_backend_flags(*monitor_cmd, monitor.backend);
  monitor_cmd->add_option("--interval,-i", monitor.interval, "time between samples")
      ->capture_default_str();
  monitor_cmd
      ->add_option("--count,-c", monitor.count, "stop after this many samples (0: until Ctrl-C)")
      ->check(whole_number(0))
      ->capture_default_str();
  monitor_cmd->add_flag("--json", monitor.json, "one JSON object per line");
  monitor_cmd->add_flag("--processes,-p", monitor.processes, "also list the processes on each GPU");
  set_example(*monitor_cmd, "colo monitor --interval 500ms --count 10 --processes");
  monitor_cmd->callback([&exit_code] { exit_code = monitor_command(monitor); });

  CLI::App* runs_cmd = app.add_subcommand("runs", "List recorded runs, newest first");
  runs_cmd->add_option("--db", db, "run store; default " + default_db_path());
  runs_cmd->add_option("--limit,-n", runs_limit, "how many runs")
      ->check(whole_number(1))
      ->capture_default_str();
  runs_cmd->add_option(
      "--name", runs_name,
      "only runs of this name (or with a named submission of it, a service's run)");
  runs_cmd->add_option("--tag", runs_tags,
                       "KEY or KEY=VALUE, repeatable: only runs with that tag (and value)");
  runs_cmd->add_option("--state", runs_state,
                       "only runs in this state: running, ok, failed, cancelled or interrupted");
  set_example(*runs_cmd,
              "colo runs --limit 5 --json\n  colo runs --tag team=vision --state failed");
  runs_cmd->add_flag("--json", runs_json, "machine-readable output (docs/cli.md)");
  runs_cmd->callback([&exit_code] {
    Result<RunFilter> filter = parse_run_filter(runs_name, runs_tags, runs_state);
    if (!filter.ok()) {
      std::cerr << "colo runs: " << filter.error().message() << "\n";
      exit_code = kExitBadInput;
      return;
    }
    exit_code = runs_command(db, runs_limit, *filter, runs_json);
  });

  CLI::App* show_cmd = app.add_subcommand(
      "show",
      "Show one run: per-job times, epochs, memory, SM activity, energy, speed-up, and what the "
      "jobs learned (their grid parameters, the last and best value of each metric they "
      "reported)");
  show_cmd->add_option("run", show.runs,
                       "run id or name, or a service's submission as RUN/ID or by its name "
                       "(default: the most recent run); two are compared side by side, their jobs "
                       "matched by name, by the declared objective or --sort's metric");
  show_cmd->add_option("--db", db, "run store; default " + default_db_path());
  CLI::Option* show_json = show_cmd->add_flag("--json", show.json, "machine-readable output");
  show_cmd
      ->add_flag("--csv", show.csv,
                 "one CSV row per job: its fields, grid parameters and each metric's last and "
                 "best value")
      ->excludes(show_json);
  show_cmd->add_option(
      "--sort", show.sort,
      "order the jobs by a metric (its best value, best first: as the job file's [objective] "
      "declares, else the lowest loss or error and the highest anything else; METRIC_last and "
      "METRIC_best as the CSV names them; failed and diverged jobs last), a grid parameter, or "
      "name, state, gpu, epochs, duration_s, samples_per_s (ascending); -KEY reverses; default: "
      "the declared objective, else the run's order");
  show_cmd
      ->add_option("--filter", show.filters,
                   "keep the jobs where NAME OP VALUE holds (OP: = != < <= > >=; NAME as for "
                   "--sort, a metric by its best value); repeat to require several")
      ->allow_extra_args(false);
  set_example(*show_cmd,
              "colo show last --sort loss --filter 'lr<=0.01' --csv; colo show lr-a lr-b");
  show_cmd->callback([&exit_code] { exit_code = show_command(db, show); });

  static std::string label_run;
  static LabelFlags label;
  CLI::App* label_cmd =
      app.add_subcommand("label", "Name a recorded run, tag it or give it a note (or change them)");
  label_cmd->add_option("run", label_run, "run id or name ('last': the most recent)")->required();
  label_cmd->add_option("--db", db, "run store; default " + default_db_path());
  add_label_flags(*label_cmd, label);
  set_example(*label_cmd, "colo label 12 --name lr-sweep --tag model=resnet50 --note 'warm-up 5'");
  label_cmd->callback([&exit_code] { exit_code = label_command(db, label_run, label); });
}

}  // namespace colo
