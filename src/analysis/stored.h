// The analyses of runs kept in a store, through the RunReader it is handed
// (RunStore in colo, vectors in tests): analysis/ itself reads nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

// An ended run's sample figures (run_summary.h) as the store keeps them
// (RunReader::derived, kind kSampleFiguresKind): analyse_run, learning and
// calibration read them instead of the run's samples once derived.
inline constexpr std::string_view kSampleFiguresKind = "samples";
// Raise it whenever what summarize() derives from samples changes.
inline constexpr int kSampleFiguresVersion = 1;
std::string sample_figures_json(const SampleFigures& figures);
// nullopt for a body that is not one.
std::optional<SampleFigures> parse_sample_figures(std::string_view json);

// What learning and calibration read of an ended run: its jobs'
// contributions to profiles (folded: fold_contributions), and whether it may be a measured
// collocation (may_be_collocation). Derived once, from all of its rows, and kept in the store
// (RunReader::derived, kind kRunFactsKind) to be read back by every later start, show and
// calibration: ended runs do not change.
struct RunFacts {
  std::vector<ProfileContribution> contributions;
  bool may_be_collocation = false;
  bool operator==(const RunFacts&) const = default;
};
inline constexpr std::string_view kRunFactsKind = "learning";
// Raise it whenever profile_contributions(), may_be_collocation() or what
// summarize() gives them changes: facts kept by older code are then derived
// again.
inline constexpr int kRunFactsVersion = 3;  // 2: contributions folded; 3: probes' solo time

// The facts of run `run_id` (not running): kept ones, else derived from its rows
// and kept (when the store cannot keep them, derived again next time).
Result<RunFacts> run_facts(RunReader& reader, int64_t run_id);

// Derives and keeps what analyses read of ended run `run_id` instead of its
// rows (its sample figures and its facts), unless they are kept already:
// before its samples are thinned. An error when they could not be kept.
Status keep_run_derivations(RunReader& reader, int64_t run_id);

// RunFacts as the store keeps them; nullopt for a body that is not one.
std::string run_facts_json(const RunFacts& facts);
std::optional<RunFacts> parse_run_facts(std::string_view json);

// Profiles learned from the `max_runs` most recent runs (ProfileLearner),
// from their facts.
Result<std::vector<LearnedProfile>> learn_profiles(RunReader& reader, int max_runs = 200);

// calibrate()'s measurements: measured_collocation() of each of the
// `max_runs` most recent runs that is one, analysed as analyse_run does
// (only the runs whose facts say they may be one are read).
Result<std::vector<Collocation>> measured_collocations(RunReader& reader,
                                                       const std::vector<LearnedProfile>& profiles,
                                                       int max_runs = 200);

// calibrate(base, measured_collocations(reader, profiles)): the interference
// model refitted to the store's measured collocations.
Result<InterferenceModel> calibrated_model(RunReader& reader, const InterferenceModel& base,
                                           const std::vector<LearnedProfile>& profiles);

}  // namespace colo
