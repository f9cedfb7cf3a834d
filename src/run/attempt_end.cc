#include "run/attempt_end.h"

#include <fmt/format.h>

namespace colo {
namespace {

using Cause = StopCause::Kind;

JobEnd job_end_of(JobState state) {
  switch (state) {
    case JobState::kOk:
      return JobEnd::kOk;
    case JobState::kOutOfMemory:
      return JobEnd::kOutOfMemory;
    case JobState::kCancelled:
    case JobState::kKilled:
    case JobState::kStopped:
      return JobEnd::kCancelled;
    default:
      return JobEnd::kFailed;
  }
}

// The facts with a simulated out-of-memory stop turned into that end (the
// cause then said all it had to).
AttemptFacts normalized(const AttemptFacts& in) {
  AttemptFacts f = in;
  f.exit = effective_exit(in);
  if (f.cause.is(Cause::kSimulatedOom)) f.cause = {};
  return f;
}

bool failed(const AttemptFacts& f) { return f.exit.state != JobState::kOk; }

// The rule that applies, in its order (see the file comment).
enum class Rule {
  kEarlyStop,
  kDoomed,
  kPreempted,
  kFloor,
  kMechanism,
  kFaultVictim,
  kStalled,
  kReached,  // a neighbour's fault reached it
  kOwnFault,
  kShutdown,
  kVerdict,  // the policy's verdict, a gang's rank, or the exit as it is
};

Rule rule_of(const AttemptFacts& f) {
  const bool on_failure = f.restart == RestartPolicy::kOnFailure;
  if (f.cause.is(Cause::kEarlyStop)) return Rule::kEarlyStop;
  if (f.cause.is(Cause::kDoomed) && !f.stopping) return Rule::kDoomed;
  if (f.cause.is(Cause::kPreempted) && !f.stopping) return Rule::kPreempted;
  if (f.cause.is(Cause::kFloor) && !f.stopping) return Rule::kFloor;
  if (f.cause.is(Cause::kMechanism) && failed(f)) return Rule::kMechanism;
  if (f.cause.is(Cause::kFaultVictim) && failed(f) && !f.stopping) return Rule::kFaultVictim;
  if (f.cause.is(Cause::kStalled) && failed(f)) return Rule::kStalled;
  if (f.fault == GpuFault::kAffected && failed(f) && !f.stopping && on_failure)
    return Rule::kReached;
  if (f.fault == GpuFault::kOwn && failed(f) && !f.stopping) return Rule::kOwnFault;
  if (f.cause.is(Cause::kShutdown)) return Rule::kShutdown;
  return Rule::kVerdict;
}

AttemptEnd final_end(JobExit exit) { return AttemptEnd{AttemptEnd::Kind::kFinal, std::move(exit)}; }

AttemptEnd requeue(std::string reason, bool counted = true, bool enqueue = true) {
  AttemptEnd end;
  end.kind = AttemptEnd::Kind::kRequeue;
  end.reason = std::move(reason);
  end.counted = counted;
  end.enqueue = enqueue;
  return end;
}

}  // namespace

AttemptEnd uncounted_end(const AttemptFacts& f, const std::string& reason) {
  if (f.uncounted >= kMaxUncountedAttempts) {
    return final_end(JobExit{JobState::kFailed, f.exit.exit_code, f.exit.signal,
                             fmt::format("{}; gave up after {} attempts that ended through no "
                                         "fault of its own",
                                         reason, f.uncounted + 1),
                             f.exit.usage});
  }
  return requeue(reason, /*counted=*/false);
}

namespace {

AttemptEnd failed_with(const AttemptFacts& f, std::string reason) {
  return final_end(
      JobExit{JobState::kFailed, f.exit.exit_code, f.exit.signal, std::move(reason), f.exit.usage});
}

// "(attempt 2 of 3)": the number of the counted attempt to come.
std::string next_attempt(const AttemptFacts& f) {
  return fmt::format("attempt {} of {}", f.counted_attempts + 1, kMaxJobAttempts);
}

}  // namespace

JobExit effective_exit(const AttemptFacts& f) {
  JobExit exit = f.exit;
  if (f.cause.is(Cause::kSimulatedOom)) {
    // Stopped by colo because the simulated GPU was full: it ran out of memory.
    exit.state = JobState::kOutOfMemory;
    exit.reason = f.cause.why;
  }
  return exit;
}

bool may_restart(const AttemptFacts& f) {
  return f.restart == RestartPolicy::kOnFailure && f.counted_attempts < kMaxJobAttempts;
}

JobEnd policy_end(const AttemptFacts& in) {
  const AttemptFacts f = normalized(in);
  switch (rule_of(f)) {
    case Rule::kDoomed:
      return JobEnd::kStopped;
    case Rule::kStalled:
    case Rule::kOwnFault:
      return JobEnd::kFailed;
    case Rule::kEarlyStop:
    case Rule::kPreempted:
    case Rule::kFloor:
    case Rule::kMechanism:
    case Rule::kFaultVictim:
    case Rule::kReached:
    case Rule::kShutdown:
      return JobEnd::kCancelled;
    case Rule::kVerdict:
      break;
  }
  return job_end_of(f.exit.state);
}

AttemptEnd classify_end(const AttemptFacts& in, const EndVerdict& verdict) {
  const AttemptFacts f = normalized(in);
  const bool on_failure = f.restart == RestartPolicy::kOnFailure;
  switch (rule_of(f)) {
    case Rule::kEarlyStop: {
      // However it ended after the rule's TERM (saved and exited, or killed
      // after the grace), its sweep has its result: it ends stopped, for good.
      JobExit exit = f.exit;
      exit.state = JobState::kStopped;
      exit.reason = f.cause.why;
      return final_end(exit);
    }
    case Rule::kDoomed:
      // The policy stopped it before it could overrun its limit: it runs
      // again as the policy says (queued again here when the policy did
      // not), not counted as an attempt.
      return requeue(verdict.note.empty() ? f.cause.why : verdict.note, /*counted=*/false,
                     /*enqueue=*/!verdict.requeued);
    case Rule::kPreempted: {
      // However it ended (saved and exited 0, or killed after the grace), it
      // has not finished: it waits, parked, until released.
      AttemptEnd end = requeue(fmt::format("{}; it runs again later, from its checkpoint if it "
                                           "saved one (not counted as an attempt)",
                                           f.cause.why),
                               /*counted=*/false, /*enqueue=*/false);
      end.kind = AttemptEnd::Kind::kPark;
      return end;
    }
    case Rule::kFloor:
      // However it ended after the TERM (saved and exited, or killed after
      // the grace), it gave way to a protected neighbour: it runs again, from
      // its checkpoint if it saved one, not counted, whatever its restart policy.
      return uncounted_end(f, fmt::format("{}; it runs again, from its checkpoint if it saved "
                                          "one (not counted as an attempt)",
                                          f.cause.why));
    case Rule::kMechanism: {
      const std::string reason = fmt::format("{} (attempt {})", f.mechanism_down, f.attempt);
      if (!f.stopping && on_failure)
        return uncounted_end(f, reason + "; not counted as an attempt");
      return failed_with(f, reason);
    }
    case Rule::kFaultVictim:
      if (on_failure) return uncounted_end(f, f.cause.why + "; not counted as an attempt");
      return failed_with(f, f.cause.why + " (restart = \"never\")");
    case Rule::kStalled:
      if (!f.stopping && may_restart(f))
        return requeue(fmt::format("{}; running it again ({})", f.cause.why, next_attempt(f)));
      return failed_with(f, f.cause.why);
    case Rule::kReached:
      // Its neighbour's fault reached it: it runs again, not counted.
      return uncounted_end(
          f, fmt::format("{}; a fatal GPU fault on {} under MPS reached it{}; not counted as an "
                         "attempt",
                         f.exit.reason, f.gpus,
                         f.recent_fault ? " (" + *f.recent_fault + ")" : std::string()));
    case Rule::kOwnFault: {
      JobExit exit = f.exit;
      if (f.outside_mps || !f.fault_proven.empty()) {
        // Alone, it failed the same way: the fault is its own.
        exit.reason += "; the fault is its own: " +
                       (f.outside_mps ? "it failed again alone, outside the shared MPS server"
                                      : f.fault_proven);
        return final_end(exit);
      }
      if (may_restart(f)) {
        return requeue(
            fmt::format("{}; {}; its next attempt runs alone, outside the shared MPS "
                        "server ({})",
                        f.exit.reason, f.suspect, next_attempt(f)));
      }
      exit.reason += "; " + f.suspect;
      return final_end(exit);
    }
    case Rule::kShutdown: {
      JobExit exit = f.exit;
      if (exit.state != JobState::kOk) {
        exit.state = JobState::kInterrupted;
        exit.reason = f.cause.why;
      }
      return final_end(exit);
    }
    case Rule::kVerdict:
      break;
  }
  if (verdict.requeued && !f.stopping)
    return requeue(f.exit.reason + ": " + verdict.note, verdict.counted, /*enqueue=*/false);
  // A gang whose rank failed ended whole (its ranks are one process tree,
  // stopped together); it runs again whole, as its restart policy allows.
  if (f.gang && f.exit.state == JobState::kFailed && verdict.note.empty() && !f.stopping &&
      may_restart(f)) {
    return requeue(fmt::format("{}; a rank failed, so the gang runs again whole ({})",
                               f.exit.reason, next_attempt(f)));
  }
  JobExit exit = f.exit;
  if (f.cause.is(Cause::kCancelled) && exit.state == JobState::kCancelled)
    exit.reason = f.cause.why + " (" + exit.reason + ")";
  if (!verdict.note.empty()) exit.reason += "; " + verdict.note;
  return final_end(exit);
}

}  // namespace colo
