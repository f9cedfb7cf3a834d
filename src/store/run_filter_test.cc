#include "store/run_filter.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

RunRow run(const std::string& name, RunState state, std::map<std::string, std::string> tags) {
  RunRow r;
  r.label.name = name;
  r.state = state;
  r.label.tags = std::move(tags);
  return r;
}

struct FilterCase {
  std::string what;
  std::string name;
  std::vector<std::string> tags;
  std::optional<std::string> state;
  bool matches;
};

// One run, "sweep-a", ok, tags team=vision and big; one named submission "nightly".
TEST(RunFilter, ARunMatchesWhenEveryCriterionHolds) {
  const RunRow r = run("sweep-a", RunState::kOk, {{"team", "vision"}, {"big", ""}});
  SubmissionRow sub;
  sub.label.name = "nightly";
  const std::vector<FilterCase> cases = {
      {"no criterion", "", {}, std::nullopt, true},
      {"its name", "sweep-a", {}, std::nullopt, true},
      {"another name", "sweep-b", {}, std::nullopt, false},
      {"a submission's name", "nightly", {}, std::nullopt, true},
      {"a tag by key", "", {"big"}, std::nullopt, true},
      {"a tag by key and value", "", {"team=vision"}, std::nullopt, true},
      {"a tag's other value", "", {"team=nlp"}, std::nullopt, false},
      {"a tag it lacks", "", {"owner"}, std::nullopt, false},
      {"its state", "", {}, "ok", true},
      {"another state", "", {}, "failed", false},
      {"all at once", "sweep-a", {"team=vision", "big"}, "ok", true},
      {"all but one", "sweep-a", {"team=vision", "big"}, "running", false},
  };
  for (const FilterCase& c : cases) {
    Result<RunFilter> f = parse_run_filter(c.name, c.tags, c.state);
    ASSERT_TRUE(f.ok()) << c.what;
    EXPECT_EQ(f->matches(r, {sub}), c.matches) << c.what;
  }
}

TEST(RunFilter, BadValuesNameTheFlagAndWhatItTakes) {
  Result<RunFilter> state = parse_run_filter("", {}, std::string("done"));
  ASSERT_FALSE(state.ok());
  EXPECT_EQ(state.error().message(),
            "--state 'done': give running, ok, failed, cancelled or interrupted");
  Result<RunFilter> tag = parse_run_filter("", {"=x"}, std::nullopt);
  ASSERT_FALSE(tag.ok());
  EXPECT_EQ(tag.error().message(), "--tag '=x': give KEY or KEY=VALUE (a tag's key is not empty)");
}

}  // namespace
}  // namespace colo
