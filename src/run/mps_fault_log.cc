#include "run/mps_fault_log.h"

#include <algorithm>

namespace colo {

void MpsFaultLog::raised(const std::vector<int>& gpus, const FaultCause& cause, int64_t now_ms) {
  for (int d : gpus) latest_[d] = {cause, now_ms};
}

std::optional<FaultCause> MpsFaultLog::recent(const std::vector<int>& gpus, int64_t now_ms) const {
  for (int d : gpus) {
    auto it = latest_.find(d);
    if (it != latest_.end() && now_ms - it->second.at_ms <= kRecentFaultMs) return it->second.cause;
  }
  return std::nullopt;
}

int64_t MpsFaultLog::refused_start(int64_t now_ms) {
  ++refused_in_a_row_;
  const int64_t wait_ms = std::min<int64_t>(
      kNotReadyMaxWaitMs, kNotReadyFirstWaitMs << std::min(refused_in_a_row_ - 1, 5));
  pause_until(now_ms + wait_ms);
  return wait_ms;
}

void MpsFaultLog::pause_until(int64_t until_ms) {
  paused_until_ms_ = std::max(paused_until_ms_, until_ms);
}

}  // namespace colo
