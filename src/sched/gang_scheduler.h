// GangScheduler: jobs that need several GPUs at once (gangs: `gpus = N`)
// beside one-GPU jobs, over either policy. One-GPU jobs go to the policy it
// wraps (fixed or auto) unchanged; gangs wait in a queue of their own.
//
// Placement. A gang starts only when N GPUs can each take one rank: a free
//   slot and room for its memory per GPU (its hint or profile, plus a 20%
//   margin) as the policy sees them (Scheduler::rooms). A gang nothing is
//   known about (no memory hint, never measured) is a newcomer. Where memory
//   limits hold (`memory_limits`: MPS) and it has a prior (sched/prior.h),
//   it starts at once beside other work where its prior's peak plus the
//   margin fits, each rank under a memory limit of that or half of what its
//   emptiest GPU can spare, whichever is more (a prior may be far too small),
//   and counts as that much (and its prior's SM activity) on each GPU; what
//   its run measures (measured())
//   places its later attempts and instances. One that overruns its limit
//   fails alone and is retried (below). Without limits or a prior it takes
//   GPUs with nothing on them, and has them to itself, until it has been
//   measured. Among the GPUs
//   that fit, the least crowded win, then those with most memory free. Each
//   rank then counts as a job on its GPU for the policy (occupy), so one-GPU
//   jobs fill what is left beside it.
// Order. At each event gangs are placed first, in the order they came, then
//   the policy places its jobs: a gang needs several GPUs at once, which
//   one-GPU jobs would otherwise keep taking one at a time.
// Reservation and backfill. The oldest gang that cannot start keeps the N
//   GPUs that are expected to empty soonest (those with fewest jobs when the
//   policy cannot tell), and keeps them until it starts: nothing starts
//   there but a job the policy expects to end before the gang could start.
//   The fixed policy expects nothing, so nothing backfills under it. The
//   bound: the gang starts once the jobs running on its kept GPUs when it
//   took them have ended (and the backfilled ones, predicted to end before
//   that, have: later only by what their prediction missed). Younger gangs
//   may start meanwhile on other GPUs. A reservation expires after
//   kReservationBoundMs (a job on the kept GPUs that never ends must not
//   hold the machine): the GPUs open to every job again, the gang is told
//   why, and it still waits, starting when its GPUs happen to be free, but
//   keeps none for another kReservationBoundMs; the next gang in line may.
// Retries. A gang is one unit: its ranks are one process tree, so a failure
//   on one ends all of them (the engine retries it whole). An out-of-memory
//   end requeues it ahead of the other gangs with twice its memory per GPU
//   (a whole GPU per rank on its last attempt).
//
// Not thread-safe.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sched/forwarding_scheduler.h"

namespace colo {

class GangScheduler final : public ForwardingScheduler {
 public:
  // `memory_limits`: the caller enforces each decision's memory limit
  // (MPS), so a newcomer gang may start beside other work (see above).
  explicit GangScheduler(std::unique_ptr<Scheduler> policy, int max_retries = 2,
                         bool memory_limits = false);

  void introduce(const std::string& signature, const SignatureFacts& facts) override;
  void enqueue(const SchedJob& job) override;
  std::vector<Decision> schedule(int64_t now_ms) override;
  EndVerdict finished(size_t job, JobEnd end, int64_t now_ms) override;
  void observe_rate(size_t job, double samples_per_s, int64_t now_ms) override;
  void measured(size_t job, const JobProfile& profile) override;
  std::vector<size_t> drain_queued() override;
  bool remove_queued(size_t job) override;
  std::optional<int64_t> expected_end_ms(size_t job, int64_t now_ms) const override;
  std::vector<Unplaceable> take_unplaceable() override;
  std::vector<std::string> take_notes() override;
  size_t queued() const override { return policy().queued() + gangs_.size(); }
  std::optional<int64_t> next_check_ms(int64_t now_ms) const override;
  // A gang's: none (the policy does not know it); a one-GPU job's: the policy's.
  std::optional<WaitingReason> waiting_reason(size_t job) const override;
  // Gangs of gangs are not a thing: rooms(), occupy(), vacate() and reserve()
  // go to the policy (ForwardingScheduler).

  // The GPUs kept for the oldest waiting gang (empty: none), for displays and tests.
  const std::vector<int>& reserved() const { return reserved_; }

  static constexpr double kMemoryMargin = 0.2;
  static constexpr int64_t kReservationBoundMs = 1'800'000;  // 30 minutes

 private:
  struct Gang {
    SchedJob job;
    int attempt = 1;
    std::optional<uint64_t> memory_override;  // after an out-of-memory end
    bool whole_gpus = false;                  // its last attempt: a GPU per rank
  };
  struct Running {
    Gang gang;
    std::vector<int> devices;
    int64_t started_ms = 0;
    std::optional<uint64_t> claim;  // per GPU, as it started; nullopt: GPUs to itself
  };
  // Its memory per GPU with the margin (a newcomer's prior's under memory
  // limits); nullopt when nothing is known.
  std::optional<uint64_t> claim(const Gang& g) const;
  // Nothing known of its memory but perhaps a prior: no hint, profile or retry's figure.
  bool newcomer(const Gang& g) const;
  double sm_of(const Gang& g) const;
  // N devices of `rooms` that take `g` now, or nothing.
  std::optional<std::vector<int>> fit(const Gang& g, const std::vector<DeviceRoom>& rooms,
                                      const std::vector<int>& excluded) const;
  // The N devices `g` waits for (see the file comment) and when they are
  // expected to be free.
  std::pair<std::vector<int>, std::optional<int64_t>> to_keep(
      const Gang& g, const std::vector<DeviceRoom>& rooms) const;
  // Starts the gangs that fit, in order; the first that does not keeps its
  // GPUs. True when one keeps them.
  bool place_gangs(int64_t now_ms, std::vector<Decision>& out);
  void start(Gang& g, const std::vector<int>& devices, int64_t now_ms, std::vector<Decision>& out);
  void release_reservation();

  int max_retries_;
  bool memory_limits_;
  std::deque<Gang> gangs_;
  std::map<size_t, Running> running_;
  // By signature (hashed: a sweep introduces thousands, looked up, never walked).
  std::unordered_map<std::string, JobProfile> profiles_;  // per GPU
  std::unordered_map<std::string, JobProfile> priors_;    // per GPU (SignatureFacts::prior)
  std::unordered_map<std::string, std::string> labels_;
  std::vector<int> reserved_;
  size_t reserved_for_ = SIZE_MAX;         // the gang the GPUs are kept for
  std::optional<int64_t> reserved_until_;  // when they are expected to be free
  int64_t reserved_since_ms_ = 0;
  std::map<size_t, int64_t> keeps_none_until_;  // gangs whose reservation expired
  bool policy_reserves_ = false;                // the last reserve() handed the policy any GPU
  std::vector<Unplaceable> unplaceable_;
  std::vector<std::string> notes_;
};

}  // namespace colo
