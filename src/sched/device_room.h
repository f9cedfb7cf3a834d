// DeviceRoom: what a GPU can still take, as a policy sees it, for the jobs
// it does not place itself (a gang's ranks: sched/gang_scheduler.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace colo {

// A job index with this bit set is not a job: the capacity a gang's rank
// takes on one GPU (Scheduler::occupy).
inline constexpr size_t kOccupantKey = size_t{1} << 62;

// What a GPU can still take beside what runs there, for a job the policy
// does not place itself (a gang's rank, GangScheduler).
struct DeviceRoom {
  int device = 0;
  int jobs = 0;                    // running there, gangs' ranks included
  int slots_free = 0;              // 0 while the policy takes no job there
  uint64_t memory_free_bytes = 0;  // claims and the policy's reserve taken off
  // When every job there is expected to have ended, on the clock of now_ms
  // (now_ms when none runs); nullopt when the policy cannot tell.
  std::optional<int64_t> drained_ms;
  uint64_t memory_total_bytes = 0;  // the GPU's whole memory
};

}  // namespace colo
