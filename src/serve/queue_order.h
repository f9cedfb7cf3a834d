// The order in which colo serve will start its queued jobs, as `colo queue`
// lists them, and the words for why a job waits behind the first of them
// (docs/serve.md, "The queue").
//
// The order is the scheduler's (sched/class_queue.h, heads_to_try()): an
// opportunistic job after every other; then the higher priority; then, under
// fair share, the owner whose usage lately over their weight is least; then
// arrival (the job's id). Pure; thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace colo {

// A queued job as the order sees it.
struct QueuedInOrder {
  int64_t id = 0;
  uid_t owner = 0;
  int priority = 0;
  bool opportunistic = false;
};

// Each owner's share as fair share weighs it.
struct OwnerShare {
  std::string name;
  double usage_ms = 0;  // GPU time lately (decayed)
  double weight = 1;    // > 0
};

// `jobs` in start order. `shares` null: no fair share (first come, first
// served); an owner missing from it has used nothing, at weight 1.
std::vector<QueuedInOrder> in_start_order(std::vector<QueuedInOrder> jobs,
                                          const std::map<uid_t, OwnerShare>* shares);

// Why `job` waits behind `first` (the first in start order), in words, or ""
// when the order is not why: `job` is `first`, or `first` is its owner's own
// (then it waits for what `first` waits for: room, a gang's GPUs, ...).
// `half_life_ms`: fair share's (how fast usage is forgotten).
std::string waits_behind(const QueuedInOrder& job, const QueuedInOrder& first,
                         const std::map<uid_t, OwnerShare>* shares, int64_t half_life_ms);

}  // namespace colo
