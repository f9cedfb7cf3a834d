// Removing a tree that another user may own and change meanwhile (a job's
// checkpoint or profile directory, which colo, maybe as root, removes).
#pragma once

#include <string>

#include "common/result.h"

namespace colo {

// Removes `path` and, when it is a directory, everything below it, never
// following a symbolic link (a link is removed, not what it points to), each
// directory opened relative to its parent's descriptor so that a directory
// swapped for a link meanwhile is not entered. `path`'s parent directories
// are trusted (colo's own). Ok when `path` does not exist. An error names
// what could not be removed and why; a tree deeper than 256 levels is left
// where it goes deeper.
Status remove_tree(const std::string& path);

}  // namespace colo
