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

// The facts of run `run_id` (not running): kept ones, else completed from
// what RunFactsKeeper kept of it while it ran, else derived from its rows; then
// kept (when the store cannot keep them, derived again next time).
Result<RunFacts> run_facts(RunReader& reader, int64_t run_id);

// What a run kept of its facts while it ran (RunFactsKeeper), so that the
// first command after it (a service stopped after days, or killed, or a
// `colo run` of 100,000 jobs) derives only the jobs that ended after the last
// keep, not the whole run from its rows. Raised with kRunFactsVersion.
inline constexpr std::string_view kRunFactsPartKind = "learning-part";
inline constexpr int kRunFactsPartVersion = kRunFactsVersion;

// Keeps the facts of a running run as its jobs end. Each job's contribution is
// derived once, after it ended, from the rows of its lifetime alone
// (RunReader::run_window and for_each_sample_between: the jobs that shared
// its GPU meanwhile, and the samples of that time), which gives what deriving
// the whole ended run would give of it; the run's contributions are folded
// (fold_contributions) in job order as far as every job before them has
// ended, and the rest kept by job until then. Not thread-safe; borrows the
// reader.
class RunFactsKeeper {
 public:
  RunFactsKeeper(RunReader& reader, int64_t run_id);
  // Derives the jobs that ended before `ended_before_ms` since the last call
  // and keeps what is known (kind kRunFactsPartKind): the first time
  // anything is, then once the jobs derived since are a tenth of the
  // contributions it holds (so that its writes stay linear in the run).
  // The caller makes sure that every row of those jobs' lifetimes is in the
  // store by then (the run's writer has nothing queued, and what the run
  // gathered until then was handed to it). An error leaves the kept part as
  // it was.
  Status update(UnixMillis ended_before_ms);

  struct Segment {
    int64_t first_id = 0;
    int64_t last_id = 0;
    std::vector<ProfileContribution> contributions;  // folded
    bool operator==(const Segment&) const = default;
  };
  // What is kept: every job of the run up to `through_id` ended and folded
  // into `head`; later jobs that ended, in runs of consecutive ended jobs
  // (`rest`, by id, each folded); the GPUs of the jobs derived that started
  // (-1: unknown; two are enough to know the run was no measured collocation).
  struct Part {
    int64_t through_id = 0;
    std::vector<ProfileContribution> head;
    std::vector<Segment> rest;
    std::vector<int> devices;
    bool operator==(const Part&) const = default;
  };
  const Part& part() const { return part_; }

 private:
  RunReader& reader_;
  const int64_t run_id_;
  Part part_;
  size_t head_folded_ = 0;   // the head's size when last folded whole
  int64_t unkept_jobs_ = 0;  // jobs derived since the part was last kept
  bool kept_once_ = false;
};

// A Part as the store keeps it; nullopt for a body that is not one.
std::string run_facts_part_json(const RunFactsKeeper::Part& part);
std::optional<RunFactsKeeper::Part> parse_run_facts_part(std::string_view json);

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
