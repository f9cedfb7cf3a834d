// EngineJob: a job as it is handed to a RunEngine (run/run_engine.h): its
// spec and the files, environment and accounting its caller (`colo run` or
// `colo serve`) chose for it. Plain data; the environment variables every
// job's process is given are named here too.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "jobs/job_spec.h"
#include "jobs/run_as.h"
#include "sched/scheduler.h"

namespace colo {

// Every job process carries COLO_RUN_TOKEN and COLO_JOB_TOKEN (run/leftovers.h).
// Every job gets a checkpoint directory, the same across its attempts.
inline constexpr const char* kCheckpointDirEnv = "COLO_CHECKPOINT_DIR";
inline constexpr const char* kProfileDirEnv = "COLO_PROFILE_DIR";
// Every job is told its GPUs by index ("0,1": a gang's several, in
// CUDA_VISIBLE_DEVICES order) and how many; a gang gets COLO_PORT too
// (jobs/rendezvous.h).
inline constexpr const char* kGpusEnv = "COLO_GPUS";
inline constexpr const char* kGpuCountEnv = "COLO_GPU_COUNT";

// A job handed to the engine.
struct EngineJob {
  JobSpec spec;
  // Its row in the store's jobs table; 0: the engine adds the row to the run
  // when the job first starts (the service's jobs, of which the queue is kept
  // elsewhere).
  int64_t id = 0;
  // Logs go to <log_stem>.log, later attempts to <log_stem>.attempt<N>.log.
  std::string log_stem;
  std::string progress_path;
  // COLO_CHECKPOINT_DIR; created (for the job's user) before it starts. Empty: none.
  std::string checkpoint_dir;
  // COLO_PROFILE_DIR (docs/profiling.md): where its profiling windows go and
  // where `colo profile` asks for one; created before it starts when its
  // spec has a profile window. Empty: none.
  std::string profile_dir;
  // The number of its first attempt here (a service restart continues the count).
  int attempt = 1;
  // Of the attempts before it, those that ended through no fault of its own
  // (the service's stop or crash, a neighbour's fault, a preemption): they
  // do not count against its attempts.
  int uncounted_before = 0;
  uint32_t owner = 0;           // who it is accounted to (fair share: set_usage())
  std::optional<RunAs> run_as;  // see LaunchRequest
  std::shared_ptr<const std::map<std::string, std::string>> base_env;  // see LaunchRequest
  // Extra environment (COLO_JOB_ID for service jobs).
  std::map<std::string, std::string> extra_env;
  // How events name the job; empty: its name ("12 resnet26#1" for service jobs).
  std::string label;
  // The shared data loader it reads through (its spec's dataset), for the
  // auto policy's host accounting; its COLO_DATA_SOCKET is in extra_env.
  std::optional<HostCost> host_cost;
  // The sweep whose trials its [early_stop] rule judges it among: what its
  // caller recorded (the service: the submission and its submitter), never
  // only what a client sent. Empty: its spec's source (file:line), as under
  // `colo run`, where one user's one job file is the run.
  std::string trials_of;
};

}  // namespace colo
