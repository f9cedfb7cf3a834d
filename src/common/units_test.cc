#include "common/units.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

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
  EXPECT_EQ(format_duration_ms(86'399'000), "23h59m");
  EXPECT_EQ(format_duration_ms(86'400'000), "1d 0h");
  EXPECT_EQ(format_duration_ms(int64_t{27670} * 3'600'000 + 42 * 60'000), "1152d 22h");
}

// Sets TZ for the test's life, and puts back what was there.
class LocalTimeZone {
 public:
  explicit LocalTimeZone(const char* zone) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    setenv("TZ", zone, 1);
    tzset();
  }
  ~LocalTimeZone() {
    if (old_) {
      setenv("TZ", old_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  std::optional<std::string> old_;
};

TEST(FormatLocalTime, InTheProcesssTimeZone) {
  struct Case {
    const char* zone;
    UnixMillis time_ms;
    const char* datetime;
    const char* time_of_day;
  };
  const Case cases[] = {
      {"UTC", 1'700'000'000'000, "2023-11-14 22:13:20", "22:13:20"},
      {"UTC", 1'700'000'000'999, "2023-11-14 22:13:20", "22:13:20"},  // milliseconds dropped
      {"UTC", 0, "1970-01-01 00:00:00", "00:00:00"},
      {"UTC-2", 1'700'000'000'000, "2023-11-15 00:13:20", "00:13:20"},  // POSIX: 2 h east
  };
  for (const Case& c : cases) {
    LocalTimeZone zone(c.zone);
    EXPECT_EQ(format_local_datetime(c.time_ms), c.datetime) << c.zone << " " << c.time_ms;
    EXPECT_EQ(format_local_time_of_day(c.time_ms), c.time_of_day) << c.zone << " " << c.time_ms;
  }
  LocalTimeZone utc("UTC");
  EXPECT_EQ(format_local_time(1'700'000'000'000, "%Y-%m-%d %H:%M"), "2023-11-14 22:13");
}

TEST(CountOf, PluralUnlessOne) {
  EXPECT_EQ(count_of(1, "job"), "1 job");
  EXPECT_EQ(count_of(0, "job"), "0 jobs");
  EXPECT_EQ(count_of(3, "GPU"), "3 GPUs");
}

}  // namespace
}  // namespace colo
