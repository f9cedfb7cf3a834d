// QosModel: how fast a protected job runs beside N opportunistic neighbours
// under MPS, as a fraction of its solo speed, and what the neighbours harvest
// (the sum of their rates over their solo rates), for the two levers MPS
// gives a client when it starts: below-normal client priority
// (CUDA_MPS_CLIENT_PRIORITY=1) and an active thread percentage
// (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE). See docs/policy.md, "Protected and
// opportunistic jobs".
//
// Prior: the H100 table of issue 56 (one H100 80GB, driver 580; main =
// resnet50 bs 96 at 224 px, 84% SM activity alone; neighbours = resnet26
// bs 128 at 128 px, 63% alone):
//
//   neighbours            main/alone  harvest
//   3 plain                  0.41       0.94
//   3 below normal           0.64       0.67
//   3 ATP 25                 0.60       0.76
//   3 both (ATP 25)          0.72       0.56
//   1 both (ATP 25)          0.89       0.25
//   1 below normal, ATP 10   0.94       0.10
//   2 below normal, ATP 10   0.85       0.30
//
// The protected job's speed: each neighbour exerts a pressure k, and
// speed = 1 / (1 + N k). k depends on the neighbour's priority and on the
// share of the SMs it may keep busy, d = min(its solo SM activity (0.63),
// thread percentage / 100); k(d) is piecewise linear through the table's
// points (at normal priority: k(0.25) = 0.222, k(0.63) = 0.48; below
// normal: k(0.10) = 0.075, k(0.25) = 0.127, k(0.63) = 0.1875), below the
// smallest through zero at normal priority and level below normal (nothing
// under ATP 10 was measured: a client still costs what it cost there), and
// along the last segment above the largest. This reproduces the 3-neighbour
// rows exactly and the others within 3%.
//
// The harvest: the table does not fit one smooth form (1 neighbour at ATP 10
// harvested 0.10, 2 harvested 0.15 each), so each neighbour's rate is read
// from the table's points, below normal priority: at ATP 10, 0.10 / 0.15 /
// 0.15 for 1 / 2 / 3 neighbours; at ATP 25, 0.25 / 0.218 / 0.187; uncapped
// (ATP >= 63), 0.298 / 0.261 / 0.223 (the 3-neighbour point, scaled by the
// ATP 25 row's shape in N: an assumption). Between thread percentages it is
// linear, and through zero below 10. At normal priority a neighbour harvests
// 1.38 times as much (the 3-neighbour rows: 0.94/0.67 and 0.76/0.56), never
// more than its cap allows (d / 0.63 of its solo rate).
//
// The protected job's SM activity s (0..1): the table is at s = 0.84. The
// ASSUMPTION (not measured): the pressure a neighbour exerts scales with
// the protected job's own demand for the SMs, k(s) = k * s / 0.84 (a job
// keeping 10% of the SMs busy meets a neighbour in about an eighth of the
// places a heavy one does), and each neighbour's harvest moves linearly
// from its table value at s = 0.84 towards what it could do beside an idle
// job at s = 0 (its cap, and at most its share of the 93% of SM activity
// MPS delivers: InterferenceModel::spatial_capacity_pct), never below zero.
// A light job at 10% SM therefore leaves much more room than the heavy one.
//
// Pure functions of their arguments; thread-safe.
#pragma once

#include <optional>

namespace colo {

// The levers an opportunistic neighbour starts with (all neighbours alike).
struct OpportunisticLevers {
  bool below_normal_priority = true;  // CUDA_MPS_CLIENT_PRIORITY=1
  int thread_pct = 100;               // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, 1-100
};

struct QosPrediction {
  double protected_speed = 1;  // the protected job's rate over its solo rate, 0..1
  double harvest = 0;          // the neighbours' summed rate over their solo rates
};

// The protected job (solo SM activity `protected_sm`, 0..1, clamped) beside
// `neighbours` opportunistic jobs (0 or more) with `levers`. No neighbour:
// speed 1, harvest 0.
QosPrediction predict_qos(double protected_sm, int neighbours, const OpportunisticLevers& levers);

// The most neighbours a protected job may take at once (the table's range).
inline constexpr int kMaxOpportunisticNeighbours = 3;

struct OpportunisticChoice {
  int neighbours = 0;          // 0: the protected job runs without neighbours
  OpportunisticLevers levers;  // below normal priority, the thread percentage chosen
  QosPrediction predicted;     // with them
};

// The smallest thread percentage colo chooses: the table's smallest.
inline constexpr int kMinOpportunisticThreadPct = 10;

// The largest number of neighbours (0..kMaxOpportunisticNeighbours), each
// below normal priority, and for it the largest thread percentage (a
// multiple of 5 from kMinOpportunisticThreadPct to 100), that keep the
// predicted speed at or above `floor` (0..1). Neighbours: 0 when not even
// one at kMinOpportunisticThreadPct keeps it.
OpportunisticChoice choose_opportunistic_levers(double protected_sm, double floor);

}  // namespace colo
