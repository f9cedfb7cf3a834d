#include "serve/request_fields.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

using nlohmann::json;

TEST(RequestFields, AFieldTakesItsFallbackWhenAbsentAndNamesItselfWhenMistyped) {
  struct Case {
    std::string request;
    std::string string_value;   // of "f", fallback "none"; "!" + error when refused
    std::string integer_value;  // of "f", fallback 7
  };
  const std::vector<Case> cases = {
      {R"({})", "none", "7"},
      {R"({"f": null})", "none", "7"},
      {R"({"f": "x"})", "x", "!'f' must be a whole number, 0 or more"},
      {R"({"f": 3})", "!'f' must be a string", "3"},
      {R"({"f": 0})", "!'f' must be a string", "0"},
      {R"({"f": -1})", "!'f' must be a string", "!'f' must be a whole number, 0 or more"},
      {R"({"f": 1.5})", "!'f' must be a string", "!'f' must be a whole number, 0 or more"},
      {R"({"f": [1]})", "!'f' must be a string", "!'f' must be a whole number, 0 or more"},
  };
  for (const Case& c : cases) {
    const json request = json::parse(c.request);
    Result<std::string> s = string_field(request, "f", "none");
    EXPECT_EQ(s.ok() ? *s : "!" + s.error().message(), c.string_value) << c.request;
    Result<int64_t> i = integer_field(request, "f", 7);
    EXPECT_EQ(i.ok() ? std::to_string(*i) : "!" + i.error().message(), c.integer_value)
        << c.request;
  }
}

TEST(RequestFields, IdsAreAnArrayOfWholeNumbers) {
  struct Case {
    std::string request;
    std::vector<int64_t> ids;
    bool ok;
  };
  const std::vector<Case> cases = {
      {R"({})", {}, true},
      {R"({"ids": null})", {}, true},
      {R"({"ids": []})", {}, true},
      {R"({"ids": [3, 1, 2]})", {3, 1, 2}, true},
      {R"({"ids": 3})", {}, false},
      {R"({"ids": ["3"]})", {}, false},
      {R"({"ids": [1, 2.5]})", {}, false},
  };
  for (const Case& c : cases) {
    Result<std::vector<int64_t>> ids = ids_of(json::parse(c.request));
    ASSERT_EQ(ids.ok(), c.ok) << c.request;
    if (ids.ok()) {
      EXPECT_EQ(*ids, c.ids) << c.request;
    } else {
      EXPECT_EQ(ids.error().message(), "'ids' must be an array of job ids") << c.request;
    }
  }
}

TEST(RequestFields, ASubmissionsLabelLosesItsControlCharactersAndNamesAWrongField) {
  struct Case {
    std::string request;
    std::string error;  // empty: read
    std::string name;
    std::string note;
    std::map<std::string, std::string> tags;
  };
  const std::vector<Case> cases = {
      {R"({})", "", "", "", {}},
      {R"({"label": null})", "", "", "", {}},
      {R"({"label": {"name": "a\u0001b", "note": "n\u0007", "tags": {"k\u0001": "v"}}})",
       "",
       "ab",
       "n",
       {{"k", "v"}}},
      {R"({"label": "x"})", "'label' must be an object", "", "", {}},
      {R"({"label": {"name": 1}})", "label: 'name' must be a string", "", "", {}},
      {R"({"label": {"note": []}})", "label: 'note' must be a string", "", "", {}},
      {R"({"label": {"tags": []}})", "label: 'tags' must be an object of strings", "", "", {}},
      {R"({"label": {"tags": {"k": 1}}})",
       "label: 'tags' must be an object of strings",
       "",
       "",
       {}},
  };
  for (const Case& c : cases) {
    Result<RunLabel> label = submission_label(json::parse(c.request));
    if (!c.error.empty()) {
      ASSERT_FALSE(label.ok()) << c.request;
      EXPECT_EQ(label.error().message(), c.error) << c.request;
      continue;
    }
    ASSERT_TRUE(label.ok()) << c.request << ": " << label.error().message();
    EXPECT_EQ(label->name, c.name) << c.request;
    EXPECT_EQ(label->note, c.note) << c.request;
    EXPECT_EQ(label->tags, c.tags) << c.request;
  }
}

TEST(RequestFields, AStringMapKeepsOnlyTheStringMembersOfAnObject) {
  struct Case {
    std::string value;
    std::map<std::string, std::string> map;
  };
  const std::vector<Case> cases = {
      {R"(null)", {}},
      {R"(["a"])", {}},
      {R"({"A": "1", "B": 2, "C": null, "D": ""})", {{"A", "1"}, {"D", ""}}},
  };
  for (const Case& c : cases) EXPECT_EQ(string_map(json::parse(c.value)), c.map) << c.value;
}

}  // namespace
}  // namespace colo
