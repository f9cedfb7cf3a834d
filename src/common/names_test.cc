#include "common/names.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

TEST(NamesTest, FileStemKeepsSafeBytesAndReplacesTheRest) {
  EXPECT_EQ(file_stem("007-", "toy[lr=0.1]"), "007-toy_lr=0.1_");
  EXPECT_EQ(file_stem("12-", "a/b c"), "12-a_b_c");
}

TEST(NamesTest, FileStemIsAtMost120Bytes) {
  EXPECT_EQ(file_stem("1-", std::string(300, 'x')).size(), 120u);
}

TEST(NamesTest, HostNameIsNeverEmpty) { EXPECT_FALSE(host_name().empty()); }

}  // namespace
}  // namespace colo
