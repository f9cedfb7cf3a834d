#include "common/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "common/text.h"

namespace colo {
namespace {

// Splits "12.5GiB" into 12.5 and "gib". Fails when there is no leading number.
bool split_number(std::string_view text, double& number, std::string& unit) {
  std::string s(trim_space(text));
  char* end = nullptr;
  number = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return false;
  unit = ascii_lower(trim_space(std::string_view(end)));
  return std::isfinite(number) && number >= 0;
}

}  // namespace

Result<uint64_t> parse_bytes(std::string_view text) {
  double number = 0;
  std::string unit;
  if (!split_number(text, number, unit)) {
    return Error(fmt::format("'{}' is not a size; write e.g. 4GiB, 512MiB or 6G", text));
  }
  double scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "k" || unit == "kib")
    scale = 1024.0;
  else if (unit == "kb")
    scale = 1e3;
  else if (unit == "m" || unit == "mib")
    scale = 1024.0 * 1024;
  else if (unit == "mb")
    scale = 1e6;
  else if (unit == "g" || unit == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "gb")
    scale = 1e9;
  else if (unit == "t" || unit == "tib")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "tb")
    scale = 1e12;
  else {
    return Error(
        fmt::format("'{}' has an unknown unit '{}'; use B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB)",
                    text, unit));
  }
  const double bytes = number * scale;
  if (bytes > static_cast<double>(kMaxBytes)) {
    return Error(fmt::format("'{}' is too large: sizes go up to 1 PiB", text));
  }
  return static_cast<uint64_t>(std::llround(bytes));
}

std::string format_bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return value >= 100 ? fmt::format("{:.0f} {}", value, kUnits[unit])
                      : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

Result<int64_t> parse_duration_ms(std::string_view text) {
  std::string s = ascii_lower(trim_space(text));
  if (s.empty()) return Error("empty duration; write e.g. 30s, 8m or 1h30m");
  double total_ms = 0;
  size_t i = 0;
  bool any = false;
  while (i < s.size()) {
    char* end = nullptr;
    double number = std::strtod(s.c_str() + i, &end);
    size_t used = static_cast<size_t>(end - (s.c_str() + i));
    if (used == 0 || number < 0 || !std::isfinite(number)) {
      return Error(fmt::format("'{}' is not a duration; write e.g. 30s, 8m or 1h30m", text));
    }
    i += used;
    size_t unit_start = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    std::string unit = s.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit.empty() || unit == "s")
      scale = 1000;
    else if (unit == "ms")
      scale = 1;
    else if (unit == "m" || unit == "min")
      scale = 60'000;
    else if (unit == "h")
      scale = 3'600'000;
    else if (unit == "d")
      scale = 86'400'000;
    else
      return Error(
          fmt::format("'{}' has an unknown time unit '{}'; use ms, s, m, h or d", text, unit));
    total_ms += number * scale;
    any = true;
  }
  if (!any) return Error(fmt::format("'{}' is not a duration", text));
  if (total_ms > static_cast<double>(kMaxDurationMs)) {
    return Error(fmt::format("'{}' is too long: durations go up to 3650d", text));
  }
  return static_cast<int64_t>(std::llround(total_ms));
}

std::string format_duration_ms(int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return fmt::format("{}ms", ms);
  if (ms < 60'000) return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0);
  int64_t s = ms / 1000;
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86'400) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d {}h", s / 86'400, (s % 86'400) / 3600);
}

std::string format_duration_s(double seconds) {
  return format_duration_ms(static_cast<int64_t>(std::llround(seconds * 1000.0)));
}

std::string format_local_time(UnixMillis time_ms, const char* format) {
  std::time_t seconds = static_cast<std::time_t>(time_ms / 1000);
  std::tm local{};
  if (localtime_r(&seconds, &local) == nullptr) return "-";
  char buffer[64];
  size_t length = std::strftime(buffer, sizeof buffer, format, &local);
  return std::string(buffer, length);
}

std::string format_local_datetime(UnixMillis time_ms) {
  return format_local_time(time_ms, "%Y-%m-%d %H:%M:%S");
}

std::string format_local_time_of_day(UnixMillis time_ms) {
  return format_local_time(time_ms, "%H:%M:%S");
}

std::string count_of(int64_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

}  // namespace colo
