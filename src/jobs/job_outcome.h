// How a job's end counts: the one rule by which every count of jobs by
// outcome is made (colo runs, colo show and its comparisons, colo run's exit
// and end line, colo usage, the report, the dashboard's API), so that no two
// of them disagree about the same jobs.
//
// The outcome is a function of the job's state and whether it ever started:
//   state        started  outcome
//   ok           any      ok
//   stopped      any      stopped early (its sweep's [early_stop] rule: a result)
//   failed, oom, killed, interrupted
//                any      failed
//   cancelled    yes      cancelled (it ran, then colo or its owner stopped it)
//   cancelled    no       cancelled before start (it never ran: no work, no GPU time)
//   queued, running       unfinished
// A diverged job (a training metric not finite) counts by its state:
// divergence is a fact about its metrics, shown beside it and ranking it last
// (analysis/run_summary.h, failed_or_diverged), not an outcome; a stopped
// trial that diverged is stopped early, as its rule meant.
//
// Ended well (colo's exit code, a run's state): ok and stopped early. Not ok:
// failed, cancelled and cancelled before start. Ended work (what colo usage
// counts as a job that ended): ok, stopped early and failed; a cancelled job
// is counted apart, one cancelled before start nowhere in usage.
//
// Pure.
#pragma once

#include <cstdint>
#include <string>

#include "jobs/job_state.h"

namespace colo {

enum class JobOutcome {
  kOk,
  kStoppedEarly,
  kFailed,
  kCancelled,
  kCancelledBeforeStart,
  kUnfinished,
};

// The rule above.
JobOutcome job_outcome(JobState state, bool started);
// "ok", "stopped early", "failed", "cancelled", "cancelled before start", "unfinished".
std::string to_string(JobOutcome outcome);

// Jobs counted by outcome.
struct JobCounts {
  int64_t ok = 0;
  int64_t stopped_early = 0;
  int64_t failed = 0;
  int64_t cancelled = 0;
  int64_t cancelled_before_start = 0;
  int64_t unfinished = 0;

  void add(JobOutcome outcome, int64_t n = 1);
  void add(JobState state, bool started, int64_t n = 1) { add(job_outcome(state, started), n); }
  JobCounts& operator+=(const JobCounts& o);

  int64_t total() const;
  int64_t ended_well() const { return ok + stopped_early; }
  int64_t not_ok() const { return failed + cancelled + cancelled_before_start; }
  int64_t ended_work() const { return ok + stopped_early + failed; }
  bool operator==(const JobCounts&) const = default;
};

// "12: all ok"; "39: 30 ok, 2 stopped early, 1 failed, 6 cancelled before
// start"; "5: 3 ok, 2 unfinished". Every outcome with a count, in the order
// of JobOutcome.
std::string format_job_counts(const JobCounts& counts);

}  // namespace colo
