#include "sched/qos_model.h"

#include <gtest/gtest.h>

#include <vector>

namespace colo {
namespace {

// Issue 56's H100 table: resnet50 main (84% SM alone) beside resnet26
// neighbours under one MPS daemon, steady medians.
struct Row {
  const char* what;
  int neighbours;
  OpportunisticLevers levers;
  double speed, harvest;
};
const std::vector<Row>& h100_table() {
  static const std::vector<Row> rows = {
      {"3 plain", 3, {false, 100}, 0.41, 0.94},
      {"3 below normal", 3, {true, 100}, 0.64, 0.67},
      {"3 ATP 25", 3, {false, 25}, 0.60, 0.76},
      {"3 both", 3, {true, 25}, 0.72, 0.56},
      {"1 both", 1, {true, 25}, 0.89, 0.25},
      {"1 below normal, ATP 10", 1, {true, 10}, 0.94, 0.10},
      {"2 below normal, ATP 10", 2, {true, 10}, 0.85, 0.30},
  };
  return rows;
}

TEST(QosModel, ReproducesEveryRowOfTheH100TableWithinTenPercent) {
  for (const Row& r : h100_table()) {
    const QosPrediction p = predict_qos(0.84, r.neighbours, r.levers);
    EXPECT_NEAR(p.protected_speed / r.speed, 1.0, 0.10)
        << r.what << ": predicted speed " << p.protected_speed;
    EXPECT_NEAR(p.harvest / r.harvest, 1.0, 0.10) << r.what << ": predicted harvest " << p.harvest;
  }
}

TEST(QosModel, NoNeighbourLeavesTheJobAtItsSoloSpeed) {
  for (double sm : {0.0, 0.1, 0.84, 1.0}) {
    const QosPrediction p = predict_qos(sm, 0, {});
    EXPECT_EQ(p.protected_speed, 1.0);
    EXPECT_EQ(p.harvest, 0.0);
  }
}

// Each lever, more neighbours and a heavier protected job each cost the
// protected job speed; the levers move the harvest the other way.
TEST(QosModel, SpeedFallsWithEveryNeighbourEveryUncappedThreadAndTheJobsOwnLoad) {
  struct Case {
    const char* what;
    double sm_a;
    int n_a;
    OpportunisticLevers a;
    double sm_b;
    int n_b;
    OpportunisticLevers b;  // the protected job is slower under b
  };
  const std::vector<Case> cases = {
      {"a neighbour more", 0.84, 1, {true, 25}, 0.84, 2, {true, 25}},
      {"a neighbour more, light", 0.10, 2, {true, 50}, 0.10, 3, {true, 50}},
      {"normal priority", 0.84, 2, {true, 25}, 0.84, 2, {false, 25}},
      {"more threads", 0.84, 1, {true, 10}, 0.84, 1, {true, 40}},
      {"a heavier protected job", 0.10, 3, {false, 100}, 0.84, 3, {false, 100}},
  };
  for (const Case& c : cases) {
    const QosPrediction a = predict_qos(c.sm_a, c.n_a, c.a);
    const QosPrediction b = predict_qos(c.sm_b, c.n_b, c.b);
    EXPECT_GT(a.protected_speed, b.protected_speed) << c.what;
    if (c.sm_a == c.sm_b) {
      EXPECT_LT(a.harvest, b.harvest) << c.what;
    }
  }
}

// The assumption for a light protected job (about 10% SM alone, not
// measured): much more room than for the heavy one, for speed and harvest.
TEST(QosModel, ALightProtectedJobLeavesMuchMoreRoom) {
  const OpportunisticLevers both{true, 25};
  const QosPrediction heavy = predict_qos(0.84, 3, both);
  const QosPrediction light = predict_qos(0.10, 3, both);
  EXPECT_GT(light.protected_speed, 0.95);
  EXPECT_GT(light.harvest, 1.5 * heavy.harvest);
  // Never more than the neighbours' caps allow.
  EXPECT_LE(light.harvest, 3 * 0.25 / 0.63 + 1e-9);
}

TEST(QosModel, ChoosesTheMostNeighboursAndThreadsThatKeepTheFloor) {
  struct Case {
    const char* what;
    double sm, floor;
    int neighbours;
    int min_pct, max_pct;  // the thread percentage chosen lies within
  };
  const std::vector<Case> cases = {
      // The finding: a 0.9 floor leaves the heavy job about one capped neighbour.
      {"heavy at 0.9", 0.84, 0.9, 1, 20, 20},   {"heavy at 0.8", 0.84, 0.8, 3, 10, 15},
      {"heavy at 0.99", 0.84, 0.99, 0, 0, 100}, {"light at 0.9", 0.10, 0.9, 3, 100, 100},
      {"light at 0.97", 0.10, 0.97, 3, 10, 50}, {"floor 0 takes all", 1.0, 0.0, 3, 100, 100},
  };
  for (const Case& c : cases) {
    const OpportunisticChoice choice = choose_opportunistic_levers(c.sm, c.floor);
    EXPECT_EQ(choice.neighbours, c.neighbours) << c.what;
    if (choice.neighbours == 0) {
      EXPECT_EQ(choice.predicted.protected_speed, 1.0) << c.what;
      continue;
    }
    EXPECT_TRUE(choice.levers.below_normal_priority) << c.what;
    EXPECT_GE(choice.levers.thread_pct, c.min_pct) << c.what;
    EXPECT_LE(choice.levers.thread_pct, c.max_pct) << c.what;
    EXPECT_GE(choice.predicted.protected_speed, c.floor - 1e-9) << c.what;
    // The next step up breaks the floor: the choice is the largest.
    if (choice.levers.thread_pct < 100) {
      const QosPrediction more =
          predict_qos(c.sm, choice.neighbours, {true, choice.levers.thread_pct + 5});
      EXPECT_LT(more.protected_speed, c.floor) << c.what;
    }
    if (choice.neighbours < kMaxOpportunisticNeighbours) {
      const QosPrediction one_more =
          predict_qos(c.sm, choice.neighbours + 1, {true, kMinOpportunisticThreadPct});
      EXPECT_LT(one_more.protected_speed, c.floor) << c.what;
    }
  }
}

}  // namespace
}  // namespace colo
