#include "sharing/mps_mechanism.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/names.h"
#include "sharing/plain_sharing.h"

namespace colo {

MpsMechanism::MpsMechanism(MpsDaemonOptions options, std::unique_ptr<MpsControl> control,
                           std::unique_ptr<ProcessFinder> finder, Clock& clock)
    : options_(std::move(options)),
      control_(std::move(control)),
      finder_(std::move(finder)),
      clock_(clock) {}

MpsMechanism::~MpsMechanism() {
  if (Status done = teardown(); !done.ok()) {
    fmt::print(stderr, "colo: {}\n", done.error().message());
  }
}

Status MpsMechanism::prepare(const std::vector<DeviceInfo>& devices) {
  if (daemon_) return Error("mps: prepare() called twice; call teardown() first");
  if (devices.empty()) return Error("mps: no GPUs to run on");
  std::string uuids;
  for (const DeviceInfo& device : devices) {
    if (device.uuid.empty()) {
      return Error(
          fmt::format("mps: device {} ({}) has no UUID; the MPS daemon and its clients "
                      "are given their GPUs by UUID",
                      device.index, device.name));
    }
    uuids += (uuids.empty() ? "" : ",") + device.uuid;
  }
  MpsDaemonOptions options = options_;
  options.visible_devices = uuids;
  visible_devices_ = uuids;
  Result<std::unique_ptr<MpsDaemon>> daemon =
      MpsDaemon::start(options, *control_, *finder_, clock_);
  if (!daemon.ok()) return daemon.error().with_context("mps");
  daemon_ = std::move(daemon).value();
  devices_ = devices;
  note_processes();
  return OkStatus();
}

Result<Environment> MpsMechanism::environment_for(const Placement& placement) {
  if (!daemon_) {
    return Error(
        fmt::format("mps: environment for job '{}' asked while no MPS daemon runs "
                    "(before prepare() or after teardown())",
                    placement.job_name));
  }
  Result<std::string> uuid = placement_device_uuid(devices_, placement);
  if (!uuid.ok()) return uuid.error().with_context("mps");
  if (placement.outside_mps) return Environment{{"CUDA_VISIBLE_DEVICES", *uuid}};
  Result<MpsDaemon*> daemon = daemon_for(placement);
  if (!daemon.ok()) return daemon.error();
  note_processes();  // the server the running jobs use, before another job joins it
  Environment env = (*daemon)->control_environment();
  env["CUDA_VISIBLE_DEVICES"] = *uuid;
  std::optional<int> thread_pct = placement.sm_share_pct;
  if (placement.sm_share_pct) {
    const int pct = *placement.sm_share_pct;
    if (pct < 1 || pct > 100) {
      return Error(fmt::format("mps: job '{}': sm_share must be 1-100 percent, got {}",
                               placement.job_name, pct));
    }
  }
  if (placement.opportunistic) {
    env["CUDA_MPS_CLIENT_PRIORITY"] = "1";  // below normal
    if (const std::optional<int>& cap = placement.opportunistic_thread_pct) {
      if (*cap < 1 || *cap > 100) {
        return Error(
            fmt::format("mps: job '{}': an opportunistic thread percentage must be 1-100, got {}",
                        placement.job_name, *cap));
      }
      thread_pct = std::min(*cap, thread_pct.value_or(100));
    }
  }
  if (thread_pct) env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(*thread_pct);
  if (placement.memory_limit_bytes) {
    const uint64_t mib = *placement.memory_limit_bytes >> 20;
    if (mib == 0) {
      return Error(
          fmt::format("mps: job '{}': memory_limit of {} bytes is below MPS's 1 MiB "
                      "granularity",
                      placement.job_name, *placement.memory_limit_bytes));
    }
    // Whole MiB, rounded down so the job never gets more than asked for;
    // each of a gang's GPUs by its ordinal.
    std::string limits;
    for (size_t ordinal = 0; ordinal < placement.devices().size(); ++ordinal)
      limits += fmt::format("{}{}={}M", ordinal == 0 ? "" : ",", ordinal, mib);
    env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = limits;
  }
  return env;
}

Result<MpsDaemon*> MpsMechanism::daemon_for(const Placement& placement) {
  if (!placement.user || placement.user->uid == ::geteuid()) return daemon_.get();
  const uid_t uid = placement.user->uid;
  if (daemon_->multiuser()) {
    if (!reach_checked_.contains(uid)) {
      if (Status reach = daemon_->reachable_by(*placement.user); !reach.ok()) {
        return reach.error().with_context(
            fmt::format("mps: job '{}' of user {}", placement.job_name, uid));
      }
      reach_checked_.insert(uid);
    }
    return daemon_.get();
  }
  if (auto it = user_daemons_.find(uid); it != user_daemons_.end()) return it->second.get();
  MpsDaemonOptions options = options_;
  options.visible_devices = visible_devices_;
  options.client = placement.user;
  Result<std::unique_ptr<MpsDaemon>> daemon =
      MpsDaemon::start(options, *control_, *finder_, clock_);
  if (!daemon.ok()) {
    return daemon.error().with_context(fmt::format(
        "mps: job '{}': starting an MPS daemon for user {}'s jobs", placement.job_name, uid));
  }
  return user_daemons_.emplace(uid, std::move(daemon).value()).first->second.get();
}

std::vector<MpsDaemon*> MpsMechanism::daemons() const {
  std::vector<MpsDaemon*> all;
  if (daemon_) all.push_back(daemon_.get());
  for (const auto& [uid, daemon] : user_daemons_) all.push_back(daemon.get());
  return all;
}

Status MpsMechanism::health_check() {
  if (!daemon_) return Error("mps: no MPS daemon runs (before prepare() or after teardown())");
  Status health = OkStatus();
  for (MpsDaemon* daemon : daemons()) {
    health = daemon->health_check();
    if (!health.ok()) break;
  }
  note_processes();
  return health;
}

void MpsMechanism::watch() {
  if (daemon_) note_processes();
}

void MpsMechanism::note_processes() {
  const int64_t now = clock_.monotonic_ms();
  std::map<int, Seen> current;
  for (MpsDaemon* daemon : daemons()) {
    for (const ProcessInfo& p : daemon->daemon_processes())
      current[p.pid] = {p.start_ticks, daemon->log_dir()};
  }
  for (const auto& [pid, seen] : seen_processes_) {
    auto it = current.find(pid);
    if (it == current.end() || it->second.start_ticks != seen.start_ticks)
      deaths_.push_back({pid, last_check_ms_, now, seen.log_dir});
  }
  std::erase_if(deaths_, [now](const Death& d) { return now - d.found_ms > kDeathBlamedForMs; });
  seen_processes_ = std::move(current);
  last_check_ms_ = now;
}

Status MpsMechanism::check_after_job_failure() {
  if (!daemon_) return Error("mps: no MPS daemon runs");
  if (Status health = health_check(); !health.ok()) return health;
  if (deaths_.empty()) return OkStatus();
  const Death& d = deaths_.back();
  return Error(fmt::format(
      "the MPS server (pid {}) is gone: it died under its clients, between {:.1f} s and {:.1f} s "
      "before this failure was seen (its log: {}/server.log)",
      d.pid, static_cast<double>(last_check_ms_ - d.last_seen_ms) / 1000.0,
      static_cast<double>(last_check_ms_ - d.found_ms) / 1000.0, d.log_dir));
}

Status MpsMechanism::teardown() {
  devices_.clear();
  seen_processes_.clear();
  deaths_.clear();
  Status stopped = OkStatus();
  for (MpsDaemon* daemon : daemons()) {
    if (Status s = daemon->stop(); !s.ok() && stopped.ok()) stopped = s;
  }
  user_daemons_.clear();
  reach_checked_.clear();
  daemon_.reset();
  if (!stopped.ok()) return stopped.error().with_context("mps teardown");
  return OkStatus();
}

Result<std::vector<std::string>> cleanup_stale_mps_daemons(const MpsDaemonOptions& options,
                                                           MpsControl& control,
                                                           ProcessFinder& finder, Clock& clock) {
  std::vector<std::string> lines;
  std::error_code ec;
  if (!std::filesystem::is_directory(options.state_dir, ec)) return lines;
  std::vector<std::string> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(options.state_dir, ec)) {
    if (entry.is_directory(ec) && std::filesystem::exists(entry.path() / kMpsOwnerFileName, ec)) {
      dirs.push_back(entry.path().string());
    }
  }
  if (ec) {
    return Error(
        fmt::format("cannot list MPS state directory {}: {}", options.state_dir, ec.message()));
  }
  std::sort(dirs.begin(), dirs.end());
  const std::string host = host_name();
  for (const std::string& dir : dirs) {
    Result<MpsOwnerRecord> owner = read_owner_record(dir + "/" + kMpsOwnerFileName);
    if (!owner.ok()) {
      lines.push_back(fmt::format("left {} alone: {}", dir, owner.error().message()));
      continue;
    }
    // A record from another host (shared home directory) says nothing about
    // processes here; a live owner is still using its daemon.
    if (owner->hostname != host) continue;
    if (finder.is_alive(static_cast<int>(owner->colo_pid))) continue;
    Result<std::unique_ptr<MpsDaemon>> daemon =
        MpsDaemon::adopt(dir, options, control, finder, clock);
    if (!daemon.ok()) {
      lines.push_back(daemon.error().message());
      continue;
    }
    Status stopped = (*daemon)->stop();
    if (stopped.ok()) {
      lines.push_back(fmt::format("stopped MPS daemon left by colo pid {} (pipe dir {})",
                                  owner->colo_pid, owner->pipe_dir));
    } else {
      lines.push_back(stopped.error().message());
    }
  }
  return lines;
}

}  // namespace colo
