// ForwardingScheduler: a Scheduler that hands every call to the policy it
// wraps. A wrapper that adds to some calls (QuotaScheduler) derives from it
// and overrides those only.
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sched/scheduler.h"

namespace colo {

class ForwardingScheduler : public Scheduler {
 public:
  explicit ForwardingScheduler(std::unique_ptr<Scheduler> policy) : policy_(std::move(policy)) {}

  std::string describe() const override { return policy_->describe(); }
  void introduce(const std::string& signature, const SignatureFacts& facts) override {
    policy_->introduce(signature, facts);
  }
  void expect_signatures(size_t count) override { policy_->expect_signatures(count); }
  void enqueue(const SchedJob& job) override { policy_->enqueue(job); }
  std::vector<Decision> schedule(int64_t now_ms) override { return policy_->schedule(now_ms); }
  EndVerdict finished(size_t job, JobEnd end, int64_t now_ms) override {
    return policy_->finished(job, end, now_ms);
  }
  void observe_rate(size_t job, double samples_per_s, int64_t now_ms) override {
    policy_->observe_rate(job, samples_per_s, now_ms);
  }
  void learned(const std::string& signature, const JobProfile& profile, int64_t now_ms) override {
    policy_->learned(signature, profile, now_ms);
  }
  void avoid_together(const std::vector<std::string>& signatures) override {
    policy_->avoid_together(signatures);
  }
  void measured(size_t job, const JobProfile& profile) override { policy_->measured(job, profile); }
  void observe_memory(size_t job, uint64_t bytes, int64_t now_ms) override {
    policy_->observe_memory(job, bytes, now_ms);
  }
  std::vector<Unplaceable> take_stops() override { return policy_->take_stops(); }
  std::vector<size_t> drain_queued() override { return policy_->drain_queued(); }
  bool remove_queued(size_t job) override { return policy_->remove_queued(job); }
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
  std::vector<Unplaceable> take_unplaceable() override { return policy_->take_unplaceable(); }
  std::vector<std::string> take_notes() override { return policy_->take_notes(); }
  size_t queued() const override { return policy_->queued(); }
  std::optional<int64_t> next_wakeup_ms(int64_t now_ms) const override {
    return policy_->next_wakeup_ms(now_ms);
  }
  std::optional<int64_t> next_check_ms(int64_t now_ms) const override {
    return policy_->next_check_ms(now_ms);
  }
  void set_usage(const std::map<uint32_t, double>& usage) override { policy_->set_usage(usage); }
  void set_quota_left(const std::map<uint32_t, double>& gpus_left) override {
    policy_->set_quota_left(gpus_left);
  }
  void set_protected_left(const std::map<uint32_t, double>& gpus_left) override {
    policy_->set_protected_left(gpus_left);
  }
  std::optional<WaitingReason> waiting_reason(size_t job) const override {
    return policy_->waiting_reason(job);
  }

 protected:
  Scheduler& policy() { return *policy_; }
  const Scheduler& policy() const { return *policy_; }

 private:
  std::unique_ptr<Scheduler> policy_;
};

}  // namespace colo
