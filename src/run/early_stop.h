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
  //  - asha: at each rung (epochs min_epochs * reduction^k, below the
  //    sweep's last epoch), once, the first time it reports at or past the
  //    rung and at no higher one: outside the best 1/reduction of the
  //    values the trials judged there before it stops it (the first judged
  //    goes on). The last epoch is Ray Tune's max_t: max_epochs, else the
  //    most epochs a trial of the sweep ran to its end (ended), else not
  //    known; while it is not known to lie past the epoch reported, a
  //    verdict to stop is held until the trial shows it is at work past
  //    that epoch (went_past), so that a trial that ran all its epochs is
  //    never stopped early.
  std::optional<std::string> report(const std::string& sweep, int64_t trial,
                                    const EarlyStopSpec& spec, const TrialReport& r);

  // Trial `trial` of `sweep` is at work past its epoch `epoch`, which ended
  // (a step or an epoch's start after it): its held verdict to stop, if it
  // was reached at that epoch or before, else nullopt.
  std::optional<std::string> went_past(const std::string& sweep, int64_t trial, int64_t epoch);

  // Trial `trial` of `sweep` ended after `epochs` epochs; `ran_to_its_end`:
  // on its own, all its epochs done (not stopped, not failed), which makes
  // `epochs` a last epoch of the sweep. A verdict held for it is dropped.
  void ended(const std::string& sweep, int64_t trial, int64_t epochs, bool ran_to_its_end);

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
  // A verdict to stop, held until the trial shows it goes on past `epoch`.
  struct Held {
    int64_t epoch = 0;
    std::string verdict;
  };
  struct Sweep {
    std::map<int64_t, Trial> trials;
    std::map<int64_t, std::map<int64_t, double>> rungs;  // asha: rung epoch -> trial -> value
    std::map<int64_t, Held> held;                        // asha: trial -> its verdict held
    std::optional<int64_t> last_epoch;                   // the most epochs a trial ran to its end
  };
  static std::optional<std::string> median(const Sweep& s, int64_t trial, const EarlyStopSpec& spec,
                                           const TrialReport& r);
  static std::optional<std::string> asha(Sweep& s, int64_t trial, const EarlyStopSpec& spec,
                                         const TrialReport& r, double badness,
                                         std::optional<int64_t> last_epoch);
  std::map<std::string, Sweep> sweeps_;
};

}  // namespace colo
