#include "common/text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colo {
namespace {

// C0 (ESC, BEL, CR, TAB, NUL), DEL and C1 (U+009B, CSI) are control
// characters; other UTF-8, "é" among it, is text.
TEST(Text, ControlCharactersAreFoundAndStripped) {
  EXPECT_EQ(control_char_at("plain text, caf\xc3\xa9"), std::nullopt);
  EXPECT_EQ(control_char_at("ab\x1b[31m"), 2u);
  EXPECT_EQ(control_char_at(std::string("a\0b", 3)), 1u);
  EXPECT_EQ(control_char_at("a\x7f"), 1u);
  EXPECT_EQ(control_char_at("ab\xc2\x9b"
                            "31m"),
            2u);
  EXPECT_EQ(control_char_at("\xc2\xa0"), std::nullopt);  // no-break space is text
  EXPECT_EQ(strip_control_chars("lo\x1b[31mss\r\x07\tx\x7f\xc2\x9by caf\xc3\xa9"),
            "lo[31mssxy caf\xc3\xa9");
  EXPECT_EQ(strip_control_chars("\xc2"), "\xc2");  // a cut-off sequence is left as it is
}

// The nearest candidate within about a third of what was typed, case aside.
TEST(Text, DidYouMeanNamesTheNearestCandidateCloseEnough) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("Show", "show"), 0u);
  const std::vector<std::string> commands = {"run", "runs", "show", "serve", "simulate"};
  EXPECT_EQ(did_you_mean("sho", commands), " (did you mean 'show'?)");
  EXPECT_EQ(did_you_mean("simulat", commands), " (did you mean 'simulate'?)");
  EXPECT_EQ(did_you_mean("frobnicate", commands), "");
  EXPECT_EQ(did_you_mean("x", std::vector<std::string>{}), "");
}

// Issue 53 (10): a long note is cut for the terminal (colo show printed a
// 120 kB note whole), by lines and bytes, never inside a UTF-8 character.
TEST(Text, ShortenTextCutsByLinesAndBytesAndSaysHowMuchIsLeft) {
  EXPECT_EQ(shorten_text("short", 5, 500, "more"), "short");
  EXPECT_EQ(shorten_text("a\nb\nc", 2, 500, "x"), "a\nb... (2 more bytes: x)");
  EXPECT_EQ(shorten_text(std::string(1000, 'n'), 5, 10, "x"),
            std::string(10, 'n') + "... (990 more bytes: x)");
  // "é" is two bytes: a cut at byte 2 of "aé..." backs off to byte 1.
  EXPECT_EQ(shorten_text("a\xc3\xa9"
                         "bcd",
                         5, 2, "x"),
            "a... (5 more bytes: x)");
  EXPECT_EQ(shorten_text(std::string(120'000, 'n'), 5, 500, "x").size(),
            std::string(500, 'n').size() + std::string("... (119500 more bytes: x)").size());
}

}  // namespace
}  // namespace colo
