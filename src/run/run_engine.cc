#include "run/run_engine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ostream>

#include "analysis/profile_event.h"
#include "common/paths.h"
#include "common/proc_stat.h"
#include "common/remove_tree.h"
#include "common/stop_signal.h"
#include "common/units.h"
#include "gpu/gpu_lock.h"
#include "gpu/sim_backend.h"
#include "jobs/job_signature.h"
#include "jobs/log_cap.h"
#include "run/job_launch.h"
#include "run/job_runtime.h"
#include "run/log_layout.h"
#include "run/simulated_load.h"
#include "sharing/mig_mechanism.h"
#include "sharing/process_finder.h"

namespace colo {
namespace {

// The GPUs' names in events and reasons: "gpu0", "gpus 0,1".
std::string gpu_names(const std::vector<int>& gpus) {
  if (gpus.size() == 1) return fmt::format("gpu{}", gpus.front());
  return fmt::format("gpus {}", fmt::join(gpus, ","));
}

// Faults under MPS (see run_engine.h).
constexpr int64_t kFaultStopGraceMs = 2000;  // a fault's victims: TERM, then KILL after this
constexpr int64_t kFaultCpuReadMs = 1000;    // a watched job's CPU time is read this often

using Cause = StopCause::Kind;

}  // namespace

RunEngine::RunEngine(EngineContext ctx, EngineOptions options, int64_t run_id,
                     std::string run_token, std::vector<DeviceInfo> devices)
    : ctx_(ctx),
      options_(std::move(options)),
      run_{run_id, std::move(run_token)},
      devices_(std::move(devices)),
      supervisor_(ctx.clock),
      samples_(ctx.backend, ctx.clock, devices_, options_.sample_period_ms,
               options_.recent_samples_per_gpu),
      recovery_(ctx.mechanism, ctx.clock, options_.health_check_ms),
      display_(ctx.out, options_.live_display) {}

RunEngine::~RunEngine() {
  if (state_.phase == Phase::kStarted) samples_.stop();
}

int RunEngine::jobs_per_device_limit() const {
  int limit = ctx_.mechanism.max_jobs_per_device();
  if (options_.max_jobs_per_gpu) limit = std::min(limit, *options_.max_jobs_per_gpu);
  return std::max(1, limit);
}

void RunEngine::start() {
  PolicyInputs in{
      options_.policy, jobs_per_device_limit(),     ctx_.mechanism.kind(), ctx_.backend.simulated(),
      devices_,        options_.profiles_elsewhere, options_.quotas};
  in.users_time_slice = ctx_.mechanism.users_time_slice();
  EnginePolicy policy = make_engine_policy(ctx_.store, in);
  for (const std::string& line : policy.events) display_.event(line);
  known_ = std::move(policy.knowledge);
  scheduler_ = std::make_unique<OnChangeScheduler>(std::move(policy.scheduler));
  display_.event("policy: " + scheduler_->describe());
  if (std::string xid = ctx_.backend.xid_events_status(); !xid.empty())
    display_.event("note: " + xid);
  samples_.start();
  recovery_.start();
  state_.phase = Phase::kStarted;
  next_flush_ms_ = ctx_.clock.monotonic_ms();
}

std::string RunEngine::policy_description() const {
  return scheduler_ ? scheduler_->describe() : "";
}

// Tells the scheduler what is known about the job's signature (the store's
// profile merged over the job's hints), the first time it is seen.
void RunEngine::introduce(JobRuntime& job) {
  std::optional<PolicyKnowledge::Introduction> introduced =
      known_.introduce(job.signature, job.job.spec, job.job.host_cost);
  if (!introduced) return;
  scheduler_->introduce(job.signature, introduced->facts);
  if (introduced->known && options_.policy == "auto")
    display_.event(describe_known_profile(job.job.spec.group, *introduced->known));
}

size_t RunEngine::submit(EngineJob job) {
  auto runtime = std::make_unique<JobRuntime>();
  runtime->key = jobs_.size();
  runtime->attempt = std::max(1, job.attempt);
  runtime->signature = job_signature(job.spec);
  runtime->job = std::move(job);
  JobRuntime& j = *runtime;
  jobs_.push_back(std::move(runtime));
  introduce(j);
  scheduler_->enqueue(queued_as(j));
  return j.key;
}

SchedJob RunEngine::queued_as(const JobRuntime& j) const {
  return known_.queued_as(j.key, j.signature, j.job.spec, j.job.owner);
}

void RunEngine::event(const std::string& message) { display_.event(message); }

bool RunEngine::idle() const { return queued() == 0 && by_pid_.empty(); }

std::vector<size_t> RunEngine::running_keys() const {
  std::vector<size_t> keys;
  keys.reserve(by_pid_.size());
  for (const auto& [pid, key] : by_pid_) keys.push_back(key);
  return keys;
}

size_t RunEngine::queued() const {
  return (scheduler_ ? scheduler_->queued() : 0) + parked_.size();
}

int RunEngine::count(bool ok) const {
  return static_cast<int>(std::count_if(jobs_.begin(), jobs_.end(), [&](const auto& j) {
    return is_final(j->state) && ended_well(j->state) == ok;
  }));
}

void RunEngine::tick() {
  collect_samples();
  stop_doomed();
  reap();
  if (!state_.stopping && !state_.held && recovery_.down().empty() && !placement_paused() &&
      scheduler_->due(ctx_.clock.monotonic_ms()))
    place();
  read_progress();
  check_stalls();
  finish_probes();
  const int64_t now = ctx_.clock.monotonic_ms();
  if (now >= next_flush_ms_) {
    flush();
    next_flush_ms_ = now + options_.flush_ms;
  }
  write_store();
  const auto say = [this](const std::string& line) { display_.event(line); };
  if (!recovery_.down().empty()) {
    if (by_pid_.empty() && !state_.stopping) recovery_.restart(devices_, say);
  } else if (recovery_.check(!by_pid_.empty() || queued() > 0, say)) {
    stop_mechanism_victims();
  }
  redraw();
}

void RunEngine::finish() {
  if (state_.phase == Phase::kFinished) return;
  if (state_.phase == Phase::kStarted) samples_.stop();
  state_.phase = Phase::kFinished;
  collect_samples();
  flush();
  write_store();
  display_.finish();
  SamplerStats stats = samples_.stats();
  if (stats.wall_ms > 0) {
    ctx_.out << fmt::format(
        "sampler: {} device samples, {} process samples, {} errors, {:.2f}% of one core\n",
        stats.device_samples, stats.process_samples, stats.errors,
        100.0 * static_cast<double>(stats.thread_cpu_ms) / static_cast<double>(stats.wall_ms));
  }
}

const DeviceInfo& RunEngine::device(int index) const {
  auto it = std::find_if(devices_.begin(), devices_.end(),
                         [&](const DeviceInfo& d) { return d.index == index; });
  return it != devices_.end() ? *it : devices_.front();
}

std::string RunEngine::log_path(const JobRuntime& job) const {
  return attempt_log_path(job.job.log_stem, job.attempt);
}

void RunEngine::record_final(JobRuntime& job, const JobExit& exit, UnixMillis ended_ms) {
  job.state = exit.state;
  job.ended_ms = ended_ms;
  job.note = exit.state == JobState::kOk ? "" : exit.reason;
  int64_t malformed = job.reader ? job.reader->malformed_lines() : 0;
  if (job.job.id != 0 && job.reader && job.reader->throttled().any())
    pending_events_.emplace_back(job.job.id, job.reader->throttled().to_event(ended_ms));
  // Its events go to the writer before its end, which is written in order:
  // whoever sees the end in the store (the service's queue, `colo wait`)
  // finds the events there too.
  hand_events_to_writer();
  if (job.job.id != 0) ctx_.writer.job_finished(job.job.id, exit, ended_ms, malformed);
  // An ended job reads no more progress: its reader (1.3 KB and its log
  // follower's 4 KB) goes, so that a service's ended jobs, which the engine
  // keeps, do not each hold one (issue 59: about 54 MB at 10,000 ended).
  job.reader.reset();
  std::string what = fmt::format("{} {}", job.label(), to_string(exit.state));
  if (job.started_ms > 0)
    what += fmt::format(" after {}", format_duration_ms(ended_ms - job.started_ms));
  if (!job.note.empty()) what += ": " + job.note;
  if (malformed > 0) what += fmt::format(" ({} malformed progress lines ignored)", malformed);
  display_.event(what);
  changes_.push_back({JobChange::Kind::kEnded, job.key, job.job.id, exit.state, job.note,
                      job.device, job.attempt, ended_ms});
  // A job that ended ok needs its checkpoints no more (a resume runs only
  // jobs that did not): they go now, unless they are kept a while.
  if (exit.state == JobState::kOk && !job.job.checkpoint_dir.empty() &&
      options_.keep_checkpoints_ms == 0) {
    if (Status removed = remove_tree(job.job.checkpoint_dir); !removed.ok())
      display_.event(
          fmt::format("{}: its checkpoints stay: {}", job.label(), removed.error().message()));
  }
  fail_fast(job);
}

void RunEngine::fail_fast(const JobRuntime& job) {
  const JobSpec& spec = job.job.spec;
  if (!spec.fail_fast || state_.stopping) return;
  const std::string file = job_file_of(spec);
  const std::optional<std::string> cause = fail_fast_.ended(file, job.state, job.note);
  if (!cause) return;
  std::vector<size_t> waiting;
  for (const auto& other : jobs_) {
    if (other->state == JobState::kQueued && other->job.spec.fail_fast &&
        job_file_of(other->job.spec) == file)
      waiting.push_back(other->key);
  }
  display_.event(fmt::format(
      "fail-fast: {}; not starting its {} jobs that wait (they end cancelled): fix the cause and "
      "run them again, or set fail_fast = false in the file's [run] to run every job regardless",
      *cause, waiting.size()));
  for (size_t key : waiting) {
    (void)cancel(key, fmt::format("not started: {} (fail_fast)", *cause));
  }
}

void RunEngine::place() {
  std::vector<Decision> decisions = scheduler_->schedule(ctx_.clock.monotonic_ms());
  for (const Unplaceable& u : scheduler_->take_unplaceable()) {
    record_final(*jobs_[u.job],
                 JobExit{JobState::kFailed, std::nullopt, std::nullopt, u.reason, {}},
                 ctx_.clock.now_ms());
  }
  for (const std::string& note : scheduler_->take_notes()) display_.event("auto: " + note);
  for (const Decision& d : decisions) start(*jobs_[d.job], d);
}

// A job whose start failed ends failed; the scheduler forgets it.
void RunEngine::start_failed(JobRuntime& job, const Error& e) {
  (void)scheduler_->finished(job.key, JobEnd::kFailed, ctx_.clock.monotonic_ms());
  record_final(job, JobExit{JobState::kFailed, std::nullopt, std::nullopt, e.message(), {}},
               ctx_.clock.now_ms());
}

void RunEngine::start(JobRuntime& job, const Decision& a) {
  const JobSpec& spec = job.job.spec;
  Placement placement{spec.name, a.device, spec.sm_share_pct,
                      spec.memory_limit_bytes ? spec.memory_limit_bytes : a.memory_limit_bytes,
                      a.gang_devices};
  placement.outside_mps = !job.suspect.empty() && ctx_.mechanism.kind() == MechanismKind::kMps;
  // Its priority lever, and the thread percentage its placement chose (sched/qos_placement.h).
  placement.opportunistic = spec.qos == QosClass::kOpportunistic;
  placement.opportunistic_thread_pct = a.opportunistic_thread_pct;
  if (const std::optional<RunAs>& as = job.job.run_as; as && as->uid != ::geteuid())
    placement.user = ClientUser{as->uid, as->gid, as->groups};
  Result<Environment> mech_env = ctx_.mechanism.environment_for(placement);
  if (!mech_env.ok()) {
    start_failed(job, mech_env.error());
    return;
  }
  if (job.job.id == 0) {
    Result<std::vector<int64_t>> ids =
        ctx_.writer.add_jobs(run_.id, {spec}, {log_path(job)}, ctx_.clock.now_ms());
    if (!ids.ok()) {
      start_failed(job, ids.error().with_context("cannot record the job in the run store"));
      return;
    }
    job.job.id = ids->front();
  }
  if (Status s = prepare_job_files(job.job); !s.ok()) {
    start_failed(job, s.error());
    return;
  }
  const char* own_python_path = std::getenv("PYTHONPATH");
  Result<LaunchRequest> launch = launch_request(
      {job.job, log_path(job), *mech_env, placement.devices(), run_.id, run_.token,
       options_.python_client_dir,
       own_python_path ? std::optional<std::string>(own_python_path) : std::nullopt});
  if (!launch.ok()) {
    start_failed(job, launch.error());
    return;
  }
  LaunchRequest& request = *launch;
  request.cgroup = job_cgroup(job);
  std::string profile_note;
  if (const std::optional<ProfileSpec>& p = spec.profile) {
    const ProfileSetup setup = profile_window(
        *p, job.job.profile_dir, job.attempt,
        p->tool == "torch" ? std::nullopt : find_program(p->tool),
        {self_executable(), ctx_.lock_dir.empty() ? default_gpu_lock_dir() : ctx_.lock_dir},
        request);
    if (!setup.event.empty()) display_.event(fmt::format("{}: {}", job.label(), setup.event));
    profile_note = setup.log_note;
  }

  Result<ProgressReader> reader =
      ProgressReader::create({job.job.progress_path, request.log_path, spec.epoch_regex,
                              spec.step_regex, spec.epoch_samples},
                             ctx_.clock.now_ms());
  if (!reader.ok()) {
    start_failed(job, reader.error());
    return;
  }
  // A retry keeps reading the progress file where the last attempt stopped.
  if (!job.reader) job.reader = std::make_unique<ProgressReader>(std::move(reader).value());
  job.reader->follow_log(request.log_path);  // this attempt's output

  Result<pid_t> pid = supervisor_.start(request);
  const UnixMillis now = ctx_.clock.now_ms();
  if (!pid.ok()) {
    start_failed(job, pid.error());
    return;
  }
  if (!profile_note.empty()) append_note_to_log(request.log_path, profile_note);
  started(job, a, placement, *mech_env, *pid, request.log_path, now);
}

void RunEngine::started(JobRuntime& job, const Decision& a, const Placement& placement,
                        const Environment& mech_env, pid_t pid, const std::string& log,
                        UnixMillis now) {
  const JobSpec& spec = job.job.spec;
  job.state = JobState::kRunning;
  job.measuring.reset();
  if (a.probe || a.record)
    job.measuring.emplace(now, baseline(a.device, now), options_.measurement);
  job.record_only = a.record && !a.probe;
  job.measurement_sent = false;
  job.last_rate_ms = 0;
  job.first_progress_ms.reset();
  job.cause = {};
  job.fault_proven.clear();
  job.outside_mps = placement.outside_mps;
  if (spec.qos == QosClass::kProtected && !job.floor) {
    auto solo = known_.solo_rates.find(job.signature);
    job.floor.emplace(
        spec.min_speed,
        solo != known_.solo_rates.end() ? std::optional<double>(solo->second) : std::nullopt,
        options_.floor);
  }
  job.stall.emplace(now, spec.stall_timeout_ms,
                    job.reported_progress || spec.epoch_regex || spec.step_regex ||
                        known_.solo_rates.count(job.signature) > 0,
                    options_.stall);
  job.pid = pid;
  job.device = a.device;
  job.gang_devices = a.gang_devices;
  job.started_ms = now;
  job.mps_sm_share_pct.reset();
  job.mps_memory_limit_bytes.reset();
  job.opportunistic_thread_pct.reset();
  if (ctx_.mechanism.kind() == MechanismKind::kMps && !placement.outside_mps) {
    job.mps_sm_share_pct = placement.sm_share_pct;
    job.mps_memory_limit_bytes = placement.memory_limit_bytes;
    if (placement.opportunistic) job.opportunistic_thread_pct = placement.opportunistic_thread_pct;
  }
  auto mig = mech_env.find(kMigInstanceEnv);
  job.mig_instance = mig != mech_env.end() ? mig->second : "";
  job.last_epoch_end_ms = now;
  by_pid_[pid] = job.key;
  samples_.add_job(pid, job.job.id);
  job.sim_load.emplace(spec);
  for (int d : placement.devices())
    ctx_.backend.process_started(d, static_cast<uint32_t>(pid), job.sim_load->hint());
  check_simulated_memory(job);
  if (a.estimate)
    pending_events_.emplace_back(
        job.job.id, profile_event(a.probe ? kPriorEvent : kEstimateEvent, *a.estimate, now));
  ctx_.writer.job_started(job.job.id, pid, a.device, now, job.attempt);
  if (!job.mig_instance.empty()) ctx_.writer.job_instance(job.job.id, job.mig_instance);
  const std::string gpus = gpu_list(placement.devices());
  if (!a.gang_devices.empty()) ctx_.writer.job_gpus(job.job.id, gpus);
  changes_.push_back({JobChange::Kind::kStarted, job.key, job.job.id, JobState::kRunning, "",
                      a.device, job.attempt, now});
  const std::string where =
      a.gang_devices.empty() ? fmt::format("gpu{}", a.device)
                             : fmt::format("gpus {} (a gang of {})", gpus, a.gang_devices.size());
  display_.event(fmt::format(
      "{} started on {} ({}), pid {}, log {}{}{}{}", job.label(), where, device(a.device).name, pid,
      log, a.probe ? " (new: measured where it runs)" : "",
      a.memory_limit_bytes && !spec.memory_limit_bytes
          ? ", memory limit " + format_bytes(*a.memory_limit_bytes)
          : "",
      placement.outside_mps ? ", alone: outside the shared MPS server (" + job.suspect + ")" : ""));
}

std::string RunEngine::job_cgroup(const JobRuntime& job) {
  const CgroupLimits limits = job_limits(job.job.spec, options_.default_limits);
  std::string cgroup;
  if (ctx_.cgroup != nullptr) {
    if (Result<std::string> cg = ctx_.cgroup->make_job_cgroup(job.job.id); cg.ok()) {
      cgroup = *cg;
      if (Status applied = apply_cgroup_limits(*cg, limits); !applied.ok()) {
        display_.event(fmt::format("{}: warning: {}; it runs without that limit", job.label(),
                                   applied.error().message()));
      }
    } else if (!state_.cgroup_warned) {
      state_.cgroup_warned = true;
      display_.event("warning: " + cg.error().message() +
                     "; jobs start in their process group only");
    }
  }
  if ((limits.memory_bytes || limits.cpus) && cgroup.empty()) {
    display_.event(
        fmt::format("{}: warning: its host_memory and cpus limits need a cgroup, and "
                    "it has none; it runs without them",
                    job.label()));
  }
  return cgroup;
}

void RunEngine::reap() {
  std::vector<FinishedJob> finished = supervisor_.poll();
  // Under MPS, what the log of a job that failed on its own (or was stopped
  // as a fault's victim) says of a GPU fault; the jobs whose own fault it was
  // come first (the suspects, which make their neighbours victims), those
  // with an assertion first of all.
  std::map<pid_t, GpuFaultSeen> faults;
  std::set<pid_t> exited;
  for (const FinishedJob& f : finished) {
    exited.insert(f.pid);
    auto it = by_pid_.find(f.pid);
    if (ctx_.mechanism.kind() != MechanismKind::kMps || it == by_pid_.end()) continue;
    const JobRuntime& job = *jobs_[it->second];
    const bool failed = f.exit.state == JobState::kFailed || f.exit.state == JobState::kKilled;
    // Its log may show a fault unless colo stopped it for a cause that says
    // why (or as stalled, or as the mechanism's victim).
    const bool log_tells =
        !job.cause.said_why() && !job.cause.is(Cause::kStalled) && !job.cause.is(Cause::kMechanism);
    if ((failed || job.cause.is(Cause::kFaultVictim)) && f.exit.state != JobState::kOk && log_tells)
      faults[f.pid] = find_gpu_fault(read_log_tail(log_path(job)));
  }
  const auto rank = [&](const FinishedJob& f) {
    auto it = faults.find(f.pid);
    if (it == faults.end() || it->second.kind != GpuFault::kOwn) return 2;
    return it->second.assertion ? 0 : 1;
  };
  std::stable_sort(finished.begin(), finished.end(),
                   [&](const FinishedJob& a, const FinishedJob& b) { return rank(a) < rank(b); });
  // A job that failed may have failed because the mechanism did (the MPS
  // server died under it): ask before recording anything. A job whose own
  // fault it was is no victim.
  if (recovery_.down().empty() && !state_.stopping) {
    for (const FinishedJob& f : finished) {
      auto it = by_pid_.find(f.pid);
      if (it == by_pid_.end() || jobs_[it->second]->cause.said_why()) continue;
      if (f.exit.state == JobState::kOk || f.exit.state == JobState::kCancelled) continue;
      Status s = ctx_.mechanism.check_after_job_failure();
      if (!s.ok()) {
        for (const FinishedJob& g : finished) {
          auto victim = by_pid_.find(g.pid);
          if (victim == by_pid_.end() || g.exit.state == JobState::kOk || rank(g) != 2) continue;
          if (StopCause& cause = jobs_[victim->second]->cause; cause.yields_to(Cause::kMechanism))
            cause = {Cause::kMechanism, ""};
        }
        mechanism_failed(s.error().message());
      }
      break;
    }
  }
  for (const FinishedJob& f : finished) {
    auto it = by_pid_.find(f.pid);
    if (it == by_pid_.end()) continue;
    JobRuntime& job = *jobs_[it->second];
    by_pid_.erase(it);
    samples_.retire(f.pid);  // samples taken before its end may still be in flight
    // Without a cgroup, a daemon the job started in a new session escaped
    // its process group: found by the job's token.
    if (!f.contained) {
      if (int n = stop_token_processes(kJobTokenEnv, job_token(run_.token, job.job.id)); n > 0)
        display_.event(fmt::format("{}: stopped {} processes it left running", job.label(), n));
    }
    ctx_.backend.process_exited(static_cast<uint32_t>(f.pid));
    // Newcomers measured on its GPU lose a neighbour that was there before them.
    for (const auto& running : by_pid_) {
      const size_t key = running.second;
      JobRuntime& other = *jobs_[key];
      if (!other.measuring || other.device != job.device || other.started_ms < job.started_ms)
        continue;
      const bool alone = std::none_of(by_pid_.begin(), by_pid_.end(), [&](const auto& p) {
        return p.second != key && jobs_[p.second]->device == job.device;
      });
      other.measuring->neighbour_left(alone);
    }
    read_progress_of(job, f.ended_ms);  // the last lines it wrote before exiting
    if (job.objective) objective_warning(job, job.objective->ended());
    if (job.job.spec.early_stop) {
      // A trial that ran to its end on its own teaches its sweep's last epoch.
      early_stop_.ended(job.sweep(), static_cast<int64_t>(job.key), job.epoch.value_or(job.epochs),
                        f.exit.state == JobState::kOk && job.cause.kind == Cause::kNone);
    }
    if (job.measuring && f.exit.state == JobState::kOk) finish_probe(job);
    if (f.exit.state == JobState::kOk && job.peak_memory_bytes > 0) {
      JobProfile seen;
      seen.peak_memory_bytes = job.peak_memory_bytes;
      seen.source = fmt::format("measured: {} in run {}", job.job.spec.name, run_.id);
      scheduler_->measured(job.key, seen);
    }
    auto fault = faults.find(f.pid);
    const GpuFaultSeen seen = fault != faults.end() ? fault->second : GpuFaultSeen{};
    if (job.cause.is(Cause::kFaultVictim) && seen.assertion && !state_.stopping) {
      // Stopped as a victim of a fault that its own assertion shows it raised.
      job.cause = {};
      job.suspect = fmt::format(
          "its own fatal GPU fault on {} under MPS ({}); its neighbours there were restarted",
          gpu_names(job.gpus()), seen.line);  // its exit reason says only that colo stopped it
    } else if (seen.kind != GpuFault::kNone && !job.cause.is(Cause::kFaultVictim) &&
               !job.outside_mps && !state_.stopping) {
      if (seen.kind == GpuFault::kAffected && !job.stall->reported()) {
        server_not_ready(job, f, seen);
        continue;
      }
      const FaultNeighbours neighbours = gpu_fault(job, seen, exited);
      if (seen.kind == GpuFault::kOwn) {
        // The line is its exit reason already.
        job.suspect = fmt::format("its own fatal GPU fault on {} under MPS", gpu_names(job.gpus()));
        if (neighbours.stopped.empty() && neighbours.watched.empty()) {
          // No other client shared its server: it already ran alone.
          job.fault_proven = "no other job shared its MPS server";
        }
        const uint32_t owner = job.job.owner;
        if (!neighbours.stopped.empty()) {
          job.suspect +=
              fmt::format("; it restarted {}", FaultNeighbours::told_to(neighbours.stopped, owner));
        }
        if (!neighbours.watched.empty()) {
          job.suspect += fmt::format("; {} ran on, watched closely",
                                     FaultNeighbours::told_to(neighbours.watched, owner));
        }
      }
    }
    end_attempt(job, f, seen);
  }
}

void RunEngine::check_simulated_memory(JobRuntime& job) {
  if (!ctx_.backend.simulated() || !job.sim_load || job.pid <= 0 ||
      !job.cause.yields_to(Cause::kSimulatedOom))
    return;
  for (int d : job.gpus()) {
    auto device = std::find_if(devices_.begin(), devices_.end(),
                               [&](const DeviceInfo& i) { return i.index == d; });
    if (device == devices_.end() || device->memory_total_bytes == 0) continue;
    uint64_t others = 0;
    for (const auto& [pid, key] : by_pid_) {
      const JobRuntime& other = *jobs_[key];
      if (key == job.key || !other.sim_load || other.cause.is(Cause::kSimulatedOom)) continue;
      const std::vector<int> on = other.gpus();
      if (std::find(on.begin(), on.end(), d) == on.end()) continue;
      others += other.sim_load->hint().memory_bytes + kSimContextBytes;
    }
    const uint64_t own = job.sim_load->hint().memory_bytes + kSimContextBytes;
    if (others + own <= device->memory_total_bytes) continue;
    // The job whose memory grew past the GPU's is the one that runs out, as
    // an allocation on a full GPU fails; the auto policy retries it.
    const std::string why = fmt::format(
        "out of GPU memory on gpu{} (SIMULATED: its {} on top of the {} the other jobs held, on a "
        "{} GPU)",
        d, format_bytes(own), format_bytes(others), format_bytes(device->memory_total_bytes));
    stop_job(job, {Cause::kSimulatedOom, why}, 0, fmt::format("{}: {}", job.label(), why), why);
    ctx_.backend.process_exited(static_cast<uint32_t>(job.pid));  // its allocation failed
    return;
  }
}

void RunEngine::end_attempt(JobRuntime& job, const FinishedJob& f, const GpuFaultSeen& fault) {
  AttemptFacts facts;
  facts.exit = f.exit;
  facts.cause = std::exchange(job.cause, {});
  facts.fault = fault.kind;
  facts.stopping = state_.stopping;
  facts.restart = job.job.spec.restart;
  facts.gang = job.job.spec.gpus > 1;
  facts.attempt = job.attempt;
  facts.counted_attempts = job.counted_attempts();
  facts.uncounted = job.uncounted;
  facts.gpus = gpu_names(job.gpus());
  facts.mechanism_down = recovery_.down();
  if (fault.kind == GpuFault::kAffected) {
    if (std::optional<FaultCause> recent = recent_fault_in_server_of(job)) {
      facts.recent_fault = recent->told_to(job.job.owner);
      if (!facts.cause.is(Cause::kFaultVictim)) {  // a victim was told as it was stopped
        append_note_to_log(log_path(job),
                           fmt::format("a fatal GPU fault on {} under MPS reached it ({})",
                                       gpu_names(job.gpus()), *facts.recent_fault));
      }
    }
  }
  facts.outside_mps = job.outside_mps;
  facts.fault_proven = job.fault_proven;
  facts.suspect = job.suspect;
  const EndVerdict verdict =
      scheduler_->finished(job.key, policy_end(facts), ctx_.clock.monotonic_ms());
  carry_out(job, classify_end(facts, verdict), f.ended_ms);
}

void RunEngine::carry_out(JobRuntime& job, const AttemptEnd& end, UnixMillis ended_ms) {
  switch (end.kind) {
    case AttemptEnd::Kind::kFinal:
      record_final(job, end.exit, ended_ms);
      return;
    case AttemptEnd::Kind::kPark:
      requeue(job, ended_ms, end.reason, /*counted=*/false);
      job.preemptions += 1;
      parked_.push_back(job.key);
      return;
    case AttemptEnd::Kind::kRequeue:
      requeue(job, ended_ms, end.reason, end.counted);
      if (!end.counted) job.uncounted += 1;
      if (end.enqueue) scheduler_->enqueue(queued_as(job));
      return;
  }
}

// The job is queued again (an out-of-memory retry, a mechanism failure); its
// next attempt logs to <stem>.attempt<N>.log.
void RunEngine::requeue(JobRuntime& job, UnixMillis ended_ms, const std::string& reason,
                        bool counted) {
  ProgressEvent e;
  e.time_ms = ended_ms;
  e.kind = "requeued";
  e.metrics["attempt"] = job.attempt;
  pending_events_.emplace_back(job.job.id, std::move(e));
  job.attempt += 1;
  job.state = JobState::kQueued;
  job.measuring.reset();
  job.note = reason;
  hand_events_to_writer();  // the attempt's events before its end, as in record_final
  ctx_.writer.job_requeued(job.job.id, log_path(job), reason, ended_ms);
  changes_.push_back({JobChange::Kind::kRequeued, job.key, job.job.id, JobState::kQueued, reason,
                      job.device, job.attempt, ended_ms, counted});
  display_.event(fmt::format("{} requeued: {}", job.label(), reason));
}

std::vector<std::string> RunEngine::FaultNeighbours::labels(const std::vector<Neighbour>& list) {
  std::vector<std::string> out;
  for (const Neighbour& n : list) out.push_back(n.label);
  return out;
}

std::string RunEngine::FaultNeighbours::told_to(const std::vector<Neighbour>& list,
                                                uint32_t viewer) {
  std::vector<std::string> own;
  size_t others = 0;
  for (const Neighbour& n : list) {
    if (n.owner == viewer) {
      own.push_back(n.label);
    } else {
      ++others;
    }
  }
  if (others == 0) return fmt::format("{}", fmt::join(own, ", "));
  const std::string theirs = others == 1 ? std::string("1 job of another user")
                                         : fmt::format("{} jobs of other users", others);
  return own.empty() ? theirs : fmt::format("{} and {}", fmt::join(own, ", "), theirs);
}

std::optional<FaultCause> RunEngine::recent_fault_in_server_of(const JobRuntime& job) const {
  std::optional<FaultCause> recent = mps_faults_.recent(job.gpus(), ctx_.clock.monotonic_ms());
  if (recent && ctx_.mechanism.users_time_slice() && recent->owner != job.job.owner)
    return std::nullopt;  // another user's server: not this job's
  return recent;
}

RunEngine::FaultNeighbours RunEngine::gpu_fault(const JobRuntime& source, const GpuFaultSeen& fault,
                                                const std::set<pid_t>& exited) {
  const std::vector<int> gpus = source.gpus();
  const std::string where = gpu_names(gpus);
  FaultCause cause;
  cause.owner = source.job.owner;
  if (fault.kind == GpuFault::kOwn) {
    cause.whole = fmt::format("{} raised a fatal GPU fault on {} under MPS ({})", source.label(),
                              where, fault.line);
    cause.for_others =
        fmt::format("a job of another user raised a fatal GPU fault on {} under MPS", where);
  } else {
    cause.whole = fmt::format("a fatal GPU fault on {} under MPS reached its clients ({}: {})",
                              where, source.label(), fault.line);
    cause.for_others = fmt::format(
        "a fatal GPU fault on {} under MPS reached its clients (a job of another user saw it "
        "first)",
        where);
  }
  if (fault.kind == GpuFault::kAffected) {
    if (std::optional<FaultCause> known = recent_fault_in_server_of(source)) cause = *known;
  }
  // A daemon per user: another user's jobs are clients of a server of their
  // own, which the fault does not reach.
  const bool own_server_only = ctx_.mechanism.users_time_slice();
  FaultNeighbours out;
  for (const auto& [pid, key] : by_pid_) {
    JobRuntime& other = *jobs_[key];
    if (&other == &source || other.outside_mps) continue;
    if (own_server_only && other.job.owner != source.job.owner) continue;
    const std::vector<int> theirs = other.gpus();
    if (std::none_of(theirs.begin(), theirs.end(),
                     [&](int d) { return std::find(gpus.begin(), gpus.end(), d) != gpus.end(); }))
      continue;
    const FaultNeighbours::Neighbour neighbour{other.label(), other.job.owner};
    // Those already stopped (the mechanism's failure, an earlier fault) run
    // again as that says; those stopped for another cause end as it says.
    if (other.cause.is(Cause::kFaultVictim) || other.cause.is(Cause::kMechanism)) {
      out.stopped.push_back(neighbour);
      continue;
    }
    if (!other.cause.yields_to(Cause::kFaultVictim)) continue;
    // What its owner is told: the whole cause, or, of another user's job,
    // that one raised it (FaultCause).
    const std::string& told = cause.told_to(other.job.owner);
    // A client that reports progress is watched, not stopped: measured on an
    // H100 (docs/reliability.md), most clients of a faulted server run on
    // unharmed; one that the fault reached fails by itself or goes silent.
    if (exited.count(pid) == 0) read_progress_of(other);
    if (exited.count(pid) == 0 && other.stall && other.stall->reported()) {
      watch_after_fault(other, told);
      append_note_to_log(log_path(other), told +
                                              "; watched: it is restarted if it stops "
                                              "reporting progress");
      out.watched.push_back(neighbour);
      continue;
    }
    other.cause = {Cause::kFaultVictim, "restarted: " + told};
    append_note_to_log(log_path(other),
                       told +
                           "; it had reported no progress yet: stopped, to run again once the "
                           "server has recovered, not counted as an attempt");
    out.stopped.push_back(neighbour);
    if (exited.count(pid) == 0)
      supervisor_.stop(pid, std::min<int64_t>(options_.stop_grace_ms, kFaultStopGraceMs));
  }
  if (fault.kind == GpuFault::kOwn) mps_faults_.raised(gpus, cause, ctx_.clock.monotonic_ms());
  mps_faults_.settle(ctx_.clock.monotonic_ms());
  std::vector<std::string> parts;
  if (!out.stopped.empty()) {
    parts.push_back(
        fmt::format("stopping {} (no progress reported yet, or stopping already) to run them "
                    "again once the server has recovered, not counted as an attempt",
                    fmt::join(FaultNeighbours::labels(out.stopped), ", ")));
  }
  if (!out.watched.empty()) {
    parts.push_back(
        fmt::format("watching {}: those that stop reporting progress are restarted, "
                    "not counted",
                    fmt::join(FaultNeighbours::labels(out.watched), ", ")));
  }
  display_.event(fmt::format("{}: fatal GPU fault under MPS, {} {}: {}; {}", where, source.label(),
                             fault.kind == GpuFault::kOwn ? "raised it" : "was reached by it",
                             fault.line,
                             parts.empty() ? std::string("no other job shares its server")
                                           : fmt::format("{}", fmt::join(parts, "; "))));
  return out;
}

void RunEngine::server_not_ready(JobRuntime& job, const FinishedJob& f, const GpuFaultSeen& fault) {
  const int64_t wait_ms = mps_faults_.refused_start(ctx_.clock.monotonic_ms());
  AttemptFacts facts;
  facts.exit = f.exit;
  facts.uncounted = job.uncounted;
  job.cause = {};
  (void)scheduler_->finished(job.key, JobEnd::kCancelled, ctx_.clock.monotonic_ms());
  carry_out(job,
            uncounted_end(
                facts, fmt::format("its start was refused: the MPS server on {} was not "
                                   "ready ({}); it starts again in {}, not counted as "
                                   "an attempt",
                                   gpu_names(job.gpus()), fault.line, format_duration_ms(wait_ms))),
            f.ended_ms);
  // Refused again and again with nothing running: restart the MPS daemon.
  if (mps_faults_.refused_in_a_row() >= MpsFaultLog::kNotReadyRestartAfter && by_pid_.empty() &&
      recovery_.down().empty()) {
    mechanism_failed(
        fmt::format("the MPS server refused {} starts in a row", mps_faults_.refused_in_a_row()));
    mps_faults_.accepted();
  }
}

bool RunEngine::placement_paused() const {
  if (mps_faults_.paused(ctx_.clock.monotonic_ms())) return true;
  // The victims of a fault are still being stopped: the server recovers once they are gone.
  return std::any_of(by_pid_.begin(), by_pid_.end(),
                     [&](const auto& p) { return jobs_[p.second]->cause.is(Cause::kFaultVictim); });
}

void RunEngine::xid_seen(const XidEvent& x) {
  const std::string what =
      fmt::format("the driver reported Xid {} on gpu{} (a GPU fault)", x.xid, x.device);
  std::vector<std::string> watched;
  for (const auto& [pid, key] : by_pid_) {
    JobRuntime& job = *jobs_[key];
    const std::vector<int> gpus = job.gpus();
    if (std::find(gpus.begin(), gpus.end(), x.device) == gpus.end()) continue;
    append_note_to_log(log_path(job), what);
    // Under MPS a client of the server may hang rather than fail (measured:
    // docs/nvidia-interfaces.md): those that stop reporting are its victims.
    if (ctx_.mechanism.kind() == MechanismKind::kMps && !job.outside_mps && job.stall) {
      watch_after_fault(job,
                        fmt::format("a GPU fault (Xid {}) on gpu{} under MPS", x.xid, x.device));
      watched.push_back(job.label());
    }
  }
  display_.event(what + (watched.empty()
                             ? std::string()
                             : fmt::format("; its MPS clients are watched closely, and those "
                                           "that stop reporting progress are restarted, not "
                                           "counted: {}",
                                           fmt::join(watched, ", "))));
}

void RunEngine::watch_after_fault(JobRuntime& job, const std::string& cause) {
  job.stall->fault_seen(ctx_.clock.now_ms());
  job.fault_watched = cause;
  read_cpu_after_fault(job);  // the baseline
}

void RunEngine::read_cpu_after_fault(JobRuntime& job) {
  job.cpu_read_ms = ctx_.clock.monotonic_ms();
  if (std::optional<int64_t> cpu = process_group_cpu_ms(job.pid))
    job.stall->cpu_used(ctx_.clock.now_ms(), *cpu);
}

void RunEngine::check_stalls() {
  if (state_.stopping) return;
  const UnixMillis now = ctx_.clock.now_ms();
  for (const auto& [pid, key] : by_pid_) {
    JobRuntime& job = *jobs_[key];
    if (!job.stall || !job.cause.yields_to(Cause::kStalled)) continue;
    // Watched after a fault: whether its processes still work, once a second.
    if (job.stall->after_fault() && ctx_.clock.monotonic_ms() - job.cpu_read_ms >= kFaultCpuReadMs)
      read_cpu_after_fault(job);
    std::optional<std::string> why = job.stall->stalled(now);
    if (!why) continue;
    const std::string evidence =
        stall_evidence(job.job.id, job.gpus(), samples_.latest_processes(), samples_.recent(),
                       process_group_states(job.pid, 6));
    if (job.stall->after_fault()) {
      // A client hung on a faulted MPS server: the fault's victim.
      const std::string victim = fmt::format(
          "restarted: it stopped reporting progress after {} ({})", job.fault_watched, *why);
      job.note = victim;
      stop_job(job, {Cause::kFaultVictim, victim},
               std::min<int64_t>(options_.stop_grace_ms, kFaultStopGraceMs),
               fmt::format("{} {}; {}; stopping it", job.label(), victim, evidence),
               victim + "; " + evidence);
      continue;
    }
    job.note = *why;
    stop_job(job, {Cause::kStalled, *why}, options_.stop_grace_ms,
             fmt::format("{} {}; {}; stopping it (TERM, then KILL after {})", job.label(), *why,
                         evidence, format_duration_ms(options_.stop_grace_ms)),
             *why + "; " + evidence);
  }
}

void RunEngine::stop_job(JobRuntime& job, StopCause cause, int64_t grace_ms,
                         const std::string& event, const std::string& log_note) {
  job.cause = std::move(cause);
  supervisor_.stop(job.pid, grace_ms);
  display_.event(event);
  append_note_to_log(log_path(job), log_note);
}

bool RunEngine::cancel(size_t key, const std::string& reason) {
  if (key >= jobs_.size()) return false;
  JobRuntime& job = *jobs_[key];
  if (is_final(job.state)) return false;
  if (job.state == JobState::kQueued) {
    if (auto parked = std::find(parked_.begin(), parked_.end(), key); parked != parked_.end()) {
      parked_.erase(parked);
    } else if (!scheduler_->remove_queued(key)) {
      return false;
    }
    record_final(job, JobExit{JobState::kCancelled, std::nullopt, std::nullopt, reason, {}},
                 ctx_.clock.now_ms());
    return true;
  }
  if (!job.cause.yields_to(Cause::kCancelled)) return true;  // it ends as that cause says
  const std::string what = fmt::format("{}; stopping it (TERM, then KILL after {})", reason,
                                       format_duration_ms(options_.stop_grace_ms));
  // The log says why it ends here.
  stop_job(job, {Cause::kCancelled, reason}, options_.stop_grace_ms,
           fmt::format("{}: {}", job.label(), what), what);
  return true;
}

bool RunEngine::preempt(size_t key, const std::string& reason) {
  if (key >= jobs_.size() || state_.stopping) return false;
  JobRuntime& job = *jobs_[key];
  if (job.state != JobState::kRunning || job.pid == 0 ||
      job.job.spec.restart != RestartPolicy::kOnFailure || !job.cause.yields_to(Cause::kPreempted))
    return false;
  job.note = reason;
  const std::string grace = format_duration_ms(options_.stop_grace_ms);
  stop_job(job, {Cause::kPreempted, reason}, options_.stop_grace_ms,
           fmt::format("{} preempted: {}; stopping it (TERM, then KILL after {})", job.label(),
                       reason, grace),
           fmt::format("preempted: {}; TERM now, KILL after {}: save a checkpoint into "
                       "COLO_CHECKPOINT_DIR and exit",
                       reason, grace));
  return true;
}

void RunEngine::release_parked() {
  for (size_t key : parked_) scheduler_->enqueue(queued_as(*jobs_[key]));
  parked_.clear();
}

void RunEngine::stop_all(StopKind kind, int64_t grace_ms, const std::string& reason) {
  if (!state_.stopping) {
    release_parked();  // drained with the rest of the queue
    state_.stopping = true;
    UnixMillis now = ctx_.clock.now_ms();
    for (size_t i : scheduler_->drain_queued()) {
      if (kind == StopKind::kCancel) {
        record_final(*jobs_[i],
                     JobExit{JobState::kCancelled,
                             std::nullopt,
                             std::nullopt,
                             "cancelled before it started",
                             {}},
                     now);
      }
    }
    for (auto& [pid, key] : by_pid_) {
      JobRuntime& job = *jobs_[key];
      if (kind == StopKind::kShutdown && job.cause.yields_to(Cause::kShutdown))
        job.cause = {Cause::kShutdown, reason};
      append_note_to_log(log_path(job), fmt::format("{}; stopping it (TERM, then KILL after {})",
                                                    reason, format_duration_ms(grace_ms)));
    }
  }
  display_.event(
      grace_ms > 0
          ? fmt::format("stopping {} running jobs (TERM, then KILL after {}; {} again to kill now)",
                        by_pid_.size(), format_duration_ms(grace_ms),
                        stop_signal_name(kind == StopKind::kCancel ? "Ctrl-C" : "SIGTERM"))
          : fmt::format("killing {} running jobs", by_pid_.size()));
  supervisor_.stop_all(grace_ms);
}

// Auto policy: a newcomer's first profile goes to the scheduler once its
// memory plateaued, its last when two progress rates were seen, or one once
// another job on its GPU began to work (its rate is no longer its own alone),
// or after probe_ms.
void RunEngine::finish_probes() {
  const UnixMillis now = ctx_.clock.now_ms();
  for (const auto& [pid, key] : by_pid_) {
    JobRuntime& job = *jobs_[key];
    if (!job.measuring) continue;
    if (now - job.started_ms >= options_.probe_ms ||
        (job.measurement_sent && (job.measuring->rates_seen() >= 2 ||
                                  (job.measuring->rates_seen() >= 1 && shared_since(job))))) {
      finish_probe(job);
    } else if (!job.measurement_sent && job.measuring->plateaued()) {
      job.measurement_sent = true;
      send_probe_profile(job, "memory plateaued");
    }
  }
}

std::optional<GpuBaseline> RunEngine::baseline(int device, UnixMillis started_ms) const {
  const bool others = std::any_of(by_pid_.begin(), by_pid_.end(), [&](const auto& running) {
    return jobs_[running.second]->device == device;
  });
  if (!others) return std::nullopt;
  auto recent = samples_.recent().find(device);
  if (recent == samples_.recent().end()) return GpuBaseline{};
  return baseline_before(recent->second, started_ms, kBaselineMs);
}

int RunEngine::sharers(const JobRuntime& job, UnixMillis at_ms) const {
  int n = 1;
  for (const auto& [pid, key] : by_pid_) {
    const JobRuntime& other = *jobs_[key];
    n += &other != &job && other.device == job.device && other.first_progress_ms &&
         other.started_ms >= job.started_ms && other.started_ms + *other.first_progress_ms <= at_ms;
  }
  return n;
}

// When a job that started after `job` on its GPU first reported progress
// (it works there from then on), if one did.
std::optional<UnixMillis> RunEngine::shared_since(const JobRuntime& job) const {
  std::optional<UnixMillis> since;
  for (const auto& [pid, key] : by_pid_) {
    const JobRuntime& other = *jobs_[key];
    if (&other == &job || other.device != job.device || !other.first_progress_ms ||
        other.started_ms < job.started_ms)
      continue;
    const UnixMillis t = other.started_ms + *other.first_progress_ms;
    if (!since || t < *since) since = t;
  }
  return since;
}

void RunEngine::finish_probe(JobRuntime& job) {
  send_probe_profile(job, job.measurement_sent ? "refined" : "");
  job.measuring.reset();
}

void RunEngine::send_probe_profile(JobRuntime& job, std::string_view stage) {
  JobProfile p =
      job.measuring->profile(fmt::format("probe: {} in run {}", job.job.spec.name, run_.id));
  if (p.peak_memory_bytes && job.job.id != 0)
    pending_events_.emplace_back(job.job.id, profile_event(kProbeEvent, p, ctx_.clock.now_ms()));
  if (job.record_only) return;
  if (p.samples_per_s && p.rate_uncertainty == 0)
    known_.solo_rates[job.signature] = *p.samples_per_s;
  const std::string beside = job.measuring->beside_others() ? ", beside other jobs" : ", alone";
  display_.event(fmt::format(
      "auto: measured {}{}: {} peak, {} SM activity, {}", job.label(),
      stage.empty() ? "" : fmt::format(" ({}{})", stage, beside),
      p.peak_memory_bytes ? format_bytes(*p.peak_memory_bytes) : "memory not seen",
      p.sm_active_pct ? fmt::format("{:.0f}%", *p.sm_active_pct) : "unknown",
      p.samples_per_s ? fmt::format("{:.0f} samples/s", *p.samples_per_s) : "no rate yet"));
  scheduler_->learned(job.signature, p, ctx_.clock.monotonic_ms());
}

void RunEngine::cap_log(JobRuntime& job, bool exited) {
  const int64_t now = ctx_.clock.monotonic_ms();
  if (options_.max_log_bytes == 0 || (!exited && now < job.log_checked_ms + kLogCheckEveryMs))
    return;
  job.log_checked_ms = now;
  const std::string why =
      fmt::format("its cap of {} (--max-log-size)", format_bytes(options_.max_log_bytes));
  Result<std::optional<uint64_t>> cut = cut_log(log_path(job), options_.max_log_bytes, why);
  if (!cut.ok() || !*cut) return;  // a log colo cannot open is the reader's to say
  if (!exited) job.reader->log_cut(**cut);
  if (!job.log_cut) {
    job.log_cut = true;
    display_.event(fmt::format("{}: its log passed {}: its first and last quarter are kept",
                               job.label(), why));
  }
}

void RunEngine::read_progress_of(JobRuntime& job, std::optional<UnixMillis> exited_ms) {
  if (!job.reader) return;
  const bool exited = exited_ms.has_value();
  const UnixMillis now = ctx_.clock.now_ms();
  std::vector<ProgressEvent> events =
      job.reader->poll(exited ? std::min(now, *exited_ms) : now, exited);
  cap_log(job, exited);
  if (ctx_.backend.simulated() && !exited && job.device && job.pid > 0 && job.sim_load &&
      job.sim_load->update(events)) {
    for (int d : job.gpus())
      ctx_.backend.process_started(d, static_cast<uint32_t>(job.pid), job.sim_load->hint());
    check_simulated_memory(job);
  }
  const UnixMillis seen_ms = ctx_.clock.now_ms();
  for (ProgressEvent& e : events) {
    if (!job.first_progress_ms) {
      job.first_progress_ms = e.time_ms - job.started_ms;
      mps_faults_.accepted();  // a client got going: the server accepts clients
    }
    job.reported_progress = true;
    if (job.stall && !exited) {
      const bool epoch_end = e.kind == "epoch_end";
      job.stall->progress(
          seen_ms,
          epoch_end ? std::optional<int64_t>(e.epoch.value_or(job.epochs + 1)) : std::nullopt,
          epoch_end && e.time_ms > job.last_epoch_end_ms
              ? std::optional<int64_t>(e.time_ms - job.last_epoch_end_ms)
              : std::nullopt);
    }
    // Its memory is measured from its first step or epoch (an epoch_start or
    // a metric may come before its first allocation).
    if (job.measuring && (e.kind == "step" || e.kind == "epoch_end"))
      job.measuring->first_progress(e.time_ms);
    if ((e.kind == "epoch_end" || e.kind == "step") && e.samples) {
      // A step's rate runs from the previous step, an epoch's from the previous epoch's end.
      const UnixMillis last = e.kind == "step" ? job.last_rate_ms : job.last_epoch_end_ms;
      const UnixMillis since = last > job.started_ms ? last : 0;
      if (since > 0 && e.time_ms > since) {
        double rate =
            static_cast<double>(*e.samples) * 1000.0 / static_cast<double>(e.time_ms - since);
        scheduler_->observe_rate(job.key, rate, ctx_.clock.monotonic_ms());
        if (job.measuring) job.measuring->rate(rate);
        if (e.kind == "step") job.last_samples_per_s = rate;
        if (e.kind == "epoch_end" && job.floor && !exited)
          judge_floor(job,
                      EpochRate{e.time_ms, e.time_ms - since, rate, steady_epoch_end(e.metrics)});
      }
      if (e.kind == "step") job.last_rate_ms = e.time_ms;
    }
    if (e.kind == "epoch_end") {
      if (job.measuring && job.epochs == 0) job.measuring->first_epoch(e.time_ms, e.samples);
      ++job.epochs;
      job.epoch = e.epoch.value_or(job.epochs);
      int64_t took = e.time_ms - job.last_epoch_end_ms;
      if (took > 0) {
        job.last_epoch_ms = took;
        if (e.samples)
          job.last_samples_per_s =
              static_cast<double>(*e.samples) * 1000.0 / static_cast<double>(took);
      }
      job.last_epoch_end_ms = e.time_ms;
      if (!options_.live_display) {
        display_.event(fmt::format("{} epoch {} done in {}{}", job.label(),
                                   e.epoch.value_or(job.epochs), format_duration_ms(took),
                                   job.last_samples_per_s
                                       ? fmt::format(", {:.0f} samples/s", *job.last_samples_per_s)
                                       : ""));
      }
    }
    watch_objective(job, e);
    if (!exited) judge_early_stop(job, e);
    pending_events_.emplace_back(job.job.id, std::move(e));
  }
  for (const std::string& note : job.reader->take_notices()) {
    display_.event(fmt::format("{}: {}", job.label(), note));
    append_note_to_log(log_path(job), note);
  }
}

void RunEngine::read_progress() {
  for (const auto& [pid, key] : by_pid_) read_progress_of(*jobs_[key]);
}

// Takes the sampler's readings and attributes processes to jobs while the
// jobs' process trees still exist; jobs reaped since the last call are
// forgotten only afterwards.
void RunEngine::collect_samples() {
  SampleBatch batch = samples_.collect();
  for (const std::string& e : batch.errors) display_.event("warning: GPU sampling: " + e);
  for (const XidEvent& x : batch.xid_events) xid_seen(x);
  if (batch.xid_events_dropped > 0)
    display_.event(fmt::format("warning: {} more Xid events came than colo keeps between two reads",
                               batch.xid_events_dropped));
  for (const auto& [pid, key] : by_pid_) {
    JobRuntime& job = *jobs_[key];
    if (auto seen = batch.memory.find(job.job.id); seen != batch.memory.end()) {
      job.peak_memory_bytes = std::max(job.peak_memory_bytes, seen->second.peak_bytes);
      if (job.measuring) job.measuring->memory(seen->second.peak_bytes, seen->second.sampled_ms);
      if (job.measuring && !job.record_only)
        scheduler_->observe_memory(key, job.peak_memory_bytes, ctx_.clock.monotonic_ms());
    }
    if (!job.measuring || !job.device) continue;
    // Its GPU's samples, shared with the jobs that came with or after it
    // once they work too.
    for (const DeviceSample& d : batch.devices) {
      if (d.device == *job.device) job.measuring->device(d, sharers(job, d.time_ms));
    }
  }
}

void RunEngine::flush() {
  ctx_.writer.add_samples(run_.id, samples_.take_devices(), samples_.take_processes());
  hand_events_to_writer();
}

void RunEngine::hand_events_to_writer() {
  ctx_.writer.add_job_events(std::exchange(pending_events_, {}));
}

void RunEngine::write_store() {
  for (const std::string& line : ctx_.writer.flush()) display_.event(line);
}

void RunEngine::mechanism_failed(const std::string& reason) {
  recovery_.failed(reason);
  stop_mechanism_victims();
}

void RunEngine::stop_mechanism_victims() {
  display_.event(fmt::format("{}; stopping {} running jobs to run them again once it is restarted",
                             recovery_.down(), by_pid_.size()));
  for (const auto& [pid, key] : by_pid_) {
    if (StopCause& cause = jobs_[key]->cause; cause.yields_to(Cause::kMechanism))
      cause = {Cause::kMechanism, ""};
    supervisor_.stop(pid, std::min<int64_t>(options_.stop_grace_ms, kFaultStopGraceMs));
  }
}

EngineJobView RunEngine::view(size_t key) const {
  const JobRuntime& j = *jobs_.at(key);
  EngineJobView v;
  v.key = key;
  v.job_id = j.job.id;
  v.name = j.job.spec.name;
  v.state = j.state;
  v.device = j.device;
  v.gang_devices = j.gang_devices;
  v.pid = j.state == JobState::kRunning ? j.pid : 0;
  v.attempt = j.attempt;
  v.started_ms = j.started_ms;
  v.ended_ms = j.ended_ms;
  v.epochs = j.epochs;
  v.epoch = j.epoch;
  v.last_epoch_ms = j.last_epoch_ms;
  v.samples_per_s = j.last_samples_per_s;
  if (j.state == JobState::kRunning && scheduler_) {
    const int64_t mono = ctx_.clock.monotonic_ms();
    if (std::optional<int64_t> end = scheduler_->expected_end_ms(key, mono))
      v.expected_end_ms = ctx_.clock.now_ms() + (*end - mono);
  }
  v.peak_memory_bytes = j.peak_memory_bytes;
  v.probe = j.measuring.has_value() && !j.record_only;
  v.note = j.note;
  v.log_path = log_path(j);
  v.stalled = j.state == JobState::kRunning && j.cause.is(Cause::kStalled) ? j.cause.why : "";
  v.outside_mps = j.outside_mps && j.state == JobState::kRunning;
  v.mps_sm_share_pct = j.mps_sm_share_pct;
  v.mps_memory_limit_bytes = j.mps_memory_limit_bytes;
  v.mig_instance = j.mig_instance;
  v.opportunistic_thread_pct = j.opportunistic_thread_pct;
  if (auto solo = known_.solo_rates.find(j.signature); solo != known_.solo_rates.end())
    v.solo_samples_per_s = solo->second;
  v.qos = j.job.spec.qos;
  if (v.qos == QosClass::kProtected) v.min_speed = j.job.spec.min_speed;
  if (j.floor) {
    v.below_floor_share = j.floor->below_share();
    v.speed_of_solo = j.floor->latest_speed();
    v.steady_ms = j.floor->steady_ms();
    v.below_floor_ms = j.floor->below_ms();
  }
  return v;
}

std::string RunEngine::waiting_reason(size_t key,
                                      const std::function<std::string(size_t)>& job_name) const {
  if (!scheduler_ || jobs_.at(key)->state != JobState::kQueued) return "";
  std::optional<WaitingReason> why = scheduler_->waiting_reason(key);
  return why ? describe_waiting(*why, ctx_.clock.monotonic_ms(), job_name) : "";
}

void RunEngine::redraw() {
  if (!options_.live_display) return;
  UnixMillis now = ctx_.clock.now_ms();
  std::vector<JobLine> lines;
  lines.reserve(jobs_.size());
  int running = 0;
  int done = 0;
  for (const auto& j : jobs_) {
    running += j->state == JobState::kRunning;
    done += is_final(j->state);
    int64_t elapsed = j->state == JobState::kRunning ? now - j->started_ms
                      : j->started_ms > 0            ? j->ended_ms - j->started_ms
                                                     : 0;
    lines.push_back(JobLine{j->job.spec.name, to_string(j->state), j->device, elapsed, j->epochs,
                            j->last_epoch_ms, j->last_samples_per_s, j->note});
  }
  display_.redraw(fmt::format("run {}: {} running, {} queued, {} done of {}", run_.id, running,
                              queued(), done, jobs_.size()),
                  lines);
}

}  // namespace colo
