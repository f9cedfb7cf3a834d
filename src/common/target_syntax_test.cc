#include "common/target_syntax.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

using ::testing::HasSubstr;
using Kind = Target::Kind;

const TargetForms kShow{
    .last = true, .id = true, .submission = true, .name = true, .command = "colo show"};
const TargetForms kResume{.last = true, .id = true, .name = true, .command = "--resume"};
const TargetForms kCancel{.id = true,
                          .range = true,
                          .submission = true,
                          .name = true,
                          .id_noun = "job id",
                          .command = "colo cancel"};

struct Parsed {
  std::string text;
  const TargetForms* forms;
  Kind kind;
  int64_t first;
  int64_t last;
  std::string name;
};

TEST(TargetSyntax, EachFormReadsAsItsKind) {
  const std::vector<Parsed> cases = {
      {"", &kShow, Kind::kLast, 0, 0, ""},
      {"last", &kResume, Kind::kLast, 0, 0, ""},
      {"12", &kShow, Kind::kId, 12, 0, ""},
      {"007", &kCancel, Kind::kId, 7, 0, ""},
      {"12-21", &kCancel, Kind::kRange, 12, 21, ""},
      {"5-5", &kCancel, Kind::kRange, 5, 5, ""},
      {"3/7", &kShow, Kind::kSubmission, 3, 7, ""},
      {"3/7", &kCancel, Kind::kSubmission, 3, 7, ""},
      {"sweep-a", &kShow, Kind::kName, 0, 0, "sweep-a"},
      {"lr-0.1", &kResume, Kind::kName, 0, 0, "lr-0.1"},
      {"team/sweep", &kCancel, Kind::kName, 0, 0, "team/sweep"},
      {"12-", &kCancel, Kind::kName, 0, 0, "12-"},
      {"x12", &kResume, Kind::kName, 0, 0, "x12"},
  };
  for (const Parsed& c : cases) {
    Result<Target> t = parse_target(c.text, *c.forms);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.error().message();
    EXPECT_EQ(t->kind, c.kind) << c.text;
    EXPECT_EQ(t->first, c.first) << c.text;
    EXPECT_EQ(t->last, c.last) << c.text;
    EXPECT_EQ(t->name, c.name) << c.text;
  }
}

struct Refused {
  std::string text;
  const TargetForms* forms;
  std::string says;
};

TEST(TargetSyntax, ErrorsNameTheTargetAndTheFormsTaken) {
  const std::vector<Refused> cases = {
      {"0", &kShow, "'0' is no run id (ids count from 1)"},
      {"21-12", &kCancel, "'21-12' is no range"},
      {"0-3", &kCancel, "'0-3' is no range"},
      {"1-200000", &kCancel, "spans more than 100000 ids"},
      {"12-21", &kResume, "'12-21' is a range of run ids, where one target is meant"},
      {"3/7", &kResume, "'3/7' names a submission: --resume takes"},
      {"0/7", &kShow, "'0/7' is no RUN/SUB"},
      {"last", &kCancel, "'last' is not taken here: colo cancel takes"},
      {"", &kCancel, "'\"\"' is not taken here"},
  };
  for (const Refused& c : cases) {
    Result<Target> t = parse_target(c.text, *c.forms);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_THAT(t.error().message(), HasSubstr(c.says)) << c.text;
    EXPECT_THAT(t.error().message(), HasSubstr(describe_forms(*c.forms))) << c.text;
  }
  Result<Target> name = parse_target("sweep", TargetForms{.id_noun = "job id"});
  ASSERT_FALSE(name.ok());
  EXPECT_THAT(name.error().message(), HasSubstr("'sweep' is not a job id: takes a job id (12)"));
}

TEST(TargetSyntax, FormsInWords) {
  EXPECT_EQ(describe_forms(kResume), "a run id (12), last or a name of your own");
  EXPECT_EQ(describe_forms(kCancel),
            "a job id (12), a range of job ids (12-21), a name of your own or RUN/SUB (a "
            "submission, as colo submit prints it: 3/7)");
  EXPECT_EQ(describe_forms(TargetForms{.id = false}), "nothing");
}

TEST(TargetSyntax, ANameMayNotBeReadAsAnotherForm) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {"sweep-a", true}, {"", true},     {"lr=0.1", true}, {"12", false},
      {"last", false},   {"3-4", false}, {"3/4", false},   {"0", false},
  };
  for (const auto& [name, ok] : cases) {
    Status s = check_target_name(name);
    EXPECT_EQ(s.ok(), ok) << name;
    if (!s.ok()) {
      EXPECT_THAT(s.error().message(), HasSubstr("a name cannot be a number")) << name;
    }
  }
}

}  // namespace
}  // namespace colo
