#include "analysis/training_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

#include "common/text.h"

namespace colo {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool is_training_metric(std::string_view name) {
  static constexpr std::array<std::string_view, 6> kColoFigures = {
      "img_per_s", "samples_per_s", "epoch_time_s", "total_time_s", "step_time_s", "time"};
  if (std::find(kColoFigures.begin(), kColoFigures.end(), name) != kColoFigures.end()) return false;
  static constexpr std::array<std::string_view, 8> kUnits = {"_mib", "_gib",   "_kib",   "_mb",
                                                             "_gb",  "_bytes", "_per_s", "_time_s"};
  const std::string lower = ascii_lower(name);
  for (std::string_view unit : kUnits) {
    if (lower.size() > unit.size() && lower.ends_with(unit)) return false;
  }
  return !starts_with(name, "max_memory_") && !starts_with(name, "simulated");
}

bool lower_is_better(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kLower = {"loss", "error", "err",        "mse",
                                                             "mae",  "rmse",  "perplexity", "ppl"};
  const std::string n = ascii_lower(name);
  // Split at anything that is not a letter: "val_loss" -> val, loss; "top1err" -> top, err.
  size_t i = 0;
  while (i < n.size()) {
    while (i < n.size() && !std::isalpha(static_cast<unsigned char>(n[i]))) ++i;
    size_t j = i;
    while (j < n.size() && std::isalpha(static_cast<unsigned char>(n[j]))) ++j;
    const std::string_view part(n.data() + i, j - i);
    if (!part.empty() && std::find(kLower.begin(), kLower.end(), part) != kLower.end()) return true;
    i = j;
  }
  return false;
}

std::optional<UnixMillis> results_frozen_at(const std::vector<ProgressEvent>& events,
                                            std::optional<UnixMillis> since_ms) {
  std::optional<UnixMillis> at;
  for (const ProgressEvent& e : events) {
    if (e.kind != kEarlyStoppedEvent || (since_ms && e.time_ms < *since_ms)) continue;
    if (!at || e.time_ms < *at) at = e.time_ms;
  }
  return at;
}

std::vector<MetricSeries> training_metrics(const std::vector<ProgressEvent>& events,
                                           std::optional<UnixMillis> since_ms,
                                           const MetricGoals& goals) {
  const std::optional<UnixMillis> frozen_ms = results_frozen_at(events, since_ms);
  std::map<std::string, MetricSeries> by_name;
  for (const ProgressEvent& e : events) {
    if (since_ms && e.time_ms < *since_ms) continue;
    if (frozen_ms && e.time_ms > *frozen_ms) continue;
    static constexpr std::array<std::string_view, 5> kJobKinds = {"start", "epoch_end", "step",
                                                                  "metric", "end"};
    if (std::find(kJobKinds.begin(), kJobKinds.end(), e.kind) == kJobKinds.end()) continue;
    for (const auto& [name, value] : e.metrics) {
      if (!is_training_metric(name)) continue;
      MetricSeries& s = by_name[name];
      s.points.push_back({e.time_ms, e.step, e.epoch, value});
    }
  }
  std::vector<MetricSeries> out;
  for (auto& [name, s] : by_name) {
    s.name = name;
    auto goal = goals.find(name);
    s.declared = goal != goals.end();
    s.lower_is_better = s.declared ? goal->second : lower_is_better(name);
    std::stable_sort(
        s.points.begin(), s.points.end(),
        [](const MetricPoint& a, const MetricPoint& b) { return a.time_ms < b.time_ms; });
    s.last = s.points.back().value;
    s.best = std::numeric_limits<double>::quiet_NaN();
    for (const MetricPoint& p : s.points) {
      if (!std::isfinite(p.value)) {
        s.diverged = true;
      } else if (std::isnan(s.best)) {
        s.best = p.value;
      } else {
        s.best = s.lower_is_better ? std::min(s.best, p.value) : std::max(s.best, p.value);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<std::string> objective_not_reported(std::string_view objective, std::string_view job,
                                                  const std::vector<std::string>& reported) {
  if (reported.empty() || std::find(reported.begin(), reported.end(), objective) != reported.end())
    return std::nullopt;
  constexpr size_t kNamed = 8;  // a job may report a thousand names
  std::string names;
  for (size_t i = 0; i < std::min(reported.size(), kNamed); ++i)
    names += (i > 0 ? ", " : "") + reported[i];
  if (reported.size() > kNamed) names += fmt::format(" and {} more", reported.size() - kNamed);
  return fmt::format(
      "objective '{}' not reported by {}: it reports {}; early stopping cannot judge it, nor colo "
      "show rank by it",
      objective, job, names);
}

const MetricSeries* find_metric(const std::vector<MetricSeries>& metrics, std::string_view name) {
  auto it = std::lower_bound(metrics.begin(), metrics.end(), name,
                             [](const MetricSeries& s, std::string_view n) { return s.name < n; });
  return it != metrics.end() && it->name == name ? &*it : nullptr;
}

bool wants_log_axis(double low, double high) {
  return low > 0 && std::isfinite(high) && high >= kLogAxisSpan * low;
}

bool wants_log_axis(const std::vector<MetricPoint>& points) {
  double low = 0;
  double high = 0;
  int finite = 0;
  for (const MetricPoint& p : points) {
    if (!std::isfinite(p.value)) continue;
    low = finite == 0 ? p.value : std::min(low, p.value);
    high = finite == 0 ? p.value : std::max(high, p.value);
    ++finite;
  }
  return finite >= 2 && wants_log_axis(low, high);
}

}  // namespace colo
