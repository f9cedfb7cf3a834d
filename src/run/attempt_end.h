// The rules that turn the end of a job's attempt into what the engine does
// with it: what to tell the policy (policy_end), then whether the job ends for
// good with a recorded state, runs again (an attempt counted against it or
// not), or waits parked (classify_end). Pure: no clock, no store, no process;
// the engine (run/run_engine.cc) gathers the facts and carries out the answer.
//
// The order of the rules: why colo stopped the attempt first (StopCause), then
// a GPU fault its log shows, then the service's shutdown, then the policy's
// verdict, then a gang's failed rank. See run/run_engine.h for the faults.
#pragma once

#include <optional>
#include <string>

#include "jobs/gpu_fault.h"
#include "jobs/job_spec.h"
#include "jobs/job_state.h"
#include "sched/scheduler.h"

namespace colo {

// A job whose attempts end through no fault of its own (a neighbour's fault,
// the mechanism's failure, a refused start) runs again at most this many
// times before it ends failed.
inline constexpr int kMaxUncountedAttempts = 10;

// Why colo stopped a running attempt, when it did. One cause at a time: the
// first one stays (a job already being stopped is not stopped again for
// another reason; see being_stopped()).
struct StopCause {
  enum class Kind {
    kNone,
    kCancelled,     // cancel(): a user, `colo run` stopped, fail-fast; ends cancelled
    kShutdown,      // the service stops: ends interrupted
    kEarlyStop,     // its sweep's [early_stop] rule: ends stopped
    kDoomed,        // the policy asked (Scheduler::take_stops()): runs again, not counted
    kPreempted,     // for a job of higher priority: parked, not counted
    kMechanism,     // the mechanism failed under it: runs again, not counted
    kFaultVictim,   // a neighbour's GPU fault under MPS: runs again, not counted
    kStalled,       // no progress for too long (run/stall_watch.h): a counted attempt
    kSimulatedOom,  // the simulated GPU's memory was full: ends out of memory
    kFloor,         // opportunistic, for a protected neighbour's floor (run/floor_watch.h):
                    // runs again, not counted
  };
  Kind kind = Kind::kNone;
  // Why, for its record and log ("cancelled by alice"); empty for kMechanism
  // (the mechanism's own reason is read when the attempt ends).
  std::string why;

  // Colo asked it to stop, for any cause.
  bool being_stopped() const { return kind != Kind::kNone; }
  // The one rule for "is it already being stopped?": whether a job stopped
  // for this cause may be stopped for `next` (which then becomes its cause).
  // A job not being stopped may; one being stopped may not, except that the
  // service's shutdown takes over from the causes that would have run it
  // again here (or that a user gave): it ends interrupted, and the service
  // runs it again when it restarts. A stall, the mechanism's failure, an
  // early stop and a simulated out-of-memory end keep their own end.
  bool yields_to(Kind next) const {
    if (kind == Kind::kNone) return true;
    return next == Kind::kShutdown &&
           (kind == Kind::kCancelled || kind == Kind::kDoomed || kind == Kind::kPreempted ||
            kind == Kind::kFaultVictim || kind == Kind::kFloor);
  }
  bool is(Kind k) const { return kind == k; }
  // The causes that come with their own words for the record, where the
  // supervisor would say only "stopped by colo": its log is not searched for
  // a GPU fault, and its failure does not raise the question of the mechanism's.
  bool said_why() const {
    return kind == Kind::kCancelled || kind == Kind::kShutdown || kind == Kind::kEarlyStop ||
           kind == Kind::kSimulatedOom || kind == Kind::kFloor;
  }
};

// What the engine knows of an attempt as it ends.
struct AttemptFacts {
  JobExit exit;  // as the supervisor saw it
  StopCause cause;
  GpuFault fault = GpuFault::kNone;  // what its log says (searched under MPS only)
  bool stopping = false;             // the engine stops everything (stop_all)
  RestartPolicy restart = RestartPolicy::kOnFailure;
  bool gang = false;           // it runs on several GPUs
  int attempt = 1;             // this attempt's number
  int counted_attempts = 1;    // of its attempts so far, those that count (this one included)
  int uncounted = 0;           // its attempts so far that did not count
  std::string gpus;            // its GPUs' names: "gpu0", "gpus 0,1"
  std::string mechanism_down;  // kMechanism: why the mechanism is down
  // kAffected: the fault a neighbour raised on its GPUs lately, when known.
  std::optional<std::string> recent_fault;
  // A fault of its own (kOwn): this attempt ran outside the shared MPS
  // server; why the fault is known to be its own; why it is suspected.
  bool outside_mps = false;
  std::string fault_proven;
  std::string suspect;
};

// What becomes of the job.
struct AttemptEnd {
  enum class Kind {
    kFinal,    // it ends: `exit` is recorded
    kRequeue,  // it runs again: `reason` is its note
    kPark,     // it runs again once released (a preemption): `reason` is its note
  };
  Kind kind = Kind::kFinal;
  JobExit exit;
  std::string reason;
  // kRequeue: the attempt counts against the job's attempts.
  bool counted = true;
  // kRequeue: the engine queues it with the policy again (false: the
  // policy's verdict requeued it already).
  bool enqueue = true;
  bool operator==(const AttemptEnd&) const = default;
};

// The exit to judge: a simulated out-of-memory stop turns into that end.
JobExit effective_exit(const AttemptFacts& f);
// Whether the job may run again as a counted attempt: its restart policy
// allows it and it has attempts left.
bool may_restart(const AttemptFacts& f);
// An end through no fault of its own (`reason`): it runs again, not counted,
// unless it had kMaxUncountedAttempts of them already (then it ends failed).
AttemptEnd uncounted_end(const AttemptFacts& f, const std::string& reason);
// What the policy is told of the end (Scheduler::finished).
JobEnd policy_end(const AttemptFacts& f);
// The job's fate, given what the policy answered to policy_end().
AttemptEnd classify_end(const AttemptFacts& f, const EndVerdict& verdict);

}  // namespace colo
