// WaitingReason: why a queued job waits, as its policy last placed jobs
// (Scheduler::waiting_reason), and its one wording for the user (colo queue).
//
// The head of the queue (the first job in the policy's order that cannot
// start for want of room) is kept a GPU: later jobs start there only where
// they do not delay it (Slurm's backfill rule; docs/policy.md, Reservation).
// A job that a protected job's GPU refuses (kProtected) waits for that job
// (docs/policy.md, "Protected and opportunistic jobs"). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace colo {

struct WaitingReason {
  // kReserved: the job is the head, and `device` is kept for it. kBackfill:
  // another queued job, which may start only where it does not delay `head`.
  // kProtected: `device` holds `head`, a protected job at `min_speed`, which
  // does not take this job (`qos_why` says why); or, with `qos_self`, the
  // job is protected itself and `device` holds `head`, beside which it may
  // not run (`qos_why`: ", which is normal; ...").
  enum class Kind { kReserved, kBackfill, kProtected };
  Kind kind = Kind::kReserved;
  size_t head = 0;  // the caller's job index of the head
  int device = 0;   // the GPU kept for it
  // How many of the jobs there must end before it fits, and which, when the
  // policy expects each of their ends (else empty).
  int jobs_to_end = 1;
  std::vector<size_t> ending;
  // When they are all expected to have ended, on the clock of schedule();
  // nullopt when the policy cannot tell.
  std::optional<int64_t> start_ms;
  double min_speed = 0;   // kProtected
  std::string qos_why;    // kProtected: "which takes only opportunistic neighbours"
  bool qos_self = false;  // kProtected: the waiting job is the protected one
  bool operator==(const WaitingReason&) const = default;
};

// "reserved: starts when gpu0's job 12 ends (expected in 3 s)", "reserved:
// next on gpu0, when a job there ends", "backfill: may start only where it
// does not delay job 7". `job_name` names a job index ("job 12"); `now_ms`
// is on the clock of start_ms. kProtected: "protected: gpu0 holds job 12,
// protected at 0.90, which takes only opportunistic neighbours", or for the
// protected job itself "protected: gpu0 holds job 3" and its qos_why.
std::string describe_waiting(const WaitingReason& reason, int64_t now_ms,
                             const std::function<std::string(size_t)>& job_name);

}  // namespace colo
