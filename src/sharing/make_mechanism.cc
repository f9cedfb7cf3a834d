#include "sharing/make_mechanism.h"

#include <fmt/format.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/paths.h"
#include "sharing/mig_mechanism.h"
#include "sharing/mps_control.h"
#include "sharing/mps_daemon.h"
#include "sharing/mps_mechanism.h"
#include "sharing/plain_sharing.h"
#include "sharing/process_finder.h"

namespace colo {
namespace {

MpsDaemonOptions daemon_options(const MechanismOptions& options) {
  MpsDaemonOptions daemon;
  daemon.state_dir = options.state_dir.empty() ? default_state_dir() + "/mps" : options.state_dir;
  daemon.control_program = options.mps_control_program;
  daemon.start_timeout_ms = options.mps_start_timeout_ms;
  daemon.multiuser_group = options.mps_multiuser_group;
  return daemon;
}

std::string mig_state_dir(const MechanismOptions& options) {
  return options.mig_state_dir.empty() ? default_state_dir() + "/mig" : options.mig_state_dir;
}

// The real clock, shared by every mechanism (it is stateless and thread-safe).
Clock& system_clock() {
  static SystemClock clock;
  return clock;
}

}  // namespace

Result<std::unique_ptr<Mechanism>> make_mechanism(MechanismKind kind,
                                                  const MechanismOptions& options,
                                                  const MechanismInputs& inputs) {
  switch (kind) {
    case MechanismKind::kExclusive:
    case MechanismKind::kNaive:
      return std::unique_ptr<Mechanism>(std::make_unique<PlainSharing>(kind));
    case MechanismKind::kMps: {
      // Refused here, before a run is recorded, rather than at prepare().
      if (!find_program(options.mps_control_program)) {
        return Error(fmt::format(
            "--mechanism mps needs the MPS control program {}, which is not on PATH: it comes "
            "with the NVIDIA driver (set COLO_MPS_CONTROL to its path if it is elsewhere); "
            "without it use --mechanism naive or exclusive",
            options.mps_control_program));
      }
      Clock& clock = system_clock();
      return std::unique_ptr<Mechanism>(std::make_unique<MpsMechanism>(
          daemon_options(options),
          std::make_unique<ProcessMpsControl>(options.mps_control_program, clock),
          std::make_unique<ProcFsProcessFinder>(), clock));
    }
    case MechanismKind::kMig:
      if (inputs.backend == nullptr) {
        return Error("make_mechanism: the mig mechanism needs the GPU backend");
      }
      if (inputs.backend->mig_control() == nullptr) {
        return Error(fmt::format(
            "--mechanism mig needs MIG instances, which the {} backend cannot create: run on a "
            "GPU with MIG through the nvml backend, or use --mechanism {}",
            inputs.backend->name(),
            find_program(options.mps_control_program) ? "mps or naive" : "naive or exclusive"));
      }
      return std::unique_ptr<Mechanism>(std::make_unique<MigMechanism>(
          mig_state_dir(options), *inputs.backend, inputs.jobs, system_clock()));
  }
  return Error(fmt::format("make_mechanism: unknown mechanism kind {}", static_cast<int>(kind)));
}

Result<MpsUsersChoice> decide_mps_users(MpsUsers requested, const MechanismOptions& options) {
  const bool root = ::geteuid() == 0;
  bool offers = false;
  // Only a choice that could be shared needs the driver's word.
  if (requested != MpsUsers::kSeparate && root) {
    ProcessMpsControl control(options.mps_control_program, system_clock());
    Result<CommandOutput> help = control.help();
    if (help.ok()) {
      offers = help_offers_multiuser(help->stdout_text + "\n" + help->stderr_text);
    } else if (requested == MpsUsers::kShared) {
      return help.error().with_context(
          "--mps-users shared: cannot read the MPS control "
          "program's help text");
    }
  }
  return choose_mps_users(requested, offers, root, ::geteuid(), options.mps_control_program);
}

MpsUsersChoice prove_shared_mps(const MpsUsersChoice& choice, const MechanismOptions& options,
                                gid_t group, const std::string& gpu_uuid, MpsUserProbe& probe) {
  if (!choice.shared) return choice;
  Clock& clock = system_clock();
  ProcessMpsControl control(options.mps_control_program, clock);
  ProcFsProcessFinder finder;
  MpsDaemonOptions daemon = daemon_options(options);
  daemon.multiuser_group = group;
  daemon.visible_devices = gpu_uuid;
  Result<std::unique_ptr<MpsDaemon>> started = MpsDaemon::start(daemon, control, finder, clock);
  if (!started.ok()) return after_mps_probe(choice, started.error());
  Environment env = (*started)->control_environment();
  env["CUDA_VISIBLE_DEVICES"] = gpu_uuid;
  const Result<MpsProbeOutcome> outcome = probe.run(env);
  if (Status stopped = (*started)->stop(); !stopped.ok()) {
    return after_mps_probe(choice, stopped.error().with_context("stopping the probe's daemon"));
  }
  return after_mps_probe(choice, outcome);
}

Result<std::vector<std::string>> cleanup_stale_mps_daemons(const MechanismOptions& options) {
  Clock& clock = system_clock();
  ProcessMpsControl control(options.mps_control_program, clock);
  ProcFsProcessFinder finder;
  return cleanup_stale_mps_daemons(daemon_options(options), control, finder, clock);
}

Result<std::vector<std::string>> cleanup_stale_mig_instances(const MechanismOptions& options,
                                                             GpuBackend& backend) {
  MigControl* mig = backend.mig_control();
  std::vector<DeviceInfo> devices;
  if (mig != nullptr) {
    Result<std::vector<DeviceInfo>> listed = backend.devices();
    if (!listed.ok()) return listed.error();
    devices = std::move(listed).value();
  }
  return cleanup_stale_mig_instances(mig_state_dir(options), mig, devices);
}

}  // namespace colo
