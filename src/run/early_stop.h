// EarlyStopper: the [early_stop] rules (docs/early-stopping.md) over the
// trials of sweeps. Fed each trial's objective as its epochs end, it answers
// whether to stop the trial now, with the numbers that decided. It holds no
// clock and starts nothing: the engine asks, and stops the trial.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "jobs/job_spec.h"

namespace colo {

// What a trial reported: the objective `metric` (lower better when
// `lower_is_better`) was `value` at the end of its epoch `epoch` (1-based).
struct TrialReport {
  std::string metric;
  bool lower_is_better = true;
  int64_t epoch = 0;
  double value = 0;
};

class EarlyStopper {
 public:
  // Trial `trial` of `sweep` (the jobs of one [[job]] table in one run)
  // reported `r`; the reason to stop it now, naming the rule and its
  // numbers, or nullopt to let it go on. NaN and infinities count as the
  // worst value (a diverged trial). A trial is judged by
  //  - median: at each epoch from min_epochs on, its best value so far
  //    against the median of the best values by that epoch of the other
  //    trials that reached it (at least min_trials of them); worse stops it;
  //  - asha: at each rung (epochs min_epochs * reduction^k, below
  //    max_epochs), once, the first time it reports at or past the rung and
  //    at no higher one: outside the best 1/reduction of the values the
  //    trials judged there before it stops it (the first judged goes on).
  //    Without max_epochs colo does not know a trial's last epoch (Ray
  //    Tune's max_t), so a rung is judged only once the trial shows it goes
  //    on past the epoch it reported there (went_past, or a report of a
  //    later epoch): a trial that ends there ran all its epochs, and is
  //    neither judged at that rung nor stopped early.
  std::optional<std::string> report(const std::string& sweep, int64_t trial,
                                    const EarlyStopSpec& spec, const TrialReport& r);

  // Trial `trial` of `sweep` is at work past its epoch `epoch` (a step or an
  // epoch's start after that epoch ended, or a later epoch's end): its rung
  // held for that epoch or an earlier one (asha without max_epochs) is
  // judged now; the reason to stop it, or nullopt.
  std::optional<std::string> went_past(const std::string& sweep, int64_t trial,
                                       const EarlyStopSpec& spec, int64_t epoch);

 private:
  // Values as badness: lower is better, non-finite is +infinity.
  struct Trial {
    // At each epoch it reported, its best value by then (that epoch's and
    // every earlier one's): the median rule reads it for every other trial
    // at each report, so a lookup, not a walk of its epochs.
    std::map<int64_t, double> best_so_far;
    void add(int64_t epoch, double value);
    double best_by(int64_t epoch) const;  // its best at that epoch and before
  };
  // A rung reached and not judged yet (asha without max_epochs): the report
  // that reached it, as badness.
  struct Held {
    int64_t rung = 0;
    TrialReport report;
    double badness = 0;
  };
  struct Sweep {
    std::map<int64_t, Trial> trials;
    std::map<int64_t, std::map<int64_t, double>> rungs;  // asha: rung epoch -> trial -> value
    std::map<int64_t, Held> held;                        // asha: trial -> its rung not judged yet
  };
  static std::optional<std::string> median(const Sweep& s, int64_t trial, const EarlyStopSpec& spec,
                                           const TrialReport& r);
  static std::optional<std::string> asha(Sweep& s, int64_t trial, const EarlyStopSpec& spec,
                                         const TrialReport& r, double badness);
  static std::optional<std::string> judge_rung(Sweep& s, int64_t trial, const EarlyStopSpec& spec,
                                               int64_t rung, const TrialReport& r, double badness);
  std::map<std::string, Sweep> sweeps_;
};

}  // namespace colo
