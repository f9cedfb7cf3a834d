// Preemption (colo serve --preempt-after; docs/serve.md, Preemption): which
// queued job, having waited long enough, may stop which running one. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/clock.h"

namespace colo {

// One job of the service's queue, queued or running.
struct PreemptCandidate {
  int64_t id = 0;  // the service job id
  int priority = 0;
  bool running = false;
  bool preemptible = false;         // it may be stopped for a job of higher priority
  bool held_by_quota = false;       // its owner's quota leaves no room for it (QuotaBook::holds,
                                    // and for a protected job QuotaBook::holds_protected)
  UnixMillis waiting_since_ms = 0;  // queued: since when it waits (or was last preempted for)
  UnixMillis started_ms = 0;        // running: when its attempt started
};

struct PreemptChoice {
  int64_t waiting = 0;  // the job that preempts
  int64_t victim = 0;   // the job it stops
};

// The waiting job: of the queued jobs that waited `wait_ms` by `now_ms` and
// are not held by their owner's quota, the highest priority, then the
// longest waiting, then the first in `jobs`. Its victim: of the running
// preemptible jobs of lower priority, the lowest, then the one that started
// last (the least work lost), then the first in `jobs`. nullopt when either
// is missing.
std::optional<PreemptChoice> choose_preemption(const std::vector<PreemptCandidate>& jobs,
                                               UnixMillis now_ms, int64_t wait_ms);

}  // namespace colo
