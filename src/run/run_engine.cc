#include "run/run_engine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <ostream>

#include "analysis/profile_event.h"
#include "analysis/stored.h"
#include "common/paths.h"
#include "common/proc_stat.h"
#include "common/remove_tree.h"
#include "common/stop_signal.h"
#include "common/units.h"
#include "gpu/sim_backend.h"
#include "jobs/job_features.h"
#include "jobs/job_signature.h"
#include "jobs/log_cap.h"
#include "jobs/rendezvous.h"
#include "run/log_layout.h"
#include "run/simulated_load.h"
#include "sched/auto_scheduler.h"
#include "sched/family.h"
#include "sched/gang_scheduler.h"
#include "sharing/mig_mechanism.h"
#include "sharing/process_finder.h"

namespace colo {
namespace {

// CPUs this process may run on, and the machine's memory (for the auto
// policy's accounting of shared loaders).
double host_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

uint64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

JobEnd job_end_of(JobState state) {
  switch (state) {
    case JobState::kOk:
      return JobEnd::kOk;
    case JobState::kOutOfMemory:
      return JobEnd::kOutOfMemory;
    case JobState::kCancelled:
    case JobState::kKilled:
    case JobState::kStopped:
      return JobEnd::kCancelled;
    default:
      return JobEnd::kFailed;
  }
}

// The GPUs' names in events and reasons: "gpu0", "gpus 0,1".
std::string gpu_names(const std::vector<int>& gpus) {
  if (gpus.size() == 1) return fmt::format("gpu{}", gpus.front());
  return fmt::format("gpus {}", fmt::join(gpus, ","));
}

// Faults under MPS (see run_engine.h).
constexpr int64_t kFaultStopGraceMs = 2000;     // a fault's victims: TERM, then KILL after this
constexpr int64_t kFaultSettleMs = 2000;        // placement waits this long after a fault
constexpr int64_t kRecentFaultMs = 60'000;      // a client's fault explains others' this long
constexpr int64_t kFaultCpuReadMs = 1000;       // a watched job's CPU time is read this often
constexpr int64_t kNotReadyFirstWaitMs = 2000;  // back-off after a refused start, doubling
constexpr int64_t kNotReadyMaxWaitMs = 30'000;
constexpr int kNotReadyRestartAfter = 4;  // refused starts in a row that restart the daemon
constexpr int kMaxUncountedAttempts = 10;

}  // namespace

// Live state of one job.
struct RunEngine::JobRuntime {
  size_t key = 0;
  EngineJob job;
  const std::string& label() const { return job.label.empty() ? job.spec.name : job.label; }
  std::string signature;
  JobState state = JobState::kQueued;
  std::optional<int> device;
  std::vector<int> gang_devices;  // a gang's GPUs, `device` first
  pid_t pid = 0;
  UnixMillis started_ms = 0;
  UnixMillis ended_ms = 0;
  int64_t epochs = 0;
  std::optional<int64_t> epoch;
  UnixMillis last_epoch_end_ms = 0;
  std::optional<int64_t> last_epoch_ms;
  std::optional<double> last_samples_per_s;
  // Held apart (1.3 KB): most of a long queue's jobs never start.
  std::unique_ptr<ProgressReader> reader;
  std::string note;
  int attempt = 1;
  // Why colo stopped it, when it did: recorded instead of "stopped by colo".
  std::string stop_reason;
  // Stopped because the mechanism failed: requeued (restart policy permitting).
  bool mechanism_victim = false;
  // Stopped because the service shuts down: ends interrupted.
  bool shutdown_victim = false;
  // Stopped by its sweep's [early_stop] rule (the rule's verdict): ends stopped.
  std::string stopped_early;
  // Auto policy: a newcomer is measured where it runs (InPlaceMeasurement);
  // its first profile goes to the scheduler once its memory plateaued. A
  // speculative sibling (Decision::record) is measured too, and what it saw
  // only recorded.
  std::optional<InPlaceMeasurement> measuring;
  bool measurement_sent = false;
  bool record_only = false;
  UnixMillis last_rate_ms = 0;               // time of the last progress event with samples
  uint64_t peak_memory_bytes = 0;            // largest summed memory of its processes seen
  std::optional<int64_t> first_progress_ms;  // since its start
  // What the mechanism gave the running attempt (see EngineJobView).
  std::optional<int> mps_sm_share_pct;
  std::optional<uint64_t> mps_memory_limit_bytes;
  std::string mig_instance;
  std::optional<SimulatedLoad> sim_load;  // what the simulated backend is told
  // Faults (see the file comment of run_engine.h).
  std::optional<StallWatch> stall;  // this attempt's
  bool reported_progress = false;   // in any attempt
  std::string stalled;              // why colo stopped it as stalled
  std::string simulated_oom;        // why colo stopped it: the simulated GPU's memory was full
  std::string fault_victim;         // why colo stopped it: a neighbour's GPU fault
  std::string fault_watched;        // the GPU fault it is watched after (it had run on)
  int64_t cpu_read_ms = 0;          // when its CPU time was last read (monotonic)
  bool outside_mps = false;         // this attempt runs outside the shared MPS server
  std::string suspect;              // why its next attempt runs outside the shared server
  std::string fault_proven;         // why a fault it raised under MPS was its own
  int uncounted = 0;                // attempts that ended through no fault of its own
  std::string preempted;            // why colo stopped it for a job of higher priority
  std::string doomed;               // why the policy stopped it (take_stops()): runs again
  int preemptions = 0;              // attempts it was preempted in (not counted either)
  int64_t log_checked_ms = 0;       // when its log's size was last checked (monotonic)
  bool log_cut = false;             // its log was cut to its cap (said once)
  int counted_attempts() const { return attempt - uncounted - preemptions - job.uncounted_before; }
  std::vector<int> gpus() const {
    if (!gang_devices.empty()) return gang_devices;
    return device ? std::vector<int>{*device} : std::vector<int>{};
  }
  bool may_restart() const {
    return job.spec.restart == RestartPolicy::kOnFailure && counted_attempts() < kMaxJobAttempts;
  }
};

RunEngine::RunEngine(EngineContext ctx, EngineOptions options, int64_t run_id,
                     std::string run_token, std::vector<DeviceInfo> devices)
    : ctx_(ctx),
      options_(std::move(options)),
      run_id_(run_id),
      run_token_(std::move(run_token)),
      devices_(std::move(devices)),
      supervisor_(ctx.clock),
      samples_(ctx.backend, ctx.clock, devices_, options_.sample_period_ms,
               options_.recent_samples_per_gpu),
      recovery_(ctx.mechanism, ctx.clock, options_.health_check_ms),
      display_(ctx.out, options_.live_display) {}

RunEngine::~RunEngine() {
  if (started_ && !finished_) samples_.stop();
}

int RunEngine::jobs_per_device_limit() const {
  int limit = ctx_.mechanism.max_jobs_per_device();
  if (options_.max_jobs_per_gpu) limit = std::min(limit, *options_.max_jobs_per_gpu);
  return std::max(1, limit);
}

std::unique_ptr<Scheduler> RunEngine::make_scheduler() {
  const int limit = jobs_per_device_limit();
  Result<std::vector<LearnedProfile>> stored = learn_profiles(ctx_.store);
  if (!stored.ok())
    display_.event("warning: no profiles from the store: " + stored.error().message());
  measured_ = stored.ok() ? *stored : std::vector<LearnedProfile>{};
  for (const LearnedProfile& p : options_.profiles_elsewhere) {
    bool known = std::any_of(measured_.begin(), measured_.end(), [&](const LearnedProfile& m) {
      return m.signature == p.signature && m.gpu_name == p.gpu_name && m.simulated == p.simulated;
    });
    if (!known) measured_.push_back(p);
  }
  if (options_.policy != "auto") {
    std::vector<DeviceSlots> slots;
    for (const DeviceInfo& d : devices_) slots.push_back({d.index, d.memory_total_bytes, limit});
    return std::make_unique<GangScheduler>(
        std::make_unique<FixedScheduler>(
            slots, fmt::format("fixed, up to {} per GPU", count_of(limit, "job"))),
        kMaxJobAttempts - 1);
  }
  AutoOptions auto_options;
  auto_options.mode =
      ctx_.mechanism.kind() == MechanismKind::kNaive ? ShareMode::kTimeSliced : ShareMode::kSpatial;
  auto_options.max_jobs_per_gpu = limit;
  auto_options.memory_limits = ctx_.mechanism.kind() == MechanismKind::kMps;
  auto_options.max_retries = kMaxJobAttempts - 1;
  auto_options.host_cpus = host_cpu_count();
  auto_options.host_memory_bytes = host_memory_bytes();
  std::vector<GpuSlot> slots;
  for (const DeviceInfo& d : devices_) slots.push_back({d.index, d.memory_total_bytes});
  InterferenceModel model;
  if (Result<InterferenceModel> fitted = calibrated_model(ctx_.store, model, measured_);
      fitted.ok())
    model = *fitted;
  display_.event("auto: interference model: " + model.describe());
  priors_.emplace(prior_samples(measured_, devices_.front().name, ctx_.backend.simulated()),
                  devices_.front().memory_total_bytes);
  return std::make_unique<GangScheduler>(
      std::make_unique<AutoScheduler>(slots, auto_options, model), kMaxJobAttempts - 1,
      auto_options.memory_limits);
}

void RunEngine::start() {
  std::unique_ptr<Scheduler> policy = make_scheduler();
  if (options_.quotas) policy = std::make_unique<QuotaScheduler>(std::move(policy));
  scheduler_ = std::make_unique<OnChangeScheduler>(std::move(policy));
  display_.event("policy: " + scheduler_->describe());
  if (std::string xid = ctx_.backend.xid_events_status(); !xid.empty())
    display_.event("note: " + xid);
  samples_.start();
  recovery_.start();
  started_ = true;
  next_flush_ms_ = ctx_.clock.monotonic_ms();
}

std::string RunEngine::policy_description() const {
  return scheduler_ ? scheduler_->describe() : "";
}

// Tells the scheduler what is known about the job's signature (the store's
// profile merged over the job's hints), the first time it is seen.
void RunEngine::introduce(JobRuntime& job) {
  if (introduced_.count(job.signature) > 0) return;
  introduced_[job.signature] = true;
  const JobSpec& spec = job.job.spec;
  std::map<std::string, JobProfile> known =
      known_profiles(measured_, {spec}, devices_.front().name, ctx_.backend.simulated());
  auto it = known.find(job.signature);
  if (it != known.end() && it->second.samples_per_s)
    solo_rates_[job.signature] = *it->second.samples_per_s;
  SignatureFacts facts;
  facts.label = spec.group;
  facts.host_cost = job.job.host_cost;
  if (!spec.family.empty()) {
    facts.family =
        FamilyMember{spec.family, instance_label(spec.name), spec.params, spec.resource_params};
    // The family's instances the store measured, once per family.
    if (families_loaded_.insert(spec.family).second) {
      for (auto& [family, instances] :
           family_instances(measured_, {spec}, devices_.front().name, ctx_.backend.simulated()))
        std::move(instances.begin(), instances.end(), std::back_inserter(facts.family_instances));
    }
  }
  if (it != known.end()) facts.profile = it->second;
  if (priors_) facts.prior = priors_->prior(job_features(spec.command));
  scheduler_->introduce(job.signature, facts);
  if (it == known.end() || options_.policy != "auto") return;
  const JobProfile& p = it->second;
  display_.event(fmt::format(
      "auto: {} profile: {} peak, {} SM activity, {}; from {}", spec.group,
      p.peak_memory_bytes ? format_bytes(*p.peak_memory_bytes) : "memory unknown",
      p.sm_active_pct ? fmt::format("{:.0f}%", *p.sm_active_pct) : "unknown",
      !p.samples_per_s ? std::string("rate unknown alone")
      : p.has_solo_rate()
          ? fmt::format("{:.0f} samples/s alone", *p.samples_per_s)
          : fmt::format("{:.0f} samples/s beside other jobs (none alone yet)", *p.samples_per_s),
      p.source));
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
  const JobSpec& spec = j.job.spec;
  // The fixed policy keeps jobs off a GPU their known or hinted memory does not fit.
  std::optional<uint64_t> memory = spec.gpu_memory_bytes;
  if (!memory) {
    for (const LearnedProfile& p : measured_) {
      if (p.signature == j.signature && p.simulated == ctx_.backend.simulated() &&
          p.profile.peak_memory_bytes)
        memory = std::max(memory.value_or(0), *p.profile.peak_memory_bytes);
    }
  }
  SchedJob queued{j.key, j.signature, memory, spec.gpus};
  if (spec.sm_activity_pct) queued.sm_active_pct = *spec.sm_activity_pct;
  queued.solo_time_ms = spec.solo_time_ms;
  queued.owner = j.job.owner;
  queued.priority = spec.priority;
  return queued;
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
  if (!stopping_ && !held_ && recovery_.down().empty() && !placement_paused() &&
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
    if (by_pid_.empty() && !stopping_) recovery_.restart(devices_, say);
  } else if (recovery_.check(!by_pid_.empty() || queued() > 0, say)) {
    stop_mechanism_victims();
  }
  redraw();
}

void RunEngine::finish() {
  if (finished_) return;
  finished_ = true;
  if (started_) samples_.stop();
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
  if (job.job.id != 0) ctx_.writer.job_finished(job.job.id, exit, ended_ms, malformed);
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
  if (!spec.fail_fast || stopping_) return;
  // A job's file: its source ("file.toml:12") without the line.
  const auto file_of = [](const JobSpec& s) { return s.source.substr(0, s.source.rfind(':')); };
  const std::string file = file_of(spec);
  FailFast& f = fail_fast_[file];
  if (f.settled) return;
  if (job.state == JobState::kOk || job.state == JobState::kStopped) {
    f.settled = true;  // one ended well: the file's jobs can run
    return;
  }
  if (job.state != JobState::kFailed) return;  // cancelled, out of memory, ...: not its cause
  if (!f.reasons.empty() && job.note != f.reasons.front()) {
    f.settled = true;  // failures of different kinds: not one cause
    return;
  }
  f.reasons.push_back(job.note);
  if (static_cast<int>(f.reasons.size()) < kFailFastJobs) return;
  f.settled = true;
  std::vector<size_t> waiting;
  for (const auto& other : jobs_) {
    if (other->state == JobState::kQueued && other->job.spec.fail_fast &&
        file_of(other->job.spec) == file)
      waiting.push_back(other->key);
  }
  const std::string cause =
      fmt::format("the first {} jobs of {} to end all failed the same way ({})", kFailFastJobs,
                  file, f.reasons.front());
  display_.event(fmt::format(
      "fail-fast: {}; not starting its {} jobs that wait (they end cancelled): fix the cause and "
      "run them again, or set fail_fast = false in the file's [run] to run every job regardless",
      cause, waiting.size()));
  for (size_t key : waiting) {
    (void)cancel(key, fmt::format("not started: {} (fail_fast)", cause));
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

// The progress file and checkpoint directory exist before the job starts,
// and belong to the job's user.
Status RunEngine::prepare_files(JobRuntime& job) {
  const EngineJob& j = job.job;
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

void RunEngine::start(JobRuntime& job, const Decision& a) {
  const JobSpec& spec = job.job.spec;
  Placement placement{spec.name, a.device, spec.sm_share_pct,
                      spec.memory_limit_bytes ? spec.memory_limit_bytes : a.memory_limit_bytes,
                      a.gang_devices};
  placement.outside_mps = !job.suspect.empty() && ctx_.mechanism.kind() == MechanismKind::kMps;
  // Its priority lever; the thread percentage is placement's to choose (not yet built).
  placement.opportunistic = spec.qos == QosClass::kOpportunistic;
  if (const std::optional<RunAs>& as = job.job.run_as; as && as->uid != ::geteuid())
    placement.user = ClientUser{as->uid, as->gid, as->groups};
  Result<Environment> mech_env = ctx_.mechanism.environment_for(placement);
  if (!mech_env.ok()) {
    start_failed(job, mech_env.error());
    return;
  }
  if (job.job.id == 0) {
    Result<std::vector<int64_t>> ids =
        ctx_.writer.add_jobs(run_id_, {spec}, {log_path(job)}, ctx_.clock.now_ms());
    if (!ids.ok()) {
      start_failed(job, ids.error().with_context("cannot record the job in the run store"));
      return;
    }
    job.job.id = ids->front();
  }
  if (Status s = prepare_files(job); !s.ok()) {
    start_failed(job, s.error());
    return;
  }
  LaunchRequest request{spec.name,     spec.command,     spec.working_dir, spec.env,
                        log_path(job), job.job.base_env, job.job.run_as,   {}};
  for (const auto& [k, v] : job.job.extra_env) request.env[k] = v;
  for (const auto& [k, v] : *mech_env) request.env[k] = v;
  // Its GPUs (a gang's several), and a free port where it asked for one.
  std::string gpus;
  for (int d : placement.devices()) gpus += fmt::format("{}{}", gpus.empty() ? "" : ",", d);
  request.env[kGpusEnv] = gpus;
  request.env[kGpuCountEnv] = std::to_string(placement.devices().size());
  if (Status port = fill_in_port(request, spec.gpus > 1); !port.ok()) {
    start_failed(job, port.error());
    return;
  }
  if (options_.python_client_dir) {
    const char* own = std::getenv("PYTHONPATH");
    std::string current = own ? own : "";
    if (auto set = request.env.find("PYTHONPATH"); set != request.env.end()) {
      current = set->second;
    } else if (request.base_env) {
      auto base = request.base_env->find("PYTHONPATH");
      current = base == request.base_env->end() ? "" : base->second;
    }
    request.env["PYTHONPATH"] = append_python_path(current, *options_.python_client_dir);
  }
  request.env[kProgressFileEnv] = job.job.progress_path;
  request.env["COLO_JOB_NAME"] = spec.name;
  request.env["COLO_RUN_ID"] = std::to_string(run_id_);
  request.env[kRunTokenEnv] = run_token_;
  request.env[kJobTokenEnv] = job_token(run_token_, job.job.id);
  const CgroupLimits limits{
      spec.host_memory_bytes ? spec.host_memory_bytes : options_.default_limits.memory_bytes,
      spec.cpus ? spec.cpus : options_.default_limits.cpus};
  const bool limited = limits.memory_bytes || limits.cpus;
  if (ctx_.cgroup != nullptr) {
    if (Result<std::string> cg = ctx_.cgroup->make_job_cgroup(job.job.id); cg.ok()) {
      request.cgroup = *cg;
      if (Status applied = apply_cgroup_limits(*cg, limits); !applied.ok()) {
        display_.event(fmt::format("{}: warning: {}; it runs without that limit", job.label(),
                                   applied.error().message()));
      }
    } else if (!cgroup_warned_) {
      cgroup_warned_ = true;
      display_.event("warning: " + cg.error().message() +
                     "; jobs start in their process group only");
    }
  }
  if (limited && request.cgroup.empty()) {
    display_.event(
        fmt::format("{}: warning: its host_memory and cpus limits need a cgroup, and "
                    "it has none; it runs without them",
                    job.label()));
  }
  if (!job.job.checkpoint_dir.empty()) request.env[kCheckpointDirEnv] = job.job.checkpoint_dir;
  if (!job.job.profile_dir.empty()) request.env[kProfileDirEnv] = job.job.profile_dir;
  const std::string profile_note = spec.profile ? profile_window(job, request) : "";

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
  UnixMillis now = ctx_.clock.now_ms();
  if (!pid.ok()) {
    start_failed(job, pid.error());
    return;
  }
  if (!profile_note.empty()) append_note_to_log(request.log_path, profile_note);
  job.state = JobState::kRunning;
  job.measuring.reset();
  if (a.probe || a.record)
    job.measuring.emplace(now, baseline(a.device, now), options_.measurement);
  job.record_only = a.record && !a.probe;
  job.measurement_sent = false;
  job.last_rate_ms = 0;
  job.first_progress_ms.reset();
  job.stop_reason.clear();
  job.stopped_early.clear();
  job.mechanism_victim = job.shutdown_victim = false;
  job.stalled.clear();
  job.fault_victim.clear();
  job.fault_proven.clear();
  job.outside_mps = placement.outside_mps;
  job.stall.emplace(now, spec.stall_timeout_ms,
                    job.reported_progress || spec.epoch_regex || spec.step_regex ||
                        solo_rates_.count(job.signature) > 0,
                    options_.stall);
  job.pid = *pid;
  job.device = a.device;
  job.gang_devices = a.gang_devices;
  job.started_ms = now;
  job.mps_sm_share_pct.reset();
  job.mps_memory_limit_bytes.reset();
  if (ctx_.mechanism.kind() == MechanismKind::kMps && !placement.outside_mps) {
    job.mps_sm_share_pct = placement.sm_share_pct;
    job.mps_memory_limit_bytes = placement.memory_limit_bytes;
  }
  auto mig = mech_env->find(kMigInstanceEnv);
  job.mig_instance = mig != mech_env->end() ? mig->second : "";
  job.last_epoch_end_ms = now;
  by_pid_[*pid] = job.key;
  samples_.add_job(*pid, job.job.id);
  job.sim_load.emplace(spec);
  job.simulated_oom.clear();
  for (int d : placement.devices())
    ctx_.backend.process_started(d, static_cast<uint32_t>(*pid), job.sim_load->hint());
  check_simulated_memory(job);
  if (a.estimate)
    pending_events_.emplace_back(
        job.job.id, profile_event(a.probe ? kPriorEvent : kEstimateEvent, *a.estimate, now));
  ctx_.writer.job_started(job.job.id, *pid, a.device, now, job.attempt);
  if (!job.mig_instance.empty()) ctx_.writer.job_instance(job.job.id, job.mig_instance);
  if (!a.gang_devices.empty()) ctx_.writer.job_gpus(job.job.id, gpus);
  changes_.push_back({JobChange::Kind::kStarted, job.key, job.job.id, JobState::kRunning, "",
                      a.device, job.attempt, now});
  const std::string where =
      a.gang_devices.empty() ? fmt::format("gpu{}", a.device)
                             : fmt::format("gpus {} (a gang of {})", gpus, a.gang_devices.size());
  display_.event(fmt::format(
      "{} started on {} ({}), pid {}, log {}{}{}{}", job.label(), where, device(a.device).name,
      *pid, request.log_path, a.probe ? " (new: measured where it runs)" : "",
      a.memory_limit_bytes && !spec.memory_limit_bytes
          ? ", memory limit " + format_bytes(*a.memory_limit_bytes)
          : "",
      placement.outside_mps ? ", alone: outside the shared MPS server (" + job.suspect + ")" : ""));
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
    if ((failed || !job.fault_victim.empty()) && f.exit.state != JobState::kOk &&
        job.stop_reason.empty() && job.stalled.empty() && !job.mechanism_victim &&
        !job.shutdown_victim)
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
  if (recovery_.down().empty() && !stopping_) {
    for (const FinishedJob& f : finished) {
      auto it = by_pid_.find(f.pid);
      if (it == by_pid_.end() || !jobs_[it->second]->stop_reason.empty()) continue;
      if (f.exit.state == JobState::kOk || f.exit.state == JobState::kCancelled) continue;
      Status s = ctx_.mechanism.check_after_job_failure();
      if (!s.ok()) {
        for (const FinishedJob& g : finished) {
          auto victim = by_pid_.find(g.pid);
          if (victim != by_pid_.end() && g.exit.state != JobState::kOk && rank(g) == 2)
            jobs_[victim->second]->mechanism_victim = true;
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
      if (int n = stop_token_processes(kJobTokenEnv, job_token(run_token_, job.job.id)); n > 0)
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
    read_progress_of(job, /*exited=*/true);  // the last lines it wrote before exiting
    if (job.measuring && f.exit.state == JobState::kOk) finish_probe(job);
    if (f.exit.state == JobState::kOk && job.peak_memory_bytes > 0) {
      JobProfile seen;
      seen.peak_memory_bytes = job.peak_memory_bytes;
      seen.source = fmt::format("measured: {} in run {}", job.job.spec.name, run_id_);
      scheduler_->measured(job.key, seen);
    }
    auto fault = faults.find(f.pid);
    const GpuFaultSeen seen = fault != faults.end() ? fault->second : GpuFaultSeen{};
    if (!job.fault_victim.empty() && seen.assertion && !stopping_) {
      // Stopped as a victim of a fault that its own assertion shows it raised.
      job.fault_victim.clear();
      job.suspect = fmt::format(
          "its own fatal GPU fault on {} under MPS ({}); its neighbours there were restarted",
          gpu_names(job.gpus()), seen.line);  // its exit reason says only that colo stopped it
    } else if (seen.kind != GpuFault::kNone && job.fault_victim.empty() && !job.outside_mps &&
               !stopping_) {
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
        if (!neighbours.stopped.empty())
          job.suspect += fmt::format("; it restarted {}", fmt::join(neighbours.stopped, ", "));
        if (!neighbours.watched.empty()) {
          job.suspect +=
              fmt::format("; {} ran on, watched closely", fmt::join(neighbours.watched, ", "));
        }
      }
    }
    end_attempt(job, f, seen);
  }
}

void RunEngine::check_simulated_memory(JobRuntime& job) {
  if (!ctx_.backend.simulated() || !job.sim_load || job.pid <= 0 || !job.stop_reason.empty())
    return;
  for (int d : job.gpus()) {
    auto device = std::find_if(devices_.begin(), devices_.end(),
                               [&](const DeviceInfo& i) { return i.index == d; });
    if (device == devices_.end() || device->memory_total_bytes == 0) continue;
    uint64_t others = 0;
    for (const auto& [pid, key] : by_pid_) {
      const JobRuntime& other = *jobs_[key];
      if (key == job.key || !other.sim_load || !other.simulated_oom.empty()) continue;
      const std::vector<int> on = other.gpus();
      if (std::find(on.begin(), on.end(), d) == on.end()) continue;
      others += other.sim_load->hint().memory_bytes + kSimContextBytes;
    }
    const uint64_t own = job.sim_load->hint().memory_bytes + kSimContextBytes;
    if (others + own <= device->memory_total_bytes) continue;
    // The job whose memory grew past the GPU's is the one that runs out, as
    // an allocation on a full GPU fails; the auto policy retries it.
    job.simulated_oom = fmt::format(
        "out of GPU memory on gpu{} (SIMULATED: its {} on top of the {} the other jobs held, on a "
        "{} GPU)",
        d, format_bytes(own), format_bytes(others), format_bytes(device->memory_total_bytes));
    job.stop_reason = job.simulated_oom;
    supervisor_.stop(job.pid, 0);
    ctx_.backend.process_exited(static_cast<uint32_t>(job.pid));  // its allocation failed
    display_.event(fmt::format("{}: {}", job.label(), job.simulated_oom));
    append_note_to_log(log_path(job), job.simulated_oom);
    return;
  }
}

void RunEngine::end_attempt(JobRuntime& job, const FinishedJob& ended, const GpuFaultSeen& fault) {
  const int64_t now = ctx_.clock.monotonic_ms();
  FinishedJob f = ended;
  if (!job.simulated_oom.empty()) {
    // Stopped by colo because the simulated GPU was full: it ran out of memory.
    f.exit.state = JobState::kOutOfMemory;
    f.exit.reason = job.simulated_oom;
    job.stop_reason.clear();
    job.simulated_oom.clear();
  }
  if (!job.stopped_early.empty()) {
    // However it ended after the rule's TERM (saved and exited, or killed
    // after the grace), its sweep has its result: it ends stopped, for good.
    (void)scheduler_->finished(job.key, JobEnd::kCancelled, now);
    JobExit exit = f.exit;
    exit.state = JobState::kStopped;
    exit.reason = job.stopped_early;
    record_final(job, exit, f.ended_ms);
    return;
  }
  if (!job.doomed.empty() && !stopping_) {
    // The policy stopped it before it could overrun its limit: it runs again
    // as the policy says, not counted as an attempt.
    const std::string why = std::exchange(job.doomed, {});
    const EndVerdict verdict = scheduler_->finished(job.key, JobEnd::kStopped, now);
    requeue(job, f.ended_ms, verdict.note.empty() ? why : verdict.note, /*counted=*/false);
    job.uncounted += 1;
    if (!verdict.requeued) scheduler_->enqueue(queued_as(job));  // a policy that does not stop
    return;
  }
  const bool failed = f.exit.state != JobState::kOk;
  if (!job.preempted.empty() && !stopping_) {
    // However it ended (saved and exited 0, or killed after the grace), it
    // has not finished: it waits, parked, until release_parked().
    (void)scheduler_->finished(job.key, JobEnd::kCancelled, now);
    const std::string why = job.preempted;
    job.preempted.clear();
    requeue(job, f.ended_ms,
            fmt::format("{}; it runs again later, from its checkpoint if it saved one (not "
                        "counted as an attempt)",
                        why),
            /*counted=*/false);
    job.preemptions += 1;
    parked_.push_back(job.key);
    return;
  }
  if (job.mechanism_victim && failed) {
    const std::string reason = fmt::format("{} (attempt {})", recovery_.down(), job.attempt);
    if (!stopping_ && job.job.spec.restart == RestartPolicy::kOnFailure) {
      requeue_uncounted(job, f, reason + "; not counted as an attempt");
      return;
    }
    (void)scheduler_->finished(job.key, JobEnd::kCancelled, now);
    record_final(job,
                 JobExit{JobState::kFailed, f.exit.exit_code, f.exit.signal, reason, f.exit.usage},
                 f.ended_ms);
    return;
  }
  if (!job.fault_victim.empty() && failed && !stopping_) {
    if (job.job.spec.restart == RestartPolicy::kOnFailure) {
      requeue_uncounted(job, f, job.fault_victim + "; not counted as an attempt");
      return;
    }
    (void)scheduler_->finished(job.key, JobEnd::kCancelled, now);
    record_final(job,
                 JobExit{JobState::kFailed, f.exit.exit_code, f.exit.signal,
                         job.fault_victim + " (restart = \"never\")", f.exit.usage},
                 f.ended_ms);
    return;
  }
  if (!job.stalled.empty() && failed) {
    (void)scheduler_->finished(job.key, JobEnd::kFailed, now);
    if (!stopping_ && job.may_restart()) {
      requeue(job, f.ended_ms,
              fmt::format("{}; running it again (attempt {} of {})", job.stalled,
                          job.counted_attempts() + 1, kMaxJobAttempts));
      scheduler_->enqueue(queued_as(job));
      return;
    }
    record_final(
        job, JobExit{JobState::kFailed, f.exit.exit_code, f.exit.signal, job.stalled, f.exit.usage},
        f.ended_ms);
    return;
  }
  if (fault.kind == GpuFault::kAffected && failed && !stopping_) {
    // Its neighbour's fault reached it: it runs again, not counted.
    if (job.job.spec.restart == RestartPolicy::kOnFailure) {
      const std::optional<std::string> cause = recent_fault(job.gpus());
      requeue_uncounted(job, f,
                        fmt::format("{}; a fatal GPU fault on {} under MPS reached it{}; not "
                                    "counted as an attempt",
                                    f.exit.reason, gpu_names(job.gpus()),
                                    cause ? " (" + *cause + ")" : std::string()));
      return;
    }
  }
  if (fault.kind == GpuFault::kOwn && failed && !stopping_) {
    (void)scheduler_->finished(job.key, JobEnd::kFailed, now);
    JobExit exit = f.exit;
    if (job.outside_mps || !job.fault_proven.empty()) {
      // Alone, it failed the same way: the fault is its own.
      exit.reason += "; the fault is its own: " +
                     (job.outside_mps ? "it failed again alone, outside the shared MPS server"
                                      : job.fault_proven);
      record_final(job, exit, f.ended_ms);
      return;
    }
    if (job.may_restart()) {
      requeue(job, f.ended_ms,
              fmt::format("{}; {}; its next attempt runs alone, outside the shared MPS server "
                          "(attempt {} of {})",
                          f.exit.reason, job.suspect, job.counted_attempts() + 1, kMaxJobAttempts));
      scheduler_->enqueue(queued_as(job));
      return;
    }
    exit.reason += "; " + job.suspect;
    record_final(job, exit, f.ended_ms);
    return;
  }
  if (job.shutdown_victim) {
    (void)scheduler_->finished(job.key, JobEnd::kCancelled, now);
    JobExit exit = f.exit;
    if (exit.state != JobState::kOk) {
      exit.state = JobState::kInterrupted;
      exit.reason = job.stop_reason;
    }
    record_final(job, exit, f.ended_ms);
    return;
  }
  EndVerdict verdict = scheduler_->finished(job.key, job_end_of(f.exit.state), now);
  if (verdict.requeued && !stopping_) {
    requeue(job, f.ended_ms, f.exit.reason + ": " + verdict.note, verdict.counted);
    if (!verdict.counted) job.uncounted += 1;
    return;
  }
  // A gang whose rank failed ended whole (its ranks are one process tree,
  // stopped together); it runs again whole, as its restart policy allows.
  const JobSpec& spec = job.job.spec;
  if (spec.gpus > 1 && f.exit.state == JobState::kFailed && verdict.note.empty() && !stopping_ &&
      job.may_restart()) {
    requeue(job, f.ended_ms,
            fmt::format("{}; a rank failed, so the gang runs again whole (attempt {} of {})",
                        f.exit.reason, job.counted_attempts() + 1, kMaxJobAttempts));
    scheduler_->enqueue(queued_as(job));
    return;
  }
  JobExit exit = f.exit;
  if (!job.stop_reason.empty() && exit.state == JobState::kCancelled)
    exit.reason = job.stop_reason + " (" + exit.reason + ")";
  if (!verdict.note.empty()) exit.reason += "; " + verdict.note;
  record_final(job, exit, f.ended_ms);
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
  ctx_.writer.job_requeued(job.job.id, log_path(job), reason, ended_ms);
  changes_.push_back({JobChange::Kind::kRequeued, job.key, job.job.id, JobState::kQueued, reason,
                      job.device, job.attempt, ended_ms, counted});
  display_.event(fmt::format("{} requeued: {}", job.label(), reason));
}

void RunEngine::requeue_uncounted(JobRuntime& job, const FinishedJob& f,
                                  const std::string& reason) {
  (void)scheduler_->finished(job.key, JobEnd::kCancelled, ctx_.clock.monotonic_ms());
  if (job.uncounted >= kMaxUncountedAttempts) {
    record_final(job,
                 JobExit{JobState::kFailed, f.exit.exit_code, f.exit.signal,
                         fmt::format("{}; gave up after {} attempts that ended through no fault "
                                     "of its own",
                                     reason, job.uncounted + 1),
                         f.exit.usage},
                 f.ended_ms);
    return;
  }
  requeue(job, f.ended_ms, reason, /*counted=*/false);
  job.uncounted += 1;
  scheduler_->enqueue(queued_as(job));
}

RunEngine::FaultNeighbours RunEngine::gpu_fault(const JobRuntime& source, const GpuFaultSeen& fault,
                                                const std::set<pid_t>& exited) {
  const std::vector<int> gpus = source.gpus();
  const std::string where = gpu_names(gpus);
  std::string cause =
      fault.kind == GpuFault::kOwn
          ? fmt::format("{} raised a fatal GPU fault on {} under MPS ({})", source.label(), where,
                        fault.line)
          : fmt::format("a fatal GPU fault on {} under MPS reached its clients ({}: {})", where,
                        source.label(), fault.line);
  if (fault.kind == GpuFault::kAffected) {
    if (std::optional<std::string> known = recent_fault(gpus)) cause = *known;
  }
  FaultNeighbours out;
  for (const auto& [pid, key] : by_pid_) {
    JobRuntime& other = *jobs_[key];
    if (&other == &source || other.outside_mps || !other.stop_reason.empty() ||
        !other.stalled.empty())
      continue;
    const std::vector<int> theirs = other.gpus();
    if (std::none_of(theirs.begin(), theirs.end(),
                     [&](int d) { return std::find(gpus.begin(), gpus.end(), d) != gpus.end(); }))
      continue;
    // Those already stopped (the mechanism's failure, an earlier fault) run
    // again as that says.
    if (!other.fault_victim.empty() || other.mechanism_victim) {
      out.stopped.push_back(other.label());
      continue;
    }
    // A client that reports progress is watched, not stopped: measured on an
    // H100 (docs/reliability.md), most clients of a faulted server run on
    // unharmed; one that the fault reached fails by itself or goes silent.
    if (exited.count(pid) == 0) read_progress_of(other);
    if (exited.count(pid) == 0 && other.stall && other.stall->reported()) {
      watch_after_fault(other, cause);
      append_note_to_log(log_path(other), cause +
                                              "; watched: it is restarted if it stops "
                                              "reporting progress");
      out.watched.push_back(other.label());
      continue;
    }
    other.fault_victim = "restarted: " + cause;
    out.stopped.push_back(other.label());
    if (exited.count(pid) == 0)
      supervisor_.stop(pid, std::min<int64_t>(options_.stop_grace_ms, kFaultStopGraceMs));
  }
  if (fault.kind == GpuFault::kOwn) {
    for (int d : gpus) recent_fault_[d] = {cause, ctx_.clock.monotonic_ms()};
  }
  placement_paused_until_ms_ =
      std::max(placement_paused_until_ms_, ctx_.clock.monotonic_ms() + kFaultSettleMs);
  std::vector<std::string> parts;
  if (!out.stopped.empty()) {
    parts.push_back(
        fmt::format("stopping {} (no progress reported yet, or stopping already) to run them "
                    "again once the server has recovered, not counted as an attempt",
                    fmt::join(out.stopped, ", ")));
  }
  if (!out.watched.empty()) {
    parts.push_back(
        fmt::format("watching {}: those that stop reporting progress are restarted, "
                    "not counted",
                    fmt::join(out.watched, ", ")));
  }
  display_.event(fmt::format("{}: fatal GPU fault under MPS, {} {}: {}; {}", where, source.label(),
                             fault.kind == GpuFault::kOwn ? "raised it" : "was reached by it",
                             fault.line,
                             parts.empty() ? std::string("no other job shares its server")
                                           : fmt::format("{}", fmt::join(parts, "; "))));
  return out;
}

std::optional<std::string> RunEngine::recent_fault(const std::vector<int>& gpus) const {
  for (int d : gpus) {
    auto it = recent_fault_.find(d);
    if (it != recent_fault_.end() && ctx_.clock.monotonic_ms() - it->second.at_ms <= kRecentFaultMs)
      return it->second.cause;
  }
  return std::nullopt;
}

void RunEngine::server_not_ready(JobRuntime& job, const FinishedJob& f, const GpuFaultSeen& fault) {
  ++not_ready_streak_;
  const int64_t wait_ms = std::min<int64_t>(
      kNotReadyMaxWaitMs, kNotReadyFirstWaitMs << std::min(not_ready_streak_ - 1, 5));
  placement_paused_until_ms_ =
      std::max(placement_paused_until_ms_, ctx_.clock.monotonic_ms() + wait_ms);
  requeue_uncounted(job, f,
                    fmt::format("its start was refused: the MPS server on {} was not ready ({}); "
                                "it starts again in {}, not counted as an attempt",
                                gpu_names(job.gpus()), fault.line, format_duration_ms(wait_ms)));
  // Refused again and again with nothing running: restart the MPS daemon.
  if (not_ready_streak_ >= kNotReadyRestartAfter && by_pid_.empty() && recovery_.down().empty()) {
    mechanism_failed(fmt::format("the MPS server refused {} starts in a row", not_ready_streak_));
    not_ready_streak_ = 0;
  }
}

bool RunEngine::placement_paused() const {
  if (ctx_.clock.monotonic_ms() < placement_paused_until_ms_) return true;
  // The victims of a fault are still being stopped: the server recovers once they are gone.
  return std::any_of(by_pid_.begin(), by_pid_.end(),
                     [&](const auto& p) { return !jobs_[p.second]->fault_victim.empty(); });
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
  if (stopping_) return;
  const UnixMillis now = ctx_.clock.now_ms();
  for (const auto& [pid, key] : by_pid_) {
    JobRuntime& job = *jobs_[key];
    if (!job.stall || !job.stalled.empty() || !job.stop_reason.empty() ||
        !job.fault_victim.empty() || job.mechanism_victim || job.shutdown_victim ||
        !job.preempted.empty())
      continue;
    // Watched after a fault: whether its processes still work, once a second.
    if (job.stall->after_fault() && ctx_.clock.monotonic_ms() - job.cpu_read_ms >= kFaultCpuReadMs)
      read_cpu_after_fault(job);
    std::optional<std::string> why = job.stall->stalled(now);
    if (!why) continue;
    const std::string evidence = stall_evidence(job);
    if (job.stall->after_fault()) {
      // A client hung on a faulted MPS server: the fault's victim.
      job.fault_victim = fmt::format("restarted: it stopped reporting progress after {} ({})",
                                     job.fault_watched, *why);
      job.note = job.fault_victim;
      display_.event(
          fmt::format("{} {}; {}; stopping it", job.label(), job.fault_victim, evidence));
      append_note_to_log(log_path(job), job.fault_victim + "; " + evidence);
      supervisor_.stop(pid, std::min<int64_t>(options_.stop_grace_ms, kFaultStopGraceMs));
      continue;
    }
    job.stalled = *why;
    job.note = *why;
    display_.event(fmt::format("{} {}; {}; stopping it (TERM, then KILL after {})", job.label(),
                               *why, evidence, format_duration_ms(options_.stop_grace_ms)));
    append_note_to_log(log_path(job), *why + "; " + evidence);
    supervisor_.stop(pid, options_.stop_grace_ms);
  }
}

std::string RunEngine::stall_evidence(const JobRuntime& job) const {
  std::vector<std::string> parts;
  uint64_t memory = 0;
  bool seen = false;
  std::optional<double> sm;
  for (const auto& [device, processes] : samples_.latest_processes()) {
    for (const EngineProcess& p : processes) {
      if (p.job_id != job.job.id) continue;
      seen = true;
      memory += p.sample.used_memory_bytes.value_or(0);
      if (p.sample.sm_util_pct) sm = sm.value_or(0) + *p.sample.sm_util_pct;
    }
  }
  parts.push_back(seen ? fmt::format("GPU memory {}{}", format_bytes(memory),
                                     sm ? fmt::format(", its SM use {:.0f}%", *sm) : "")
                       : "no GPU process of it seen");
  for (int d : job.gpus()) {
    auto recent = samples_.recent().find(d);
    if (recent == samples_.recent().end() || recent->second.empty()) continue;
    const DeviceSample& last = recent->second.back();
    if (last.sm_active_pct)
      parts.push_back(fmt::format("gpu{} SM activity {:.0f}%", d, *last.sm_active_pct));
  }
  std::vector<std::string> states;
  for (const ProcessState& p : process_group_states(job.pid, 6)) {
    states.push_back(fmt::format("{} {} {}{}", p.pid, p.command, p.state,
                                 p.wchan.empty() ? "" : " in " + p.wchan));
  }
  parts.push_back(states.empty() ? std::string("no process left in its group")
                                 : fmt::format("processes: {}", fmt::join(states, ", ")));
  return fmt::format("{}", fmt::join(parts, "; "));
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
  job.stop_reason = reason;
  supervisor_.stop(job.pid, options_.stop_grace_ms);
  const std::string what = fmt::format("{}; stopping it (TERM, then KILL after {})", reason,
                                       format_duration_ms(options_.stop_grace_ms));
  display_.event(fmt::format("{}: {}", job.label(), what));
  append_note_to_log(log_path(job), what);  // the log says why it ends here
  return true;
}

bool RunEngine::preempt(size_t key, const std::string& reason) {
  if (key >= jobs_.size() || stopping_) return false;
  JobRuntime& job = *jobs_[key];
  if (job.state != JobState::kRunning || job.pid == 0 ||
      job.job.spec.restart != RestartPolicy::kOnFailure || !job.preempted.empty() ||
      !job.stalled.empty() || !job.stop_reason.empty() || !job.fault_victim.empty() ||
      job.mechanism_victim || job.shutdown_victim)
    return false;
  job.preempted = reason;
  job.note = reason;
  display_.event(fmt::format("{} preempted: {}; stopping it (TERM, then KILL after {})",
                             job.label(), reason, format_duration_ms(options_.stop_grace_ms)));
  append_note_to_log(log_path(job),
                     fmt::format("preempted: {}; TERM now, KILL after {}: save a checkpoint into "
                                 "COLO_CHECKPOINT_DIR and exit",
                                 reason, format_duration_ms(options_.stop_grace_ms)));
  supervisor_.stop(job.pid, options_.stop_grace_ms);
  return true;
}

void RunEngine::release_parked() {
  for (size_t key : parked_) scheduler_->enqueue(queued_as(*jobs_[key]));
  parked_.clear();
}

void RunEngine::stop_all(StopKind kind, int64_t grace_ms, const std::string& reason) {
  if (!stopping_) {
    release_parked();  // drained with the rest of the queue
    stopping_ = true;
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
      if (kind == StopKind::kShutdown) {
        job.shutdown_victim = true;
        job.stop_reason = reason;
      }
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
  GpuBaseline base;
  int n = 0;
  auto recent = samples_.recent().find(device);
  if (recent != samples_.recent().end()) {
    for (const DeviceSample& d : recent->second) {
      if (d.time_ms < started_ms - kBaselineMs || d.time_ms > started_ms || !d.sm_active_pct)
        continue;
      base.sm_active_pct += *d.sm_active_pct;
      base.gpu_util_pct += d.gpu_util_pct.value_or(*d.sm_active_pct * 2);
      ++n;
    }
  }
  if (n > 0) {
    base.sm_active_pct /= n;
    base.gpu_util_pct /= n;
  }
  return base;
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
      job.measuring->profile(fmt::format("probe: {} in run {}", job.job.spec.name, run_id_));
  if (p.peak_memory_bytes && job.job.id != 0)
    pending_events_.emplace_back(job.job.id, profile_event(kProbeEvent, p, ctx_.clock.now_ms()));
  if (job.record_only) return;
  if (p.samples_per_s && p.rate_uncertainty == 0) solo_rates_[job.signature] = *p.samples_per_s;
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

void RunEngine::read_progress_of(JobRuntime& job, bool exited) {
  if (!job.reader) return;
  std::vector<ProgressEvent> events = job.reader->poll(ctx_.clock.now_ms(), exited);
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
      not_ready_streak_ = 0;  // a client got going: the server accepts clients
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
    if (!exited) judge_early_stop(job, e);
    pending_events_.emplace_back(job.job.id, std::move(e));
  }
  for (const std::string& note : job.reader->take_notices()) {
    display_.event(fmt::format("{}: {}", job.label(), note));
    append_note_to_log(log_path(job), note);
  }
}

void RunEngine::judge_early_stop(JobRuntime& job, const ProgressEvent& e) {
  const JobSpec& spec = job.job.spec;
  if (!spec.early_stop || spec.objective.empty() || stopping_ || job.pid <= 0 ||
      !job.stop_reason.empty() || !job.preempted.empty() || !job.fault_victim.empty())
    return;
  if (e.kind != "epoch_end" && e.kind != "metric") return;
  auto value = e.metrics.find(spec.objective);
  if (value == e.metrics.end()) return;
  // An epoch's end counts for that epoch; a metric for its own epoch, else
  // for the last epoch that ended before it.
  const int64_t epoch =
      e.kind == "epoch_end" ? job.epoch.value_or(job.epochs) : e.epoch.value_or(job.epochs);
  auto goal = spec.lower_is_better.find(spec.objective);
  std::optional<std::string> verdict = early_stop_.report(
      job.job.trials_of.empty() ? spec.source : job.job.trials_of, static_cast<int64_t>(job.key),
      *spec.early_stop,
      TrialReport{spec.objective, goal == spec.lower_is_better.end() || goal->second, epoch,
                  value->second});
  if (!verdict) return;
  job.stopped_early = *verdict;
  job.stop_reason = *verdict;
  supervisor_.stop(job.pid, options_.stop_grace_ms);
  const std::string what = fmt::format("{}; stopping it (TERM, then KILL after {})", *verdict,
                                       format_duration_ms(options_.stop_grace_ms));
  display_.event(fmt::format("{}: {}", job.label(), what));
  append_note_to_log(log_path(job), what);
}

std::string RunEngine::profile_window(JobRuntime& job, LaunchRequest& request) {
  const ProfileSpec& p = *job.job.spec.profile;
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
    return "";
  }
  const std::optional<std::string> tool = find_program(p.tool);
  if (!tool) {
    std::string note = fmt::format(
        "profile: {} is not installed here (not on PATH), so this attempt runs unprofiled; "
        "install {} or use tool = \"torch\" (docs/profiling.md)",
        p.tool, p.tool == "nsys" ? "NVIDIA Nsight Systems" : "NVIDIA Nsight Compute");
    display_.event(fmt::format("{}: {}", job.label(), note));
    return note;
  }
  const std::string out = fmt::format("{}/{}-attempt{}", job.job.profile_dir, p.tool, job.attempt);
  std::vector<std::string> wrapped;
  if (p.tool == "nsys") {
    wrapped = {*tool, "profile", "--output", out, "--force-overwrite", "true"};
    if (p.after_ms) wrapped.insert(wrapped.end(), {"--delay", seconds(*p.after_ms)});
    if (p.duration_ms) wrapped.insert(wrapped.end(), {"--duration", seconds(*p.duration_ms)});
  } else {
    // A bounded kernel range: ncu counts kernel launches, so `steps` is
    // the number of kernels it profiles (default 10), from the first.
    wrapped = {*tool,
               "--target-processes",
               "all",
               "--export",
               out,
               "--force-overwrite",
               "--launch-count",
               std::to_string(p.steps.value_or(10))};
  }
  wrapped.insert(wrapped.end(), request.argv.begin(), request.argv.end());
  request.argv = std::move(wrapped);
  display_.event(fmt::format("{}: profiled by {} into {}", job.label(), p.tool, out));
  return "";
}

void RunEngine::stop_doomed() {
  if (!scheduler_) return;
  for (const Unplaceable& u : scheduler_->take_stops()) {
    JobRuntime& job = *jobs_[u.job];
    if (job.state != JobState::kRunning || job.pid <= 0 || !job.doomed.empty() ||
        !job.stop_reason.empty() || stopping_)
      continue;
    job.doomed = u.reason;
    display_.event(fmt::format("{}: {}", job.label(), u.reason));
    append_note_to_log(log_path(job), "stopped by colo: " + u.reason);
    supervisor_.stop(job.pid, 0);
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
  ctx_.writer.add_samples(run_id_, samples_.take_devices(), samples_.take_processes());
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
    jobs_[key]->mechanism_victim = true;
    supervisor_.stop(pid, std::min<int64_t>(options_.stop_grace_ms, 2000));
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
  v.stalled = j.state == JobState::kRunning ? j.stalled : "";
  v.outside_mps = j.outside_mps && j.state == JobState::kRunning;
  v.mps_sm_share_pct = j.mps_sm_share_pct;
  v.mps_memory_limit_bytes = j.mps_memory_limit_bytes;
  v.mig_instance = j.mig_instance;
  if (auto solo = solo_rates_.find(j.signature); solo != solo_rates_.end())
    v.solo_samples_per_s = solo->second;
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
  display_.redraw(fmt::format("run {}: {} running, {} queued, {} done of {}", run_id_, running,
                              queued(), done, jobs_.size()),
                  lines);
}

}  // namespace colo
