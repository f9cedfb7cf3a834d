// What `colo run --resume RUN` runs: the jobs of an earlier run that did not
// end well (ok, or stopped early by their rule), as they were submitted, each
// with the checkpoint directory it had, so that a script that saves into
// COLO_CHECKPOINT_DIR continues where it was; and the lineage the new run
// records: the run's name and tags, the run and, by job, the job each
// continues (`colo show` joins their histories: analysis/lineage.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "jobs/job_spec.h"
#include "store/run_store.h"

namespace colo {

struct ResumePlan {
  JobFile file;  // path: the run's job file; mechanism: the run's; jobs: those to run again
  std::vector<std::string> checkpoint_dirs;  // by job, as `file.jobs`
  int64_t ended_well = 0;                    // jobs of the run not run again
  int64_t run_id = 0;                        // the run resumed
  std::vector<int64_t> job_ids;              // by job, as `file.jobs`: the job each resumes
  RunLabel label;                            // the run's name and tags (not its note)
};

// An error names the run when it has no such run, or nothing to resume.
Result<ResumePlan> plan_resume(RunStore& store, int64_t run_id);

}  // namespace colo
