// Writing a file that others read while it changes (a job's request, a page
// a browser may have open) so that no reader sees half of it.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace colo {

// Writes `content` to `path` through a file beside it (`path`.tmp) renamed
// over it: a reader finds the old file or the new one, whole. An error names
// the file and why; the file beside it is removed then.
Status replace_file(const std::string& path, std::string_view content);

}  // namespace colo
