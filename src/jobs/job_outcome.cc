#include "jobs/job_outcome.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace colo {

JobOutcome job_outcome(JobState state, bool started) {
  switch (state) {
    case JobState::kOk:
      return JobOutcome::kOk;
    case JobState::kStopped:
      return JobOutcome::kStoppedEarly;
    case JobState::kFailed:
    case JobState::kOutOfMemory:
    case JobState::kKilled:
    case JobState::kInterrupted:
      return JobOutcome::kFailed;
    case JobState::kCancelled:
      return started ? JobOutcome::kCancelled : JobOutcome::kCancelledBeforeStart;
    case JobState::kQueued:
    case JobState::kRunning:
      return JobOutcome::kUnfinished;
  }
  return JobOutcome::kUnfinished;
}

std::string to_string(JobOutcome outcome) {
  switch (outcome) {
    case JobOutcome::kOk:
      return "ok";
    case JobOutcome::kStoppedEarly:
      return "stopped early";
    case JobOutcome::kFailed:
      return "failed";
    case JobOutcome::kCancelled:
      return "cancelled";
    case JobOutcome::kCancelledBeforeStart:
      return "cancelled before start";
    case JobOutcome::kUnfinished:
      return "unfinished";
  }
  return "unfinished";
}

void JobCounts::add(JobOutcome outcome, int64_t n) {
  switch (outcome) {
    case JobOutcome::kOk:
      ok += n;
      break;
    case JobOutcome::kStoppedEarly:
      stopped_early += n;
      break;
    case JobOutcome::kFailed:
      failed += n;
      break;
    case JobOutcome::kCancelled:
      cancelled += n;
      break;
    case JobOutcome::kCancelledBeforeStart:
      cancelled_before_start += n;
      break;
    case JobOutcome::kUnfinished:
      unfinished += n;
      break;
  }
}

JobCounts& JobCounts::operator+=(const JobCounts& o) {
  ok += o.ok;
  stopped_early += o.stopped_early;
  failed += o.failed;
  cancelled += o.cancelled;
  cancelled_before_start += o.cancelled_before_start;
  unfinished += o.unfinished;
  return *this;
}

int64_t JobCounts::total() const {
  return ok + stopped_early + failed + cancelled + cancelled_before_start + unfinished;
}

std::string format_job_counts(const JobCounts& counts) {
  if (counts.total() == 0) return "0";
  if (counts.ok == counts.total()) return fmt::format("{}: all ok", counts.total());
  const std::vector<std::pair<int64_t, JobOutcome>> parts = {
      {counts.ok, JobOutcome::kOk},
      {counts.stopped_early, JobOutcome::kStoppedEarly},
      {counts.failed, JobOutcome::kFailed},
      {counts.cancelled, JobOutcome::kCancelled},
      {counts.cancelled_before_start, JobOutcome::kCancelledBeforeStart},
      {counts.unfinished, JobOutcome::kUnfinished},
  };
  std::string out = fmt::format("{}:", counts.total());
  bool first = true;
  for (const auto& [n, outcome] : parts) {
    if (n == 0) continue;
    out += fmt::format("{} {} {}", first ? "" : ",", n, to_string(outcome));
    first = false;
  }
  return out;
}

}  // namespace colo
