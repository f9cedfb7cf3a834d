// Reading /proc/PID/stat, the one place that knows its layout.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace colo {

// A process's start time (clock ticks after boot, field 22) in the text of
// its /proc/PID/stat; nullopt when the text holds none. Fields are counted
// after the command name's closing ')', since the name may hold spaces and ')'.
std::optional<uint64_t> start_ticks_in_stat(std::string_view stat);

}  // namespace colo
