#include "serve/preemption.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

PreemptCandidate waiting_job(int64_t id, int priority, UnixMillis since, bool held = false) {
  return PreemptCandidate{id, priority, false, false, held, since, 0};
}
PreemptCandidate running_job(int64_t id, int priority, UnixMillis started,
                             bool preemptible = true) {
  return PreemptCandidate{id, priority, true, preemptible, false, 0, started};
}

// colo_serve_test's AHigherPriorityJobPreemptsALowerOne... through the rule
// alone, and what it must never do. Now is 10'000; the wait is 1'000.
TEST(Preemption, AJobThatWaitedLongEnoughStopsTheLeastCostlyJobOfLowerPriority) {
  struct Case {
    std::string what;
    std::vector<PreemptCandidate> jobs;
    std::optional<PreemptChoice> choice;
  };
  const std::vector<Case> cases = {
      {"priority 0 waited 2s; a preemptible -10 runs",
       {running_job(1, -10, 0), waiting_job(2, 0, 8000)},
       PreemptChoice{2, 1}},
      {"it waited exactly the wait",
       {running_job(1, -10, 0), waiting_job(2, 0, 9000)},
       PreemptChoice{2, 1}},
      {"it has not waited long enough",
       {running_job(1, -10, 0), waiting_job(2, 0, 9001)},
       std::nullopt},
      {"its quota holds it", {running_job(1, -10, 0), waiting_job(2, 0, 0, true)}, std::nullopt},
      {"the running job is not preemptible",
       {running_job(1, -10, 0, false), waiting_job(2, 0, 0)},
       std::nullopt},
      {"the same priority is never preempted",
       {running_job(1, 0, 0), waiting_job(2, 0, 0)},
       std::nullopt},
      {"nothing runs", {waiting_job(2, 0, 0)}, std::nullopt},
      {"nothing waits", {running_job(1, -10, 0)}, std::nullopt},
      {"the highest priority waiting goes first",
       {running_job(1, -10, 0), waiting_job(2, 0, 0), waiting_job(3, 5, 8000)},
       PreemptChoice{3, 1}},
      {"then the longest waiting",
       {running_job(1, -10, 0), waiting_job(2, 0, 5000), waiting_job(3, 0, 4000)},
       PreemptChoice{3, 1}},
      {"then the first",
       {running_job(1, -10, 0), waiting_job(2, 0, 5000), waiting_job(3, 0, 5000)},
       PreemptChoice{2, 1}},
      {"a held job does not stand in the way of the next",
       {running_job(1, -10, 0), waiting_job(2, 9, 0, true), waiting_job(3, 0, 5000)},
       PreemptChoice{3, 1}},
      {"the victim: the lowest priority",
       {running_job(1, -5, 0), running_job(4, -10, 0), waiting_job(2, 0, 0)},
       PreemptChoice{2, 4}},
      {"then the one that started last",
       {running_job(1, -10, 100), running_job(4, -10, 50), waiting_job(2, 0, 0)},
       PreemptChoice{2, 1}},
      {"then the first",
       {running_job(1, -10, 100), running_job(4, -10, 100), waiting_job(2, 0, 0)},
       PreemptChoice{2, 1}},
      {"a victim only below the waiting job's priority",
       {running_job(1, 3, 100), running_job(4, 1, 0), waiting_job(2, 2, 0)},
       PreemptChoice{2, 4}},
  };
  for (const Case& c : cases) {
    const std::optional<PreemptChoice> got = choose_preemption(c.jobs, 10'000, 1'000);
    ASSERT_EQ(got.has_value(), c.choice.has_value()) << c.what;
    if (!got) continue;
    EXPECT_EQ(got->waiting, c.choice->waiting) << c.what;
    EXPECT_EQ(got->victim, c.choice->victim) << c.what;
  }
}

}  // namespace
}  // namespace colo
