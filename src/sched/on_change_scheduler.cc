#include "sched/on_change_scheduler.h"

#include <utility>

namespace colo {

OnChangeScheduler::OnChangeScheduler(std::unique_ptr<Scheduler> policy)
    : ForwardingScheduler(std::move(policy)) {}

bool OnChangeScheduler::due(int64_t now_ms) const {
  return changed_ || (check_ms_ && now_ms >= *check_ms_);
}

void OnChangeScheduler::introduce(const std::string& signature, const SignatureFacts& facts) {
  changed_ = true;
  policy().introduce(signature, facts);
}

void OnChangeScheduler::enqueue(const SchedJob& job) {
  changed_ = true;
  policy().enqueue(job);
}

std::vector<Decision> OnChangeScheduler::schedule(int64_t now_ms) {
  std::vector<Decision> out = policy().schedule(now_ms);
  changed_ = !out.empty();
  check_ms_ = policy().next_check_ms(now_ms);
  return out;
}

EndVerdict OnChangeScheduler::finished(size_t job, JobEnd end, int64_t now_ms) {
  changed_ = true;
  return policy().finished(job, end, now_ms);
}

void OnChangeScheduler::observe_rate(size_t job, double samples_per_s, int64_t now_ms) {
  changed_ = true;
  policy().observe_rate(job, samples_per_s, now_ms);
}

void OnChangeScheduler::learned(const std::string& signature, const JobProfile& profile,
                                int64_t now_ms) {
  changed_ = true;
  policy().learned(signature, profile, now_ms);
}

void OnChangeScheduler::measured(size_t job, const JobProfile& profile) {
  changed_ = true;
  policy().measured(job, profile);
}

std::vector<size_t> OnChangeScheduler::drain_queued() {
  changed_ = true;
  return policy().drain_queued();
}

bool OnChangeScheduler::remove_queued(size_t job) {
  changed_ = true;
  return policy().remove_queued(job);
}

void OnChangeScheduler::occupy(size_t key, int device, uint64_t memory_bytes, double sm) {
  changed_ = true;
  policy().occupy(key, device, memory_bytes, sm);
}

void OnChangeScheduler::vacate(size_t key, int64_t now_ms) {
  changed_ = true;
  policy().vacate(key, now_ms);
}

void OnChangeScheduler::reserve(const std::vector<int>& devices, std::optional<int64_t> until_ms) {
  changed_ = true;
  policy().reserve(devices, until_ms);
}

std::vector<Unplaceable> OnChangeScheduler::take_unplaceable() {
  std::vector<Unplaceable> given_up = policy().take_unplaceable();
  if (!given_up.empty()) changed_ = true;
  return given_up;
}

void OnChangeScheduler::set_quota_left(const std::map<uint32_t, double>& gpus_left) {
  if (gpus_left == quota_left_) return;
  quota_left_ = gpus_left;
  changed_ = true;
  policy().set_quota_left(gpus_left);
}

void OnChangeScheduler::set_protected_left(const std::map<uint32_t, double>& gpus_left) {
  if (gpus_left == protected_left_) return;
  protected_left_ = gpus_left;
  changed_ = true;
  policy().set_protected_left(gpus_left);
}

}  // namespace colo
