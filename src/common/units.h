// Parsing and printing of the quantities users type and read: byte sizes
// ("4GiB", "512MB", "6G"), durations ("30s", "8m", "1h30m") and wall-clock
// times (in the process's local time zone, TZ).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace colo {

// Accepts an integer number of bytes or a number with a unit: B, K/KB/KiB,
// M/MB/MiB, G/GB/GiB, T/TB/TiB (K, M, G, T and the *iB forms are powers of 1024;
// KB, MB, GB, TB are powers of 1000). Case-insensitive, optional space. Sizes
// above kMaxBytes are refused (never wrapped or capped).
inline constexpr uint64_t kMaxBytes = uint64_t{1} << 50;  // 1 PiB
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;
Result<uint64_t> parse_bytes(std::string_view text);

// "1.5 GiB", "512 MiB", "12 KiB", "100 B".
std::string format_bytes(uint64_t bytes);

// Accepts "250ms", "30s", "8m", "2h", "3d", combinations like "1h30m", or a
// bare number of seconds. Durations above kMaxDurationMs are refused.
inline constexpr int64_t kMaxDurationMs = int64_t{3650} * 86'400'000;  // ten years
Result<int64_t> parse_duration_ms(std::string_view text);

// "1153d 6h", "1h02m", "3m05s", "12.3s", "250ms".
std::string format_duration_ms(int64_t ms);
// format_duration_ms of `seconds`, rounded to the millisecond.
std::string format_duration_s(double seconds);

// `time_ms` in local time through strftime's `format` (at most 63
// characters of output); "-" when the time has no local form.
std::string format_local_time(UnixMillis time_ms, const char* format);
// "2023-11-14 22:13:20" and "22:13:20" in local time.
std::string format_local_datetime(UnixMillis time_ms);
std::string format_local_time_of_day(UnixMillis time_ms);

// "3 jobs", "1 job": `count` and `noun`, plural with an "s" unless one.
std::string count_of(int64_t count, std::string_view noun);

}  // namespace colo
