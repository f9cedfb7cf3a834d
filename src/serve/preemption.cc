#include "serve/preemption.h"

namespace colo {

std::optional<PreemptChoice> choose_preemption(const std::vector<PreemptCandidate>& jobs,
                                               UnixMillis now_ms, int64_t wait_ms) {
  const PreemptCandidate* waiting = nullptr;
  for (const PreemptCandidate& j : jobs) {
    if (j.running || now_ms - j.waiting_since_ms < wait_ms || j.held_by_quota) continue;
    if (waiting == nullptr || j.priority > waiting->priority ||
        (j.priority == waiting->priority && j.waiting_since_ms < waiting->waiting_since_ms))
      waiting = &j;
  }
  if (waiting == nullptr) return std::nullopt;
  const PreemptCandidate* victim = nullptr;
  for (const PreemptCandidate& j : jobs) {
    if (!j.running || !j.preemptible || j.priority >= waiting->priority) continue;
    if (victim == nullptr || j.priority < victim->priority ||
        (j.priority == victim->priority && j.started_ms > victim->started_ms))
      victim = &j;
  }
  if (victim == nullptr) return std::nullopt;
  return PreemptChoice{waiting->id, victim->id};
}

}  // namespace colo
