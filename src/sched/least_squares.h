// A straight line fitted by least squares, for the estimates of sched/:
// a family's quantities against its parameters (family.h) and priors
// against a job's size (prior.h).
#pragma once

#include <optional>
#include <span>
#include <utility>

namespace colo {

struct Line {
  double intercept = 0;
  double slope = 0;
  double at(double x) const { return intercept + slope * x; }
};

// The line through `points` (x, y) that minimises the squared errors in y;
// nullopt without two distinct x.
inline std::optional<Line> fit_line(std::span<const std::pair<double, double>> points) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const auto n = static_cast<double>(points.size());
  const double d = n * sxx - sx * sx;
  if (points.size() < 2 || !(d > 1e-12 * (1 + sxx * n))) return std::nullopt;
  const double slope = (n * sxy - sx * sy) / d;
  return Line{(sy - slope * sx) / n, slope};
}

}  // namespace colo
