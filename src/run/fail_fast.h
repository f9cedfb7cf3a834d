// FailFast: a job file's fail_fast rule (its [run] fail_fast, on by
// default): when the first kFailFastJobs of its jobs to end all failed the
// same way, its jobs that still wait do not start. The rule settles (and
// says nothing more) once one of its jobs ends well, or one fails another
// way. Knows jobs by their file only; the engine cancels the waiting ones.
// Not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_spec.h"
#include "jobs/job_state.h"

namespace colo {

// A job's file: its source ("file.toml:12") without the line.
std::string job_file_of(const JobSpec& spec);

class FailFast {
 public:
  // A job of `file` ended in `state` (`note`: why). Returns the cause once
  // the file's waiting jobs are not to start ("the first 3 jobs of a.toml to
  // end all failed the same way (exit code 1)"), once per file.
  std::optional<std::string> ended(const std::string& file, JobState state,
                                   const std::string& note);

 private:
  struct File {
    std::vector<std::string> reasons;  // of its first jobs to fail
    bool settled = false;
  };
  std::map<std::string, File> files_;
};

}  // namespace colo
