#include "sched/prior.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "sched/least_squares.h"

namespace colo {
namespace {

// The q-quantile (0..1) of `values`, interpolated; `values` not empty.
double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(at));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (at - static_cast<double>(lo));
}

double peak_of(const PriorSample& s) { return static_cast<double>(*s.measured.peak_memory_bytes); }

}  // namespace

PriorModel::PriorModel(std::vector<PriorSample> measured, uint64_t gpu_memory_bytes)
    : gpu_memory_bytes_(gpu_memory_bytes) {
  for (PriorSample& s : measured) {
    if (s.measured.peak_memory_bytes && *s.measured.peak_memory_bytes > 0 &&
        s.measured.sm_active_pct)
      samples_.push_back(std::move(s));
  }
}

JobProfile PriorModel::prior(const JobFeatures& f) const {
  JobProfile p;
  const std::optional<double> size = f.size();
  auto finish = [&](double memory, double sm, double uncertainty, std::string source) {
    const auto gpu = static_cast<double>(gpu_memory_bytes_);
    p.peak_memory_bytes = static_cast<uint64_t>(gpu > 0 ? std::min(memory, gpu) : memory);
    p.sm_active_pct = std::clamp(sm, 1.0, 100.0);
    p.memory_uncertainty = p.sm_uncertainty = uncertainty;
    p.source = "prior: " + std::move(source);
    return p;
  };

  std::vector<const PriorSample*> same;
  for (const PriorSample& s : samples_) {
    if (!f.model.empty() && s.features.model == f.model) same.push_back(&s);
  }
  if (!same.empty()) {
    // The nearest size; an unknown size is nearest to an unknown size.
    auto distance = [&](const PriorSample& s) {
      const std::optional<double> other = s.features.size();
      if (size && other) return std::abs(std::log(*size / *other));
      return size || other ? 1.0 : 0.0;
    };
    const PriorSample& nearest = **std::min_element(
        same.begin(), same.end(),
        [&](const PriorSample* a, const PriorSample* b) { return distance(*a) < distance(*b); });
    std::vector<std::pair<double, double>> points;
    std::set<double> sizes;
    for (const PriorSample* s : same) {
      if (std::optional<double> x = s->features.size()) {
        points.emplace_back(*x, peak_of(*s));
        sizes.insert(*x);
      }
    }
    double memory = peak_of(nearest);
    double uncertainty = 0.1;
    std::string how = "at the same size";
    const std::optional<double> nearest_size = nearest.features.size();
    const std::optional<Line> fit = sizes.size() >= 2 ? fit_line(points) : std::nullopt;
    if (size && fit && fit->slope > 0 && distance(nearest) > 1e-9) {
      memory = std::max(fit->at(*size), 0.1 * memory);
      uncertainty = 0.25;
      how = fmt::format("fitted across {} sizes", sizes.size());
    } else if (size && nearest_size && distance(nearest) > 1e-9) {
      // Most of a training step's memory grows with its size; some (the
      // weights, the optimizer's state, the CUDA context) does not.
      memory *= 0.3 + 0.7 * (*size / *nearest_size);
      uncertainty = 0.4;
      how = fmt::format("scaled from {}", nearest.features.describe());
    } else if (distance(nearest) > 1e-9) {
      uncertainty = 0.4;
      how = "at an unknown size";
    }
    p.gpu_util_pct = nearest.measured.gpu_util_pct;
    p.startup_ms = nearest.measured.startup_ms;
    if (nearest.measured.samples_per_s) {
      p.samples_per_s = nearest.measured.samples_per_s;
      p.rate_uncertainty = std::max(0.5, uncertainty);
    }
    return finish(memory, *nearest.measured.sm_active_pct, uncertainty,
                  fmt::format("{} measured as {}, {}", f.model, nearest.name, how));
  }

  std::vector<double> memories;
  std::vector<double> sms;
  std::vector<std::pair<double, double>> logs;
  for (const PriorSample& s : samples_) {
    memories.push_back(peak_of(s));
    sms.push_back(*s.measured.sm_active_pct);
    if (std::optional<double> x = s.features.size())
      logs.emplace_back(std::log(*x), std::log(peak_of(s)));
  }
  if (size && logs.size() >= 3) {
    if (std::optional<Line> fit = fit_line(logs)) {
      double scatter = 0;
      for (const auto& [x, y] : logs) scatter += std::pow(y - fit->at(x), 2);
      scatter = std::sqrt(scatter / static_cast<double>(logs.size()));
      const double predicted = std::exp(fit->at(std::log(*size)));
      return finish(
          std::max(predicted, quantile(memories, 0.5)), quantile(sms, 0.75),
          std::max(0.5, std::exp(scatter) - 1.0),
          fmt::format("fitted by size across the {} jobs measured on this GPU model", logs.size()));
    }
  }
  if (!samples_.empty()) {
    return finish(quantile(memories, 0.9), quantile(sms, 0.9), 0.5,
                  fmt::format("the 90th percentile of the {} jobs measured on this GPU model",
                              samples_.size()));
  }
  return finish(static_cast<double>(gpu_memory_bytes_) / 4, 50.0, 1.0,
                "nothing measured on this GPU model yet: a quarter of its memory, half its SMs");
}

}  // namespace colo
