#include "sharing/mechanism.h"

#include <fmt/format.h>

#include "common/paths.h"
#include "sharing/mps_mechanism.h"
#include "sharing/plain_sharing.h"

namespace colo {
namespace {

MpsDaemonOptions daemon_options(const MechanismOptions& options) {
  MpsDaemonOptions daemon;
  daemon.state_dir = options.state_dir.empty() ? default_state_dir() + "/mps" : options.state_dir;
  daemon.control_program = options.mps_control_program;
  daemon.start_timeout_ms = options.mps_start_timeout_ms;
  return daemon;
}

// The real clock, shared by every mechanism (it is stateless and thread-safe).
Clock& system_clock() {
  static SystemClock clock;
  return clock;
}

}  // namespace

std::string to_string(MechanismKind kind) {
  switch (kind) {
    case MechanismKind::kExclusive:
      return "exclusive";
    case MechanismKind::kNaive:
      return "naive";
    case MechanismKind::kMps:
      return "mps";
  }
  return "unknown";
}

Result<MechanismKind> parse_mechanism(std::string_view text) {
  for (MechanismKind kind :
       {MechanismKind::kExclusive, MechanismKind::kNaive, MechanismKind::kMps}) {
    if (text == to_string(kind)) return kind;
  }
  return Error(
      fmt::format("unknown sharing mechanism '{}'; valid mechanisms: exclusive, naive, mps", text));
}

Result<std::unique_ptr<Mechanism>> make_mechanism(MechanismKind kind,
                                                  const MechanismOptions& options) {
  switch (kind) {
    case MechanismKind::kExclusive:
    case MechanismKind::kNaive:
      return std::unique_ptr<Mechanism>(std::make_unique<PlainSharing>(kind));
    case MechanismKind::kMps: {
      Clock& clock = system_clock();
      return std::unique_ptr<Mechanism>(std::make_unique<MpsMechanism>(
          daemon_options(options),
          std::make_unique<ProcessMpsControl>(options.mps_control_program, clock),
          std::make_unique<ProcFsProcessFinder>(), clock));
    }
  }
  return Error(fmt::format("make_mechanism: unknown mechanism kind {}", static_cast<int>(kind)));
}

Result<std::vector<std::string>> cleanup_stale_mps_daemons(const MechanismOptions& options) {
  Clock& clock = system_clock();
  ProcessMpsControl control(options.mps_control_program, clock);
  ProcFsProcessFinder finder;
  return cleanup_stale_mps_daemons(daemon_options(options), control, finder, clock);
}

}  // namespace colo
