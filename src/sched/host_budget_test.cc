#include "sched/host_budget.h"

#include <gtest/gtest.h>

#include "common/units.h"

namespace colo {
namespace {

// Signatures: "a1" and "a2" read dataset A through a loader of 4 CPUs and
// 2 GiB; "b" reads B through one of 6 CPUs and 4 GiB; "gpu" has no dataset.
struct BudgetCase {
  std::string name;
  double host_cpus = 0;
  uint64_t host_memory_bytes = 0;
  std::vector<std::string> running;  // started, in order
  std::vector<std::string> ended;    // then ended
  std::string asked;
  bool idle = false;
  bool fits = false;
  bool read = false;
  double cpus_used = 0;
};

class LoaderBudget : public testing::TestWithParam<BudgetCase> {};

TEST_P(LoaderBudget, ALoaderCountsOnceFromItsFirstReaderToItsLast) {
  const BudgetCase& c = GetParam();
  LoaderHostBudget budget(c.host_cpus, c.host_memory_bytes);
  budget.set_cost("a1", {"A", 4, 2 * kGiB});
  budget.set_cost("a2", {"A", 4, 2 * kGiB});
  budget.set_cost("b", {"B", 6, 4 * kGiB});
  for (const std::string& s : c.running) budget.started(s);
  for (const std::string& s : c.ended) budget.ended(s);
  EXPECT_EQ(budget.fits(c.asked, c.idle), c.fits);
  EXPECT_EQ(budget.read(c.asked), c.read);
  EXPECT_DOUBLE_EQ(budget.cpus_used(), c.cpus_used);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LoaderBudget,
    testing::Values(
        BudgetCase{"no_limits", 0, 0, {"a1"}, {}, "b", false, true, false, 4},
        BudgetCase{"over_the_cpus", 8, 0, {"a1"}, {}, "b", false, false, false, 4},
        BudgetCase{"over_the_memory", 0, 5 * kGiB, {"a1"}, {}, "b", false, false, false, 4},
        BudgetCase{"an_idle_host_takes_any_job", 1, 1, {}, {}, "b", true, true, false, 0},
        BudgetCase{"a_dataset_being_read_costs_nothing_more",
                   4,
                   0,
                   {"a1"},
                   {},
                   "a2",
                   false,
                   true,
                   true,
                   4},
        BudgetCase{"two_readers_count_once", 10, 0, {"a1", "a2"}, {}, "b", false, true, false, 4},
        BudgetCase{"freed_when_the_last_reader_ends",
                   8,
                   0,
                   {"a1", "a2"},
                   {"a1", "a2"},
                   "b",
                   false,
                   true,
                   false,
                   0},
        BudgetCase{
            "held_while_one_reader_runs", 8, 0, {"a1", "a2"}, {"a1"}, "b", false, false, false, 4},
        BudgetCase{
            "a_job_without_a_dataset_always_fits", 1, 1, {"a1"}, {}, "gpu", false, true, false, 4},
        BudgetCase{
            "more_ends_than_starts_count_nothing", 8, 0, {}, {"a1"}, "b", false, true, false, 0}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace colo
