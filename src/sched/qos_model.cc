#include "sched/qos_model.h"

#include <algorithm>
#include <array>
#include <span>

namespace colo {
namespace {

struct Point {
  double x, y;
};

// The table's conditions (qos_model.h).
constexpr double kTableProtectedSm = 0.84;
constexpr double kNeighbourSm = 0.63;
constexpr double kSpatialCapacity = 0.93;  // InterferenceModel::spatial_capacity_pct / 100
constexpr double kNormalPriorityHarvest = 1.38;

constexpr std::array<Point, 2> kPressureNormal = {{{0.25, 0.222}, {0.63, 0.48}}};
constexpr std::array<Point, 3> kPressureBelowNormal = {
    {{0.10, 0.075}, {0.25, 0.127}, {0.63, 0.1875}}};
// Each neighbour's rate over its solo rate, below normal priority, by d, for
// 1, 2 and 3 neighbours.
constexpr std::array<std::array<Point, 3>, 3> kHarvestBelowNormal = {{
    {{{0.10, 0.10}, {0.25, 0.25}, {0.63, 0.2983}}},
    {{{0.10, 0.15}, {0.25, 0.2185}, {0.63, 0.2607}}},
    {{{0.10, 0.15}, {0.25, 0.187}, {0.63, 0.2233}}},
}};

// Piecewise linear through `points` (x ascending): below the first, through
// zero (`below` kZero) or level (kLevel); along the last segment beyond the
// last.
enum class Below { kZero, kLevel };
double through(std::span<const Point> points, double x, Below below) {
  if (x <= points.front().x) {
    return below == Below::kLevel ? points.front().y : points.front().y * x / points.front().x;
  }
  for (size_t i = 1; i < points.size(); ++i) {
    const Point& a = points[i - 1];
    const Point& b = points[i];
    if (x <= b.x || i + 1 == points.size()) return a.y + (b.y - a.y) * (x - a.x) / (b.x - a.x);
  }
  return points.back().y;
}

}  // namespace

QosPrediction predict_qos(double protected_sm, int neighbours, const OpportunisticLevers& levers) {
  if (neighbours <= 0) return {};
  const double s = std::clamp(protected_sm, 0.0, 1.0);
  const double n = neighbours;
  // The share of the SMs one neighbour may keep busy.
  const double d = std::min(kNeighbourSm, std::clamp(levers.thread_pct, 1, 100) / 100.0);
  // Below the table's smallest thread percentage a neighbour still costs what
  // it cost there (nothing smaller was measured).
  const double k = levers.below_normal_priority ? through(kPressureBelowNormal, d, Below::kLevel)
                                                : through(kPressureNormal, d, Below::kZero);
  QosPrediction out;
  out.protected_speed = 1.0 / (1.0 + n * k * s / kTableProtectedSm);

  const auto& row = kHarvestBelowNormal[static_cast<size_t>(std::min(neighbours, 3) - 1)];
  const double cap = d / kNeighbourSm;
  double each = through(row, d, Below::kZero);
  if (!levers.below_normal_priority) each *= kNormalPriorityHarvest;
  each = std::min(each, cap);
  // Beside an idle protected job: its cap, within its share of what MPS delivers.
  const double room = std::min(d, kSpatialCapacity / n) / kNeighbourSm;
  each += (room - each) * (1.0 - s / kTableProtectedSm);
  out.harvest = n * std::clamp(each, 0.0, cap);
  return out;
}

OpportunisticChoice choose_opportunistic_levers(double protected_sm, double floor) {
  constexpr double kSlack = 1e-9;  // a prediction exactly at the floor keeps it
  for (int n = kMaxOpportunisticNeighbours; n >= 1; --n) {
    for (int pct = 100; pct >= kMinOpportunisticThreadPct; pct -= 5) {
      const OpportunisticLevers levers{true, pct};
      const QosPrediction p = predict_qos(protected_sm, n, levers);
      if (p.protected_speed + kSlack >= floor) return {n, levers, p};
    }
  }
  return {};
}

}  // namespace colo
