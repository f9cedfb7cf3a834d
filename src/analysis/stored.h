// The analyses of runs kept in a store, through the RunReader it is handed
// (RunStore in colo, vectors in tests): analysis/ itself reads nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/profiles.h"
#include "analysis/run_summary.h"
#include "common/result.h"
#include "sched/interference.h"
#include "store/rows.h"

namespace colo {

// A run's summary with its comparisons: the end-to-end speed-up over the
// latest exclusive run of the same jobs (RunReader::exclusive_baseline), and
// the steady speed-up (together.h) against each job's solo rate, taken from
// that exclusive run, else from the job's learned profile on the same GPU
// model. `profiles` are learned from the reader's runs when null and needed.
// An exclusive run is the baseline of others and is not compared. `run_id` 0
// means the most recent run.
Result<RunSummary> analyse_run(RunReader& reader, int64_t run_id,
                               const std::vector<LearnedProfile>* profiles = nullptr);

// The same for a run already read.
Result<RunSummary> analyse_record(RunReader& reader, const RunRecord& record,
                                  const std::vector<LearnedProfile>* profiles = nullptr);

// Profiles learned from the `max_runs` most recent runs (ProfileLearner).
Result<std::vector<LearnedProfile>> learn_profiles(RunReader& reader, int max_runs = 200);

// calibrate()'s measurements: measured_collocation() of each of the
// `max_runs` most recent runs that is one, analysed as analyse_run does.
Result<std::vector<Collocation>> measured_collocations(RunReader& reader,
                                                       const std::vector<LearnedProfile>& profiles,
                                                       int max_runs = 200);

// calibrate(base, measured_collocations(reader, profiles)): the interference
// model refitted to the store's measured collocations.
Result<InterferenceModel> calibrated_model(RunReader& reader, const InterferenceModel& base,
                                           const std::vector<LearnedProfile>& profiles);

}  // namespace colo
