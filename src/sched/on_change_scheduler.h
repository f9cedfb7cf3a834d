// OnChangeScheduler: a policy whose schedule() is worth calling only when it
// could decide something new. A policy's schedule() depends on what it was
// told (the calls below) and on time only through next_check_ms(): called
// again with nothing new, before then, it places nothing. The engine's loop
// ticks every 200 ms, and with 10,000 distinct signatures queued one call
// costs tens of milliseconds (issue 37), so the loop asks due() first.
//
// Everything is forwarded to the wrapped policy unchanged; this only keeps
// track of whether something changed since the last schedule(). Usage only
// orders what may start: not a change that could start anything.
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sched/forwarding_scheduler.h"

namespace colo {

class OnChangeScheduler final : public ForwardingScheduler {
 public:
  explicit OnChangeScheduler(std::unique_ptr<Scheduler> policy);

  // Whether schedule(now_ms) may place something its last call did not:
  // there was no call yet; something changed since (any call below but the
  // const ones); the last call placed, or gave up, a job (a policy tries each
  // class of jobs once per call, so one placement may open the way to
  // another); or now_ms reached the policy's next_check_ms() as of that call.
  bool due(int64_t now_ms) const;

  void introduce(const std::string& signature, const SignatureFacts& facts) override;
  void enqueue(const SchedJob& job) override;
  std::vector<Decision> schedule(int64_t now_ms) override;
  EndVerdict finished(size_t job, JobEnd end, int64_t now_ms) override;
  void observe_rate(size_t job, double samples_per_s, int64_t now_ms) override;
  void learned(const std::string& signature, const JobProfile& profile, int64_t now_ms) override;
  void measured(size_t job, const JobProfile& profile) override;
  std::vector<size_t> drain_queued() override;
  bool remove_queued(size_t job) override;
  void occupy(size_t key, int device, uint64_t memory_bytes, double sm) override;
  void vacate(size_t key, int64_t now_ms) override;
  void reserve(const std::vector<int>& devices, std::optional<int64_t> until_ms) override;
  std::vector<Unplaceable> take_unplaceable() override;
  // A quota that changed may let a job start: a change when it differs from the last.
  void set_quota_left(const std::map<uint32_t, double>& gpus_left) override;
  void set_protected_left(const std::map<uint32_t, double>& gpus_left) override;

 private:
  bool changed_ = true;
  std::optional<int64_t> check_ms_;        // the policy's next_check_ms() after the last schedule()
  std::map<uint32_t, double> quota_left_;  // the last set_quota_left()
  std::map<uint32_t, double> protected_left_;  // the last set_protected_left()
};

}  // namespace colo
