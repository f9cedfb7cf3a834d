// run_job_file: one `colo run`. Its life cycle is RunSession's (clean up
// after a dead colo, take and lock the GPUs, record the run, start the
// mechanism; one close on every path out); what is its own is the job file:
// its jobs recorded (before the mechanism starts, so that a mechanism that
// cannot start leaves them recorded failed), their logs' directory, the
// shared data loaders their datasets need, and the loop that submits every
// job to the engine and ticks until all have ended. Ctrl-C cancels: jobs get
// TERM, then KILL after the grace period (at once on a second Ctrl-C), and
// end cancelled. A colo killed with SIGKILL cannot close its session; the
// next colo's clean-up does it instead.
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
#include "jobs/job_spec.h"
#include "run/run_session.h"
#include "run/stall_watch.h"
#include "sharing/mechanism.h"
#include "slurm/allocation.h"
#include "store/run_store.h"

namespace colo {

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
  // When a job counts as stalled (`--stall-timeout`).
  StallOptions stall;
  // What a job may leave on disk (EngineOptions: `--max-log-size`,
  // `--keep-checkpoints`).
  uint64_t max_log_bytes = uint64_t{64} << 20;
  int64_t keep_checkpoints_ms = 0;
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
  RunLabel label;
  // Parent of data/, the data loaders' ownership records; default the state dir.
  std::string state_dir;
  // See EngineOptions::profiles_elsewhere.
  std::vector<LearnedProfile> profiles_elsewhere;
  // `colo run --resume`: by job, as the file's jobs, the checkpoint directory
  // each had in the run it resumes (run/resume.h), in place of a new one.
  std::vector<std::string> checkpoint_dirs;
  // `colo run --resume`: the run it resumes, and by job the job each
  // continues (recorded: RunRow::resumes_run, JobRow::resumes).
  std::optional<int64_t> resumes_run;
  std::vector<int64_t> resumes_jobs;
};

// Everything `colo run` talks to, borrowed (the session's). Tests pass fakes.
using RunContext = SessionContext;

struct RunOutcome {
  int64_t run_id = 0;
  RunState state = RunState::kOk;
  int jobs_ok = 0;
  int jobs_not_ok = 0;
};

// Runs every job of `file`. Errors are returned only when the run could not
// take place at all (no device, store unwritable, mechanism failed to
// start); the jobs of a run that started are then recorded as failed.
Result<RunOutcome> run_job_file(const JobFile& file, const RunOptions& options,
                                RunContext& context);

}  // namespace colo
