#include "run/attempt_end.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace colo {
namespace {

using Cause = StopCause::Kind;
using End = AttemptEnd::Kind;

// An attempt that exited with code 1 ("exit code 1"), its first, on gpu0,
// under an on-failure restart policy.
AttemptFacts failed_attempt() {
  AttemptFacts f;
  f.exit = JobExit{JobState::kFailed, 1, std::nullopt, "exit code 1", {}};
  f.gpus = "gpu0";
  return f;
}

struct EndCase {
  std::string name;
  std::function<void(AttemptFacts&)> facts;
  EndVerdict verdict;  // what the policy answers
  JobEnd told;         // what the policy is told
  End kind;
  JobState state;      // kFinal: the state recorded
  std::string reason;  // the recorded reason (kFinal) or the note (kRequeue, kPark)
  bool counted = true;
  bool enqueue = true;
};

EndVerdict requeued_by_policy(std::string note, bool counted = true) {
  return EndVerdict{true, std::move(note), counted};
}

const std::vector<EndCase>& end_cases() {
  static const std::vector<EndCase> cases = {
      {"AnOkEndIsRecorded",
       [](AttemptFacts& f) {
         f.exit = {JobState::kOk, 0, {}, "", {}};
       },
       {},
       JobEnd::kOk,
       End::kFinal,
       JobState::kOk,
       ""},
      {"AFailureTheRulesDoNotRetryIsRecorded",
       [](AttemptFacts&) {},
       {},
       JobEnd::kFailed,
       End::kFinal,
       JobState::kFailed,
       "exit code 1"},
      {"AnOutOfMemoryEndThePolicyRetriesRunsAgainAsItSays",
       [](AttemptFacts& f) {
         f.exit = {JobState::kOutOfMemory, 1, {}, "CUDA out of memory", {}};
       },
       requeued_by_policy("retrying alone (attempt 2 of 3)"), JobEnd::kOutOfMemory, End::kRequeue,
       JobState::kQueued, "CUDA out of memory: retrying alone (attempt 2 of 3)", true, false},
      {"APolicysOwnFailedBetIsNotCounted",
       [](AttemptFacts& f) {
         f.exit = {JobState::kOutOfMemory, 1, {}, "CUDA out of memory", {}};
       },
       requeued_by_policy("its sibling's start was speculative", false), JobEnd::kOutOfMemory,
       End::kRequeue, JobState::kQueued, "CUDA out of memory: its sibling's start was speculative",
       false, false},
      {"NoRetryWhileEverythingStops",
       [](AttemptFacts& f) {
         f.exit = {JobState::kOutOfMemory, 1, {}, "CUDA out of memory", {}};
         f.stopping = true;
       },
       requeued_by_policy("retrying alone"), JobEnd::kOutOfMemory, End::kFinal,
       JobState::kOutOfMemory, "CUDA out of memory; retrying alone"},
      {"AUsersCancelSaysWhoCancelled",
       [](AttemptFacts& f) {
         f.exit = {JobState::kCancelled, {}, 15, "stopped by colo", {}};
         f.cause = {Cause::kCancelled, "cancelled by alice"};
       },
       {},
       JobEnd::kCancelled,
       End::kFinal,
       JobState::kCancelled,
       "cancelled by alice (stopped by colo)"},
      {"AnEarlyStopEndsStoppedHoweverItExited",
       [](AttemptFacts& f) {
         f.exit = {JobState::kOk, 0, {}, "", {}};
         f.cause = {Cause::kEarlyStop, "early stop: worse than the median"};
       },
       {},
       JobEnd::kCancelled,
       End::kFinal,
       JobState::kStopped,
       "early stop: worse than the median"},
      {"ADoomedJobRunsAgainUncountedAsThePolicySays",
       [](AttemptFacts& f) {
         f.cause = {Cause::kDoomed, "it would overrun gpu0's memory"};
       },
       requeued_by_policy("it runs again alone"), JobEnd::kStopped, End::kRequeue,
       JobState::kQueued, "it runs again alone", false, false},
      {"ADoomedJobIsQueuedAgainWhenThePolicyDidNot",
       [](AttemptFacts& f) {
         f.cause = {Cause::kDoomed, "it would overrun gpu0's memory"};
       },
       {},
       JobEnd::kStopped,
       End::kRequeue,
       JobState::kQueued,
       "it would overrun gpu0's memory",
       false,
       true},
      {"APreemptedJobIsParkedUncounted",
       [](AttemptFacts& f) {
         f.exit = {JobState::kOk, 0, {}, "", {}};
         f.cause = {Cause::kPreempted, "preempted for 7 (priority 5)"};
       },
       {},
       JobEnd::kCancelled,
       End::kPark,
       JobState::kQueued,
       "preempted for 7 (priority 5); it runs again later, from its checkpoint if it saved one "
       "(not counted as an attempt)",
       false,
       false},
      {"AnOpportunisticJobStoppedForAFloorRunsAgainUncounted",
       [](AttemptFacts& f) {
         f.exit = {JobState::kOk, 0, {}, "", {}};
         f.cause = {Cause::kFloor,
                    "stopped for job 12's floor 0.90: it ran at 0.84 beside this job"};
       },
       {},
       JobEnd::kCancelled,
       End::kRequeue,
       JobState::kQueued,
       "stopped for job 12's floor 0.90: it ran at 0.84 beside this job; it runs again, from its "
       "checkpoint if it saved one (not counted as an attempt)",
       false,
       true},
      {"AFloorStopKilledAfterTheGraceRunsAgainUncountedEvenUnderRestartNever",
       [](AttemptFacts& f) {
         f.exit = {JobState::kKilled, std::nullopt, 9, "killed by signal 9", {}};
         f.restart = RestartPolicy::kNever;
         f.cause = {Cause::kFloor,
                    "stopped for job 3's floor 0.80: it ran at 0.61 beside this job"};
       },
       {},
       JobEnd::kCancelled,
       End::kRequeue,
       JobState::kQueued,
       "stopped for job 3's floor 0.80: it ran at 0.61 beside this job; it runs again, from its "
       "checkpoint if it saved one (not counted as an attempt)",
       false,
       true},
      {"AMechanismVictimRunsAgainUncounted",
       [](AttemptFacts& f) {
         f.cause = {Cause::kMechanism, ""};
         f.mechanism_down = "the MPS server died";
       },
       {},
       JobEnd::kCancelled,
       End::kRequeue,
       JobState::kQueued,
       "the MPS server died (attempt 1); not counted as an attempt",
       false,
       true},
      {"AMechanismVictimFailsWhileEverythingStops",
       [](AttemptFacts& f) {
         f.cause = {Cause::kMechanism, ""};
         f.mechanism_down = "the MPS server died";
         f.stopping = true;
       },
       {},
       JobEnd::kCancelled,
       End::kFinal,
       JobState::kFailed,
       "the MPS server died (attempt 1)"},
      {"ANoFaultEndGivesUpAfterTenUncountedAttempts",
       [](AttemptFacts& f) {
         f.cause = {Cause::kMechanism, ""};
         f.mechanism_down = "the MPS server died";
         f.uncounted = kMaxUncountedAttempts;
       },
       {},
       JobEnd::kCancelled,
       End::kFinal,
       JobState::kFailed,
       "the MPS server died (attempt 1); not counted as an attempt; gave up after 11 attempts "
       "that ended through no fault of its own"},
      {"AFaultVictimRunsAgainUncounted",
       [](AttemptFacts& f) {
         f.cause = {Cause::kFaultVictim, "restarted: b raised a fault"};
       },
       {},
       JobEnd::kCancelled,
       End::kRequeue,
       JobState::kQueued,
       "restarted: b raised a fault; not counted as an attempt",
       false,
       true},
      {"AFaultVictimThatMustNotRestartFails",
       [](AttemptFacts& f) {
         f.cause = {Cause::kFaultVictim, "restarted: b raised a fault"};
         f.restart = RestartPolicy::kNever;
       },
       {},
       JobEnd::kCancelled,
       End::kFinal,
       JobState::kFailed,
       "restarted: b raised a fault (restart = \"never\")"},
      {"AStalledJobRunsAgainAsACountedAttempt",
       [](AttemptFacts& f) {
         f.cause = {Cause::kStalled, "stalled: no progress for 10m"};
       },
       {},
       JobEnd::kFailed,
       End::kRequeue,
       JobState::kQueued,
       "stalled: no progress for 10m; running it again (attempt 2 of 3)",
       true,
       true},
      {"AStalledJobWithNoAttemptsLeftFails",
       [](AttemptFacts& f) {
         f.cause = {Cause::kStalled, "stalled: no progress for 10m"};
         f.counted_attempts = kMaxJobAttempts;
       },
       {},
       JobEnd::kFailed,
       End::kFinal,
       JobState::kFailed,
       "stalled: no progress for 10m"},
      {"ANeighboursFaultThatReachedItIsNotCounted",
       [](AttemptFacts& f) {
         f.fault = GpuFault::kAffected;
         f.recent_fault = "b raised a fatal GPU fault on gpu0 under MPS";
       },
       {},
       JobEnd::kCancelled,
       End::kRequeue,
       JobState::kQueued,
       "exit code 1; a fatal GPU fault on gpu0 under MPS reached it (b raised a fatal GPU fault "
       "on gpu0 under MPS); not counted as an attempt",
       false,
       true},
      {"AReachedJobThatMustNotRestartEndsAsItExited",
       [](AttemptFacts& f) {
         f.fault = GpuFault::kAffected;
         f.restart = RestartPolicy::kNever;
       },
       {},
       JobEnd::kFailed,
       End::kFinal,
       JobState::kFailed,
       "exit code 1"},
      {"ItsOwnFaultRunsItAloneNext",
       [](AttemptFacts& f) {
         f.fault = GpuFault::kOwn;
         f.suspect = "its own fatal GPU fault on gpu0 under MPS";
       },
       {},
       JobEnd::kFailed,
       End::kRequeue,
       JobState::kQueued,
       "exit code 1; its own fatal GPU fault on gpu0 under MPS; its next attempt runs alone, "
       "outside the shared MPS server (attempt 2 of 3)",
       true,
       true},
      {"ItsOwnFaultAgainAloneIsProvenItsOwn",
       [](AttemptFacts& f) {
         f.fault = GpuFault::kOwn;
         f.outside_mps = true;
       },
       {},
       JobEnd::kFailed,
       End::kFinal,
       JobState::kFailed,
       "exit code 1; the fault is its own: it failed again alone, outside the shared MPS server"},
      {"ItsOwnFaultWithNoNeighbourIsProvenItsOwn",
       [](AttemptFacts& f) {
         f.fault = GpuFault::kOwn;
         f.fault_proven = "no other job shared its MPS server";
       },
       {},
       JobEnd::kFailed,
       End::kFinal,
       JobState::kFailed,
       "exit code 1; the fault is its own: no other job shared its MPS server"},
      {"AShutdownInterruptsWithItsReason",
       [](AttemptFacts& f) {
         f.exit = {JobState::kCancelled, {}, 15, "stopped by colo", {}};
         f.cause = {Cause::kShutdown, "colo serve stopped"};
         f.stopping = true;
       },
       {},
       JobEnd::kCancelled,
       End::kFinal,
       JobState::kInterrupted,
       "colo serve stopped"},
      {"AJobThatEndedWellDuringAShutdownEndedWell",
       [](AttemptFacts& f) {
         f.exit = {JobState::kOk, 0, {}, "", {}};
         f.cause = {Cause::kShutdown, "colo serve stopped"};
         f.stopping = true;
       },
       {},
       JobEnd::kCancelled,
       End::kFinal,
       JobState::kOk,
       ""},
      {"ASimulatedOutOfMemoryStopEndsOutOfMemory",
       [](AttemptFacts& f) {
         f.exit = {JobState::kCancelled, {}, 9, "stopped by colo", {}};
         f.cause = {Cause::kSimulatedOom, "out of GPU memory on gpu0 (SIMULATED)"};
       },
       {},
       JobEnd::kOutOfMemory,
       End::kFinal,
       JobState::kOutOfMemory,
       "out of GPU memory on gpu0 (SIMULATED)"},
      {"AGangWhoseRankFailedRunsAgainWhole",
       [](AttemptFacts& f) { f.gang = true; },
       {},
       JobEnd::kFailed,
       End::kRequeue,
       JobState::kQueued,
       "exit code 1; a rank failed, so the gang runs again whole (attempt 2 of 3)",
       true,
       true},
      {"AGangOnItsLastAttemptFails",
       [](AttemptFacts& f) {
         f.gang = true;
         f.counted_attempts = kMaxJobAttempts;
       },
       {},
       JobEnd::kFailed,
       End::kFinal,
       JobState::kFailed,
       "exit code 1"},
  };
  return cases;
}

class AttemptEndTable : public ::testing::TestWithParam<EndCase> {};

TEST_P(AttemptEndTable, TellsThePolicyAndDecidesTheJobsFate) {
  const EndCase& c = GetParam();
  AttemptFacts facts = failed_attempt();
  c.facts(facts);
  EXPECT_EQ(policy_end(facts), c.told);
  const AttemptEnd end = classify_end(facts, c.verdict);
  ASSERT_EQ(end.kind, c.kind);
  if (end.kind == End::kFinal) {
    EXPECT_EQ(end.exit.state, c.state);
    EXPECT_EQ(end.exit.reason, c.reason);
  } else {
    EXPECT_EQ(end.reason, c.reason);
    EXPECT_EQ(end.counted, c.counted);
    EXPECT_EQ(end.enqueue, c.enqueue);
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, AttemptEndTable, ::testing::ValuesIn(end_cases()),
                         [](const ::testing::TestParamInfo<EndCase>& info) {
                           return info.param.name;
                         });

// The one rule for "already being stopped": only the service's shutdown
// takes over, and only from causes that would have run the job again here
// (or that a user gave).
TEST(StopCause, AJobBeingStoppedIsNotStoppedAgainSaveByTheShutdown) {
  const std::vector<Cause> all = {Cause::kCancelled,   Cause::kShutdown,  Cause::kEarlyStop,
                                  Cause::kDoomed,      Cause::kPreempted, Cause::kMechanism,
                                  Cause::kFaultVictim, Cause::kStalled,   Cause::kSimulatedOom,
                                  Cause::kFloor};
  for (Cause next : all) EXPECT_TRUE(StopCause{}.yields_to(next));
  for (Cause now : all) {
    const StopCause cause{now, "why"};
    EXPECT_TRUE(cause.being_stopped());
    for (Cause next : all) {
      const bool shutdown_takes_over =
          next == Cause::kShutdown &&
          (now == Cause::kCancelled || now == Cause::kDoomed || now == Cause::kPreempted ||
           now == Cause::kFaultVictim || now == Cause::kFloor);
      EXPECT_EQ(cause.yields_to(next), shutdown_takes_over)
          << static_cast<int>(now) << " -> " << static_cast<int>(next);
    }
  }
}

}  // namespace
}  // namespace colo
