// QuotaScheduler: per-owner quotas in GPUs' worth, over any policy. The
// owner's caller (colo serve) says how many GPUs' worth of each owner's jobs
// may still start (set_quota_left: its quota less what its running jobs
// hold); the policy sees only as many of that owner's queued jobs, oldest
// first, as fit in what is left, counting each as the GPUs it needs (a
// whole GPU each, the most it can hold), and the rest wait here. So a
// schedule() never starts more than an owner has left, whatever it places,
// and nothing of another owner waits for them: the policy places what it
// sees as before (fair share, collocation, backfill).
//
// A job's share of a GPU it shares is less than the GPU, so an owner whose
// jobs were placed beside others has room left for more at the next call.
// Owners absent from the last set_quota_left() have no bound. A job the
// policy requeues itself (an out-of-memory retry) stays in its queue.
//
// Protected GPUs (colo serve --max-protected-gpus-per-user): the caller
// also says how many more GPUs each owner's protected jobs may hold
// (set_protected_left). A protected job past it waits here, counting the
// GPUs it needs; the owner's jobs behind it that are not protected go
// around it (it holds nothing they need), while the bound on GPUs' worth
// keeps its order. Owners absent from the last set_protected_left() have no
// such bound.
//
// Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "jobs/job_qos.h"
#include "sched/forwarding_scheduler.h"

namespace colo {

class QuotaScheduler final : public ForwardingScheduler {
 public:
  explicit QuotaScheduler(std::unique_ptr<Scheduler> policy)
      : ForwardingScheduler(std::move(policy)) {}

  void enqueue(const SchedJob& job) override;
  std::vector<Decision> schedule(int64_t now_ms) override;
  std::vector<size_t> drain_queued() override;
  bool remove_queued(size_t job) override;
  std::vector<Unplaceable> take_unplaceable() override;
  size_t queued() const override { return policy().queued() + waiting_count_; }
  void set_quota_left(const std::map<uint32_t, double>& gpus_left) override;
  void set_protected_left(const std::map<uint32_t, double>& gpus_left) override;
  // None for a job held back here (the policy does not know it).
  std::optional<WaitingReason> waiting_reason(size_t job) const override {
    return held(job) ? std::nullopt : policy().waiting_reason(job);
  }

  // The jobs held back for their owner's quota (not shown to the policy).
  bool held(size_t job) const;

 private:
  static double needs(const SchedJob& job) { return std::max(1, job.gpus); }
  // The protected GPUs it would hold: its GPUs when protected, else none.
  static double needs_protected(const SchedJob& job) {
    return job.qos == QosClass::kProtected ? needs(job) : 0;
  }
  // Shows the policy the owner's oldest waiting jobs while they fit in what
  // is left, and takes back the newest shown ones that no longer fit.
  void rebalance(uint32_t owner);
  void show(const SchedJob& job);
  void forget_shown(size_t job);  // placed, removed or unplaceable

  std::map<uint32_t, double> left_;            // GPUs' worth each bounded owner may still start
  std::map<uint32_t, double> protected_left_;  // protected GPUs each bounded owner may still take
  struct Owner {
    std::map<size_t, SchedJob> waiting;  // held here, oldest first
    std::set<size_t> shown;              // queued in the policy
    double shown_needs = 0;              // GPUs the shown ones need
    double shown_protected = 0;          // GPUs the shown protected ones need
  };
  std::map<uint32_t, Owner> owners_;
  // Takes back shown job `job` of `o` from the policy into its waiting jobs.
  void take_back(Owner& o, size_t job);
  std::map<size_t, SchedJob> shown_;  // queued in the policy through here, by job
  size_t waiting_count_ = 0;
};

}  // namespace colo
