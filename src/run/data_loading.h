// What `colo run` does for shared data loading (the glue between the job
// file, the data/ loaders and the store): the loaders a run needs, and the
// record of what they did.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "data/loader_options.h"
#include "data/loader_process.h"
#include "jobs/job_spec.h"
#include "store/run_store.h"

namespace colo {

// One loader per [data.NAME] table that at least one job names, with the
// table's settings over the loader's defaults.
Result<std::vector<LoaderOptions>> loaders_for(const JobFile& file);

// A stopped loader's record for the store: its statistics, each consumer
// matched to its job by name (`job_ids`), or the note saying why there are
// no statistics.
DataLoaderRow loader_record(const LoaderOutcome& outcome,
                            const std::map<std::string, int64_t>& job_ids);

}  // namespace colo
