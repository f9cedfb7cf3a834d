#include "report/table.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace colo {
namespace {

using Align = TextTable::Align;

struct TextTableCase {
  const char* what;
  std::vector<TextTable::Column> columns;
  std::vector<std::vector<std::string>> rows;
  std::string rendered;
};

TEST(TextTable, PadsEachColumnToItsWidestCellAndAlignsIt) {
  const TextTableCase cases[] = {
      {"left columns padded, the last one not",
       {{"JOB"}, {"STATE"}},
       {{"a", "ok"}, {"longer-name", "failed"}},
       "JOB          STATE\n"
       "a            ok\n"
       "longer-name  failed\n"},
      {"right columns padded before their cells",
       {{"ID", Align::kRight}, {"NAME"}, {"JOBS", Align::kRight}},
       {{"7", "x", "12"}, {"123", "yy", "3"}},
       " ID  NAME  JOBS\n"
       "  7  x       12\n"
       "123  yy       3\n"},
      {"a header wider than its cells sets the width",
       {{"A"}, {"WIDE HEADER", Align::kRight}},
       {{"a", "1"}},
       "A  WIDE HEADER\n"
       "a            1\n"},
      {"no trailing spaces where the last cells are empty",
       {{"JOB"}, {"REASON"}, {"NOTE"}},
       {{"a", "", ""}, {"b", "why", ""}},
       "JOB  REASON  NOTE\n"
       "a\n"
       "b    why\n"},
      {"a short row gets empty cells, a long one loses its extra cells",
       {{"A"}, {"B", Align::kRight}},
       {{"x"}, {"y", "2", "dropped"}},
       "A  B\n"
       "x\n"
       "y  2\n"},
      {"a header alone", {{"ID", Align::kRight}, {"NAME"}}, {}, "ID  NAME\n"},
      {"an empty first header",
       {{""}, {"#3"}, {"B OVER A", Align::kRight}},
       {{"makespan", "10.0s", "1.25x"}},
       "          #3     B OVER A\n"
       "makespan  10.0s     1.25x\n"},
  };
  for (const TextTableCase& c : cases) {
    TextTable table(c.columns);
    for (const auto& row : c.rows) table.add_row(row);
    EXPECT_EQ(table.render(), c.rendered) << c.what;
  }
}

TEST(ToCsv, QuotesOnlyWhatNeedsItAndDoublesQuotes) {
  Table table;
  table.header = {"job", "note"};
  table.rows = {
      {"plain", "1.5"}, {"with, comma", "say \"hi\""}, {"two\nlines", "cr\rhere"}, {"", ""}};
  EXPECT_EQ(to_csv(table),
            "job,note\n"
            "plain,1.5\n"
            "\"with, comma\",\"say \"\"hi\"\"\"\n"
            "\"two\nlines\",\"cr\rhere\"\n"
            ",\n");
}

TEST(NumberCell, ShortestTextThatReadsBackAndEmptyWhenAbsent) {
  EXPECT_EQ(number_cell(0.1), "0.1");
  EXPECT_EQ(number_cell(3.0), "3");
  EXPECT_EQ(number_cell(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(number_cell(1e300), "1e+300");
  EXPECT_EQ(number_cell(std::optional<double>(2.5)), "2.5");
  EXPECT_EQ(number_cell(std::optional<uint64_t>(12'884'901'888)), "12884901888");
  EXPECT_EQ(number_cell(std::optional<double>()), "");
}

}  // namespace
}  // namespace colo
