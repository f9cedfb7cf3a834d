// Reading /proc: files of processes that may exit while they are read, and
// /proc/PID/stat, the one place that knows its layout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace colo {

// The whole of a /proc file, with read(2); nullopt when it cannot be opened
// or its process went away while it was read (ESRCH), which libstdc++'s
// streams would turn into an exception.
std::optional<std::string> read_proc_file(const std::string& path);

// A process's start time (clock ticks after boot, field 22) in the text of
// its /proc/PID/stat; nullopt when the text holds none. Fields are counted
// after the command name's closing ')', since the name may hold spaces and ')'.
std::optional<uint64_t> start_ticks_in_stat(std::string_view stat);

}  // namespace colo
