#include "jobs/job_outcome.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

// Every state, started or not, and how it counts (issue 58, item 12).
TEST(JobOutcome, EachStateCountsOneWay) {
  struct Case {
    JobState state;
    bool started;
    JobOutcome outcome;
  };
  const std::vector<Case> cases = {
      {JobState::kOk, true, JobOutcome::kOk},
      {JobState::kStopped, true, JobOutcome::kStoppedEarly},
      {JobState::kFailed, true, JobOutcome::kFailed},
      {JobState::kFailed, false, JobOutcome::kFailed},  // could not start: a failure
      {JobState::kOutOfMemory, true, JobOutcome::kFailed},
      {JobState::kKilled, true, JobOutcome::kFailed},
      {JobState::kInterrupted, true, JobOutcome::kFailed},
      {JobState::kInterrupted, false, JobOutcome::kFailed},
      {JobState::kCancelled, true, JobOutcome::kCancelled},
      {JobState::kCancelled, false, JobOutcome::kCancelledBeforeStart},
      {JobState::kQueued, false, JobOutcome::kUnfinished},
      {JobState::kRunning, true, JobOutcome::kUnfinished},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(job_outcome(c.state, c.started), c.outcome)
        << to_string(c.state) << (c.started ? " started" : " never started");
    // ended_well (colo's exit code, a run's state) agrees with the rule.
    if (is_final(c.state)) {
      const bool well = c.outcome == JobOutcome::kOk || c.outcome == JobOutcome::kStoppedEarly;
      EXPECT_EQ(ended_well(c.state), well) << to_string(c.state);
      EXPECT_EQ(ended_well(to_string(c.state)), well) << to_string(c.state);
    }
  }
}

TEST(JobOutcome, CountsSumByOutcomeAndSayWhatIsNotOk) {
  struct Case {
    std::vector<std::pair<JobState, bool>> jobs;
    std::string text;
    int64_t ended_well;
    int64_t not_ok;
    int64_t ended_work;
  };
  const std::vector<Case> cases = {
      {{}, "0", 0, 0, 0},
      {{{JobState::kOk, true}, {JobState::kOk, true}}, "2: all ok", 2, 0, 2},
      {{{JobState::kOk, true}, {JobState::kStopped, true}}, "2: 1 ok, 1 stopped early", 2, 0, 2},
      {{{JobState::kOk, true},
        {JobState::kOutOfMemory, true},
        {JobState::kCancelled, true},
        {JobState::kCancelled, false},
        {JobState::kRunning, true}},
       "5: 1 ok, 1 failed, 1 cancelled, 1 cancelled before start, 1 unfinished",
       1,
       3,
       2},
  };
  for (const Case& c : cases) {
    JobCounts counts;
    for (const auto& [state, started] : c.jobs) counts.add(state, started);
    EXPECT_EQ(counts.total(), static_cast<int64_t>(c.jobs.size())) << c.text;
    EXPECT_EQ(format_job_counts(counts), c.text);
    EXPECT_EQ(counts.ended_well(), c.ended_well) << c.text;
    EXPECT_EQ(counts.not_ok(), c.not_ok) << c.text;
    EXPECT_EQ(counts.ended_work(), c.ended_work) << c.text;
    JobCounts twice = counts;
    twice += counts;
    EXPECT_EQ(twice.total(), 2 * counts.total()) << c.text;
  }
}

}  // namespace
}  // namespace colo
