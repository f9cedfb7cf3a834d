// What one attempt of a job starts with: the LaunchRequest the engine hands
// JobSupervisor (argv, working directory, environment layers, log path, its
// user), the files that must exist before it starts, its host limits, and its
// profiling window. Starts nothing; the engine (run/run_engine.cc) adds the
// cgroup and starts the request.
//
// The environment, lowest layer first: the spec's env, the caller's extras
// (COLO_JOB_ID, COLO_DATA_SOCKET), the mechanism's (CUDA_VISIBLE_DEVICES, MPS
// pipes), then colo's own: its GPUs and their count, a port where asked
// (jobs/rendezvous.h), PYTHONPATH with colo's Python client, the progress
// file, the job's name, the run's id and tokens, checkpoint and profile
// directories.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "jobs/cgroup.h"
#include "jobs/job_supervisor.h"
#include "run/engine_job.h"
#include "sharing/mechanism.h"

namespace colo {

struct LaunchInputs {
  const EngineJob& job;
  std::string log_path;  // this attempt's (attempt_log_path)
  const Environment& mechanism_env;
  std::vector<int> gpus;  // its GPUs, in the order CUDA numbers them (Placement::devices)
  int64_t run_id = 0;
  std::string run_token;
  // Appended to its PYTHONPATH; nullopt: PYTHONPATH untouched.
  std::optional<std::string> python_client_dir;
  // colo's own PYTHONPATH, the job's starting point when neither its
  // environment nor its base environment sets one.
  std::optional<std::string> own_python_path;
};

// The request for one attempt (no cgroup yet). Fails only when the job asks
// for a port and none is free.
Result<LaunchRequest> launch_request(const LaunchInputs& in);

// "0,1": the GPUs as COLO_GPUS gives them.
std::string gpu_list(const std::vector<int>& gpus);

// Its host limits: its spec's, else the defaults (`colo serve --job-host-memory`, `--job-cpus`).
CgroupLimits job_limits(const JobSpec& spec, const CgroupLimits& defaults);

// Creates what the job needs before it starts, for its user: its log
// directory (0711, so that a job run as its submitter reaches its progress
// file), its checkpoint directory and (when it profiles or runs as another
// user) its profile directory (0700, parents 0711), and its progress file.
Status prepare_job_files(const EngineJob& job);

// What the job's `profile` window did to its request, when it has one.
struct ProfileSetup {
  std::string event;     // for the engine's events (after the job's label); "" for none
  std::string log_note;  // for its log once it started; "" for none
};
// The job's `profile` window at the start of its attempt `attempt`: the
// Python client told through COLO_PROFILE_* (torch), or its command wrapped
// in nsys or ncu, found at `tool_path` (nullopt: not on PATH, so it runs
// unprofiled and its log says so). Its output goes to `profile_dir`. ncu
// profiles an MPS client (`request` carries CUDA_MPS_PIPE_DIRECTORY) as one
// of a pair, `<colo_binary> ncu-mps-pair` (profiling/ncu_launch.h), on a
// free port of its own, waiting for the machine's one ncu MPS control in
// `lock_dir`.
struct NcuPairHost {
  std::string colo_binary;
  std::string lock_dir;
};
ProfileSetup profile_window(const ProfileSpec& profile, const std::string& profile_dir, int attempt,
                            const std::optional<std::string>& tool_path, const NcuPairHost& host,
                            LaunchRequest& request);

}  // namespace colo
