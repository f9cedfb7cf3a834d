// RunController: carries out one `colo run`, as an ordered list of steps:
//
//   1. clean up after an earlier colo that died (stale runs -> interrupted,
//      leftover MPS daemons stopped, MIG instances it created destroyed)
//   2. choose the devices and lock them (GpuLocks: wait while another colo
//      holds one); record the run and its jobs (all queued)
//   3. prepare the mechanism (e.g. start the private MPS daemon), then start
//      the shared data loaders the jobs' datasets need
//   4. start the engine (its GPU sampler and policy) and submit every job
//   5. loop: RunEngine::tick() (place, start, follow, reap, requeue, write
//      samples and events, check the mechanism) until every job has ended
//   6. stop the sampler, write the last samples; stop the data loaders and
//      record what they did
//   7. tear the mechanism down
//   8. close the run with its final state; release the GPUs
//
// Step 1 also removes the shared memory of data loaders whose colo died.
// Teardown (6-8) runs on every path out of step 5: normal end, Ctrl-C (jobs
// get TERM, then KILL after the grace period, and end cancelled), a job
// crash, or an error. A colo killed with SIGKILL cannot run it; step 1 of the
// next run does the cleaning instead.
//
// Every job ends in a recorded state. Not thread-safe; runs on the caller's
// thread (the sampler has its own).
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/profiles.h"
#include "common/clock.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "gpu/gpu_lock.h"
#include "jobs/cgroup.h"
#include "jobs/job_spec.h"
#include "sharing/mechanism.h"
#include "slurm/allocation.h"
#include "store/run_store.h"

namespace colo {

// How a colo process takes its GPUs (see GpuLocks).
struct LockOptions {
  std::string dir;      // empty: default_gpu_lock_dir()
  bool wait = true;     // false: refuse when another colo holds a GPU
  std::string command;  // what the holder is doing, for others to read; empty: the command line
};

struct RunOptions {
  // Where job logs and progress files go; default <state dir>/runs.
  std::string logs_root;
  // The GPUs (backend indices) the run may use; empty: every GPU found (in a
  // Slurm allocation: every GPU Slurm gave the job).
  std::vector<int> only_devices;
  // The Slurm allocation colo runs in (slurm_allocation()): limits the GPUs
  // (usable_devices()) and is recorded with the run.
  std::optional<SlurmAllocation> slurm;
  // Overrides the job file's [run] max_per_gpu.
  std::optional<int> max_jobs_per_gpu;
  // "fixed" or "auto"; overrides the job file's [run] policy (default auto).
  std::optional<std::string> policy;
  LockOptions locks;
  // Auto policy: how long a probe measures a job with no profile alone, at
  // most. Its first profile goes to the scheduler once it ended an epoch
  // and its memory was sampled after that (the rest of its family may then
  // start up beside it); the probe measures on until two progress rates
  // were seen, another job on its GPU reported progress, or this long.
  int64_t probe_ms = 60'000;
  // Device sampling period.
  int64_t sample_period_ms = 500;
  // Time between TERM and KILL when stopping jobs.
  int64_t stop_grace_ms = 10'000;
  // How often the loop wakes (reaps, reads progress, places jobs).
  int64_t tick_ms = 200;
  // How often samples and events are written to the store (one transaction).
  int64_t flush_ms = 1000;
  // At the end of a run, how long colo keeps trying to write what the store
  // could not take (locked by another colo, disk full) before it gives up,
  // naming what was not recorded.
  int64_t store_retry_ms = 60'000;
  // $COLO_CGROUP_PARENT: the cgroup under which jobs' cgroups are made, or
  // "off" for process groups only; empty: chosen as jobs/cgroup.h says.
  std::string cgroup_parent_override;
  // Redraw one line per job in place (a terminal) instead of printing events.
  bool live_display = false;
  // Recorded with the run.
  std::string command_line;
  // Parent of data/, the data loaders' ownership records; default the state dir.
  std::string state_dir;
  // See EngineOptions::profiles_elsewhere.
  std::vector<LearnedProfile> profiles_elsewhere;
};

// Everything the controller talks to, borrowed. Tests pass fakes.
struct RunContext {
  Clock& clock;
  GpuBackend& backend;
  RunStore& store;
  Mechanism& mechanism;
  MechanismOptions mechanism_options;  // for stale MPS daemon and MIG instance cleanup
  std::ostream& out;                   // progress display and messages
  // Incremented by the signal handler: 1 = stop gracefully, 2+ = kill now.
  const std::atomic<int>& stop_requests;
};

struct RunOutcome {
  int64_t run_id = 0;
  RunState state = RunState::kOk;
  int jobs_ok = 0;
  int jobs_not_ok = 0;
};

// The devices of `found` whose indices are in `wanted` (in that order,
// repeats once); an error names an index that is not there.
Result<std::vector<DeviceInfo>> select_devices(const std::vector<DeviceInfo>& found,
                                               const std::vector<int>& wanted);

// The steps `colo run` and `colo serve` share.

// Step 1: the runs of a colo that is gone are interrupted (the store did that
// when it opened; their leftover job processes are stopped here), and the MPS
// daemons and MIG instances it left are removed. Says what it did on `out`.
Status clean_up_after_dead_colo(RunStore& store, const MechanismOptions& mechanism_options,
                                GpuBackend& backend, std::ostream& out);

// The GPUs a run or the service may use: every GPU the backend finds (inside
// a Slurm allocation, those Slurm gave the job), or those of them `wanted`
// names. The one place where that choice is made.
Result<std::vector<DeviceInfo>> run_devices(GpuBackend& backend, const std::vector<int>& wanted,
                                            const std::optional<SlurmAllocation>& slurm);

// Takes the machine-wide locks of `devices`, saying on `out` whom it waits
// for; a stop request ends the wait.
Result<std::unique_ptr<GpuLocks>> lock_devices(const std::vector<DeviceInfo>& devices,
                                               const LockOptions& options, Clock& clock,
                                               const std::atomic<int>& stop_requests,
                                               std::ostream& out);

// The run record for the store: now, this process, this host, the Slurm job.
NewRun new_run_record(Clock& clock, const Mechanism& mechanism, const GpuBackend& backend,
                      const std::string& job_file, const std::string& command_line,
                      const std::vector<DeviceInfo>& devices,
                      const std::optional<SlurmAllocation>& slurm);

// The cgroup under which each job of a run or the service gets its own
// (jobs/cgroup.h): under `parent_override` ($COLO_CGROUP_PARENT; "off" for
// none), else where jobs/cgroup.h chooses. None: jobs run in their process
// groups only, which `out` is told with the reason.
std::optional<RunCgroup> make_run_cgroup(const std::string& parent_override, std::ostream& out);

// Runs every job of `file`. Errors are returned only when the run could not
// take place at all (no device, store unwritable, mechanism failed to
// start); the jobs of a run that started are then recorded as failed.
Result<RunOutcome> run_job_file(const JobFile& file, const RunOptions& options,
                                RunContext& context);

// The default mechanism when neither the command line nor the job file names
// one: mps where the backend is real and the MPS control program is on PATH,
// naive otherwise.
MechanismKind default_mechanism(const GpuBackend& backend, const std::string& mps_control_program);

}  // namespace colo
