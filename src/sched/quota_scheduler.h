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
// Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace colo {

class QuotaScheduler final : public Scheduler {
 public:
  explicit QuotaScheduler(std::unique_ptr<Scheduler> policy);

  std::string describe() const override { return policy_->describe(); }
  void introduce(const std::string& signature, const SignatureFacts& facts) override {
    policy_->introduce(signature, facts);
  }
  void enqueue(const SchedJob& job) override;
  std::vector<Decision> schedule(int64_t now_ms) override;
  EndVerdict finished(size_t job, JobEnd end, int64_t now_ms) override;
  void observe_rate(size_t job, double samples_per_s, int64_t now_ms) override {
    policy_->observe_rate(job, samples_per_s, now_ms);
  }
  void learned(const std::string& signature, const JobProfile& profile, int64_t now_ms) override {
    policy_->learned(signature, profile, now_ms);
  }
  void measured(size_t job, const JobProfile& profile) override { policy_->measured(job, profile); }
  std::vector<size_t> drain_queued() override;
  bool remove_queued(size_t job) override;
  std::optional<int64_t> expected_end_ms(size_t job, int64_t now_ms) const override {
    return policy_->expected_end_ms(job, now_ms);
  }
  std::vector<DeviceRoom> rooms(int64_t now_ms) override { return policy_->rooms(now_ms); }
  void occupy(size_t key, int device, uint64_t memory_bytes, double sm) override {
    policy_->occupy(key, device, memory_bytes, sm);
  }
  void vacate(size_t key, int64_t now_ms) override { policy_->vacate(key, now_ms); }
  void reserve(const std::vector<int>& devices, std::optional<int64_t> until_ms) override {
    policy_->reserve(devices, until_ms);
  }
  std::vector<Unplaceable> take_unplaceable() override;
  std::vector<std::string> take_notes() override { return policy_->take_notes(); }
  size_t queued() const override { return policy_->queued() + waiting_count_; }
  std::optional<int64_t> next_wakeup_ms(int64_t now_ms) const override {
    return policy_->next_wakeup_ms(now_ms);
  }
  std::optional<int64_t> next_check_ms(int64_t now_ms) const override {
    return policy_->next_check_ms(now_ms);
  }
  void set_usage(const std::map<uint32_t, double>& usage) override { policy_->set_usage(usage); }
  void set_quota_left(const std::map<uint32_t, double>& gpus_left) override;

  // The jobs held back for their owner's quota (not shown to the policy).
  bool held(size_t job) const;

 private:
  static double needs(const SchedJob& job) { return std::max(1, job.gpus); }
  // Shows the policy the owner's oldest waiting jobs while they fit in what
  // is left, and takes back the newest shown ones that no longer fit.
  void rebalance(uint32_t owner);
  void show(const SchedJob& job);
  void forget_shown(size_t job);  // placed, removed or unplaceable

  std::unique_ptr<Scheduler> policy_;
  std::map<uint32_t, double> left_;  // GPUs' worth each bounded owner may still start
  struct Owner {
    std::map<size_t, SchedJob> waiting;  // held here, oldest first
    std::set<size_t> shown;              // queued in the policy
    double shown_needs = 0;              // GPUs the shown ones need
  };
  std::map<uint32_t, Owner> owners_;
  std::map<size_t, SchedJob> shown_;  // queued in the policy through here, by job
  size_t waiting_count_ = 0;
};

}  // namespace colo
