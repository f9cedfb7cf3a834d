#include "run/objective_watch.h"

#include <algorithm>
#include <iterator>
#include <string_view>
#include <utility>

#include "analysis/training_metrics.h"

namespace colo {

ObjectiveWatch::ObjectiveWatch(std::string objective, std::string job)
    : objective_(std::move(objective)), job_(std::move(job)) {}

std::optional<std::string> ObjectiveWatch::saw(const ProgressEvent& e, int64_t epochs_ended) {
  if (seen_ || warned_) return std::nullopt;
  static constexpr std::string_view kJobKinds[] = {"start", "epoch_start", "epoch_end",
                                                   "step",  "metric",      "end"};
  if (std::find(std::begin(kJobKinds), std::end(kJobKinds), e.kind) == std::end(kJobKinds))
    return std::nullopt;  // colo's own events (requeued, ...)
  if (e.metrics.contains(objective_)) {
    seen_ = true;
    return std::nullopt;
  }
  for (const auto& [name, value] : e.metrics) {
    if (reported_.size() < kMaxNames && is_training_metric(name)) reported_.insert(name);
  }
  const bool past_first_epoch =
      ((e.kind == "step" || e.kind == "epoch_start") && epochs_ended >= 1) ||
      (e.kind == "epoch_end" && epochs_ended >= 2);
  return past_first_epoch ? warn() : std::nullopt;
}

std::optional<std::string> ObjectiveWatch::ended() {
  if (seen_ || warned_) return std::nullopt;
  return warn();
}

std::optional<std::string> ObjectiveWatch::warn() {
  std::optional<std::string> w = objective_not_reported(
      objective_, job_, std::vector<std::string>(reported_.begin(), reported_.end()));
  if (w) warned_ = true;
  return w;
}

}  // namespace colo
