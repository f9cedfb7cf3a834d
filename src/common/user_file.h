// Reading a file that a user controls (a job's profile summary, trace or
// log) from a process that may run as root: the one rule for it.
//
// What the file's owner cannot do to the reader through it:
//  - redirect it: the last component is opened with O_NOFOLLOW, so a link
//    (to /dev/zero, to root's files) is refused;
//  - block it: opened with O_NONBLOCK and read only when it is a regular
//    file, so a FIFO or a device is refused instead of waited on;
//  - exhaust its memory: read_user_file() reads at most the bound it is
//    given and refuses a larger file.
// Every refusal is an error naming the file and what it is.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace colo {

// A regular file opened for reading, with what fstat(2) said of it then.
struct UserFile {
  UniqueFd fd;
  struct stat info {};
  uint64_t size() const { return static_cast<uint64_t>(info.st_size); }
};

// Opens `path` (relative to the directory `dir_fd`, unless absolute) for
// reading under the rule above. nullopt when nothing is there (a job that
// has not written yet); an error when it is a link, not a regular file, or
// cannot be opened, naming it as `shown` says (default: `path`).
Result<std::optional<UserFile>> open_user_file(const std::string& path, int dir_fd = AT_FDCWD,
                                               const std::string& shown = "");

// The whole of the regular file `path`, at most `max_bytes` of it: a larger
// file is an error saying so (its size and the bound), as is a missing one.
Result<std::string> read_user_file(const std::string& path, uint64_t max_bytes,
                                   int dir_fd = AT_FDCWD, const std::string& shown = "");

// The last `max_bytes` of the regular file `path` (all of it when shorter):
// a log's tail. Errors as read_user_file's.
Result<std::string> read_user_file_tail(const std::string& path, uint64_t max_bytes);

// Up to `length` bytes of `file` from `offset`: fewer when it ends first.
Result<std::string> read_user_file_range(const UserFile& file, uint64_t offset, uint64_t length,
                                         const std::string& shown);

}  // namespace colo
