#include "common/units.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

TEST(ParseBytes, AcceptsUnitsAndPlainNumbers) {
  EXPECT_EQ(parse_bytes("1024").value(), 1024u);
  EXPECT_EQ(parse_bytes("4GiB").value(), 4ull << 30);
  EXPECT_EQ(parse_bytes("6G").value(), 6ull << 30);
  EXPECT_EQ(parse_bytes("512 MiB").value(), 512ull << 20);
  EXPECT_EQ(parse_bytes("2GB").value(), 2'000'000'000ull);
  EXPECT_EQ(parse_bytes("1.5k").value(), 1536u);
}

TEST(ParseBytes, RejectsGarbageWithAHint) {
  auto r = parse_bytes("lots");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("4GiB"), std::string::npos);
  EXPECT_FALSE(parse_bytes("4 parsecs").ok());
  EXPECT_FALSE(parse_bytes("-3G").ok());
}

TEST(ParseBytes, RefusesSizesTooLargeToMeanAnythingInsteadOfWrapping) {
  // 1e30 bytes was once capped at 2^63 without a word.
  for (const char* text : {"1e30", "99999999999TiB", "18446744073709551616"}) {
    auto r = parse_bytes(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message().find("too large"), std::string::npos) << r.error().message();
  }
  EXPECT_EQ(parse_bytes("1024TiB").value(), 1ull << 50);  // the bound itself
}

TEST(ParseDuration, RefusesDurationsTooLongInsteadOfWrapping) {
  // 1e30s once came back as a negative number, reported as "got zero".
  for (const char* text : {"1e30s", "99999999999d", "1e17ms"}) {
    auto r = parse_duration_ms(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message().find("too long"), std::string::npos) << r.error().message();
  }
  EXPECT_EQ(parse_duration_ms("3650d").value(), int64_t{3650} * 86'400'000);
}

TEST(FormatBytes, PicksAReadableUnit) {
  EXPECT_EQ(format_bytes(100), "100 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(6ull << 30), "6.0 GiB");
  EXPECT_EQ(format_bytes(141ull << 30), "141 GiB");
}

TEST(ParseDuration, AcceptsCompoundForms) {
  EXPECT_EQ(parse_duration_ms("30s").value(), 30'000);
  EXPECT_EQ(parse_duration_ms("8m").value(), 480'000);
  EXPECT_EQ(parse_duration_ms("1h30m").value(), 5'400'000);
  EXPECT_EQ(parse_duration_ms("250ms").value(), 250);
  EXPECT_EQ(parse_duration_ms("2d12h").value(), 216'000'000);
  EXPECT_EQ(parse_duration_ms("2").value(), 2000);
  EXPECT_FALSE(parse_duration_ms("soon").ok());
  EXPECT_FALSE(parse_duration_ms("3 fortnights").ok());
}

TEST(FormatDuration, ScalesWithMagnitude) {
  EXPECT_EQ(format_duration_ms(250), "250ms");
  EXPECT_EQ(format_duration_ms(12'300), "12.3s");
  EXPECT_EQ(format_duration_ms(185'000), "3m05s");
  EXPECT_EQ(format_duration_ms(3'720'000), "1h02m");
}

}  // namespace
}  // namespace colo
