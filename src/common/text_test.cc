#include "common/text.h"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace colo
