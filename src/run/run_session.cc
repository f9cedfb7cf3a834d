#include "run/run_session.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <ostream>

#include "common/names.h"
#include "common/paths.h"
#include "common/users.h"
#include "data/ring_owner.h"
#include "gpu/device_json.h"
#include "profiling/ncu_launch.h"
#include "run/leftovers.h"
#include "sharing/make_mechanism.h"

namespace colo {
namespace {

// Says `lines` on `out`, or the warning of an error.
void say(std::ostream& out, const Result<std::vector<std::string>>& lines) {
  if (!lines.ok()) {
    out << "warning: " << lines.error().message() << '\n';
    return;
  }
  for (const std::string& line : *lines) out << line << '\n';
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

Result<std::vector<DeviceInfo>> run_devices(GpuBackend& backend, const std::vector<int>& wanted,
                                            const std::optional<SlurmAllocation>& slurm) {
  Result<std::vector<DeviceInfo>> devices = backend.devices();
  if (!devices.ok()) return devices.error();
  if (devices->empty()) return Error(fmt::format("the {} backend found no GPU", backend.name()));
  devices = usable_devices(*devices, slurm);
  if (!devices.ok() || wanted.empty()) return devices;
  return select_devices(*devices, wanted);
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

RunSession::RunSession(SessionContext ctx, SessionOptions options)
    : ctx_(ctx), options_(std::move(options)), writer_(ctx.store, ctx.clock) {}

RunSession::~RunSession() {
  if (!closed_) (void)close(RunState::kFailed);
}

Status RunSession::open() {
  clean_up();
  for (Status (RunSession::*step)() :
       {&RunSession::take_devices, &RunSession::record_run, &RunSession::start_mechanism}) {
    if (Status s = (this->*step)(); !s.ok()) {
      (void)close(RunState::kFailed);
      return s;
    }
  }
  return OkStatus();
}

void RunSession::clean_up() {
  if (cleaned_up_) return;
  cleaned_up_ = true;
  // Opening the store marked the runs of a colo that is gone interrupted.
  for (int64_t id : ctx_.store.runs_interrupted_at_open()) {
    ctx_.out << fmt::format(
        "run {} was interrupted: the colo running it is gone; marked interrupted\n", id);
  }
  for (const std::string& line : stop_leftovers_of_dead_colos(ctx_.store)) ctx_.out << line << '\n';
  say(ctx_.out, cleanup_stale_mps_daemons(ctx_.mechanism_options));
  say(ctx_.out, cleanup_stale_mig_instances(ctx_.mechanism_options, ctx_.backend));
  say(ctx_.out, cleanup_stale_data_loaders(options_.state_dir.empty() ? default_state_dir()
                                                                      : options_.state_dir));
}

Status RunSession::take_devices() {
  Result<std::vector<DeviceInfo>> devices =
      run_devices(ctx_.backend, options_.only_devices, options_.slurm);
  if (!devices.ok()) return devices.error();
  GpuLockOptions lock;
  lock.dir = gpu_lock_dir(options_.locks.dir, ctx_.backend.simulated(),
                          options_.state_dir.empty() ? default_state_dir() : options_.state_dir);
  lock.command = options_.locks.command.empty() ? options_.command_line : options_.locks.command;
  lock.wait = options_.locks.wait;
  lock.stop_requests = &ctx_.stop_requests;
  std::ostream& out = ctx_.out;
  lock.on_wait = [&out](const std::string& message) { out << message << '\n' << std::flush; };
  Result<std::unique_ptr<GpuLocks>> locks = GpuLocks::acquire(*devices, lock, ctx_.clock);
  if (!locks.ok()) return locks.error();
  lock_dir_ = lock.dir;
  // Ours before any user's (a profiled job's pair takes it as its user).
  if (Status s = create_machine_lock_file(lock_dir_, kNcuMpsControlLock); !s.ok())
    ctx_.out << "warning: " << s.error().message() << "; jobs under ncu on MPS may fail\n";
  devices_ = std::move(devices).value();
  locks_ = std::move(locks).value();
  return OkStatus();
}

Status RunSession::record_run() {
  const std::optional<SlurmAllocation>& slurm = options_.slurm;
  record_ =
      NewRun{ctx_.clock.now_ms(),
             to_string(ctx_.mechanism.kind()),
             ctx_.backend.name(),
             ctx_.backend.simulated(),
             options_.job_file,
             options_.command_line,
             host_name(),
             getpid(),
             devices_to_json(devices_).dump(),
             slurm ? SlurmRecord{slurm->job_id, slurm->step, slurm->node, slurm->restart_count}
                   : SlurmRecord{},
             options_.label,
             getuid(),
             user_name_of(getuid()),
             options_.resumes_run};
  // The run's id is needed at once: wait out a store locked by another colo.
  Result<int64_t> id = retry_transient(ctx_.clock, options_.store_retry_ms,
                                       [&] { return ctx_.store.begin_run(record_); });
  if (!id.ok()) return id.error();
  run_id_ = *id;
  token_ = run_token(record_.host, record_.colo_pid, record_.started_ms);
  return OkStatus();
}

Status RunSession::start_mechanism() {
  mechanism_started_ = true;  // a failed prepare() may have left something to tear down
  if (Status s = ctx_.mechanism.prepare(devices_); !s.ok()) {
    return s.error().with_context(
        fmt::format("{} mechanism could not start", to_string(ctx_.mechanism.kind())));
  }
  // Each job in a cgroup of its own where colo may make them, so that what a
  // job leaves running ends with it; else in its process group, said.
  if (std::optional<RunCgroup> made = make_run_cgroup(options_.cgroup_parent_override, ctx_.out))
    cgroup_.emplace(std::move(*made));
  return OkStatus();
}

EngineContext RunSession::engine_context(std::ostream& out) {
  return EngineContext{ctx_.clock, ctx_.backend,   ctx_.store,
                       writer_,    ctx_.mechanism, cgroup_ ? &*cgroup_ : nullptr,
                       out,        lock_dir_};
}

Status RunSession::close(RunState state) {
  if (closed_) return *closed_;
  // Whatever the jobs left that escaped both their cgroups and process groups.
  if (!token_.empty()) {
    if (int stopped = stop_token_processes(kRunTokenEnv, token_); stopped > 0)
      ctx_.out << fmt::format("stopped {} processes the jobs left running\n", stopped);
  }
  cgroup_.reset();
  if (mechanism_started_) {
    if (Status s = ctx_.mechanism.teardown(); !s.ok())
      ctx_.out << "warning: " << s.error().message() << '\n';
  }
  Status drained = OkStatus();
  if (run_id_ != 0) {
    writer_.end_run(run_id_, state, ctx_.clock.now_ms());
    drained = writer_.drain(options_.store_retry_ms,
                            [&](const std::string& line) { ctx_.out << line << '\n'; });
  }
  locks_.reset();
  closed_ = drained;
  return drained;
}

}  // namespace colo
