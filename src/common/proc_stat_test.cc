#include "common/proc_stat.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace colo
