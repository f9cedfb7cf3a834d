#include "jobs/placeholders.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace colo {
namespace {

using ::testing::HasSubstr;

const std::map<std::string, std::string> kValues = {
    {"lr", "1.0"}, {"n", "-3"}, {"s", "x y"}, {"gpus", "2"}, {"port", "{port}"}};

struct TextCase {
  const char* text;
  const char* substituted;  // with kValues
  const char* template_text;
};

// Every brace that does not make a placeholder or an escaped one is literal.
TEST(Placeholders, SubstituteAndTemplateReadEachBraceTheSameWay) {
  const std::vector<TextCase> cases = {
      {"plain", "plain", "plain"},
      {"{lr}", "1.0", "\x1f{lr}"},
      {"--lr={lr}", "--lr=1.0", "--lr=\x1f{lr}"},
      {"{n}-{s}", "-3-x y", "\x1f{n}-\x1f{s}"},
      {"{{lr}}", "{lr}", "{lr}"},
      {"{{lr}}={lr}", "{lr}=1.0", "{lr}=\x1f{lr}"},
      {"{{lr}", "{1.0", "{\x1f{lr}"},
      {"a}}b", "a}}b", "a}}b"},
      {"{lr", "{lr", "{lr"},
      {"{}", "{}", "{}"},
      {"{{}}", "{{}}", "{{}}"},
      {"{\"e\": {lr}}", "{\"e\": 1.0}", "{\"e\": \x1f{lr}}"},
      {"awk '{print $1}'", "awk '{print $1}'", "awk '{print $1}'"},
      {"{a-b}", "{a-b}", "{a-b}"},
      {"--nproc {gpus} --port {port}", "--nproc 2 --port {port}",
       "--nproc \x1f{gpus} --port \x1f{port}"},
  };
  for (const TextCase& c : cases) {
    EXPECT_EQ(substitute(c.text, kValues), c.substituted) << c.text;
    EXPECT_EQ(template_text(c.text), c.template_text) << c.text;
  }
}

struct CheckCase {
  const char* text;
  std::set<std::string> params;
  std::vector<std::string> problem;  // substrings of the error; empty: none
};

TEST(Placeholders, CheckNamesAnUnknownPlaceholderAndTheParametersThereAre) {
  const std::vector<CheckCase> cases = {
      {"x", {}, {}},
      {"{lr}", {"lr"}, {}},
      {"{gpus} {port}", {}, {}},
      {"{{lr}}", {}, {}},
      {"awk '{print $1}'", {}, {}},
      {"{lrr}",
       {"lr", "wd"},
       {"unknown placeholder '{lrr}'", "did you mean 'lr'?", "grid parameters: lr, wd",
        "write '{{lrr}}' for the literal text"}},
      {"{lr}", {}, {"unknown placeholder '{lr}'", "(this job has no grid;"}},
      {"{print}", {}, {"unknown placeholder '{print}'", "write '{{print}}'"}},
      {"{lr}{seed}", {"lr"}, {"unknown placeholder '{seed}'"}},
  };
  for (const CheckCase& c : cases) {
    std::optional<std::string> problem = check_placeholders(c.text, c.params);
    EXPECT_EQ(problem.has_value(), !c.problem.empty()) << c.text;
    for (const std::string& part : c.problem) {
      EXPECT_THAT(problem.value_or(""), HasSubstr(part)) << c.text;
    }
  }
}

TEST(Placeholders, AResourceParamIsAGridParameterWithAnOptionalPower) {
  const std::vector<CheckCase> cases = {
      {"batch", {"batch"}, {}},
      {"px^1", {"px"}, {}},
      {"px^2", {"px"}, {}},
      {"px^3", {"px"}, {}},
      {"px^4", {"px"}, {"'px^4': the power after '^' must be 1, 2 or 3"}},
      {"px^", {"px"}, {"the power after '^' must be 1, 2 or 3"}},
      {"bach",
       {"batch"},
       {"'bach' names no grid parameter", "(did you mean 'batch'?)", "(grid parameters: batch)"}},
      {"bs^2", {}, {"'bs' names no grid parameter", "(this job has no grid)"}},
  };
  for (const CheckCase& c : cases) {
    std::optional<std::string> problem = check_resource_param(c.text, c.params);
    EXPECT_EQ(problem.has_value(), !c.problem.empty()) << c.text;
    for (const std::string& part : c.problem) {
      EXPECT_THAT(problem.value_or(""), HasSubstr(part)) << c.text;
    }
  }
}

TEST(Placeholders, NamesAreLettersDigitsAndUnderscoreAndTwoAreBuiltIn) {
  for (const char* name : {"lr", "batch_size", "x2", "_", "2x"}) {
    EXPECT_TRUE(is_param_name(name)) << name;
  }
  for (const char* name : {"", "a-b", "a.b", "a b", "é"}) {
    EXPECT_FALSE(is_param_name(name)) << name;
  }
  EXPECT_TRUE(is_builtin_placeholder("gpus"));
  EXPECT_TRUE(is_builtin_placeholder("port"));
  EXPECT_FALSE(is_builtin_placeholder("lr"));
  EXPECT_FALSE(is_builtin_placeholder("gpu"));
}

}  // namespace
}  // namespace colo
