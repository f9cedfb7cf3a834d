// Fair share (docs/serve.md, Fair share): what a running job is charged
// for its GPUs, and the ledger of what each owner was charged.
//
// charged_shares() is the rule for one GPU: from what colo measured, never
// only from what the job reports; a GPU that a protected job keeps for
// itself and its opportunistic neighbours is charged whole, the protected
// job paying what the neighbours do not use (docs/policy.md, "What
// protection costs"). span_usage() turns a span of a job's run
// into its figures (GPU time held, solo-equivalent time, charged time);
// energy is split evenly among the jobs on a GPU (add_energy_share).
//
// UsageLedger keeps each owner's charged GPU time, decayed with a half-life
// (Slurm's PriorityDecayHalfLife) and in all, their weights (their own,
// else the largest of their groups', else 1), their names, and the rows the
// store keeps across restarts; and, per GPU, how far its samples' energy was
// counted. Pure but for the group membership it is given (a seam for tests).
// Not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "gpu/gpu_backend.h"
#include "jobs/job_qos.h"
#include "store/run_store.h"

namespace colo {

// One job running on a GPU during a span.
struct JobOnGpu {
  // Its processes' SM utilisation there, as the driver measured it (NVML's
  // per-process samples, summed); nullopt where the driver gives none.
  std::optional<double> sm_util_pct;
  // The share of the GPU's SMs colo gave it under MPS (its active thread
  // percentage); nullopt: none given.
  std::optional<double> mps_sm_share_pct;
  // Its reported rate over its reported rate alone; nullopt when either is
  // unknown. A claim of the job's, used only to split a GPU colo cannot split
  // itself.
  std::optional<double> reported_progress;
  // Its quality-of-service class (jobs/job_qos.h).
  QosClass qos = QosClass::kNormal;
  // Opportunistic beside a protected job under MPS: the active thread
  // percentage colo capped it at (sched/qos_placement.h); nullopt: none.
  std::optional<double> thread_cap_pct;
};

// Each job's share of the GPU, in the order of `jobs`: a job alone holds the
// whole GPU (1, whatever it reports). Beside others, the split colo measured
// (each job's SM utilisation over their sum) where every job there has a
// positive reading; else the split of the MPS SM shares colo gave them,
// where it gave every job one; else the split their reported progress gives
// where every job reported it; else an equal split. No job's share falls below
// half of an equal split, so no report lowers a job's charge further.
//
// A GPU holding one protected job and only opportunistic jobs beside it is
// charged whole (its shares sum to 1): each opportunistic job pays its
// harvest, opportunistic_share(); the protected job pays the rest, the GPU
// time it keeps from others, and at least half of an equal split (where the
// harvests pass that, they are scaled down to leave it). Any other GPU
// (normal jobs there, two protected jobs, no protected job) is split as above.
std::vector<double> charged_shares(const std::vector<JobOnGpu>& jobs);

// What opportunistic job `i` of `jobs` (a protected job's GPU) harvested of
// it, 0..1: its share of the SM utilisation measured there, where every job
// there has a positive reading; else its reported rate over its solo rate;
// else its thread-percentage cap; else an equal split. Never more than its
// cap, never less than half of its placed share (its cap, else an equal
// split), so the most its reports can lower its charge is half.
double opportunistic_share(const std::vector<JobOnGpu>& jobs, size_t i);

// A span of `span_ms` of a job on `gpus` GPUs (0 counts as 1), charged
// `charged` of them (the sum of its charged shares): GPU time held (the span
// on each GPU) and charged time; where its reported rate and its rate alone
// are both known, also its solo-equivalent time (the one over the other, at
// most 1, on each GPU) and, as rated_gpu_ms and rated_share_ms, the GPU and
// charged time again; else no solo-equivalent time, and none rated. No energy.
ServiceJobUsage span_usage(double span_ms, size_t gpus, double charged,
                           std::optional<double> samples_per_s,
                           std::optional<double> solo_samples_per_s);

// Adds to `usage` a job's share of the energy `joules` of each of its
// `gpus`: each GPU's split evenly among the `on_gpu` jobs running there (1
// where not given).
void add_energy_share(ServiceJobUsage& usage, const std::vector<int>& gpus,
                      const std::map<int, double>& joules, const std::map<int, int>& on_gpu);

// `value` after `elapsed_ms` of decay with `half_life_ms` (at least 1).
double decayed(double value, int64_t elapsed_ms, int64_t half_life_ms);

struct UsageLedgerOptions {
  // A user's usage counts half after this long (Slurm's PriorityDecayHalfLife).
  int64_t half_life_ms = 86'400'000;
  // Weights: a user's own, else the largest of their groups', else 1. A user
  // of weight 2 is owed twice the GPU time of one of weight 1: the queue is
  // ordered by usage over weight.
  std::map<uid_t, double> user_weights;
  std::map<gid_t, double> group_weights;
};

class UsageLedger {
 public:
  // Borrows `options`, which must outlive it (colo serve's); `in_group`
  // says who is in which group (read once per owner).
  UsageLedger(const UsageLedgerOptions& options, std::function<bool(uid_t, gid_t)> in_group);
  UsageLedger(UsageLedgerOptions&&, std::function<bool(uid_t, gid_t)>) = delete;

  // Decays every owner's usage from the last call (the first only starts the clock).
  void decay_to(int64_t monotonic_ms);
  // Charges `owner` `charged_ms` of GPU time, lately and in all.
  void add(uid_t owner, double charged_ms);
  // Each owner's usage lately (decayed) and in all (no entry: none).
  const std::map<uid_t, double>& usage() const { return usage_ms_; }
  const std::map<uid_t, double>& total() const { return total_ms_; }
  double weight_of(uid_t owner) const;
  // Usage lately over weight: the order of fair share (less goes first).
  double share(uid_t owner) const;
  // share() of every owner with usage, for RunEngine::set_usage.
  std::map<uint32_t, double> weighted() const;

  // Owners' names: of the jobs admitted (set_name), and of the usage kept (load).
  void set_name(uid_t owner, const std::string& name) { names_[owner] = name; }
  const std::map<uid_t, std::string>& names() const { return names_; }

  // What a service before kept (`rows`), decayed over the time since, as of `now_ms` (wall).
  void load(const std::vector<ServiceUsageRow>& rows, UnixMillis now_ms);
  // What to keep, as of `now_ms` (wall): one row per owner with usage.
  std::vector<ServiceUsageRow> rows(UnixMillis now_ms) const;
  // True (and the time noted) when nothing was kept for `every_ms` or ever.
  bool keep_due(int64_t monotonic_ms, int64_t every_ms);

  // The joules each GPU drew in the samples of `recent` (each GPU's, in time
  // order) newer than the last counted; each pair of samples is counted once.
  std::map<int, double> new_energy_j(const std::map<int, std::deque<DeviceSample>>& recent);

 private:
  const UsageLedgerOptions& options_;
  const std::function<bool(uid_t, gid_t)> in_group_;
  std::map<uid_t, double> usage_ms_;
  std::map<uid_t, double> total_ms_;
  std::map<uid_t, std::string> names_;
  int64_t usage_at_ms_ = -1;                     // monotonic; -1: never decayed
  int64_t kept_at_ms_ = -1;                      // monotonic; -1: never kept
  std::map<int, UnixMillis> energy_counted_to_;  // per GPU: the last sample counted
  // The largest weight of each owner's groups (0: none), read once per owner.
  mutable std::map<uid_t, double> group_weight_of_;
};

}  // namespace colo
