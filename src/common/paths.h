// Where colo keeps its files by default.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

struct stat;

namespace colo {

// $COLO_HOME if set, else $XDG_STATE_HOME/colo, else $HOME/.local/state/colo.
std::string default_state_dir();

// <state dir>/colo.db: the default run store.
std::string default_db_path();

// Creates the directory and its missing parents, ok if it exists. Each
// directory it creates gets exactly `mode` (chmod after mkdir: the umask does
// not take the pass-through bit from 0711), and its missing parents
// `parents_mode` (default: `mode`); the modes of directories already there
// are left as they are.
Status make_dirs(const std::string& path, unsigned mode = 0755,
                 std::optional<unsigned> parents_mode = std::nullopt);

// open(2) of a file that must be a regular file and is never reached through
// a symbolic link at its last component (O_NOFOLLOW), nor waited on when it
// is a FIFO (O_NONBLOCK, which changes nothing for a regular file): for files
// a process running as root opens where another user might have placed a
// link. -1 with errno set: ELOOP for a link, EINVAL for something not a
// regular file (then *info, when given, says what it is). `name` is relative
// to the directory `dir_fd` (AT_FDCWD: the current one) unless absolute.
int open_regular_file(const std::string& path, int flags, unsigned mode = 0600);
int open_regular_file_at(int dir_fd, const std::string& name, int flags, unsigned mode = 0600,
                         struct stat* info = nullptr);

// "a FIFO", "a directory", "a character device", ... for a file's st_mode:
// what a file that should have been a regular one is, for messages.
const char* file_kind(unsigned st_mode);

// Absolute form of path (relative paths resolved against base, or the
// current directory when base is empty). Does not touch the filesystem.
std::string absolute_path(const std::string& path, const std::string& base = "");

// This program's path (/proc/self/exe), to start colo's own commands as
// children (`colo data serve`, `colo ncu-mps-pair`); "colo" when it cannot be read.
std::string self_executable();

// The executable `name` resolves to: itself when it contains a '/', else the
// first directory of `path_value` (default: $PATH) holding an executable
// regular file of that name. nullopt when there is none.
std::optional<std::string> find_program(const std::string& name,
                                        std::optional<std::string_view> path_value = std::nullopt);

}  // namespace colo
