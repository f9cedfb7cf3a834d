// The mps mechanism: jobs share each GPU as clients of one private MPS
// control daemon that colo starts for the run and stops afterwards.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "sharing/mechanism.h"
#include "sharing/mps_control.h"
#include "sharing/mps_daemon.h"
#include "sharing/process_finder.h"

namespace colo {

// One MpsDaemon serves all the run's GPUs: prepare() starts it with
// CUDA_VISIBLE_DEVICES set to the UUIDs of those GPUs; each job then gets
//   CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY  (the private daemon's)
//   CUDA_VISIBLE_DEVICES=<its GPU's UUID>
//   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=<sm_share_pct>        when set
//   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=<memory limit in MiB>M  when set
// (device ordinal 0, since each job sees only its own GPU); a placement
// `outside_mps` gets CUDA_VISIBLE_DEVICES alone. A job of another user
// (Placement::user) gets that user's own daemon, started at their first job
// and kept until teardown: the MPS control daemon runs the servers of
// different users one after another, never together, so a second user's job
// through the first user's daemon would wait, holding its place, until every
// job of the first had ended (measured on an H200:
// docs/results/2026-11-29-h200-mps-two-users). Servers of separate daemons
// share the GPU as contexts do, time-sliced. Where colo runs as root and the
// control program offers it, options.multiuser_group makes the one daemon a
// multi-user one instead (`-d -M`, sharing/mps_users.h): every user's jobs
// are clients of its one root server, together, and a user's first job is
// refused, naming the directory, when that user cannot reach its pipe
// directory. teardown() and the destructor stop every daemon, so none
// outlives the run on any exit path that unwinds.
//
// Owns the daemon, the control seam and the process finder; borrows `clock`,
// which must outlive it. Not thread-safe.
class MpsMechanism final : public Mechanism {
 public:
  // `options.state_dir` must be set.
  MpsMechanism(MpsDaemonOptions options, std::unique_ptr<MpsControl> control,
               std::unique_ptr<ProcessFinder> finder, Clock& clock);
  ~MpsMechanism() override;

  MechanismKind kind() const override { return MechanismKind::kMps; }
  // MPS serves at most 48 clients per device (Volta and later).
  int max_jobs_per_device() const override { return 48; }
  // A daemon per user: their servers take turns on a GPU. One multi-user
  // daemon: no.
  bool users_time_slice() const override { return !options_.multiuser_group.has_value(); }
  Status prepare(const std::vector<DeviceInfo>& devices) override;
  Result<Environment> environment_for(const Placement& placement) override;
  // The control daemon answers. Also notes the daemon's processes (control
  // daemon, servers) by pid and start time: one seen at the last check and
  // gone now, or replaced by another under its pid, died (the control daemon
  // starts a new server for the next client), at a time between the two checks.
  Status health_check() override;
  // Notes the daemon's processes, as health_check() does, without asking the
  // control daemon anything.
  void watch() override;
  // Runs health_check(); an error when it fails, or when an MPS process died
  // less than kDeathBlamedForMs before: a job that failed since the server's
  // last good sighting is taken to have failed with it, however many checks
  // ran in between. The error names the server and its log.
  Status check_after_job_failure() override;

  // How long after a death is found that job failures are put down to it.
  static constexpr int64_t kDeathBlamedForMs = 30'000;
  Status teardown() override;

  // The running daemon of colo's own user, or nullptr before prepare() and
  // after teardown().
  const MpsDaemon* daemon() const { return daemon_.get(); }
  // How many daemons run for other users' jobs.
  size_t user_daemons() const { return user_daemons_.size(); }

 private:
  // The daemon a placement's job is a client of: colo's own, or its user's
  // (started here on their first job).
  Result<MpsDaemon*> daemon_for(const Placement& placement);
  // Every running daemon, colo's own first.
  std::vector<MpsDaemon*> daemons() const;
  // Notes the daemon's processes (see health_check()): at every check, at
  // prepare() and before each placement, so that a server is seen before
  // it can die.
  void note_processes();

  MpsDaemonOptions options_;
  std::unique_ptr<MpsControl> control_;
  std::unique_ptr<ProcessFinder> finder_;
  Clock& clock_;
  std::vector<DeviceInfo> devices_;
  std::string visible_devices_;        // the daemons' CUDA_VISIBLE_DEVICES
  std::unique_ptr<MpsDaemon> daemon_;  // destroyed before control_ and finder_
  std::map<uid_t, std::unique_ptr<MpsDaemon>> user_daemons_;  // likewise
  std::set<uid_t> reach_checked_;  // users found to reach a multi-user daemon's pipe dir
  struct Seen {
    uint64_t start_ticks = 0;
    std::string log_dir;  // its daemon's
  };
  struct Death {
    int pid = 0;
    int64_t last_seen_ms = 0;  // monotonic: the last check that saw it
    int64_t found_ms = 0;      // the check that found it gone
    std::string log_dir;
  };
  std::map<int, Seen> seen_processes_;  // pid -> what it was, at the last check
  int64_t last_check_ms_ = 0;
  std::vector<Death> deaths_;  // found less than kDeathBlamedForMs ago
};

// cleanup_stale_mps_daemons() over explicit seams: for each
// <options.state_dir>/*/owner.json written on this host by a colo process
// that is no longer alive, stops that daemon and removes its directory.
Result<std::vector<std::string>> cleanup_stale_mps_daemons(const MpsDaemonOptions& options,
                                                           MpsControl& control,
                                                           ProcessFinder& finder, Clock& clock);

}  // namespace colo
