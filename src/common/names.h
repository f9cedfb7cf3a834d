// Names colo makes for the machine and for files.
#pragma once

#include <string>
#include <string_view>

namespace colo {

// This machine's host name (gethostname); "unknown" when it cannot be read.
std::string host_name();

// A file name made of `prefix` and a name given by a user: letters, digits,
// '.', '_', '-' and '=' kept, every other byte '_'; at most 120 bytes.
std::string file_stem(std::string_view prefix, std::string_view name);

}  // namespace colo
