#include "run/fail_fast.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

struct Ended {
  JobState state;
  std::string note;
};

struct FailFastCase {
  std::string name;
  std::vector<Ended> ends;  // of one file's jobs, in order
  int cancels_after;        // the end after which the waiting jobs are cancelled; -1: never
};

TEST(FailFast, TheFirstJobsFailingAlikeStopTheRestOfTheirFile) {
  const Ended fail{JobState::kFailed, "exit code 1: ModuleNotFoundError"};
  const Ended other{JobState::kFailed, "exit code 2"};
  const std::vector<FailFastCase> cases = {
      {"three alike", {fail, fail, fail}, 2},
      {"two alike are not enough", {fail, fail}, -1},
      {"one ended well first", {{JobState::kOk, ""}, fail, fail, fail}, -1},
      {"one stopped early first", {{JobState::kStopped, "early stop"}, fail, fail, fail}, -1},
      {"failures of different kinds", {fail, other, fail, fail}, -1},
      {"cancelled and out-of-memory ends are no cause",
       {fail, {JobState::kCancelled, "cancelled"}, {JobState::kOutOfMemory, "oom"}, fail, fail},
       4},
      {"once settled, never again", {fail, fail, fail, fail, fail, fail}, 2},
  };
  for (const FailFastCase& c : cases) {
    FailFast rule;
    for (size_t i = 0; i < c.ends.size(); ++i) {
      std::optional<std::string> cause = rule.ended("a.toml", c.ends[i].state, c.ends[i].note);
      EXPECT_EQ(cause.has_value(), static_cast<int>(i) == c.cancels_after) << c.name << " " << i;
      if (cause) {
        EXPECT_EQ(*cause,
                  "the first 3 jobs of a.toml to end all failed the same way (exit code 1: "
                  "ModuleNotFoundError)");
      }
    }
  }
}

TEST(FailFast, FilesAreJudgedApart) {
  FailFast rule;
  EXPECT_FALSE(rule.ended("a.toml", JobState::kFailed, "x"));
  EXPECT_FALSE(rule.ended("b.toml", JobState::kFailed, "x"));
  EXPECT_FALSE(rule.ended("a.toml", JobState::kFailed, "x"));
  EXPECT_FALSE(rule.ended("b.toml", JobState::kOk, ""));
  EXPECT_TRUE(rule.ended("a.toml", JobState::kFailed, "x"));
  EXPECT_FALSE(rule.ended("b.toml", JobState::kFailed, "x"));
}

TEST(FailFast, AJobsFileIsItsSourceWithoutTheLine) {
  JobSpec spec;
  spec.source = "/home/a/sweep.toml:12";
  EXPECT_EQ(job_file_of(spec), "/home/a/sweep.toml");
}

}  // namespace
}  // namespace colo
