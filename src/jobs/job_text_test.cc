#include "jobs/job_text.h"

#include <gtest/gtest.h>

#include <functional>

namespace colo {
namespace {

struct TextRuleCase {
  std::string name;
  std::function<bool(std::string_view)> rule;
  std::string text;
  bool holds = false;
};

class TextRules : public testing::TestWithParam<TextRuleCase> {};

TEST_P(TextRules, SayWhichTextAJobFileTakes) {
  const TextRuleCase& c = GetParam();
  EXPECT_EQ(c.rule(c.text), c.holds) << "'" << c.text << "'";
}

INSTANTIATE_TEST_SUITE_P(
    Table, TextRules,
    testing::Values(TextRuleCase{"job_name_letters_digits_dots_dashes", is_job_name,
                                 "resnet-50_v1.2", true},
                    TextRuleCase{"job_name_not_empty", is_job_name, "", false},
                    TextRuleCase{"job_name_no_space", is_job_name, "a b", false},
                    TextRuleCase{"job_name_no_slash", is_job_name, "a/b", false},
                    TextRuleCase{"env_name", is_env_name, "CUDA_VISIBLE_DEVICES", true},
                    TextRuleCase{"env_name_not_from_a_digit", is_env_name, "1A", false},
                    TextRuleCase{"env_name_no_dot", is_env_name, "A.B", false},
                    TextRuleCase{"env_name_not_empty", is_env_name, "", false},
                    TextRuleCase{"white_space_and_newlines", only_white_space, " \n\t\n", true},
                    TextRuleCase{"white_space_empty", only_white_space, "", true},
                    TextRuleCase{"not_white_space", only_white_space, "\n[run]\n", false}),
    [](const auto& info) { return info.param.name; });

struct ControlCase {
  std::string name;
  std::string text;
  std::optional<std::string> found;
};

class ControlChars : public testing::TestWithParam<ControlCase> {};

TEST_P(ControlChars, TheFirstIsNamedEscaped) {
  EXPECT_EQ(first_control_char(GetParam().text), GetParam().found);
}

INSTANTIATE_TEST_SUITE_P(Table, ControlChars,
                         testing::Values(ControlCase{"printable", "lr=0.1 {x}", std::nullopt},
                                         ControlCase{"utf8_is_printable", "caf\xc3\xa9",
                                                     std::nullopt},
                                         ControlCase{"escape", "a\x1b[31m", "\\x1b"},
                                         ControlCase{"newline_before_tab", "a\nb\t", "\\x0a"},
                                         ControlCase{"nul", std::string("a\0b", 3), "\\x00"},
                                         ControlCase{"delete", "a\x7f", "\\x7f"}),
                         [](const auto& info) { return info.param.name; });

struct FloatCase {
  std::string name;
  double value = 0;
  std::string text;
};

class FloatText : public testing::TestWithParam<FloatCase> {};

TEST_P(FloatText, AsPythonPrintsIt) { EXPECT_EQ(format_float(GetParam().value), GetParam().text); }

INSTANTIATE_TEST_SUITE_P(Table, FloatText,
                         testing::Values(FloatCase{"shortest", 0.1, "0.1"},
                                         FloatCase{"whole", 1.0, "1.0"},
                                         FloatCase{"negative_whole", -3.0, "-3.0"},
                                         FloatCase{"exponent", 1e20, "1e+20"},
                                         FloatCase{"small", 1e-4, "0.0001"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace colo
