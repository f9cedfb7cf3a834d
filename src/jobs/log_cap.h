// Keeping a job's log within a size: a job that floods its output must not
// fill the disk colo and every other job write to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"

namespace colo {

// When the regular file at `path` (never through a link, never a FIFO) is
// larger than `max_bytes`, cuts it to its first max_bytes/4 bytes, a line
// saying how many bytes were cut and why (`why`: "its cap of 64 MiB"), and
// its last max_bytes/4 bytes, in place: a writer that appends (O_APPEND)
// goes on writing at the new end. Returns the new size, or nullopt when the
// file was within its cap (or absent). An error names the file.
Result<std::optional<uint64_t>> cut_log(const std::string& path, uint64_t max_bytes,
                                        const std::string& why);

}  // namespace colo
