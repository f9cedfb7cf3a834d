// Fuzz target: any bytes as a job file. parse_job_file must return a JobFile
// or an Error (with the file name in it), never crash, hang or run out of
// memory; what it accepts must hold what docs/job-file.md promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_target.h"
#include "jobs/job_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  colo::Result<colo::JobFile> file = colo::parse_job_file(text, "fuzz.toml", "/base");
  if (!file.ok()) {
    if (file.error().message().find("fuzz.toml") == std::string::npos) std::abort();
    return 0;
  }
  std::set<std::string> names;
  for (const colo::JobSpec& job : file->jobs) {
    if (job.command.empty() || !names.insert(job.name).second) std::abort();
    if (job.epoch_samples && *job.epoch_samples <= 0) std::abort();
  }
  return 0;
}
