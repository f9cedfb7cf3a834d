#include "run/run_controller.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <ostream>

#include "common/paths.h"
#include "common/units.h"
#include "data/loader_process.h"
#include "data/ring_owner.h"
#include "gpu/device_json.h"
#include "jobs/cgroup.h"
#include "run/data_loading.h"
#include "run/leftovers.h"
#include "run/run_engine.h"
#include "sharing/process_finder.h"
#include "store/store_writer.h"

namespace colo {
namespace {

// A file name made from a job name: letters, digits, '.', '_', '-', '=' kept.
std::string file_stem(size_t index, const std::string& name) {
  std::string stem = fmt::format("{:03}-", index + 1);
  for (char c : name) {
    bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '=';
    stem += keep ? c : '_';
  }
  return stem.substr(0, 120);
}

// The directory of a store's logs under the logs root: run ids are per store,
// so stores sharing a state directory must not share a directory of runs.
// "<file stem>-<8 hex digits of its absolute path>", e.g. "colo-3fa2c1d0"
// (std::hash: stable for a given colo build; the store keeps each log's path).
std::string store_logs_key(const std::string& store_path) {
  std::string absolute = absolute_path(store_path);
  if (char* real = realpath(absolute.c_str(), nullptr)) {
    absolute = real;
    free(real);  // NOLINT(cppcoreguidelines-no-malloc)
  }
  std::string name = absolute.substr(absolute.rfind('/') + 1);
  std::string stem = name.substr(0, name.rfind('.'));
  if (stem.empty()) stem = "store";
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return fmt::format("{}-{:08x}", stem.substr(0, 40),
                     static_cast<uint32_t>(std::hash<std::string>{}(absolute)));
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "unknown";
}

// This program's path, to start `colo data serve` children.
std::string self_executable() {
  std::string exe(4096, '\0');
  ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  return n > 0 ? exe.substr(0, static_cast<size_t>(n)) : "colo";
}

}  // namespace

MechanismKind default_mechanism(const GpuBackend& backend, const std::string& mps_control_program) {
  if (backend.simulated()) return MechanismKind::kNaive;
  return find_program(mps_control_program) ? MechanismKind::kMps : MechanismKind::kNaive;
}

Result<std::vector<DeviceInfo>> select_devices(const std::vector<DeviceInfo>& found,
                                               const std::vector<int>& wanted) {
  std::vector<DeviceInfo> out;
  for (int index : wanted) {
    auto it = std::find_if(found.begin(), found.end(),
                           [&](const DeviceInfo& d) { return d.index == index; });
    if (it == found.end()) {
      std::string have;
      for (const DeviceInfo& d : found)
        have += fmt::format("{}{}", have.empty() ? "" : ", ", d.index);
      return Error(
          fmt::format("--gpus: there is no GPU {}; this machine has GPU {} (colo devices "
                      "lists them)",
                      index, have));
    }
    if (std::none_of(out.begin(), out.end(), [&](const DeviceInfo& d) { return d.index == index; }))
      out.push_back(*it);
  }
  return out;
}

Status clean_up_after_dead_colo(RunStore& store, const MechanismOptions& mechanism_options,
                                GpuBackend& backend, std::ostream& out) {
  // Opening the store marked the runs of a colo that is gone interrupted.
  for (int64_t id : store.runs_interrupted_at_open()) {
    out << fmt::format("run {} was interrupted: the colo running it is gone; marked interrupted\n",
                       id);
  }
  for (const std::string& line : stop_leftovers_of_dead_colos(store)) out << line << '\n';
  if (Result<std::vector<std::string>> cleaned = cleanup_stale_mps_daemons(mechanism_options);
      cleaned.ok()) {
    for (const std::string& line : *cleaned) out << line << '\n';
  } else {
    out << "warning: " << cleaned.error().message() << '\n';
  }
  if (Result<std::vector<std::string>> cleaned =
          cleanup_stale_mig_instances(mechanism_options, backend);
      cleaned.ok()) {
    for (const std::string& line : *cleaned) out << line << '\n';
  } else {
    out << "warning: " << cleaned.error().message() << '\n';
  }
  return OkStatus();
}

Result<std::vector<DeviceInfo>> run_devices(GpuBackend& backend, const std::vector<int>& wanted,
                                            const std::optional<SlurmAllocation>& slurm) {
  Result<std::vector<DeviceInfo>> devices = backend.devices();
  if (!devices.ok()) return devices.error();
  if (devices->empty()) return Error(fmt::format("the {} backend found no GPU", backend.name()));
  devices = usable_devices(*devices, slurm);
  if (!devices.ok() || wanted.empty()) return devices;
  return select_devices(*devices, wanted);
}

Result<std::unique_ptr<GpuLocks>> lock_devices(const std::vector<DeviceInfo>& devices,
                                               const LockOptions& options, Clock& clock,
                                               const std::atomic<int>& stop_requests,
                                               std::ostream& out) {
  GpuLockOptions lock;
  lock.dir = options.dir.empty() ? default_gpu_lock_dir() : options.dir;
  lock.command = options.command;
  lock.wait = options.wait;
  lock.stop_requests = &stop_requests;
  lock.on_wait = [&out](const std::string& message) { out << message << '\n' << std::flush; };
  return GpuLocks::acquire(devices, lock, clock);
}

NewRun new_run_record(Clock& clock, const Mechanism& mechanism, const GpuBackend& backend,
                      const std::string& job_file, const std::string& command_line,
                      const std::vector<DeviceInfo>& devices,
                      const std::optional<SlurmAllocation>& slurm) {
  return NewRun{clock.now_ms(),
                to_string(mechanism.kind()),
                backend.name(),
                backend.simulated(),
                job_file,
                command_line,
                host_name(),
                getpid(),
                devices_to_json(devices).dump(),
                slurm ? SlurmRecord{slurm->job_id, slurm->step, slurm->node, slurm->restart_count}
                      : SlurmRecord{}};
}

std::optional<RunCgroup> make_run_cgroup(const std::string& parent_override, std::ostream& out) {
  Result<std::string> parent = parent_override.empty()
                                   ? cgroup_parent_from_environment()
                                   : choose_cgroup_parent(parent_override.c_str());
  if (parent.ok()) {
    Result<RunCgroup> made = RunCgroup::create(*parent);
    if (made.ok()) return std::move(made).value();
    parent = made.error();
  }
  out << fmt::format(
      "warning: jobs run in process groups, not cgroups ({}): what a job starts in a new "
      "session is stopped only when the run ends, and host CPU and memory are not measured\n",
      parent.error().message());
  return std::nullopt;
}

Result<RunOutcome> run_job_file(const JobFile& file, const RunOptions& options, RunContext& ctx) {
  // Step 1: clean up after an earlier colo that died.
  (void)clean_up_after_dead_colo(ctx.store, ctx.mechanism_options, ctx.backend, ctx.out);
  const std::string state_dir = options.state_dir.empty() ? default_state_dir() : options.state_dir;
  if (Result<std::vector<std::string>> cleaned = cleanup_stale_data_loaders(state_dir);
      cleaned.ok()) {
    for (const std::string& line : *cleaned) ctx.out << line << '\n';
  } else {
    ctx.out << "warning: " << cleaned.error().message() << '\n';
  }
  Result<std::vector<LoaderOptions>> loader_options = loaders_for(file);
  if (!loader_options.ok()) return loader_options.error();

  // Step 2: the devices (inside Slurm, its GPUs; locked, so that no other
  // colo places jobs there), the run and its jobs.
  Result<std::vector<DeviceInfo>> devices =
      run_devices(ctx.backend, options.only_devices, options.slurm);
  if (!devices.ok()) return devices.error();
  LockOptions lock = options.locks;
  if (lock.command.empty()) lock.command = options.command_line;
  Result<std::unique_ptr<GpuLocks>> locks =
      lock_devices(*devices, lock, ctx.clock, ctx.stop_requests, ctx.out);
  if (!locks.ok()) return locks.error();

  NewRun new_run = new_run_record(ctx.clock, ctx.mechanism, ctx.backend, file.path,
                                  options.command_line, *devices, options.slurm);
  // Writes whose results are needed at once wait out a store locked by another colo.
  Result<int64_t> run_id = retry_transient(ctx.clock, options.store_retry_ms,
                                           [&] { return ctx.store.begin_run(new_run); });
  if (!run_id.ok()) return run_id.error();

  std::string logs_dir = fmt::format(
      "{}/{}/{}", options.logs_root.empty() ? default_state_dir() + "/runs" : options.logs_root,
      store_logs_key(ctx.store.path()), *run_id);
  auto fail_run = [&](const Error& e) -> Error {
    (void)ctx.store.end_run(*run_id, RunState::kFailed, ctx.clock.now_ms());
    return e;
  };
  // Logs may show what a job prints of its environment: its owner's only.
  if (Status s = make_dirs(logs_dir, 0700); !s.ok()) return fail_run(s.error());

  std::vector<EngineJob> jobs(file.jobs.size());
  std::vector<std::string> log_paths;
  for (size_t i = 0; i < file.jobs.size(); ++i) {
    std::string stem = logs_dir + "/" + file_stem(i, file.jobs[i].name);
    jobs[i].spec = file.jobs[i];
    jobs[i].log_stem = stem;
    jobs[i].progress_path = stem + ".progress.jsonl";
    jobs[i].checkpoint_dir = stem + ".checkpoint";
    log_paths.push_back(stem + ".log");
  }
  const UnixMillis queued_ms = ctx.clock.now_ms();
  Result<std::vector<int64_t>> ids = retry_transient(ctx.clock, options.store_retry_ms, [&] {
    return ctx.store.add_jobs(*run_id, file.jobs, log_paths, queued_ms);
  });
  if (!ids.ok()) return fail_run(ids.error());
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].id = (*ids)[i];

  ctx.out << fmt::format("run {}: {} from {} on {} ({}{}), mechanism {}; logs in {}\n", *run_id,
                         count_of(static_cast<int64_t>(jobs.size()), "job"), file.path,
                         count_of(static_cast<int64_t>(devices->size()), "GPU"),
                         devices->front().name,
                         ctx.backend.simulated() ? ", SIMULATED: numbers are not measured" : "",
                         to_string(ctx.mechanism.kind()), logs_dir);
  if (options.slurm) {
    std::string uuids;
    for (const DeviceInfo& d : *devices) uuids += fmt::format(" gpu{}={}", d.index, d.uuid);
    ctx.out << fmt::format("inside Slurm job {} (step {}, node {}, restart {}): its GPUs{}\n",
                           options.slurm->job_id, options.slurm->step, options.slurm->node,
                           options.slurm->restart_count, uuids);
  }

  // Step 3: the mechanism. If it cannot start, no job runs, and each is recorded as failed.
  if (Status s = ctx.mechanism.prepare(*devices); !s.ok()) {
    Error e = s.error().with_context(
        fmt::format("{} mechanism could not start", to_string(ctx.mechanism.kind())));
    for (const EngineJob& j : jobs) {
      (void)ctx.store.job_finished(
          j.id, JobExit{JobState::kFailed, std::nullopt, std::nullopt, e.message(), {}},
          ctx.clock.now_ms(), 0);
    }
    (void)ctx.mechanism.teardown();
    return fail_run(e);
  }

  // Step 3, continued: the shared data loaders; each job reading a dataset
  // gets its loader's socket, and the auto policy its cost on the host.
  SharedLoaders loaders(ctx.clock, SharedLoadersOptions{self_executable(), logs_dir, state_dir});
  if (Status s = loaders.start(*loader_options, ctx.out); !s.ok()) {
    for (const EngineJob& j : jobs) {
      (void)ctx.store.job_finished(
          j.id, JobExit{JobState::kFailed, std::nullopt, std::nullopt, s.error().message(), {}},
          ctx.clock.now_ms(), 0);
    }
    (void)ctx.mechanism.teardown();
    return fail_run(s.error());
  }
  std::map<std::string, HostCost> loader_costs;
  for (const LoaderOptions& l : *loader_options)
    loader_costs[l.name] = HostCost{l.name, static_cast<double>(l.threads), l.ring_bytes};
  std::map<std::string, int64_t> job_ids;
  for (EngineJob& j : jobs) {
    job_ids[j.spec.name] = j.id;
    if (!j.spec.dataset) continue;
    std::map<std::string, std::string> data_env = loaders.environment_for(*j.spec.dataset);
    if (data_env.empty())
      ctx.out << fmt::format("warning: {}: the data loader of '{}' is not running\n", j.spec.name,
                             *j.spec.dataset);
    for (const auto& [k, v] : data_env) j.extra_env[k] = v;
    if (loader_costs.count(*j.spec.dataset) > 0) j.host_cost = loader_costs.at(*j.spec.dataset);
  }

  // Steps 4-6: the engine runs every job, then stops the sampler. Each job
  // runs in a cgroup of its own where colo may make them, so that what a job
  // leaves running ends with it; else in its process group, said.
  std::optional<RunCgroup> cgroup = make_run_cgroup(options.cgroup_parent_override, ctx.out);
  StoreWriter writer(ctx.store, ctx.clock);
  const std::string token = run_token(new_run.host, new_run.colo_pid, new_run.started_ms);
  EngineOptions engine_options;
  engine_options.policy = options.policy.value_or(file.policy.value_or("auto"));
  engine_options.max_jobs_per_gpu =
      options.max_jobs_per_gpu ? options.max_jobs_per_gpu : file.max_jobs_per_gpu;
  engine_options.probe_ms = options.probe_ms;
  engine_options.sample_period_ms = options.sample_period_ms;
  engine_options.stop_grace_ms = options.stop_grace_ms;
  engine_options.flush_ms = options.flush_ms;
  engine_options.live_display = options.live_display;
  engine_options.profiles_elsewhere = options.profiles_elsewhere;
  bool cancelled = false;
  RunOutcome outcome{*run_id, RunState::kOk, 0, 0};
  {
    RunEngine engine(EngineContext{ctx.clock, ctx.backend, ctx.store, writer, ctx.mechanism,
                                   cgroup ? &*cgroup : nullptr, ctx.out},
                     engine_options, *run_id, token, *devices);
    engine.start();
    for (EngineJob& j : jobs) engine.submit(std::move(j));
    int handled_stops = 0;
    while (true) {
      int stops = ctx.stop_requests.load();
      if (stops > handled_stops) {
        handled_stops = stops;
        cancelled = true;
        engine.stop_all(RunEngine::StopKind::kCancel, stops >= 2 ? 0 : options.stop_grace_ms,
                        "cancelled");
      }
      engine.tick();
      for (const std::string& e : loaders.poll()) engine.event("warning: " + e);
      if (engine.idle()) break;
      ctx.clock.sleep_for_ms(options.tick_ms);
    }
    engine.finish();
    outcome.jobs_ok = engine.count(true);
    outcome.jobs_not_ok = engine.count(false);
  }
  // Whatever the jobs left that escaped both their cgroups and process groups.
  if (int stopped = stop_token_processes(kRunTokenEnv, token); stopped > 0)
    ctx.out << fmt::format("stopped {} processes the jobs left running\n", stopped);
  cgroup.reset();
  for (const LoaderOutcome& loader : loaders.stop()) {
    const DataLoaderRow row = loader_record(loader, job_ids);
    if (Status s = ctx.store.add_data_loader(*run_id, row); !s.ok())
      ctx.out << "warning: " << s.error().message() << '\n';
    if (row.cpu_ms && row.wall_ms && *row.wall_ms > 0) {
      ctx.out << fmt::format("data loader '{}': {} samples decoded, {} CPU ({:.2f} cores)\n",
                             row.name, row.samples_decoded.value_or(0),
                             format_duration_ms(*row.cpu_ms),
                             static_cast<double>(*row.cpu_ms) / static_cast<double>(*row.wall_ms));
    } else if (!row.note.empty()) {
      ctx.out << fmt::format("warning: data loader '{}': {}\n", row.name, row.note);
    }
  }

  // Step 7.
  if (Status s = ctx.mechanism.teardown(); !s.ok())
    ctx.out << "warning: " << s.error().message() << '\n';

  // Step 8.
  outcome.state = cancelled                 ? RunState::kCancelled
                  : outcome.jobs_not_ok > 0 ? RunState::kFailed
                                            : RunState::kOk;
  writer.end_run(*run_id, outcome.state, ctx.clock.now_ms());
  if (Status s = writer.drain(options.store_retry_ms,
                              [&](const std::string& line) { ctx.out << line << '\n'; });
      !s.ok())
    return s.error();
  return outcome;
}

}  // namespace colo
