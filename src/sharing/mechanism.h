// Mechanism: how several jobs share one GPU. It prepares the GPUs for a run,
// gives each job the environment it must run with, checks its own health, and
// tears down on every exit path. It never decides what runs where (sched/ does).
//
// Implementations: exclusive (one job per GPU at a time, the baseline), naive
// (plain processes sharing the GPU), mps (a private MPS control daemon), mig
// (a MIG compute instance per job, created for the run), made by
// make_mechanism() (make_mechanism.h), which alone knows them all.
//
// Threading: not thread-safe; the run engine's thread owns it.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "mig/mig_job_layout.h"

namespace colo {

enum class MechanismKind { kExclusive, kNaive, kMps, kMig };

// "exclusive", "naive", "mps", "mig".
std::string to_string(MechanismKind kind);
Result<MechanismKind> parse_mechanism(std::string_view text);

// The Unix user a job runs as, when it is not colo's own (a service running
// as root runs each job as its submitter).
struct ClientUser {
  uid_t uid = 0;
  gid_t gid = 0;              // primary group
  std::vector<gid_t> groups;  // supplementary groups
};

// One job placed on one device, or a gang on several.
struct Placement {
  std::string job_name;
  int device = 0;                              // the GPU: DeviceInfo::index
  std::optional<int> sm_share_pct;             // 1-100; MPS active thread percentage
  std::optional<uint64_t> memory_limit_bytes;  // MPS pinned device memory limit, per GPU
  std::vector<int> gang_devices;               // a gang's GPUs, `device` first; else empty
  // mps: the job runs outside the shared MPS server, as a plain process in a
  // CUDA context of its own (a suspected fault's cause, run alone, so that a
  // fault it raises again reaches no other job). Other mechanisms ignore it.
  bool outside_mps = false;
  // mps: an opportunistic job (docs/policy.md, "Protected and opportunistic
  // jobs") starts as an MPS client of below-normal priority
  // (CUDA_MPS_CLIENT_PRIORITY=1) and, when colo chose one, with at most
  // `opportunistic_thread_pct` percent of the SMs' threads (1-100; the
  // smaller of it and sm_share_pct where both are set). MPS fixes both when
  // the client starts. Other mechanisms ignore them.
  bool opportunistic = false;
  std::optional<int> opportunistic_thread_pct;
  // Whose process the job is, when not colo's own user; mps gives each user
  // an MPS daemon of their own (the default daemon never runs two users'
  // servers at once), or, multi-user, checks that they reach its pipe directory.
  std::optional<ClientUser> user;
  // Its GPUs, in the order CUDA numbers them for the job.
  std::vector<int> devices() const {
    return gang_devices.empty() ? std::vector<int>{device} : gang_devices;
  }
};

using Environment = std::map<std::string, std::string>;

class Mechanism {
 public:
  virtual ~Mechanism() = default;

  virtual MechanismKind kind() const = 0;

  // How many jobs may share one device at once under this mechanism, before
  // the job file's own limit applies (exclusive: 1; naive: unlimited, reported
  // as a large number; mps: 48 clients per device on Volta and later).
  virtual int max_jobs_per_device() const = 0;

  // Whether jobs of different Unix users on one GPU take turns (time-sliced)
  // where jobs of one user would run together: mps with a daemon per user,
  // whose servers share a GPU as plain contexts do. The policy models such a
  // pair as naive sharing and keeps users apart where it can. Default: no.
  virtual bool users_time_slice() const { return false; }

  // Makes the devices ready (MPS: starts the private daemon). Called once
  // before any job starts. On error nothing is left running.
  virtual Status prepare(const std::vector<DeviceInfo>& devices) = 0;

  // Environment variables the job must run with, on top of its own: at least
  // CUDA_VISIBLE_DEVICES=<device uuid>; for mps the pipe directory and limits.
  virtual Result<Environment> environment_for(const Placement& placement) = 0;

  // Cheap check that the mechanism still works (MPS: the daemon answers).
  virtual Status health_check() = 0;

  // Notes, more often than health_check() and more cheaply, what may die under
  // the jobs (MPS: the daemon's processes, so that a server that lives a few
  // seconds is seen before it dies). Default: nothing.
  virtual void watch() {}

  // Called when a job under this mechanism ended in failure: an error when
  // the mechanism itself failed under it (MPS: the control daemon no longer
  // answers, or an MPS server seen earlier is gone), so that the job can be
  // run again with that reason instead of failing. Default: health_check().
  virtual Status check_after_job_failure() { return health_check(); }

  // Releases everything prepare() created. Idempotent; safe to call after a
  // failed prepare() and from every exit path.
  virtual Status teardown() = 0;
};

// How make_mechanism() sets up the mechanisms of this machine.
struct MechanismOptions {
  // Directory under which the mps mechanism keeps its private pipe and log
  // directories and its ownership record (default: <state dir>/mps).
  std::string state_dir;
  // The MPS control program; tests put a fake one on PATH or name it here.
  std::string mps_control_program = "nvidia-cuda-mps-control";
  // Milliseconds to wait for the MPS daemon to answer after start.
  int mps_start_timeout_ms = 10'000;
  // Set: the mps mechanism starts one multi-user daemon (`-d -M`) that serves
  // every user's jobs, reached through this group (MpsDaemonOptions::
  // multiuser_group; decide_mps_users() says when). Unset: a daemon per user.
  std::optional<gid_t> mps_multiuser_group;
  // Directory of the mig mechanism's ownership records (default: <state dir>/mig).
  std::string mig_state_dir;
};

// What the mig mechanism needs beyond the options; the others ignore it.
struct MechanismInputs {
  GpuBackend* backend = nullptr;   // borrowed; its MigControl creates the instances
  std::vector<MigJobDemand> jobs;  // the run's jobs, to lay out
};

}  // namespace colo
