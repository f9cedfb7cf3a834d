#include "run/job_launch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/paths.h"
#include "common/share_dir.h"
#include "jobs/progress_event.h"
#include "jobs/rendezvous.h"
#include "profiling/ncu_launch.h"
#include "run/leftovers.h"
#include "run/log_layout.h"

namespace colo {

std::string gpu_list(const std::vector<int>& gpus) {
  std::string out;
  for (int d : gpus) out += fmt::format("{}{}", out.empty() ? "" : ",", d);
  return out;
}

Result<LaunchRequest> launch_request(const LaunchInputs& in) {
  const EngineJob& job = in.job;
  const JobSpec& spec = job.spec;
  LaunchRequest request{spec.name,   spec.command, spec.working_dir, spec.env,
                        in.log_path, job.base_env, job.run_as,       {}};
  for (const auto& [k, v] : job.extra_env) request.env[k] = v;
  for (const auto& [k, v] : in.mechanism_env) request.env[k] = v;
  // Its GPUs (a gang's several), and a free port where it asked for one.
  request.env[kGpusEnv] = gpu_list(in.gpus);
  request.env[kGpuCountEnv] = std::to_string(in.gpus.size());
  if (Status port = fill_in_port(request, spec.gpus > 1); !port.ok()) return port.error();
  if (in.python_client_dir) {
    std::string current = in.own_python_path.value_or("");
    if (auto set = request.env.find("PYTHONPATH"); set != request.env.end()) {
      current = set->second;
    } else if (request.base_env) {
      auto base = request.base_env->find("PYTHONPATH");
      current = base == request.base_env->end() ? "" : base->second;
    }
    request.env["PYTHONPATH"] = append_python_path(current, *in.python_client_dir);
  }
  request.env[kProgressFileEnv] = job.progress_path;
  request.env["COLO_JOB_NAME"] = spec.name;
  request.env["COLO_RUN_ID"] = std::to_string(in.run_id);
  request.env[kRunTokenEnv] = in.run_token;
  request.env[kJobTokenEnv] = job_token(in.run_token, job.id);
  if (!job.checkpoint_dir.empty()) request.env[kCheckpointDirEnv] = job.checkpoint_dir;
  if (!job.profile_dir.empty()) request.env[kProfileDirEnv] = job.profile_dir;
  return request;
}

CgroupLimits job_limits(const JobSpec& spec, const CgroupLimits& defaults) {
  return CgroupLimits{spec.host_memory_bytes ? spec.host_memory_bytes : defaults.memory_bytes,
                      spec.cpus ? spec.cpus : defaults.cpus};
}

Status prepare_job_files(const EngineJob& j) {
  if (size_t slash = j.log_stem.rfind('/'); slash != std::string::npos && slash > 0) {
    // Jobs run as their submitters pass through to their progress files (0711).
    if (Status s = make_dirs(j.log_stem.substr(0, slash), 0711); !s.ok())
      return s.error().with_context("log directory");
  }
  // Its own directories: their parents only let the job's user through
  // (0711), the directory is theirs alone (0700). A job run as another user
  // has its profile directory from the start, where `colo profile` (root)
  // may ask it for a window later.
  auto own_dir = [&](const std::string& dir, const char* what) -> Status {
    if (Status s = make_dirs(dir, 0700, 0711); !s.ok()) return s.error().with_context(what);
    if (j.run_as) return give_to(dir, *j.run_as);
    return OkStatus();
  };
  if (!j.checkpoint_dir.empty()) {
    if (Status s = own_dir(j.checkpoint_dir, "checkpoint directory"); !s.ok()) return s;
  }
  if (!j.profile_dir.empty() && (j.spec.profile || j.run_as)) {
    if (Status s = own_dir(j.profile_dir, "profile directory"); !s.ok()) return s;
  }
  if (j.run_as) {
    int fd = open_regular_file(j.progress_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0)
      return Error(fmt::format("cannot create {}: {}", j.progress_path, std::strerror(errno)));
    ::close(fd);
    if (Status s = give_to(j.progress_path, *j.run_as); !s.ok()) return s;
  }
  return OkStatus();
}

ProfileSetup profile_window(const ProfileSpec& p, const std::string& profile_dir, int attempt,
                            const std::optional<std::string>& tool, const NcuPairHost& host,
                            LaunchRequest& request) {
  const auto seconds = [](int64_t ms) {
    return fmt::format("{:g}", static_cast<double>(ms) / 1000);
  };
  if (p.tool == "torch") {
    // The Python client opens the window (python/colo_progress.py).
    request.env["COLO_PROFILE"] = "torch";
    if (p.after_epoch) request.env["COLO_PROFILE_AFTER_EPOCH"] = std::to_string(*p.after_epoch);
    if (p.after_ms) request.env["COLO_PROFILE_AFTER_S"] = seconds(*p.after_ms);
    if (p.steps) request.env["COLO_PROFILE_STEPS"] = std::to_string(*p.steps);
    if (p.duration_ms) request.env["COLO_PROFILE_DURATION_S"] = seconds(*p.duration_ms);
    return {};
  }
  if (!tool) {
    std::string note = fmt::format(
        "profile: {} is not installed here (not on PATH), so this attempt runs unprofiled; "
        "install {} or use tool = \"torch\" (docs/profiling.md)",
        p.tool, p.tool == "nsys" ? "NVIDIA Nsight Systems" : "NVIDIA Nsight Compute");
    return {note, note};
  }
  const std::string out = profiler_output(profile_dir, p.tool, attempt);
  if (p.tool == "nsys") {
    std::vector<std::string> wrapped = {*tool, "profile",           "--output",
                                        out,   "--force-overwrite", "true"};
    if (p.after_ms) wrapped.insert(wrapped.end(), {"--delay", seconds(*p.after_ms)});
    if (p.duration_ms) wrapped.insert(wrapped.end(), {"--duration", seconds(*p.duration_ms)});
    wrapped.insert(wrapped.end(), request.argv.begin(), request.argv.end());
    request.argv = std::move(wrapped);
    return {fmt::format("profiled by nsys into {}", out), ""};
  }
  // ncu counts kernel launches, so `steps` is the number of kernels it
  // profiles (default 10), from the first.
  NcuLaunch ncu{*tool, out, p.steps.value_or(10), 0, request.argv, host.lock_dir};
  if (!request.env.contains("CUDA_MPS_PIPE_DIRECTORY")) {
    request.argv = ncu_alone_argv(ncu);
    return {fmt::format("profiled by ncu into {}", out), ""};
  }
  // A client of an MPS server: ncu's control beside the job, which runs
  // under `ncu --mps client`, both through colo's own `ncu-mps-pair`
  // (profiling/ncu_launch.h); it stays in the server, its levers as they are.
  Result<int> port = free_tcp_port();
  if (!port.ok()) {
    std::string note =
        fmt::format("profile: no free port for ncu's control ({}), so this attempt runs unprofiled",
                    port.error().message());
    return {note, note};
  }
  ncu.port = *port;
  request.argv = ncu_mps_pair_argv(host.colo_binary, ncu);
  const std::string note = fmt::format(
      "profiled by ncu into {} as a client of its MPS server (ncu's control beside it on port "
      "{}, the first {} kernels)",
      out, ncu.port, ncu.launch_count);
  return {note, note};
}

}  // namespace colo
