#include "sched/waiting_reason.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace colo {
namespace {

struct WordingCase {
  std::string name;
  WaitingReason reason;
  std::string expect;
};

class Wording : public testing::TestWithParam<WordingCase> {};

TEST_P(Wording, SaysWhyTheJobWaits) {
  const WordingCase& c = GetParam();
  EXPECT_EQ(
      describe_waiting(c.reason, 10'000, [](size_t job) { return fmt::format("job {}", job); }),
      c.expect);
}

using Kind = WaitingReason::Kind;

INSTANTIATE_TEST_SUITE_P(
    Table, Wording,
    testing::Values(
        WordingCase{"one_job_to_end_expected",
                    {Kind::kReserved, 7, 0, 1, {12}, 13'000},
                    "reserved: starts when gpu0's job 12 ends (expected in 3.0s)"},
        WordingCase{
            "three_jobs_to_end_expected",
            {Kind::kReserved, 7, 1, 3, {12, 13, 14}, 70'000},
            "reserved: starts when gpu1's job 12, job 13 and job 14 end (expected in 1m00s)"},
        WordingCase{"expected_end_passed",
                    {Kind::kReserved, 7, 0, 1, {12}, 9'000},
                    "reserved: starts when gpu0's job 12 ends (expected now)"},
        WordingCase{"ends_unknown",
                    {Kind::kReserved, 7, 2, 1, {}, std::nullopt},
                    "reserved: next on gpu2, when a job there ends"},
        WordingCase{"several_ends_unknown",
                    {Kind::kReserved, 7, 0, 2, {}, std::nullopt},
                    "reserved: next on gpu0, when 2 of the jobs there end"},
        WordingCase{"backfill",
                    {Kind::kBackfill, 7, 0, 1, {12}, 13'000},
                    "backfill: may start only where it does not delay job 7"}),
    [](const testing::TestParamInfo<WordingCase>& info) { return info.param.name; });

}  // namespace
}  // namespace colo
