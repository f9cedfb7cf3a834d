#include "common/proc_stat.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <iterator>
#include <string>

namespace colo {
namespace {

TEST(ProcStat, StartTicksAreCountedAfterACommandNameWithSpacesAndParentheses) {
  const std::string fields_3_to_21 = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18";
  EXPECT_EQ(start_ticks_in_stat("42 (sh) " + fields_3_to_21 + " 987654 100 200"), 987654u);
  EXPECT_EQ(start_ticks_in_stat("42 (a) b (c)) " + fields_3_to_21 + " 55 1"), 55u);
  EXPECT_EQ(start_ticks_in_stat("42 (sh) S 1 2"), std::nullopt);
  EXPECT_EQ(start_ticks_in_stat(""), std::nullopt);
  std::ifstream self("/proc/self/stat");
  const std::string text((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  EXPECT_GT(start_ticks_in_stat(text).value_or(0), 0u);
}

// The CPU time of a process group grows with the work its processes do, and
// a group with no process has none.
TEST(ProcStat, AGroupsCpuTimeGrowsWithItsWork) {
  const std::optional<int64_t> before = process_group_cpu_ms(::getpgrp());
  ASSERT_TRUE(before.has_value());
  const auto cpu_ms = [] {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1'000'000;
  };
  const int64_t start = cpu_ms();
  volatile uint64_t sink = 0;
  while (cpu_ms() - start < 300) sink = sink + 1;  // 300 ms of this process's CPU time
  // /proc's utime and stime are sampled at the clock tick: on a loaded
  // machine (ctest -j4 on 2 cores) they showed 220 of the 300 ms.
  EXPECT_GE(process_group_cpu_ms(::getpgrp()).value_or(0) - *before, 150);
  EXPECT_EQ(process_group_cpu_ms(0x7ffffff0), std::nullopt);
}

}  // namespace
}  // namespace colo
