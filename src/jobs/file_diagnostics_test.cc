#include "jobs/file_diagnostics.h"

#include <gtest/gtest.h>

#include <string>

namespace colo {
namespace {

TEST(Diagnostics, EachErrorNamesTheFileAndItsLineOrTheFileAlone) {
  Diagnostics d("jobs.toml");
  EXPECT_TRUE(d.empty());
  d.add(3, "key 'qos' must be \"protected\", \"normal\" or \"opportunistic\"");
  d.add(0, "a job file needs at least one [[job]]");
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d.to_error().message(),
            "jobs.toml:3: key 'qos' must be \"protected\", \"normal\" or \"opportunistic\"\n"
            "jobs.toml: a job file needs at least one [[job]]");
}

TEST(Diagnostics, PastTheFirstTwentyOnlyTheCountIsKept) {
  Diagnostics d("f.toml");
  for (int line = 1; line <= 25; ++line) d.add(line, "bad");
  const std::string text = d.to_error().message();
  EXPECT_NE(text.find("f.toml:20: bad"), std::string::npos);
  EXPECT_EQ(text.find("f.toml:21: bad"), std::string::npos);
  EXPECT_NE(text.find("\n... and 5 more errors"), std::string::npos);
}

}  // namespace
}  // namespace colo
