// The planning simulator behind `colo simulate`: runs the real scheduler
// code (sched/: FixedScheduler over JobQueue, AutoScheduler) on a simulated
// clock and simulated GPUs, whose jobs slow each other down as the
// interference model says, and reports what each policy would achieve:
// makespan, throughput, GPU-hours.
//
// Each job has a "truth" (what it really needs and how long it runs alone:
// from the store, then hints, then documented defaults) and what the
// scheduler is told before it starts ("known": store and hints only; a job
// with nothing known is estimated from its family, or starts as a newcomer
// by its prior, as in a real run). The auto policy sees only what a real run
// would: profiles, priors, its families' measured instances, a newcomer's
// measurement once its memory plateaued (`measure_ms` after its start-up),
// measured rates, ended jobs' peak memory, out-of-memory ends. Out of
// memory: a job whose truth exceeds its memory limit, or that joins a GPU
// whose jobs' summed memory would exceed it (fixed policies do not check),
// fails a tenth of the way in, and the auto policy retries it. auto-warm is
// the auto policy told every job's truth beforehand: what it would do once
// the store knows every job (the warm case). A gang (gpus = N) runs a rank
// on each of its GPUs at the pace of its slowest rank, placed by the
// GangScheduler as in a real run. Jobs are queued when submitted (all at
// the start unless arrivals say otherwise). Deterministic; everything it
// produces is simulated.
//
// Classes (docs/policy.md, "Protected and opportunistic jobs"): under MPS a
// GPU holding a protected job runs at the rates sched/qos_model.h predicts
// beside its neighbours (opportunistic ones with the levers their placement
// chose, below normal priority; any other job as a plain client): the
// protected job at predicted_speed, the neighbours sharing the harvest
// equally. Each protected job's speed (its solo time over its time taken,
// start-up left out) is reported per policy.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sched/auto_scheduler.h"
#include "sched/interference.h"
#include "sched/profile.h"

namespace colo {

struct SimJob {
  std::string name;
  std::string signature;
  std::string label;  // its [[job]] block, for notes
  int gpus = 1;       // a gang's GPUs (its truth and known are per GPU)
  JobProfile truth;   // complete: memory, SM activity, busy share, solo_ms
  JobProfile known;   // what the scheduler knows before the run (may be empty)
  JobProfile prior;   // what it assumes when nothing else speaks for the job (sched/prior.h)
  // Its family (sched/family.h; empty: none) and place in it.
  std::string family;
  std::string instance;  // "toy[lr=0.1]"
  std::map<std::string, std::string> params;
  std::optional<std::vector<std::string>> resource_params;
  // When it is submitted (simulate/arrivals.h); 0: at the start. Jobs are
  // given ordered by it.
  int64_t submit_ms = 0;
  QosClass qos = QosClass::kNormal;  // its class, and protected its floor
  double min_speed = kDefaultMinSpeed;
};

enum class PolicyKind { kExclusive, kNaiveAll, kMpsAll, kMpsFixed, kAuto, kAutoWarm };

struct PolicySpec {
  std::string name;  // "exclusive", "naive-all", "mps-all", "mps-3", "auto", "auto-warm"
  PolicyKind kind = PolicyKind::kExclusive;
  int degree = 0;  // kMpsFixed: jobs per GPU
};

// The most jobs MPS serves on one GPU (its client limit): mps-all's degree and
// the largest K of mps-K.
inline constexpr int kMaxMpsDegree = 48;

// exclusive, naive-all, mps-all, mps-2 .. mps-<max_degree>, auto, auto-warm.
std::vector<PolicySpec> standard_policies(int max_degree);
// "auto,mps-3,exclusive": an error names the unknown entry and the valid forms.
Result<std::vector<PolicySpec>> parse_policies(std::string_view list);

struct SimOptions {
  int gpus = 1;
  uint64_t gpu_memory_bytes = 0;  // per GPU
  InterferenceModel model;        // the truth the simulated GPUs follow
  AutoOptions auto_options;       // for the auto policy (its mode is spatial: MPS)
  int64_t probe_ms = 30'000;      // a newcomer's measurement ends by then at the latest
  int64_t measure_ms = 3'000;     // ... and this long after its start-up (its memory plateaus)
  // What the store measured of each family before the run (the auto policy
  // estimates unmeasured instances from it, as in a real run).
  std::map<std::string, std::vector<FamilyInstance>> family_instances;
  // Takes each policy's scheduler once its simulation is done (from the
  // thread that ran it: simulate_policies() runs several at once); empty:
  // simulate_policy() destroys it. A command that exits right after may
  // keep it to the end, so that it goes back with the process instead of
  // being freed one allocation at a time (a 10,000-signature auto policy's
  // tens of megabytes of them).
  std::function<void(std::unique_ptr<Scheduler>)> keep_scheduler;
};

struct PolicyResult {
  PolicySpec policy;
  int64_t makespan_ms = 0;  // first start to last end
  // Over the jobs that ended ok: submit to end, and submit to first start.
  double mean_completion_ms = 0;
  double mean_wait_ms = 0;
  int jobs_ok = 0;
  int jobs_failed = 0;
  int retries = 0;                    // out-of-memory ends the policy requeued
  int stopped = 0;                    // running jobs the policy stopped and requeued (take_stops)
  int floor_stops = 0;                // opportunistic jobs stopped for a protected job's floor
  int64_t events = 0;                 // scheduling events (each: observe, schedule, ends)
  double scheduler_total_ms = 0;      // wall time spent in the scheduler
  double scheduler_max_ms = 0;        // the longest single event
  size_t max_event_decisions = 0;     // jobs that event started
  int64_t events_over_1ms = 0;        // events that took the scheduler over 1 ms
  std::vector<std::string> notes;     // the policy's own notes, first 20
  std::vector<std::string> failures;  // "job: reason", first 20
  // Job names in the order they started (each attempt), first 1000.
  std::vector<std::string> starts;
  // Each protected job that ended ok (its last attempt), in the order they ended.
  struct ProtectedSpeed {
    std::string job;
    double min_speed = 0;
    double speed = 0;     // solo time over time taken, start-up left out
    int floor_stops = 0;  // opportunistic neighbours stopped for its floor
  };
  std::vector<ProtectedSpeed> protected_speeds;
  // GPUs held for the makespan, in hours.
  double gpu_hours(int gpus) const { return gpus * static_cast<double>(makespan_ms) / 3.6e6; }
};

PolicyResult simulate_policy(const std::vector<SimJob>& jobs, const PolicySpec& policy,
                             const SimOptions& options);

// Planning: the fewest GPUs (1 to max_gpus) on which `policy` ends every job
// ok within `deadline_ms`. Tries 1, 2, 4, ... then bisects between the last
// miss and the first hit, so it assumes that more GPUs never lengthen the
// makespan. `tried` holds every simulated count, ascending.
struct GpuPlan {
  std::optional<int> gpus;  // nullopt: not even max_gpus meets the deadline
  struct Try {
    int gpus = 0;
    int64_t makespan_ms = 0;
    bool all_ok = false;
  };
  std::vector<Try> tried;
};
GpuPlan fewest_gpus(const std::vector<SimJob>& jobs, const PolicySpec& policy, SimOptions options,
                    int64_t deadline_ms, int max_gpus);

}  // namespace colo
