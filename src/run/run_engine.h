// RunEngine: runs jobs on a set of GPUs through one mechanism, and takes new
// jobs at any time. It is the loop of `colo run` (which submits a job file's
// jobs and ticks until they have ended) and of `colo serve` (which submits
// jobs as they arrive and ticks until it is stopped): one engine, two callers.
//
// Each tick(): take the sampler's readings and attribute processes to jobs;
// reap jobs that ended (the policy may requeue an out-of-memory end); place
// queued jobs (the policy's Scheduler: fixed or auto) and start them
// (JobSupervisor) with the mechanism's environment; follow their progress
// files (rates go to the scheduler); finish probes; write events and samples
// to the store in batches; check the mechanism's health; redraw the display.
//
// Mechanism failure: when the mechanism stops answering, or a job fails and
// the mechanism says it failed under it (the MPS server died), every running
// job is stopped and requeued with that reason (per its restart policy; not
// counted as an attempt), no job is placed until the mechanism has been
// torn down and prepared again, and then the queue resumes.
//
// Faults stay with their job (docs/reliability.md):
// - Stalls: a running job that reports no progress for longer than its
//   StallWatch allows is stopped and runs again as its restart policy allows
//   (a counted attempt), with the evidence in its log.
// - A fatal GPU fault under MPS, seen in a failed client's log (its own, as a
//   device-side assert, or one it suffered, as "MPS client terminated"): the
//   other clients of that GPU that report progress are watched closely and
//   run on (a client the fault reached fails by itself, or goes silent and
//   is stopped within seconds); those that have reported nothing yet are
//   stopped. Either way they run again without counting an attempt.
//   Placement waits a moment, and the job whose own fault it was (the
//   suspect) runs its next attempt outside the shared server
//   (Placement::outside_mps); failing there the same way, it ends failed
//   with its own error.
// - A start refused by a recovering MPS server ("not ready", "busy or
//   unavailable", before any progress) is retried after a back-off, not
//   counted as an attempt.
//
// The caller owns the steps around it (cleaning up, recording the run,
// preparing the mechanism, tearing down). Every job the engine takes ends in
// a recorded state, or is handed back by stop_all(kRelease). Not
// thread-safe: one thread calls everything (the sampler has its own).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/profiles.h"
#include "common/clock.h"
#include "common/share_dir.h"
#include "gpu/gpu_backend.h"
#include "jobs/cgroup.h"
#include "jobs/gpu_fault.h"
#include "jobs/job_qos.h"
#include "jobs/job_spec.h"
#include "jobs/job_state.h"
#include "jobs/job_supervisor.h"
#include "jobs/progress.h"
#include "jobs/run_as.h"
#include "run/attempt_end.h"
#include "run/early_stop.h"
#include "run/engine_job.h"
#include "run/engine_policy.h"
#include "run/fail_fast.h"
#include "run/floor_watch.h"
#include "run/in_place_measurement.h"
#include "run/leftovers.h"
#include "run/live_display.h"
#include "run/mechanism_recovery.h"
#include "run/mps_fault_log.h"
#include "run/run_samples.h"
#include "run/stall_watch.h"
#include "sched/on_change_scheduler.h"
#include "sched/prior.h"
#include "sched/quota_scheduler.h"
#include "sched/scheduler.h"
#include "sharing/mechanism.h"
#include "store/run_store.h"
#include "store/store_writer.h"

namespace colo {

struct JobRuntime;  // run/job_runtime.h

struct EngineOptions {
  // "fixed" or "auto".
  std::string policy = "auto";
  // At most this many jobs per GPU (below the mechanism's own limit).
  std::optional<int> max_jobs_per_gpu;
  // Auto policy: a job colo has never measured (a newcomer) is measured where
  // it runs. Its first profile goes to the scheduler once its memory
  // plateaued (run/in_place_measurement.h; the rest of its family may then
  // start beside it); it is refined until two progress rates were seen,
  // another job on its GPU reported progress, or probe_ms passed.
  int64_t probe_ms = 60'000;
  MeasurementOptions measurement;
  // Device sampling period.
  int64_t sample_period_ms = 500;
  // Time between TERM and KILL when stopping jobs.
  int64_t stop_grace_ms = 10'000;
  // How often samples and events are written to the store (one transaction).
  int64_t flush_ms = 1000;
  // How often the mechanism's health is checked while jobs are queued or run.
  int64_t health_check_ms = 5000;
  // Redraw one line per job in place (a terminal) instead of printing events.
  bool live_display = false;
  // Device samples kept in memory for readers (recent_samples()), per GPU.
  size_t recent_samples_per_gpu = 240;
  // Profiles learned from other stores (`colo run --profiles-from`: a Slurm
  // shard's from the store its sweep was planned with). The store's own
  // profile of a signature on a GPU wins over one of these.
  std::vector<LearnedProfile> profiles_elsewhere;
  // Owners' quotas are given (set_quota_left): the policy is wrapped in a
  // QuotaScheduler (colo serve --max-gpus-per-user).
  bool quotas = false;
  // Host limits for jobs that set none (`colo serve --job-host-memory`,
  // `--job-cpus`); a job's own host_memory and cpus win.
  CgroupLimits default_limits;
  // When a running job counts as stalled (run/stall_watch.h).
  StallOptions stall;
  // When a protected job counts as below its floor (run/floor_watch.h).
  FloorOptions floor;
  // A job's log (each attempt's) is cut to its first and last quarter once
  // it passes this many bytes (jobs/log_cap.h: checked once a second); 0: no
  // cap (`--max-log-size`).
  uint64_t max_log_bytes = uint64_t{64} << 20;
  // A job that ends ok has its checkpoint directory removed at once (0), or
  // it stays this long (the service removes it then; `colo gc` any time:
  // `--keep-checkpoints`).
  int64_t keep_checkpoints_ms = 0;
  // Appended to every job's PYTHONPATH, so that `import colo_progress` (and
  // colo_data) works in a job with no install. nullopt: PYTHONPATH untouched.
  std::optional<std::string> python_client_dir = find_python_client_dir();
};

// Everything the engine talks to, borrowed.
struct EngineContext {
  Clock& clock;
  GpuBackend& backend;
  RunStore& store;      // read only: the profiles earlier runs measured
  StoreWriter& writer;  // every write
  Mechanism& mechanism;
  RunCgroup* cgroup;  // each job gets a cgroup under it; null: process groups only
  std::ostream& out;  // events and the live display
  // The machine's lock directory (gpu/gpu_lock.h), where a job profiled by
  // ncu under MPS waits for the machine's one ncu MPS control; empty:
  // default_gpu_lock_dir().
  std::string lock_dir;
};

// What changed about a job, for callers that keep their own records (the
// service's queue). Taken with take_changes().
struct JobChange {
  enum class Kind { kStarted, kRequeued, kEnded };
  Kind kind = Kind::kStarted;
  size_t key = 0;
  int64_t job_id = 0;  // its row in the jobs table (0 if it never started)
  JobState state = JobState::kQueued;
  std::string reason;
  std::optional<int> device;
  int attempt = 1;
  UnixMillis time_ms = 0;
  // kRequeued: the attempt that ended counts against the job's attempts
  // (false: it ended through no fault of its own).
  bool counted = true;
};

// A job as it stands now, for displays and snapshots.
struct EngineJobView {
  size_t key = 0;
  int64_t job_id = 0;
  std::string name;
  JobState state = JobState::kQueued;
  std::optional<int> device;
  std::vector<int> gang_devices;  // a gang's GPUs, `device` first; empty otherwise
  pid_t pid = 0;
  int attempt = 1;
  UnixMillis started_ms = 0;
  UnixMillis ended_ms = 0;
  int64_t epochs = 0;            // epoch ends seen in this attempt
  std::optional<int64_t> epoch;  // the last epoch number the job reported
  std::optional<int64_t> last_epoch_ms;
  std::optional<double> samples_per_s;        // its latest rate
  std::optional<UnixMillis> expected_end_ms;  // the policy's estimate (auto, with a solo time)
  uint64_t peak_memory_bytes = 0;
  bool probe = false;
  std::string note;
  std::string log_path;
  // Why colo found it stalled and is stopping it; empty otherwise.
  std::string stalled;
  // This attempt runs outside the shared MPS server (a fault's suspect, alone).
  bool outside_mps = false;
  // Its limits under MPS (active thread percentage, pinned memory), when it
  // runs under MPS with them; its MIG instance under MIG ("" otherwise).
  std::optional<int> mps_sm_share_pct;
  std::optional<uint64_t> mps_memory_limit_bytes;
  std::string mig_instance;
  // Opportunistic beside a protected job under MPS: the active thread
  // percentage its placement capped it at.
  std::optional<int> opportunistic_thread_pct;
  // Its signature's progress rate alone (a stored profile, a hint or a probe).
  std::optional<double> solo_samples_per_s;
  // Its class; a protected job: its floor (min_speed), the share of its steady time
  // spent below it and its latest steady epoch's rate over its solo rate
  // (nullopt before any steady epoch was judged), and the steady time judged
  // and of it below the floor (run/floor_watch.h), across its attempts.
  QosClass qos = QosClass::kNormal;  // its class (JobSpec::qos)
  std::optional<double> min_speed;
  std::optional<double> below_floor_share;
  std::optional<double> speed_of_solo;
  int64_t steady_ms = 0;
  int64_t below_floor_ms = 0;
};

class RunEngine {
 public:
  RunEngine(EngineContext ctx, EngineOptions options, int64_t run_id, std::string run_token,
            std::vector<DeviceInfo> devices);
  ~RunEngine();
  RunEngine(const RunEngine&) = delete;
  RunEngine& operator=(const RunEngine&) = delete;

  int64_t run_id() const { return run_.id; }

  // Makes the policy (with the store's profiles) and starts the sampler.
  void start();

  // Takes a job; it is placed by a later tick(). Returns its key.
  size_t submit(EngineJob job);

  // One pass of the loop (see the file comment). Never blocks.
  void tick();

  // Cancels one job: a queued one ends cancelled now; a running one gets
  // TERM, then KILL after the grace period, and ends cancelled. `reason` is
  // recorded ("cancelled by alice"). A running job that colo is stopping
  // already ends as that stop says (StopCause::yields_to). False when the job
  // has already ended.
  bool cancel(size_t key, const std::string& reason);
  // Stops a running job to make room for one of higher priority (`reason`
  // says which): TERM, then KILL after the grace. Reaped, it is requeued, not
  // counted as an attempt, and parked (queued, but not shown to the policy)
  // until release_parked(), so that it does not take back the room it left
  // before the job it was stopped for starts. False when it is not running,
  // cannot run again (restart = "never"), or is already being stopped.
  bool preempt(size_t key, const std::string& reason);
  void release_parked();

  enum class StopKind {
    kCancel,  // `colo run` stopped: queued jobs end cancelled, running ones are stopped (cancelled)
    kShutdown,  // the service stops: queued jobs are released unrecorded, running ones are
                // stopped and end interrupted (`reason`)
  };
  // Stops everything; no job is placed afterwards. Called again (a second
  // Ctrl-C) with grace 0, kills what still runs.
  void stop_all(StopKind kind, int64_t grace_ms, const std::string& reason);
  // Holds placement (drain: running jobs finish, queued ones wait) or resumes it.
  void hold(bool held) { state_.held = held; }

  // Nothing queued and nothing running.
  bool idle() const;
  size_t running() const { return by_pid_.size(); }
  // The keys of the running jobs.
  std::vector<size_t> running_keys() const;
  // Fair share: each owner's recent usage, for the order of the queue
  // (Scheduler::set_usage).
  void set_usage(const std::map<uint32_t, double>& usage) { scheduler_->set_usage(usage); }
  // How many GPUs' worth of each owner's jobs may still start (with
  // EngineOptions::quotas; Scheduler::set_quota_left).
  void set_quota_left(const std::map<uint32_t, double>& gpus_left) {
    scheduler_->set_quota_left(gpus_left);
  }
  // Protected GPUs each owner may still take (Scheduler::set_protected_left).
  void set_protected_left(const std::map<uint32_t, double>& gpus_left) {
    scheduler_->set_protected_left(gpus_left);
  }
  size_t queued() const;
  bool stopping() const { return state_.stopping; }

  // Stops the sampler and writes what is left; ends the display.
  void finish();

  std::vector<JobChange> take_changes() { return std::exchange(changes_, {}); }
  EngineJobView view(size_t key) const;
  // Why a queued job waits, as its policy says (Scheduler::waiting_reason,
  // worded by describe_waiting(), `job_name` naming other jobs by key); ""
  // when the policy says nothing of it.
  std::string waiting_reason(size_t key, const std::function<std::string(size_t)>& job_name) const;
  size_t job_count() const { return jobs_.size(); }
  // Per GPU, its latest device samples, oldest first.
  const std::map<int, std::deque<DeviceSample>>& recent_samples() const {
    return samples_.recent();
  }
  // Per GPU, the processes of its latest process sample (MPS clients one by one).
  const std::map<int, std::vector<EngineProcess>>& latest_processes() const {
    return samples_.latest_processes();
  }
  const std::vector<DeviceInfo>& devices() const { return devices_; }
  // "auto", "fixed, up to 7 jobs per GPU"; empty before start().
  std::string policy_description() const;
  // Why the mechanism is down (no job is placed until it is back); empty when it is up.
  const std::string& mechanism_down() const { return recovery_.down(); }
  // Jobs that ended ok / not ok.
  int count(bool ok) const;
  // Shows a message among the engine's events (the live display stays intact).
  void event(const std::string& message);

 private:
  void introduce(JobRuntime& job);
  // What the policy is told of a job when it is queued (again).
  SchedJob queued_as(const JobRuntime& job) const;
  void record_final(JobRuntime& job, const JobExit& exit, UnixMillis ended_ms);
  void place();
  void start_failed(JobRuntime& job, const Error& e);
  // Starts an attempt of `job` where `d` placed it; a start that fails ends it failed.
  void start(JobRuntime& job, const Decision& d);
  // The attempt's process `pid` started at `now` (logging to `log`): the
  // job's state for it, its records and its event.
  void started(JobRuntime& job, const Decision& d, const Placement& placement,
               const Environment& mech_env, pid_t pid, const std::string& log, UnixMillis now);
  // The job's own cgroup, with its host limits (job_limits); "" when it runs
  // in its process group only (said once, or per job when it has limits).
  std::string job_cgroup(const JobRuntime& job);
  void reap();
  // Records how the attempt ended, by the rules of run/attempt_end.h.
  void end_attempt(JobRuntime& job, const FinishedJob& ended, const GpuFaultSeen& fault);
  // Does what classify_end() (or uncounted_end()) decided.
  void carry_out(JobRuntime& job, const AttemptEnd& end, UnixMillis ended_ms);
  // Stops the running `job` for `cause` (which its StopCause yields to: the
  // caller checked): TERM, then KILL after `grace_ms`; shows `event` and
  // notes `log_note` in its log.
  void stop_job(JobRuntime& job, StopCause cause, int64_t grace_ms, const std::string& event,
                const std::string& log_note);
  // On the simulated backend: when `job`'s memory (as it last stated it) and
  // that of the other jobs on one of its GPUs exceed the GPU's, the job is
  // stopped at once and ends out of memory (end_attempt), as on a real GPU.
  void check_simulated_memory(JobRuntime& job);
  // `counted`: the attempt that ended counts against the job's attempts
  // (JobChange::counted).
  void requeue(JobRuntime& job, UnixMillis ended_ms, const std::string& reason,
               bool counted = true);
  // Cuts the job's log to its cap (options_.max_log_bytes) when it passed it:
  // at most once every kLogCheckEveryMs while it runs, and as it exits.
  void cap_log(JobRuntime& job, bool exited);
  static constexpr int64_t kLogCheckEveryMs = 1000;
  // The other clients of a faulted MPS server.
  struct FaultNeighbours {
    struct Neighbour {
      std::string label;
      uint32_t owner = 0;
    };
    std::vector<Neighbour> stopped;  // to run again, not counted
    std::vector<Neighbour> watched;  // ran on; restarted if they stop reporting progress
    // Their labels, for the run's own events.
    static std::vector<std::string> labels(const std::vector<Neighbour>& list);
    // `list` as `viewer` may be told it in their job's record: their own
    // jobs by label, other users' only counted ("a, b and 2 jobs of other users").
    static std::string told_to(const std::vector<Neighbour>& list, uint32_t viewer);
  };
  // A fatal GPU fault under MPS seen in `source`'s log: every other client of
  // its server on its GPUs (of every user where users share one multi-user
  // server; its owner's alone where each user has a daemon) that has
  // reported progress is watched closely (its StallWatch's fault_seen); one
  // that has not is stopped (unless in `exited`) and runs again, not
  // counted; placement waits (MpsFaultLog::settle). Each is told in its log
  // what happened, as FaultCause::told_to() its owner: another user's job
  // is never named, nor its command line or log.
  FaultNeighbours gpu_fault(const JobRuntime& source, const GpuFaultSeen& fault,
                            const std::set<pid_t>& exited);
  // The fault a client raised on the job's GPUs lately (MpsFaultLog::recent)
  // in the MPS server the job is a client of: any user's where users share
  // one, only its own user's where each user has a daemon.
  std::optional<FaultCause> recent_fault_in_server_of(const JobRuntime& job) const;
  // A start refused by a recovering MPS server: placement backs off.
  void server_not_ready(JobRuntime& job, const FinishedJob& f, const GpuFaultSeen& fault);
  // `job` has reported progress and a fault (`cause`) was seen on its GPU:
  // its StallWatch watches it closely, its CPU time read from now on.
  void watch_after_fault(JobRuntime& job, const std::string& cause);
  // Hands `job`'s StallWatch the CPU time its processes have used by now.
  void read_cpu_after_fault(JobRuntime& job);
  // Stops the running jobs whose StallWatch says they are stalled.
  void check_stalls();
  // The driver reported a GPU fault: noted in the logs of the jobs on that
  // GPU; under MPS their StallWatch tightens (see StallOptions).
  void xid_seen(const XidEvent& x);
  bool placement_paused() const;
  void finish_probes();
  void finish_probe(JobRuntime& job);
  void send_probe_profile(JobRuntime& job, std::string_view stage);
  // When a job that started on `job`'s GPU after it first reported progress
  // (it works there from then on), if one did.
  std::optional<UnixMillis> shared_since(const JobRuntime& job) const;
  // The jobs working at `at_ms` on `job`'s GPU that started with or after
  // it, itself included.
  int sharers(const JobRuntime& job, UnixMillis at_ms) const;
  // The load of the jobs on `device` over the kBaselineMs before
  // `started_ms`; nullopt when none runs there.
  std::optional<GpuBaseline> baseline(int device, UnixMillis started_ms) const;
  static constexpr int64_t kBaselineMs = 5000;
  // `exited_ms`: the job ended then; read what it left and let held-back
  // events out, stamped no later than its end (what it wrote before it
  // exited belongs to this attempt, before a requeue at that time and the
  // next attempt's start).
  void read_progress_of(JobRuntime& job, std::optional<UnixMillis> exited_ms = std::nullopt);
  // The job's sweep's [early_stop] rule on event `e`, before it is stored:
  // stops the job (TERM, the grace) when the rule says so; it ends stopped.
  void judge_early_stop(JobRuntime& job, const ProgressEvent& e);
  // Whether the job reports its declared [objective] (run/objective_watch.h);
  // the warning, once, in colo's output and the job's log.
  void watch_objective(JobRuntime& job, const ProgressEvent& e);
  void objective_warning(JobRuntime& job, const std::optional<std::string>& warning);
  // A protected job's epoch rate, judged against its floor: when it fell
  // below for the window, its GPU's most recently started opportunistic job
  // is stopped (StopCause::kFloor) and the pair is not placed together again.
  // Without a solo rate, its first steady epoch with no other job on its
  // GPUs is one (learned by the scheduler, which keeps it alone until then).
  void judge_floor(JobRuntime& job, const EpochRate& epoch);
  // Whether another running job shares one of `gpus` with `job`.
  bool shares_a_gpu(const JobRuntime& job, const std::vector<int>& gpus) const;
  // Stops the running jobs the policy asks to (Scheduler::take_stops()):
  // at once; reaped, each is requeued, not counted as an attempt.
  void stop_doomed();
  void read_progress();
  void collect_samples();
  // Hands the samples and events gathered since the last call to the writer.
  void flush();
  // Hands the events alone (queued before a job's end or retry, so that the
  // writer, which writes in order, records them first).
  void hand_events_to_writer();
  // Writes what the writer holds (it backs off while the store cannot be
  // written) and shows what it has to say.
  void write_store();
  // The mechanism failed under the running jobs: they are stopped, and
  // requeued when reaped; nothing is placed until it is back.
  void mechanism_failed(const std::string& reason);
  void stop_mechanism_victims();
  // After `job` ended: its file's fail-fast, which may cancel the file's
  // jobs that wait.
  void fail_fast(const JobRuntime& job);
  void redraw();
  std::string log_path(const JobRuntime& job) const;
  const DeviceInfo& device(int index) const;
  int jobs_per_device_limit() const;

  // Constant after construction.
  EngineContext ctx_;
  EngineOptions options_;
  struct Run {
    int64_t id = 0;
    std::string token;  // in every job's environment (run/leftovers.h)
  } run_;
  std::vector<DeviceInfo> devices_;

  // Jobs: every one taken, by key; the running ones by pid; the preempted
  // ones requeued and waiting for release_parked().
  std::vector<std::unique_ptr<JobRuntime>> jobs_;
  std::map<pid_t, size_t> by_pid_;
  std::vector<size_t> parked_;

  // The parts it drives.
  JobSupervisor supervisor_;
  RunSamples samples_;
  MechanismRecovery recovery_;
  // Its schedule() runs only when something changed (on_change_scheduler.h).
  std::unique_ptr<OnChangeScheduler> scheduler_;
  PolicyKnowledge known_;  // what the policy was made from (start())
  LiveDisplay display_;

  // Rules with state of their own.
  MpsFaultLog mps_faults_;
  EarlyStopper early_stop_;  // the trials of this run's sweeps with an [early_stop]
  FailFast fail_fast_;       // by job file

  // What it has to tell: events and samples for the store (every flush_ms),
  // changes for its caller (take_changes()).
  std::vector<std::pair<int64_t, ProgressEvent>> pending_events_;
  int64_t next_flush_ms_ = 0;
  std::vector<JobChange> changes_;

  enum class Phase { kNew, kStarted, kFinished };
  struct State {
    Phase phase = Phase::kNew;
    bool stopping = false;       // stop_all() was called: nothing is placed
    bool held = false;           // hold(): nothing is placed
    bool cgroup_warned = false;  // that jobs get no cgroup was said
  } state_;
};

}  // namespace colo
