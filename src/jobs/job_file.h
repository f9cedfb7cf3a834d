// Parsing and validation of TOML job files (see docs/job-file.md).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"
#include "jobs/job_spec.h"

namespace colo {

// Reads and validates the file. Errors name the file, line and key and say
// what to write instead: "sweep.toml:7: job 'a': unknown key 'comand' (did you
// mean 'command'?)". An empty file, a file with no [[job]], an unreadable or
// missing file each get their own message. A file larger than
// kMaxJobFileBytes is refused before it is parsed.
inline constexpr size_t kMaxJobFileBytes = size_t{8} << 20;
Result<JobFile> load_job_file(const std::string& path);

// The same, from text. `path` is used in messages; relative working
// directories are resolved against `base_dir`.
Result<JobFile> parse_job_file(std::string_view text, const std::string& path,
                               const std::string& base_dir);

}  // namespace colo
