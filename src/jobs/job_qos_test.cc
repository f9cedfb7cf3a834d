#include "jobs/job_qos.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(JobQos, ClassNamesRoundTripAndNothingElseParses) {
  for (QosClass qos : {QosClass::kNormal, QosClass::kProtected, QosClass::kOpportunistic})
    EXPECT_EQ(parse_qos_class(to_string(qos)), qos);
  for (const char* bad : {"", "Protected", "guaranteed", "besteffort", "normal "})
    EXPECT_EQ(parse_qos_class(bad), std::nullopt) << bad;
}

TEST(JobQos, AFloorIsAFractionAboveZeroAndAtMostOne) {
  for (double ok : {0.01, 0.5, 0.9, 1.0}) EXPECT_EQ(min_speed_problem(ok), std::nullopt) << ok;
  for (double bad : {0.0, -0.5, 1.01, 90.0, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    ASSERT_TRUE(min_speed_problem(bad).has_value()) << bad;
    EXPECT_THAT(*min_speed_problem(bad), HasSubstr("such as 0.9"));
  }
}

// The command line's flags: checked as given, then over every job.
TEST(JobQos, FlagsAreCheckedAndSayWhatToWrite) {
  struct Case {
    std::optional<std::string> qos;
    std::optional<double> min_speed;
    const char* error;  // "" when accepted
  };
  const std::vector<Case> cases = {
      {std::nullopt, std::nullopt, ""},
      {"protected", std::nullopt, ""},
      {"protected", 0.8, ""},
      {"opportunistic", std::nullopt, ""},
      {"gold", std::nullopt,
       R"(--qos must be "protected", "normal" or "opportunistic", got "gold")"},
      {"protected", 1.5, "--min-speed must be a fraction"},
      {"normal", 0.8, "--min-speed is the floor of a protected job: add --qos protected"},
      {std::nullopt, 0.8, "add --qos protected"},
  };
  for (const Case& c : cases) {
    Result<std::optional<QosOverride>> r = qos_override(c.qos, c.min_speed);
    const std::string label = c.qos.value_or("-") + " " + std::to_string(c.min_speed.value_or(0));
    if (std::string(c.error).empty()) {
      ASSERT_TRUE(r.ok()) << label << ": " << r.error().message();
      EXPECT_EQ(r->has_value(), c.qos.has_value()) << label;
    } else {
      ASSERT_FALSE(r.ok()) << label;
      EXPECT_THAT(r.error().message(), HasSubstr(c.error)) << label;
    }
  }
}

TEST(JobQos, TheOverrideSetsEveryJobsClassAndKeepsAFloorTheFileGave) {
  struct Case {
    const char* what;
    QosClass file_qos;
    double file_floor;
    QosOverride over;
    QosClass qos;
    double floor;
  };
  const std::vector<Case> cases = {
      {"normal made protected",
       QosClass::kNormal,
       kDefaultMinSpeed,
       {QosClass::kProtected, std::nullopt},
       QosClass::kProtected,
       kDefaultMinSpeed},
      {"protected keeps its floor",
       QosClass::kProtected,
       0.7,
       {QosClass::kProtected, std::nullopt},
       QosClass::kProtected,
       0.7},
      {"the flag's floor wins",
       QosClass::kProtected,
       0.7,
       {QosClass::kProtected, 0.95},
       QosClass::kProtected,
       0.95},
      {"protected made opportunistic",
       QosClass::kProtected,
       0.7,
       {QosClass::kOpportunistic, std::nullopt},
       QosClass::kOpportunistic,
       kDefaultMinSpeed},
      {"opportunistic made normal",
       QosClass::kOpportunistic,
       kDefaultMinSpeed,
       {QosClass::kNormal, std::nullopt},
       QosClass::kNormal,
       kDefaultMinSpeed},
  };
  for (const Case& c : cases) {
    QosClass qos = c.file_qos;
    double floor = c.file_floor;
    apply_qos_override(c.over, qos, floor);
    EXPECT_EQ(qos, c.qos) << c.what;
    EXPECT_EQ(floor, c.floor) << c.what;
  }
}

}  // namespace
}  // namespace colo
