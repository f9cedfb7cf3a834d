// Scheduler: the policy interface between the run controller (or the
// simulator) and a placement policy. It decides which queued job starts on
// which GPU and when; it never starts processes. Two policies:
//
//   FixedScheduler  the user's fixed degree: JobQueue (FIFO with backfill, a
//                   per-GPU job limit, memory hints).
//   AutoScheduler   admission by profile, feedback from measured progress,
//                   out-of-memory retries (auto_scheduler.h).
//
// Both the real run (`colo run`) and `colo simulate` drive a Scheduler the
// same way: enqueue every job, then call schedule() whenever something
// changed (a job ended, time passed), report ends with finished(), measured
// progress with observe_rate(), probe results with learned() and ended jobs'
// measurements with measured(). Time is
// passed in (milliseconds on any monotonic clock), so the same code runs on
// a real and a simulated clock. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_qos.h"
#include "sched/device_room.h"
#include "sched/family.h"
#include "sched/job_queue.h"
#include "sched/profile.h"
#include "sched/waiting_reason.h"

namespace colo {

// The shared data loader a job reads through (none when dataset is empty):
// its cost on the host, counted once while any job reading it runs.
struct HostCost {
  std::string dataset;
  double loader_cpus = 0;            // its decoding threads
  uint64_t loader_memory_bytes = 0;  // its ring
};

// What a policy is told about a signature before its first job is enqueued.
struct SignatureFacts {
  std::string label;                   // its jobs' short name in notes ("resnet26")
  std::optional<JobProfile> profile;   // measured earlier, or hinted (the store's over the hints)
  std::optional<FamilyMember> family;  // its place in a sweep's family (sched/family.h)
  // What is assumed when nothing better is known (sched/prior.h): the
  // policy's starting point for a job it has never measured.
  std::optional<JobProfile> prior;
  // Instances of its family measured before the run (the store's); given
  // with the first signature of each family.
  std::vector<FamilyInstance> family_instances;
  std::optional<HostCost> host_cost;  // the shared data loader it reads through
  // The GPUs each of its jobs needs, where the caller knows (a signature's
  // jobs all need as many: job_signature() counts a gang's GPUs); 0: not
  // known. GangScheduler keeps nothing of a signature whose jobs need 1 (it
  // reads its facts only for gangs), so that a sweep's thousands of
  // one-GPU signatures are not copied twice.
  int gpus = 0;
};

struct SchedJob {
  size_t job = 0;                       // the caller's job index
  std::string signature;                // jobs with one signature share a profile
  std::optional<uint64_t> memory_hint;  // peak GPU memory hint (fixed policy); per GPU
  // GPUs it needs at once (a gang when more than one: GangScheduler places it).
  int gpus = 1;
  // A gang's SM activity per GPU (its hint or profile), for the policy's
  // model of the GPUs it shares; nullopt: unknown.
  std::optional<double> sm_active_pct;
  // How long it runs (its solo_time hint or profile), for reservations.
  std::optional<int64_t> solo_time_ms;
  // Who it is accounted to (a Unix uid; set_usage()) and its priority
  // (higher first): the order of the auto policy's queue.
  uint32_t owner = 0;
  int priority = 0;
  // Its quality-of-service class and, protected, its floor (jobs/job_qos.h;
  // sched/qos_placement.h says which classes share a GPU).
  QosClass qos = QosClass::kNormal;
  double min_speed = kDefaultMinSpeed;
};

struct Decision {
  size_t job = 0;
  int device = 0;
  // The job is a newcomer: the caller measures it where it runs and reports
  // the measurement with learned() (or the job's end).
  bool probe = false;
  // A per-job GPU memory limit (MPS pinned memory), so a job that outgrows
  // its estimate fails alone instead of taking its neighbours down.
  std::optional<uint64_t> memory_limit_bytes;
  // The profile the job was placed by, when it was estimated from its
  // family's measured instances (sched/family.h), or, for a newcomer
  // (`probe`), its prior (sched/prior.h), rather than measured or stated for
  // the job itself; the caller records it beside what it then measures.
  std::optional<JobProfile> estimate;
  // The job was never measured either, and starts beside its family's
  // newcomer while that is measured: the caller measures it too and records
  // what it saw for later runs, without reporting it.
  bool record = false;
  // A gang's GPUs, `device` first; empty for a job on one GPU.
  std::vector<int> gang_devices;
  // An opportunistic job starts as an opportunistic client (below normal
  // priority; Placement::opportunistic) and, beside a protected job, with
  // the thread percentage chosen for it (sched/qos_placement.h).
  bool opportunistic = false;
  std::optional<int> opportunistic_thread_pct;
  bool operator==(const Decision&) const = default;
};

// A job's GPUs: a gang's several (`device` first), else its one, else none
// (not placed). The one place that says so.
inline std::vector<int> job_gpus(const std::optional<int>& device,
                                 const std::vector<int>& gang_devices) {
  if (!gang_devices.empty()) return gang_devices;
  return device ? std::vector<int>{*device} : std::vector<int>{};
}

// kStopped: stopped at the policy's own request (Scheduler::take_stops()).
enum class JobEnd { kOk, kFailed, kOutOfMemory, kCancelled, kStopped };

struct EndVerdict {
  bool requeued = false;  // the job will be placed again
  std::string note;       // why, for the user ("retrying alone (attempt 2 of 3)")
  // The attempt counts against the job's attempts: false when the policy's
  // own bet failed (a speculative start), not the job.
  bool counted = true;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;

  // "fixed, up to 7 jobs per GPU" or "auto".
  virtual std::string describe() const = 0;
  // What is known about a signature; call before enqueueing its first job.
  // Policies take what they use of it (the fixed policy: nothing).
  virtual void introduce(const std::string& /*signature*/, const SignatureFacts& /*facts*/) {}
  // At most about `count` signatures will be introduced: a policy may make
  // room for what it keeps of each at once (a hint: no decision depends on it).
  virtual void expect_signatures(size_t /*count*/) {}
  virtual void enqueue(const SchedJob& job) = 0;
  // Places every queued job that may start now; placed jobs count as running.
  virtual std::vector<Decision> schedule(int64_t now_ms) = 0;
  // A placed job's process ended. An out-of-memory end may be requeued.
  virtual EndVerdict finished(size_t job, JobEnd end, int64_t now_ms) = 0;
  // A running job's recent progress rate (samples per second).
  virtual void observe_rate(size_t /*job*/, double /*samples_per_s*/, int64_t /*now_ms*/) {}
  // Jobs of these signatures were found to hurt each other on one GPU (a
  // protected job fell below its floor beside an opportunistic one:
  // run/floor_watch.h): the policy should not place them together again
  // (the auto policy remembers the pair as a bad combination; the fixed
  // policy, which knows no combinations, ignores it).
  virtual void avoid_together(const std::vector<std::string>& /*signatures*/) {}
  // A profile was measured (a newcomer's measurement ended) for every job of
  // `signature`. It may come again, refined, for the same newcomer.
  virtual void learned(const std::string& /*signature*/, const JobProfile& /*profile*/,
                       int64_t /*now_ms*/) {}
  // What a placed job's own run measured (its peak memory), reported before
  // finished(): feedback for the estimates of its family.
  virtual void measured(size_t /*job*/, const JobProfile& /*profile*/) {}
  // A newcomer's (a `probe` decision's) GPU memory so far, as the caller
  // samples it while the job is measured. The policy may find that jobs it
  // started cannot fit any more (take_stops()).
  virtual void observe_memory(size_t /*job*/, uint64_t /*bytes*/, int64_t /*now_ms*/) {}
  // Running jobs the policy wants stopped now, and why: the caller stops
  // each at once and reports its end with finished(job, JobEnd::kStopped),
  // which requeues it (not counted as a failed attempt). Since the last call.
  virtual std::vector<Unplaceable> take_stops() { return {}; }
  // Removes and returns every queued job (cancellation).
  virtual std::vector<size_t> drain_queued() = 0;
  // Removes one queued job (its cancellation); false when it is not queued.
  virtual bool remove_queued(size_t job) = 0;
  // When a running job is expected to end, on the clock of `now_ms`;
  // nullopt when the policy cannot tell.
  virtual std::optional<int64_t> expected_end_ms(size_t /*job*/, int64_t /*now_ms*/) const {
    return std::nullopt;
  }
  // Gangs (GangScheduler, over either policy). rooms(): every GPU as the
  // policy sees it now. occupy(): a gang's rank takes `memory_bytes` and
  // `sm_active_pct` on `device` until vacate(key); the policy counts it as a
  // job there. reserve(): the devices a waiting gang is kept: the policy
  // places no job there unless it expects the job to end by `until_ms`
  // (none without it); it replaces the last call's set (empty: none).
  virtual std::vector<DeviceRoom> rooms(int64_t now_ms) = 0;
  virtual void occupy(size_t key, int device, uint64_t memory_bytes, double sm_active_pct) = 0;
  virtual void vacate(size_t key, int64_t now_ms) = 0;
  virtual void reserve(const std::vector<int>& devices, std::optional<int64_t> until_ms) = 0;
  // Jobs that can never be placed, removed from the queue.
  virtual std::vector<Unplaceable> take_unplaceable() = 0;
  // Decisions worth telling the user ("gpu0: adding a job lowered ..."), since the last call.
  virtual std::vector<std::string> take_notes() { return {}; }
  virtual size_t queued() const = 0;
  // The next time schedule() may place something although nothing else
  // changed (a planned early start); nullopt when only events matter. A
  // simulated clock must wake then; a real loop that ticks anyway may ignore it.
  virtual std::optional<int64_t> next_wakeup_ms(int64_t /*now_ms*/) const { return std::nullopt; }
  // The next time after `now_ms` that schedule() may decide something on
  // time alone: next_wakeup_ms(), and the policy's own deadlines (a
  // combination judged once it settled, a reservation's bound). A loop that
  // calls schedule() only when something changed (OnChangeScheduler) must
  // call it then too; nullopt when only events matter.
  virtual std::optional<int64_t> next_check_ms(int64_t now_ms) const {
    return next_wakeup_ms(now_ms);
  }
  // Fair share: each owner's recent usage (smaller goes first among jobs of
  // one priority; absent: none). The auto policy orders its queue by
  // (priority, usage, arrival); the fixed policy stays first come, first
  // served. Order only: a job that fits is placed whatever its rank, so no
  // GPU idles for fairness.
  virtual void set_usage(const std::map<uint32_t, double>& /*usage*/) {}
  // Quotas: for each owner given, how many GPUs' worth of their jobs may
  // still start (QuotaScheduler enforces it over a policy; others ignore it).
  virtual void set_quota_left(const std::map<uint32_t, double>& /*gpus_left*/) {}
  // Quotas on protected jobs: for each owner given, how many more GPUs their
  // protected jobs may hold (QuotaScheduler enforces it; others ignore it).
  virtual void set_protected_left(const std::map<uint32_t, double>& /*gpus_left*/) {}
  // Why a queued job waits, as the last schedule() left it: the head of the
  // queue, for which the policy keeps a GPU, or a job that may start only
  // where it does not delay the head (waiting_reason.h); nullopt when the
  // policy says nothing of it (the caller's own reasons then). Ask it of
  // queued jobs only.
  virtual std::optional<WaitingReason> waiting_reason(size_t /*job*/) const { return std::nullopt; }
};

// The fixed policy over JobQueue. A job that ends out of memory next to
// others is requeued ahead of the queue to run with at most half as many
// neighbours (none on its last attempt), up to `max_retries` times; one that
// ran out of memory alone ends there.
class FixedScheduler final : public Scheduler {
 public:
  FixedScheduler(const std::vector<DeviceSlots>& devices, std::string description,
                 int max_retries = 2, QosShare qos_share = QosShare::kPriority);
  // A signature's SM activity (its profile's, else its prior's): a
  // protected job's, for its neighbours (qos_placement.h).
  void introduce(const std::string& signature, const SignatureFacts& facts) override;
  std::string describe() const override { return description_; }
  void enqueue(const SchedJob& job) override;
  std::vector<Decision> schedule(int64_t now_ms) override;
  EndVerdict finished(size_t job, JobEnd end, int64_t now_ms) override;
  std::vector<size_t> drain_queued() override { return queue_.drain_queued(); }
  bool remove_queued(size_t job) override { return queue_.remove(job); }
  std::vector<Unplaceable> take_unplaceable() override { return queue_.take_unplaceable(); }
  size_t queued() const override { return queue_.queued(); }
  std::vector<DeviceRoom> rooms(int64_t now_ms) override { return queue_.rooms(now_ms); }
  void occupy(size_t key, int device, uint64_t memory_bytes, double /*sm*/) override {
    queue_.occupy(key, device, memory_bytes);
  }
  void vacate(size_t key, int64_t /*now_ms*/) override { queue_.finished(key | kOccupantKey); }
  // The fixed policy has no expected ends: nothing backfills a reserved GPU.
  void reserve(const std::vector<int>& devices, std::optional<int64_t> /*until_ms*/) override {
    queue_.reserve(devices);
  }
  std::optional<WaitingReason> waiting_reason(size_t job) const override {
    return queue_.waiting_reason(job);
  }

 private:
  JobQueue queue_;
  std::string description_;
  int max_retries_;
  std::map<size_t, int> attempts_;                   // jobs retried so far: their attempt
  std::map<size_t, std::optional<uint64_t>> hints_;  // memory hints, for retries
  std::map<std::string, double> sm_pct_;             // introduce(), by signature
};

}  // namespace colo
