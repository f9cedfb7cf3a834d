#include "report/text_cells.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace colo {
namespace {

TEST(MetricText, FourSignificantDigits) {
  const struct {
    double value;
    const char* text;
  } cases[] = {
      {0.41534, "0.4153"}, {1234.4, "1234"}, {12345.0, "1.234e+04"},
      {2.5e-5, "2.5e-05"}, {-0.05, "-0.05"}, {0.0, "0"},
  };
  for (const auto& c : cases) EXPECT_EQ(metric_text(c.value), c.text) << c.value;
}

TEST(LabelText, NameThenTagsInKeyOrderElseADash) {
  EXPECT_EQ(label_text(RunLabel{}), "-");
  EXPECT_EQ(label_text(RunLabel{"lr-sweep", {}, "a note is not shown"}), "lr-sweep");
  EXPECT_EQ(label_text(RunLabel{"", {{"model", "r26"}, {"gpu", "h200"}}, ""}),
            "gpu=h200 model=r26");
  EXPECT_EQ(label_text(RunLabel{"a", {{"k", "v"}}, ""}), "a k=v");
}

TEST(OrAbsent, FormatsAValueElseADash) {
  const auto twice = [](int v) { return std::to_string(2 * v); };
  EXPECT_EQ(or_absent(std::optional<int>(21), twice), "42");
  EXPECT_EQ(or_absent(std::optional<int>(), twice), "-");
}

}  // namespace
}  // namespace colo
