#include "run/run_controller.h"

#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>
#include <ostream>

#include "analysis/profile_event.h"
#include "analysis/stored.h"
#include "common/paths.h"
#include "common/units.h"
#include "data/loader_process.h"
#include "data/ring_owner.h"
#include "gpu/device_json.h"
#include "jobs/cgroup.h"
#include "jobs/job_signature.h"
#include "jobs/job_supervisor.h"
#include "jobs/progress.h"
#include "monitor/gpu_sampler.h"
#include "run/data_loading.h"
#include "run/leftovers.h"
#include "run/live_display.h"
#include "sched/auto_scheduler.h"
#include "sched/scheduler.h"
#include "sharing/mig_mechanism.h"
#include "sharing/process_finder.h"
#include "store/store_writer.h"

namespace colo {
namespace {

// What the simulated backend assumes for a job that gives no hints.
constexpr uint64_t kSimDefaultMemoryBytes = 2ull << 30;
constexpr double kSimDefaultSmPct = 30.0;
// Process lists cost more than device metrics (several NVML calls, more with
// more processes): read them every other device sample (about once a second
// by default), but no less often than every 200 ms so short jobs are seen.
int64_t process_period_ms(int64_t device_period_ms) {
  return std::max<int64_t>(2 * device_period_ms, 200);
}

// Mechanism health is checked this often while jobs run.
constexpr int64_t kHealthCheckMs = 5000;

// A file name made from a job name: letters, digits, '.', '_', '-', '=' kept.
std::string file_stem(size_t index, const std::string& name) {
  std::string stem = fmt::format("{:03}-", index + 1);
  for (char c : name) {
    bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '=';
    stem += keep ? c : '_';
  }
  return stem.substr(0, 120);
}

// The directory of a store's logs under the logs root: run ids are per store,
// so stores sharing a state directory must not share a directory of runs.
// "<file stem>-<8 hex digits of its absolute path>", e.g. "colo-3fa2c1d0"
// (std::hash: stable for a given colo build; the store keeps each log's path).
std::string store_logs_key(const std::string& store_path) {
  std::string absolute = absolute_path(store_path);
  if (char* real = realpath(absolute.c_str(), nullptr)) {
    absolute = real;
    free(real);  // NOLINT(cppcoreguidelines-no-malloc)
  }
  std::string name = absolute.substr(absolute.rfind('/') + 1);
  std::string stem = name.substr(0, name.rfind('.'));
  if (stem.empty()) stem = "store";
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return fmt::format("{}-{:08x}", stem.substr(0, 40),
                     static_cast<uint32_t>(std::hash<std::string>{}(absolute)));
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "unknown";
}

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

// This program's path, to start `colo data serve` children.
std::string self_executable() {
  std::string exe(4096, '\0');
  ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  return n > 0 ? exe.substr(0, static_cast<size_t>(n)) : "colo";
}

// Live state of one job during the run.
struct JobRuntime {
  const JobSpec* spec = nullptr;
  int64_t id = 0;
  std::string log_path;
  std::string progress_path;
  JobState state = JobState::kQueued;
  std::optional<int> device;
  pid_t pid = 0;
  UnixMillis started_ms = 0;
  UnixMillis ended_ms = 0;
  int64_t epochs = 0;
  UnixMillis last_epoch_end_ms = 0;
  std::optional<int64_t> last_epoch_ms;
  std::optional<double> last_samples_per_s;
  std::optional<ProgressReader> reader;
  std::string note;
  // Auto policy.
  std::string signature;
  bool probe = false;             // measured for its family's profile
  bool probe_first_sent = false;  // its first profile went to the scheduler
  int attempt = 1;
  UnixMillis last_rate_ms = 0;  // time of the last progress event with samples
  int rates_seen = 0;
  uint64_t peak_memory_bytes = 0;  // largest summed memory of its processes seen
  double probe_sm_sum = 0;
  double probe_util_sum = 0;
  int probe_samples = 0;
  UnixMillis memory_sampled_ms = 0;   // its processes' memory was last seen then
  UnixMillis first_epoch_end_ms = 0;  // 0: no epoch ended yet (this attempt)
  std::optional<int64_t> first_epoch_samples;
  std::optional<int64_t> first_progress_ms;  // since its start
  SimLoadHint sim_load;                      // what the simulated backend was told
  bool sim_memory_assumed = false;           // it still holds the default (none stated)
};

JobEnd job_end_of(JobState state) {
  switch (state) {
    case JobState::kOk:
      return JobEnd::kOk;
    case JobState::kOutOfMemory:
      return JobEnd::kOutOfMemory;
    case JobState::kCancelled:
    case JobState::kKilled:
      return JobEnd::kCancelled;
    default:
      return JobEnd::kFailed;
  }
}

// The run loop and its state. Lives for one run_job_file() call.
class RunLoop {
 public:
  RunLoop(const JobFile& file, const RunOptions& options, RunContext& ctx, StoreWriter& writer,
          RunCgroup* cgroup, int64_t run_id, std::string run_token, std::vector<DeviceInfo> devices,
          std::vector<JobRuntime> jobs, SharedLoaders& loaders)
      : file_(file),
        options_(options),
        ctx_(ctx),
        writer_(writer),
        cgroup_(cgroup),
        loaders_(loaders),
        run_id_(run_id),
        run_token_(std::move(run_token)),
        devices_(std::move(devices)),
        jobs_(std::move(jobs)),
        supervisor_(ctx.clock),
        sampler_(
            ctx.backend, ctx.clock, device_indices(devices_),
            SamplerOptions{options.sample_period_ms, process_period_ms(options.sample_period_ms)}),
        attributor_(process_table_),
        display_(ctx.out, options.live_display) {}

  // Steps 4-6. Returns whether the run was cancelled.
  bool run() {
    scheduler_ = make_scheduler();
    ctx_.out << "policy: " << scheduler_->describe() << '\n';
    for (size_t i = 0; i < jobs_.size(); ++i) {
      jobs_[i].signature = job_signature(*jobs_[i].spec);
      scheduler_->enqueue({i, jobs_[i].signature, jobs_[i].spec->gpu_memory_bytes});
    }
    sampler_.start();
    int64_t next_flush = ctx_.clock.monotonic_ms();
    int64_t next_health = ctx_.clock.monotonic_ms() + kHealthCheckMs;
    int handled_stops = 0;
    while (true) {
      int stops = ctx_.stop_requests.load();
      if (stops > handled_stops) {
        handled_stops = stops;
        cancel(stops >= 2 ? 0 : options_.stop_grace_ms);
      }
      collect_samples();
      reap();
      for (const std::string& e : loaders_.poll()) display_.event("warning: " + e);
      if (!cancelled_) place();
      read_progress();
      finish_probes();
      int64_t now = ctx_.clock.monotonic_ms();
      if (now >= next_flush) {
        flush();
        next_flush = now + options_.flush_ms;
      }
      write_store();
      if (now >= next_health && supervisor_.running_count() > 0) {
        check_health();
        next_health = now + kHealthCheckMs;
      }
      redraw();
      if (scheduler_->queued() == 0 && supervisor_.running_count() == 0) break;
      ctx_.clock.sleep_for_ms(options_.tick_ms);
    }
    sampler_.stop();
    collect_samples();
    flush();
    write_store();
    display_.finish();
    SamplerStats stats = sampler_.stats();
    if (stats.wall_ms > 0) {
      ctx_.out << fmt::format(
          "sampler: {} device samples, {} process samples, {} errors, {:.2f}% of one core\n",
          stats.device_samples, stats.process_samples, stats.errors,
          100.0 * static_cast<double>(stats.thread_cpu_ms) / static_cast<double>(stats.wall_ms));
    }
    return cancelled_;
  }

  int count(bool ok) const {
    return static_cast<int>(std::count_if(jobs_.begin(), jobs_.end(), [&](const JobRuntime& j) {
      return (j.state == JobState::kOk) == ok;
    }));
  }

 private:
  static std::vector<int> device_indices(const std::vector<DeviceInfo>& devices) {
    std::vector<int> idx;
    for (const DeviceInfo& d : devices) idx.push_back(d.index);
    return idx;
  }

  int jobs_per_device_limit() const {
    int limit = ctx_.mechanism.max_jobs_per_device();
    if (options_.max_jobs_per_gpu)
      limit = std::min(limit, *options_.max_jobs_per_gpu);
    else if (file_.max_jobs_per_gpu)
      limit = std::min(limit, *file_.max_jobs_per_gpu);
    return std::max(1, limit);
  }

  std::unique_ptr<Scheduler> make_scheduler() {
    const int limit = jobs_per_device_limit();
    if (options_.policy.value_or(file_.policy.value_or("fixed")) != "auto") {
      std::vector<DeviceSlots> slots;
      for (const DeviceInfo& d : devices_) slots.push_back({d.index, d.memory_total_bytes, limit});
      return std::make_unique<FixedScheduler>(slots,
                                              fmt::format("fixed, up to {} jobs per GPU", limit));
    }
    AutoOptions auto_options;
    auto_options.mode = ctx_.mechanism.kind() == MechanismKind::kNaive ? ShareMode::kTimeSliced
                                                                       : ShareMode::kSpatial;
    auto_options.max_jobs_per_gpu = limit;
    auto_options.memory_limits = ctx_.mechanism.kind() == MechanismKind::kMps;
    auto_options.host_cpus = host_cpu_count();
    auto_options.host_memory_bytes = host_memory_bytes();
    std::vector<GpuSlot> slots;
    for (const DeviceInfo& d : devices_) slots.push_back({d.index, d.memory_total_bytes});
    Result<std::vector<LearnedProfile>> stored = learn_profiles(ctx_.store);
    if (!stored.ok())
      display_.event("warning: no profiles from the store: " + stored.error().message());
    std::vector<LearnedProfile> measured = stored.ok() ? *stored : std::vector<LearnedProfile>{};
    InterferenceModel model;
    if (Result<InterferenceModel> fitted = calibrated_model(ctx_.store, model, measured);
        fitted.ok())
      model = *fitted;
    display_.event("auto: interference model: " + model.describe());
    auto scheduler = std::make_unique<AutoScheduler>(slots, auto_options, model);
    std::map<std::string, JobProfile> known =
        known_profiles(measured, file_.jobs, devices_.front().name, ctx_.backend.simulated());
    for (auto& [family, instances] :
         family_instances(measured, file_.jobs, devices_.front().name, ctx_.backend.simulated())) {
      for (FamilyInstance& i : instances) scheduler->add_family_instance(family, std::move(i));
    }
    std::map<std::string, HostCost> loader_costs;
    if (Result<std::vector<LoaderOptions>> loaders = loaders_for(file_); loaders.ok()) {
      for (const LoaderOptions& l : *loaders)
        loader_costs[l.name] = HostCost{l.name, static_cast<double>(l.threads), l.ring_bytes};
    }
    for (const JobSpec& spec : file_.jobs) {
      std::string sig = job_signature(spec);
      scheduler->set_label(sig, spec.group);
      if (!spec.family.empty()) {
        scheduler->set_family(sig, FamilyMember{spec.family, instance_label(spec.name), spec.params,
                                                spec.resource_params});
      }
      if (spec.dataset && loader_costs.count(*spec.dataset))
        scheduler->set_host_cost(sig, loader_costs.at(*spec.dataset));
      auto it = known.find(sig);
      if (it == known.end() || scheduler->profile(sig) != nullptr) continue;
      scheduler->set_profile(sig, it->second);
      const JobProfile& p = it->second;
      display_.event(fmt::format(
          "auto: {} profile: {} peak, {} SM activity, {} alone; from {}", spec.group,
          p.peak_memory_bytes ? format_bytes(*p.peak_memory_bytes) : "memory unknown",
          p.sm_active_pct ? fmt::format("{:.0f}%", *p.sm_active_pct) : "unknown",
          p.samples_per_s ? fmt::format("{:.0f} samples/s", *p.samples_per_s) : "rate unknown",
          p.source));
    }
    return scheduler;
  }

  const DeviceInfo& device(int index) const {
    auto it = std::find_if(devices_.begin(), devices_.end(),
                           [&](const DeviceInfo& d) { return d.index == index; });
    return it != devices_.end() ? *it : devices_.front();
  }

  void record_final(JobRuntime& job, const JobExit& exit, UnixMillis ended_ms) {
    job.state = exit.state;
    job.ended_ms = ended_ms;
    job.note = exit.state == JobState::kOk ? "" : exit.reason;
    int64_t malformed = job.reader ? job.reader->malformed_lines() : 0;
    if (job.reader && job.reader->throttled().any()) {
      pending_events_.emplace_back(job.id, job.reader->throttled().to_event(ended_ms));
    }
    writer_.job_finished(job.id, exit, ended_ms, malformed);
    std::string what = fmt::format("{} {}", job.spec->name, to_string(exit.state));
    if (job.started_ms > 0)
      what += fmt::format(" after {}", format_duration_ms(ended_ms - job.started_ms));
    if (!job.note.empty()) what += ": " + job.note;
    if (malformed > 0) what += fmt::format(" ({} malformed progress lines ignored)", malformed);
    display_.event(what);
  }

  void place() {
    std::vector<Decision> decisions = scheduler_->schedule(ctx_.clock.monotonic_ms());
    for (const Unplaceable& u : scheduler_->take_unplaceable()) {
      record_final(jobs_[u.job],
                   JobExit{JobState::kFailed, std::nullopt, std::nullopt, u.reason, {}},
                   ctx_.clock.now_ms());
    }
    for (const std::string& note : scheduler_->take_notes()) display_.event("auto: " + note);
    for (const Decision& d : decisions) start(jobs_[d.job], d);
  }

  // A job whose start failed ends failed; the scheduler forgets it.
  void start_failed(JobRuntime& job, size_t index, const Error& e) {
    (void)scheduler_->finished(index, JobEnd::kFailed, ctx_.clock.monotonic_ms());
    record_final(job, JobExit{JobState::kFailed, std::nullopt, std::nullopt, e.message(), {}},
                 ctx_.clock.now_ms());
  }

  void start(JobRuntime& job, const Decision& a) {
    const JobSpec& spec = *job.spec;
    const size_t index = a.job;
    Placement placement{spec.name, a.device, spec.sm_share_pct,
                        spec.memory_limit_bytes ? spec.memory_limit_bytes : a.memory_limit_bytes};
    Result<Environment> mech_env = ctx_.mechanism.environment_for(placement);
    if (!mech_env.ok()) {
      start_failed(job, index, mech_env.error());
      return;
    }
    LaunchRequest request{spec.name, spec.command, spec.working_dir, spec.env, job.log_path, {}};
    for (const auto& [k, v] : *mech_env) request.env[k] = v;
    request.env[kProgressFileEnv] = job.progress_path;
    request.env["COLO_JOB_NAME"] = spec.name;
    request.env["COLO_RUN_ID"] = std::to_string(run_id_);
    request.env[kRunTokenEnv] = run_token_;
    request.env[kJobTokenEnv] = job_token(run_token_, job.id);
    if (cgroup_ != nullptr) {
      if (Result<std::string> cg = cgroup_->make_job_cgroup(job.id); cg.ok()) {
        request.cgroup = *cg;
      } else if (!cgroup_warned_) {
        cgroup_warned_ = true;
        display_.event("warning: " + cg.error().message() +
                       "; jobs start in their process group only");
      }
    }
    if (spec.dataset) {
      std::map<std::string, std::string> data_env = loaders_.environment_for(*spec.dataset);
      if (data_env.empty())
        display_.event(fmt::format("warning: {}: the data loader of '{}' is not running", spec.name,
                                   *spec.dataset));
      for (const auto& [k, v] : data_env) request.env[k] = v;
    }

    Result<ProgressReader> reader = ProgressReader::create(
        {job.progress_path, job.log_path, spec.epoch_regex, spec.step_regex, spec.epoch_samples},
        ctx_.clock.now_ms());
    if (!reader.ok()) {
      start_failed(job, index, reader.error());
      return;
    }
    // A retry keeps reading the progress file where the last attempt stopped.
    if (!job.reader) job.reader.emplace(std::move(reader).value());
    job.reader->follow_log(job.log_path);

    Result<pid_t> pid = supervisor_.start(request);
    UnixMillis now = ctx_.clock.now_ms();
    if (!pid.ok()) {
      start_failed(job, index, pid.error());
      return;
    }
    job.state = JobState::kRunning;
    job.probe = a.probe;
    job.probe_first_sent = false;
    job.memory_sampled_ms = 0;
    job.first_epoch_end_ms = 0;
    job.first_epoch_samples.reset();
    job.rates_seen = 0;
    job.last_rate_ms = 0;
    job.probe_samples = 0;
    job.probe_sm_sum = job.probe_util_sum = 0;
    job.first_progress_ms.reset();
    job.pid = *pid;
    job.device = a.device;
    job.started_ms = now;
    job.last_epoch_end_ms = now;
    by_pid_[*pid] = a.job;
    attributor_.add_job(*pid, job.id);
    // Simulated memory: the hint, else nothing until the job's first
    // progress (start-up holds no GPU memory), then what it states or the
    // default (simulated_load()).
    job.sim_load = SimLoadHint{spec.gpu_memory_bytes.value_or(0),
                               spec.sm_share_pct ? double(*spec.sm_share_pct) : kSimDefaultSmPct};
    job.sim_memory_assumed = !spec.gpu_memory_bytes;
    ctx_.backend.process_started(a.device, static_cast<uint32_t>(*pid), job.sim_load);
    if (a.estimate)
      pending_events_.emplace_back(job.id, profile_event(kEstimateEvent, *a.estimate, now));
    writer_.job_started(job.id, *pid, a.device, now);
    if (auto mig = mech_env->find(kMigInstanceEnv); mig != mech_env->end())
      writer_.job_instance(job.id, mig->second);
    display_.event(fmt::format("{} started on gpu{} ({}), pid {}, log {}{}{}", spec.name, a.device,
                               device(a.device).name, *pid, job.log_path,
                               a.probe ? " (probe: alone until its profile is measured)" : "",
                               a.memory_limit_bytes && !spec.memory_limit_bytes
                                   ? ", memory limit " + format_bytes(*a.memory_limit_bytes)
                                   : ""));
  }

  void reap() {
    for (const FinishedJob& f : supervisor_.poll()) {
      auto it = by_pid_.find(f.pid);
      if (it == by_pid_.end()) continue;
      const size_t index = it->second;
      JobRuntime& job = jobs_[index];
      by_pid_.erase(it);
      retired_pids_.push_back(f.pid);  // samples taken before its end may still be in flight
      // Without a cgroup, a daemon the job started in a new session escaped
      // its process group: found by the job's token.
      if (!f.contained) {
        if (int n = stop_token_processes(kJobTokenEnv, job_token(run_token_, job.id)); n > 0) {
          display_.event(
              fmt::format("{}: stopped {} processes it left running", job.spec->name, n));
        }
      }
      ctx_.backend.process_exited(static_cast<uint32_t>(f.pid));
      read_progress_of(job, /*exited=*/true);  // the last lines it wrote before exiting
      if (job.probe && f.exit.state == JobState::kOk) finish_probe(job);
      if (f.exit.state == JobState::kOk && job.peak_memory_bytes > 0) {
        JobProfile seen;
        seen.peak_memory_bytes = job.peak_memory_bytes;
        seen.source = fmt::format("measured: {} in run {}", job.spec->name, run_id_);
        scheduler_->measured(index, seen);
      }
      EndVerdict verdict =
          scheduler_->finished(index, job_end_of(f.exit.state), ctx_.clock.monotonic_ms());
      if (verdict.requeued && !cancelled_) {
        requeue(job, f, verdict.note);
        continue;
      }
      JobExit exit = f.exit;
      if (!verdict.note.empty()) exit.reason += "; " + verdict.note;
      record_final(job, exit, f.ended_ms);
    }
  }

  // An out-of-memory end the auto policy retries: the job is queued again,
  // its next attempt logs to <stem>.attempt<N>.log.
  void requeue(JobRuntime& job, const FinishedJob& f, const std::string& note) {
    ProgressEvent e;
    e.time_ms = f.ended_ms;
    e.kind = "requeued";
    e.metrics["attempt"] = job.attempt;
    pending_events_.emplace_back(job.id, std::move(e));
    job.attempt += 1;
    job.state = JobState::kQueued;
    job.probe = false;
    std::string stem = job.log_path.substr(0, job.log_path.find(".log"));
    if (auto pos = stem.find(".attempt"); pos != std::string::npos) stem.resize(pos);
    job.log_path = fmt::format("{}.attempt{}.log", stem, job.attempt);
    writer_.job_requeued(job.id, job.log_path);
    display_.event(fmt::format("{} {}: {}", job.spec->name, f.exit.reason, note));
  }

  // Auto policy: a probe's first profile goes to the scheduler once it ended
  // an epoch and its memory was sampled after that, so that the rest of its
  // family starts up while it measures on; its last when two progress rates
  // were seen, another job on its GPU reported progress (the GPU is no longer
  // its alone), or after probe_ms.
  void finish_probes() {
    const UnixMillis now = ctx_.clock.now_ms();
    for (JobRuntime& job : jobs_) {
      if (job.state != JobState::kRunning || !job.probe) continue;
      if (job.rates_seen >= 2 || now - job.started_ms >= options_.probe_ms || shared_since(job)) {
        finish_probe(job);
      } else if (!job.probe_first_sent && job.first_epoch_end_ms > 0 &&
                 job.memory_sampled_ms >= job.first_epoch_end_ms && job.probe_samples > 0) {
        job.probe_first_sent = true;
        send_probe_profile(job, "first epoch");
      }
    }
  }

  // When another job on `job`'s GPU first reported progress (it works there
  // from then on), if one did while `job` ran.
  std::optional<UnixMillis> shared_since(const JobRuntime& job) const {
    std::optional<UnixMillis> since;
    for (const JobRuntime& other : jobs_) {
      if (&other == &job || other.state != JobState::kRunning || other.device != job.device ||
          !other.first_progress_ms)
        continue;
      const UnixMillis t = other.started_ms + *other.first_progress_ms;
      if (!since || t < *since) since = t;
    }
    return since;
  }

  void finish_probe(JobRuntime& job) {
    job.probe = false;
    send_probe_profile(job, job.probe_first_sent ? "refined" : "");
  }

  void send_probe_profile(JobRuntime& job, std::string_view stage) {
    JobProfile p;
    if (job.peak_memory_bytes > 0) p.peak_memory_bytes = job.peak_memory_bytes;
    if (job.probe_samples > 0) {
      p.sm_active_pct = job.probe_sm_sum / job.probe_samples;
      p.gpu_util_pct = job.probe_util_sum / job.probe_samples;
    }
    if (job.rates_seen > 0) {
      p.samples_per_s = job.last_samples_per_s;
    } else if (job.first_epoch_end_ms > 0 && job.first_progress_ms && job.first_epoch_samples) {
      // One epoch: its rate from the first progress (start-up left out).
      const UnixMillis from = job.started_ms + *job.first_progress_ms;
      if (job.first_epoch_end_ms > from)
        p.samples_per_s = static_cast<double>(*job.first_epoch_samples) * 1000.0 /
                          static_cast<double>(job.first_epoch_end_ms - from);
    }
    p.startup_ms = job.first_progress_ms;
    p.source = fmt::format("probe: {} in run {}", job.spec->name, run_id_);
    display_.event(fmt::format(
        "auto: measured {}{}: {} peak, {} SM activity, {}", job.spec->name,
        stage.empty() ? "" : fmt::format(" ({})", stage),
        p.peak_memory_bytes ? format_bytes(*p.peak_memory_bytes) : "memory not seen",
        p.sm_active_pct ? fmt::format("{:.0f}%", *p.sm_active_pct) : "unknown",
        p.samples_per_s ? fmt::format("{:.0f} samples/s", *p.samples_per_s) : "no rate yet"));
    if (p.peak_memory_bytes)
      pending_events_.emplace_back(job.id, profile_event(kProbeEvent, p, ctx_.clock.now_ms()));
    scheduler_->learned(job.signature, p);
  }

  void read_progress_of(JobRuntime& job, bool exited = false) {
    if (!job.reader) return;
    std::vector<ProgressEvent> events = job.reader->poll(ctx_.clock.now_ms(), exited);
    if (ctx_.backend.simulated() && !events.empty()) simulated_load(job, events);
    for (ProgressEvent& e : events) {
      if (!job.first_progress_ms) job.first_progress_ms = e.time_ms - job.started_ms;
      if ((e.kind == "epoch_end" || e.kind == "step") && e.samples) {
        // A step's rate runs from the previous step, an epoch's from the previous epoch's end.
        const UnixMillis last = e.kind == "step" ? job.last_rate_ms : job.last_epoch_end_ms;
        const UnixMillis since = last > job.started_ms ? last : 0;
        if (since > 0 && e.time_ms > since) {
          double rate =
              static_cast<double>(*e.samples) * 1000.0 / static_cast<double>(e.time_ms - since);
          scheduler_->observe_rate(static_cast<size_t>(&job - jobs_.data()), rate,
                                   ctx_.clock.monotonic_ms());
          ++job.rates_seen;
          if (e.kind == "step") job.last_samples_per_s = rate;
        }
        if (e.kind == "step") job.last_rate_ms = e.time_ms;
      }
      if (e.kind == "epoch_end") {
        if (job.first_epoch_end_ms == 0) {
          job.first_epoch_end_ms = e.time_ms;
          job.first_epoch_samples = e.samples;
        }
        ++job.epochs;
        int64_t took = e.time_ms - job.last_epoch_end_ms;
        if (took > 0) {
          job.last_epoch_ms = took;
          if (e.samples)
            job.last_samples_per_s =
                static_cast<double>(*e.samples) * 1000.0 / static_cast<double>(took);
        }
        job.last_epoch_end_ms = e.time_ms;
        if (!options_.live_display) {
          display_.event(fmt::format(
              "{} epoch {} done in {}{}", job.spec->name, e.epoch.value_or(job.epochs),
              format_duration_ms(took),
              job.last_samples_per_s ? fmt::format(", {:.0f} samples/s", *job.last_samples_per_s)
                                     : ""));
        }
      }
      pending_events_.emplace_back(job.id, std::move(e));
    }
    for (const std::string& note : job.reader->take_notices()) {
      display_.event(fmt::format("{}: {}", job.spec->name, note));
      append_note_to_log(job.log_path, note);
    }
  }

  // The simulated backend: a job may state what it holds on the simulated
  // GPU (metrics simulated_gpu_memory_mib and simulated_sm_active_pct, as
  // bench/sim_train.py does) so that its samples follow it; a job without a
  // memory hint that states nothing by its first progress holds the default.
  void simulated_load(JobRuntime& job, const std::vector<ProgressEvent>& events) {
    if (!job.device || job.pid <= 0) return;
    bool changed = false;
    for (const ProgressEvent& e : events) {
      auto memory = e.metrics.find("simulated_gpu_memory_mib");
      if (memory != e.metrics.end() && memory->second >= 0) {
        job.sim_load.memory_bytes = static_cast<uint64_t>(memory->second * 1024 * 1024);
        job.sim_memory_assumed = false;
        changed = true;
      }
      auto sm = e.metrics.find("simulated_sm_active_pct");
      if (sm != e.metrics.end() && sm->second >= 0) {
        job.sim_load.sm_active_pct = sm->second;
        changed = true;
      }
    }
    if (job.sim_memory_assumed) {
      job.sim_load.memory_bytes = kSimDefaultMemoryBytes;
      job.sim_memory_assumed = false;
      changed = true;
    }
    if (changed)
      ctx_.backend.process_started(*job.device, static_cast<uint32_t>(job.pid), job.sim_load);
  }

  void read_progress() {
    for (JobRuntime& job : jobs_) {
      if (job.state == JobState::kRunning) read_progress_of(job);
    }
  }

  // Takes the sampler's readings and attributes processes to jobs while the
  // jobs' process trees still exist; jobs reaped since the last call are
  // forgotten only afterwards.
  void collect_samples() {
    SamplerBatch batch = sampler_.drain();
    for (const std::string& e : batch.errors) {
      if (sampler_errors_shown_++ < 5) display_.event("warning: GPU sampling: " + e);
    }
    std::move(batch.devices.begin(), batch.devices.end(), std::back_inserter(pending_devices_));
    std::map<std::pair<int64_t, UnixMillis>, uint64_t> memory;  // (job id, time) -> bytes
    for (const ProcessSample& p : batch.processes) {
      std::optional<int64_t> job_id = attributor_.job_for(static_cast<pid_t>(p.pid));
      if (job_id && p.used_memory_bytes) memory[{*job_id, p.time_ms}] += *p.used_memory_bytes;
      pending_processes_.push_back({p, job_id});
    }
    for (JobRuntime& job : jobs_) {
      if (job.state != JobState::kRunning) continue;
      for (auto it = memory.lower_bound({job.id, 0});
           it != memory.end() && it->first.first == job.id; ++it) {
        job.peak_memory_bytes = std::max(job.peak_memory_bytes, it->second);
        job.memory_sampled_ms = std::max(job.memory_sampled_ms, it->first.second);
      }
      if (!job.probe || !job.device) continue;
      // Probe SM activity: the device while the job works (after its first
      // progress) and no other job there does.
      const std::optional<UnixMillis> shared = shared_since(job);
      for (const DeviceSample& d : batch.devices) {
        if (d.device != *job.device || !job.first_progress_ms ||
            d.time_ms < job.started_ms + *job.first_progress_ms || (shared && d.time_ms >= *shared))
          continue;
        if (d.sm_active_pct) {
          job.probe_sm_sum += *d.sm_active_pct;
          job.probe_util_sum += d.gpu_util_pct.value_or(*d.sm_active_pct * 2);
          ++job.probe_samples;
        }
      }
    }
    for (pid_t pid : retired_pids_) attributor_.remove_job(pid);
    retired_pids_.clear();
  }

  // Hands the samples and events gathered since the last call to the writer.
  void flush() {
    writer_.add_samples(run_id_, std::move(pending_devices_), std::move(pending_processes_));
    writer_.add_job_events(std::move(pending_events_));
    pending_devices_.clear();
    pending_processes_.clear();
    pending_events_.clear();
  }

  // Writes what is queued (transitions at once; the writer backs off while
  // the store cannot be written) and says what the writer has to say.
  void write_store() {
    for (const std::string& line : writer_.flush()) display_.event(line);
  }

  void check_health() {
    Status health = ctx_.mechanism.health_check();
    if (!health.ok() && !health_warned_) {
      health_warned_ = true;
      display_.event(fmt::format("warning: {} mechanism unhealthy: {}",
                                 to_string(ctx_.mechanism.kind()), health.error().message()));
    }
  }

  void cancel(int64_t grace_ms) {
    if (!cancelled_) {
      cancelled_ = true;
      UnixMillis now = ctx_.clock.now_ms();
      for (size_t i : scheduler_->drain_queued()) {
        record_final(jobs_[i],
                     JobExit{JobState::kCancelled,
                             std::nullopt,
                             std::nullopt,
                             "cancelled before it started",
                             {}},
                     now);
      }
    }
    display_.event(
        grace_ms > 0
            ? fmt::format("stopping {} running jobs (TERM, then KILL after {}; Ctrl-C again to "
                          "kill now)",
                          supervisor_.running_count(), format_duration_ms(grace_ms))
            : fmt::format("killing {} running jobs", supervisor_.running_count()));
    supervisor_.stop_all(grace_ms);
  }

  void redraw() {
    if (!options_.live_display) return;
    UnixMillis now = ctx_.clock.now_ms();
    std::vector<JobLine> lines;
    lines.reserve(jobs_.size());
    int running = 0;
    int done = 0;
    for (const JobRuntime& j : jobs_) {
      running += j.state == JobState::kRunning;
      done += is_final(j.state);
      int64_t elapsed = j.state == JobState::kRunning ? now - j.started_ms
                        : j.started_ms > 0            ? j.ended_ms - j.started_ms
                                                      : 0;
      lines.push_back(JobLine{j.spec->name, to_string(j.state), j.device, elapsed, j.epochs,
                              j.last_epoch_ms, j.last_samples_per_s, j.note});
    }
    display_.redraw(fmt::format("run {}: {} running, {} queued, {} done of {}", run_id_, running,
                                scheduler_->queued(), done, jobs_.size()),
                    lines);
  }

  const JobFile& file_;
  const RunOptions& options_;
  RunContext& ctx_;
  StoreWriter& writer_;  // every write of the loop goes through it, in order
  RunCgroup* cgroup_;    // null: jobs run in process groups only
  SharedLoaders& loaders_;
  int64_t run_id_;
  std::string run_token_;
  std::vector<DeviceInfo> devices_;
  std::vector<JobRuntime> jobs_;
  JobSupervisor supervisor_;
  GpuSampler sampler_;
  std::unique_ptr<Scheduler> scheduler_;  // made when run() starts (it reports through display_)
  ProcfsProcessTable process_table_;
  JobAttributor attributor_;
  LiveDisplay display_;
  std::map<pid_t, size_t> by_pid_;
  std::vector<std::pair<int64_t, ProgressEvent>> pending_events_;
  std::vector<DeviceSample> pending_devices_;
  std::vector<ProcessSampleRow> pending_processes_;
  std::vector<pid_t> retired_pids_;
  bool cancelled_ = false;
  bool health_warned_ = false;
  bool cgroup_warned_ = false;
  int sampler_errors_shown_ = 0;
};

}  // namespace

MechanismKind default_mechanism(const GpuBackend& backend, const std::string& mps_control_program) {
  if (backend.simulated()) return MechanismKind::kNaive;
  return find_program(mps_control_program) ? MechanismKind::kMps : MechanismKind::kNaive;
}

Result<std::vector<DeviceInfo>> select_devices(const std::vector<DeviceInfo>& found,
                                               const std::vector<int>& wanted) {
  std::vector<DeviceInfo> out;
  for (int index : wanted) {
    auto it = std::find_if(found.begin(), found.end(),
                           [&](const DeviceInfo& d) { return d.index == index; });
    if (it == found.end()) {
      std::string have;
      for (const DeviceInfo& d : found)
        have += fmt::format("{}{}", have.empty() ? "" : ", ", d.index);
      return Error(
          fmt::format("--gpus: there is no GPU {}; this machine has GPU {} (colo devices "
                      "lists them)",
                      index, have));
    }
    if (std::none_of(out.begin(), out.end(), [&](const DeviceInfo& d) { return d.index == index; }))
      out.push_back(*it);
  }
  return out;
}

Result<RunOutcome> run_job_file(const JobFile& file, const RunOptions& options, RunContext& ctx) {
  // Step 1: clean up after an earlier colo that died. (Opening the store
  // marked its orphaned runs interrupted.)
  for (int64_t id : ctx.store.runs_interrupted_at_open()) {
    ctx.out << fmt::format(
        "run {} was interrupted: the colo running it is gone; marked interrupted\n", id);
  }
  for (const std::string& line : stop_leftovers_of_dead_colos(ctx.store)) ctx.out << line << '\n';
  if (Result<std::vector<std::string>> cleaned = cleanup_stale_mps_daemons(ctx.mechanism_options);
      cleaned.ok()) {
    for (const std::string& line : *cleaned) ctx.out << line << '\n';
  } else {
    ctx.out << "warning: " << cleaned.error().message() << '\n';
  }
  if (Result<std::vector<std::string>> cleaned =
          cleanup_stale_mig_instances(ctx.mechanism_options, ctx.backend);
      cleaned.ok()) {
    for (const std::string& line : *cleaned) ctx.out << line << '\n';
  } else {
    ctx.out << "warning: " << cleaned.error().message() << '\n';
  }
  const std::string state_dir = options.state_dir.empty() ? default_state_dir() : options.state_dir;
  if (Result<std::vector<std::string>> cleaned = cleanup_stale_data_loaders(state_dir);
      cleaned.ok()) {
    for (const std::string& line : *cleaned) ctx.out << line << '\n';
  } else {
    ctx.out << "warning: " << cleaned.error().message() << '\n';
  }
  Result<std::vector<LoaderOptions>> loader_options = loaders_for(file);
  if (!loader_options.ok()) return loader_options.error();

  // Step 2: devices, the run and its jobs.
  Result<std::vector<DeviceInfo>> devices = ctx.backend.devices();
  if (!devices.ok()) return devices.error();
  if (devices->empty())
    return Error(fmt::format("the {} backend found no GPU", ctx.backend.name()));
  devices = usable_devices(*devices, options.slurm);
  if (!devices.ok()) return devices.error();
  if (!options.only_devices.empty()) {
    Result<std::vector<DeviceInfo>> chosen = select_devices(*devices, options.only_devices);
    if (!chosen.ok()) return chosen.error();
    devices = std::move(chosen);
  }

  NewRun new_run{ctx.clock.now_ms(),
                 to_string(ctx.mechanism.kind()),
                 ctx.backend.name(),
                 ctx.backend.simulated(),
                 file.path,
                 options.command_line,
                 host_name(),
                 getpid(),
                 devices_to_json(*devices).dump(),
                 options.slurm ? SlurmRecord{options.slurm->job_id, options.slurm->step,
                                             options.slurm->node, options.slurm->restart_count}
                               : SlurmRecord{}};
  // Writes whose results are needed at once wait out a store locked by another colo.
  Result<int64_t> run_id = retry_transient(ctx.clock, options.store_retry_ms,
                                           [&] { return ctx.store.begin_run(new_run); });
  if (!run_id.ok()) return run_id.error();

  std::string logs_dir = fmt::format(
      "{}/{}/{}", options.logs_root.empty() ? default_state_dir() + "/runs" : options.logs_root,
      store_logs_key(ctx.store.path()), *run_id);
  auto fail_run = [&](const Error& e) -> Error {
    (void)ctx.store.end_run(*run_id, RunState::kFailed, ctx.clock.now_ms());
    return e;
  };
  // Logs may show what a job prints of its environment: its owner's only.
  if (Status s = make_dirs(logs_dir, 0700); !s.ok()) return fail_run(s.error());

  std::vector<JobRuntime> jobs(file.jobs.size());
  std::vector<std::string> log_paths;
  for (size_t i = 0; i < file.jobs.size(); ++i) {
    std::string stem = logs_dir + "/" + file_stem(i, file.jobs[i].name);
    jobs[i].spec = &file.jobs[i];
    jobs[i].log_path = stem + ".log";
    jobs[i].progress_path = stem + ".progress.jsonl";
    log_paths.push_back(jobs[i].log_path);
  }
  const UnixMillis queued_ms = ctx.clock.now_ms();
  Result<std::vector<int64_t>> ids = retry_transient(ctx.clock, options.store_retry_ms, [&] {
    return ctx.store.add_jobs(*run_id, file.jobs, log_paths, queued_ms);
  });
  if (!ids.ok()) return fail_run(ids.error());
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].id = (*ids)[i];

  ctx.out << fmt::format("run {}: {} from {} on {} ({}{}), mechanism {}; logs in {}\n", *run_id,
                         count_of(static_cast<int64_t>(jobs.size()), "job"), file.path,
                         count_of(static_cast<int64_t>(devices->size()), "GPU"),
                         devices->front().name,
                         ctx.backend.simulated() ? ", SIMULATED: numbers are not measured" : "",
                         to_string(ctx.mechanism.kind()), logs_dir);
  if (options.slurm) {
    std::string uuids;
    for (const DeviceInfo& d : *devices) uuids += fmt::format(" gpu{}={}", d.index, d.uuid);
    ctx.out << fmt::format("inside Slurm job {} (step {}, node {}, restart {}): its GPUs{}\n",
                           options.slurm->job_id, options.slurm->step, options.slurm->node,
                           options.slurm->restart_count, uuids);
  }

  // Step 3: the mechanism. If it cannot start, no job runs, and each is recorded as failed.
  if (Status s = ctx.mechanism.prepare(*devices); !s.ok()) {
    Error e = s.error().with_context(
        fmt::format("{} mechanism could not start", to_string(ctx.mechanism.kind())));
    for (const JobRuntime& j : jobs) {
      (void)ctx.store.job_finished(
          j.id, JobExit{JobState::kFailed, std::nullopt, std::nullopt, e.message(), {}},
          ctx.clock.now_ms(), 0);
    }
    (void)ctx.mechanism.teardown();
    return fail_run(e);
  }

  // Step 3, continued: the shared data loaders.
  SharedLoaders loaders(ctx.clock, SharedLoadersOptions{self_executable(), logs_dir, state_dir});
  if (Status s = loaders.start(*loader_options, ctx.out); !s.ok()) {
    for (const JobRuntime& j : jobs) {
      (void)ctx.store.job_finished(
          j.id, JobExit{JobState::kFailed, std::nullopt, std::nullopt, s.error().message(), {}},
          ctx.clock.now_ms(), 0);
    }
    (void)ctx.mechanism.teardown();
    return fail_run(s.error());
  }
  std::map<std::string, int64_t> job_ids;
  for (const JobRuntime& j : jobs) job_ids[j.spec->name] = j.id;

  // Steps 4-6.
  // Each job in a cgroup of its own where colo may make them, so that what a
  // job leaves running ends with it; else process groups, said.
  std::optional<RunCgroup> cgroup;
  Result<std::string> cgroup_parent =
      options.cgroup_parent_override.empty()
          ? cgroup_parent_from_environment()
          : choose_cgroup_parent(options.cgroup_parent_override.c_str());
  if (cgroup_parent.ok()) {
    Result<RunCgroup> made = RunCgroup::create(*cgroup_parent);
    if (made.ok()) {
      cgroup.emplace(std::move(made).value());
    } else {
      cgroup_parent = made.error();
    }
  }
  if (!cgroup) {
    ctx.out << fmt::format(
        "warning: jobs run in process groups, not cgroups ({}): what a job starts in a new "
        "session is stopped only when the run ends, and host CPU and memory are not measured\n",
        cgroup_parent.error().message());
  }

  StoreWriter writer(ctx.store, ctx.clock);
  const std::string token = run_token(new_run.host, new_run.colo_pid, new_run.started_ms);
  RunLoop loop(file, options, ctx, writer, cgroup ? &*cgroup : nullptr, *run_id, token, *devices,
               std::move(jobs), loaders);
  bool cancelled = loop.run();
  // Whatever the jobs left that escaped both their cgroups and process groups.
  if (int stopped = stop_token_processes(kRunTokenEnv, token); stopped > 0)
    ctx.out << fmt::format("stopped {} processes the jobs left running\n", stopped);
  cgroup.reset();
  for (const LoaderOutcome& outcome : loaders.stop()) {
    const DataLoaderRow row = loader_record(outcome, job_ids);
    if (Status s = ctx.store.add_data_loader(*run_id, row); !s.ok())
      ctx.out << "warning: " << s.error().message() << '\n';
    if (row.cpu_ms && row.wall_ms && *row.wall_ms > 0) {
      ctx.out << fmt::format("data loader '{}': {} samples decoded, {} CPU ({:.2f} cores)\n",
                             row.name, row.samples_decoded.value_or(0),
                             format_duration_ms(*row.cpu_ms),
                             static_cast<double>(*row.cpu_ms) / static_cast<double>(*row.wall_ms));
    } else if (!row.note.empty()) {
      ctx.out << fmt::format("warning: data loader '{}': {}\n", row.name, row.note);
    }
  }

  // Step 7.
  if (Status s = ctx.mechanism.teardown(); !s.ok())
    ctx.out << "warning: " << s.error().message() << '\n';

  // Step 8.
  RunOutcome outcome{*run_id, RunState::kOk, loop.count(true), loop.count(false)};
  outcome.state = cancelled                 ? RunState::kCancelled
                  : outcome.jobs_not_ok > 0 ? RunState::kFailed
                                            : RunState::kOk;
  writer.end_run(*run_id, outcome.state, ctx.clock.now_ms());
  if (Status s = writer.drain(options.store_retry_ms,
                              [&](const std::string& line) { ctx.out << line << '\n'; });
      !s.ok())
    return s.error();
  return outcome;
}

}  // namespace colo
