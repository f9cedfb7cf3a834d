#include "run/early_stop.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace colo {
namespace {

constexpr double kWorst = std::numeric_limits<double>::infinity();

double badness(double value, bool lower_is_better) {
  if (!std::isfinite(value)) return kWorst;
  return lower_is_better ? value : -value;
}

// Back to the metric's own sign, as the job reported it.
std::string shown(double bad, bool lower_is_better) {
  if (std::isinf(bad)) return "NaN or infinite";
  return fmt::format("{:.4g}", lower_is_better ? bad : -bad);
}

// The q-quantile (0..1) of `values`, linear between neighbours as numpy's
// percentile; an infinite neighbour makes it infinite.
double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(at));
  const double frac = at - static_cast<double>(lo);
  if (frac == 0 || lo + 1 >= values.size()) return values[lo];
  if (std::isinf(values[lo + 1])) return kWorst;
  return values[lo] + frac * (values[lo + 1] - values[lo]);
}

}  // namespace

void EarlyStopper::Trial::add(int64_t epoch, double value) {
  const double best = std::min(value, best_by(epoch));
  best_so_far[epoch] = best;
  // Later epochs (a retried attempt reports its epochs again) keep the better.
  for (auto it = best_so_far.upper_bound(epoch); it != best_so_far.end(); ++it)
    it->second = std::min(it->second, best);
}

double EarlyStopper::Trial::best_by(int64_t epoch) const {
  auto it = best_so_far.upper_bound(epoch);
  return it == best_so_far.begin() ? kWorst : std::prev(it)->second;
}

std::optional<std::string> EarlyStopper::report(const std::string& sweep, int64_t trial,
                                                const EarlyStopSpec& spec, const TrialReport& r) {
  if (r.epoch < 1) return std::nullopt;
  Sweep& s = sweeps_[sweep];
  const double bad = badness(r.value, r.lower_is_better);
  s.trials[trial].add(r.epoch, bad);
  if (spec.rule == EarlyStopRule::kMedian)
    return r.epoch < spec.min_epochs ? std::nullopt : median(s, trial, spec, r);
  // Ray Tune's max_t: the trials' last epoch, where known.
  const std::optional<int64_t> last =
      spec.max_epochs ? std::optional<int64_t>(*spec.max_epochs) : s.last_epoch;
  const bool goes_on = last && r.epoch < *last;
  if (auto held = s.held.find(trial); held != s.held.end()) {
    if (!goes_on) return std::nullopt;  // held still: this may be its last epoch
    std::string verdict = std::move(held->second.verdict);
    s.held.erase(held);
    return verdict;
  }
  if (r.epoch < spec.min_epochs) return std::nullopt;
  std::optional<std::string> verdict = asha(s, trial, spec, r, bad, last);
  if (!verdict || goes_on) return verdict;
  s.held[trial] = Held{r.epoch, std::move(*verdict)};
  return std::nullopt;
}

std::optional<std::string> EarlyStopper::went_past(const std::string& sweep, int64_t trial,
                                                   int64_t epoch) {
  auto s = sweeps_.find(sweep);
  if (s == sweeps_.end()) return std::nullopt;
  auto held = s->second.held.find(trial);
  if (held == s->second.held.end() || held->second.epoch > epoch) return std::nullopt;
  std::string verdict = std::move(held->second.verdict);
  s->second.held.erase(held);
  return verdict;
}

void EarlyStopper::ended(const std::string& sweep, int64_t trial, int64_t epochs,
                         bool ran_to_its_end) {
  auto s = sweeps_.find(sweep);
  if (s == sweeps_.end()) return;
  s->second.held.erase(trial);
  if (ran_to_its_end && epochs > 0)
    s->second.last_epoch = std::max(s->second.last_epoch.value_or(0), epochs);
}

std::optional<std::string> EarlyStopper::median(const Sweep& s, int64_t trial,
                                                const EarlyStopSpec& spec, const TrialReport& r) {
  const double own = s.trials.at(trial).best_by(r.epoch);
  std::vector<double> others;
  for (const auto& [id, t] : s.trials) {
    if (id != trial && t.best_so_far.rbegin()->first >= r.epoch)
      others.push_back(t.best_by(r.epoch));
  }
  if (others.size() < static_cast<size_t>(spec.min_trials)) return std::nullopt;
  const double m = quantile(others, 0.5);
  if (!(own > m)) return std::nullopt;
  return fmt::format(
      "stopped early by the median rule at epoch {}: its best {} so far, {}, is worse than {}, "
      "the median of the best by epoch {} of the {} other trials that got that far",
      r.epoch, r.metric, shown(own, r.lower_is_better), shown(m, r.lower_is_better), r.epoch,
      others.size());
}

std::optional<std::string> EarlyStopper::asha(Sweep& s, int64_t trial, const EarlyStopSpec& spec,
                                              const TrialReport& r, double bad,
                                              std::optional<int64_t> last_epoch) {
  // The highest rung at or below this epoch, and below the last.
  int64_t rung = 0;
  for (int64_t at = spec.min_epochs; at <= r.epoch; at *= spec.reduction) {
    if (last_epoch && at >= *last_epoch) break;
    rung = at;
  }
  if (rung == 0) return std::nullopt;
  std::map<int64_t, double>& recorded = s.rungs[rung];
  if (recorded.contains(trial)) return std::nullopt;  // judged there already
  std::vector<double> before;
  before.reserve(recorded.size());
  for (const auto& [id, v] : recorded) before.push_back(v);
  recorded[trial] = bad;
  if (before.empty()) return std::nullopt;
  const double cutoff = quantile(before, 1.0 / spec.reduction);
  if (!(bad > cutoff)) return std::nullopt;
  return fmt::format(
      "stopped early by ASHA at its rung of epoch {}: its {} there, {}, is worse than {}, the cut "
      "of the best 1/{} among the {} trial{} judged there before it",
      rung, r.metric, shown(bad, r.lower_is_better), shown(cutoff, r.lower_is_better),
      spec.reduction, before.size(), before.size() == 1 ? "" : "s");
}

}  // namespace colo
