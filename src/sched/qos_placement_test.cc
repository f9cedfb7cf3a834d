#include "sched/qos_placement.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "sched/qos_model.h"

namespace colo {
namespace {

QosTenant protected_job(size_t job, double sm, double floor = 0.9) {
  return {job, QosClass::kProtected, floor, sm, 100};
}
QosTenant opportunistic_job(size_t job, int thread_pct = 100) {
  return {job, QosClass::kOpportunistic, kDefaultMinSpeed, 0, thread_pct};
}
QosTenant normal_job(size_t job) { return {job, QosClass::kNormal, kDefaultMinSpeed, 0, 100}; }

std::string describe(const WaitingReason& why) {
  return describe_waiting(why, 0, [](size_t j) { return "job " + std::to_string(j); });
}

TEST(QosPlacement, TheLeversFollowTheModelsChoice) {
  // Issue 56: a heavy job (84% SM) at 0.9 leaves room for about one capped
  // neighbour; a light one (10%) for more.
  const QosRoom heavy = qos_room(protected_job(1, 0.84), QosShare::kPriority);
  EXPECT_EQ(heavy.neighbours, 1);
  EXPECT_EQ(heavy.thread_pct, choose_opportunistic_levers(0.84, 0.9).levers.thread_pct);
  const QosRoom light = qos_room(protected_job(1, 0.10), QosShare::kPriority);
  EXPECT_EQ(light.neighbours, kMaxOpportunisticNeighbours);
  EXPECT_EQ(qos_room(protected_job(1, 0.10), QosShare::kNone).neighbours, 1);
  EXPECT_EQ(qos_room(protected_job(1, 0.10), QosShare::kNone).thread_pct, std::nullopt);
}

TEST(QosPlacement, EachRule) {
  const int heavy_pct = *qos_room(protected_job(1, 0.84), QosShare::kPriority).thread_pct;
  const int light_pct = *qos_room(protected_job(1, 0.10), QosShare::kPriority).thread_pct;
  struct Case {
    const char* what;
    std::vector<QosTenant> on_gpu;
    QosTenant joining;
    QosShare share;
    bool admitted;
    bool opportunistic;
    std::optional<int> thread_pct;
    std::string why;  // describe_waiting() of a refusal
  };
  const std::vector<Case> cases = {
      {"normal beside normal: as before",
       {normal_job(1)},
       normal_job(2),
       QosShare::kPriority,
       true,
       false,
       std::nullopt,
       ""},
      {"opportunistic on an empty GPU: below normal, uncapped",
       {},
       opportunistic_job(2),
       QosShare::kPriority,
       true,
       true,
       std::nullopt,
       ""},
      {"opportunistic beside normal jobs",
       {normal_job(1), normal_job(3)},
       opportunistic_job(2),
       QosShare::kPriority,
       true,
       true,
       std::nullopt,
       ""},
      {"protected on an empty GPU",
       {},
       protected_job(2, 0.84),
       QosShare::kPriority,
       true,
       false,
       std::nullopt,
       ""},
      {"normal beside a protected job: refused",
       {protected_job(12, 0.84)},
       normal_job(2),
       QosShare::kPriority,
       false,
       false,
       std::nullopt,
       "protected: gpu0 holds job 12, protected at 0.90, which takes only opportunistic "
       "neighbours"},
      {"protected beside a protected job: refused",
       {protected_job(12, 0.10)},
       protected_job(2, 0.10),
       QosShare::kPriority,
       false,
       false,
       std::nullopt,
       "protected: gpu0 holds job 12, protected at 0.90, which takes only opportunistic "
       "neighbours"},
      {"opportunistic beside a heavy protected job: capped",
       {protected_job(12, 0.84)},
       opportunistic_job(2),
       QosShare::kPriority,
       true,
       true,
       heavy_pct,
       ""},
      {"a second beside the heavy one: refused",
       {protected_job(12, 0.84), opportunistic_job(3, heavy_pct)},
       opportunistic_job(2),
       QosShare::kPriority,
       false,
       false,
       std::nullopt,
       "protected: gpu0 holds job 12, protected at 0.90, which takes at most 1 opportunistic "
       "neighbour at its floor, and has 1"},
      {"a third beside a light protected job",
       {protected_job(12, 0.10), opportunistic_job(3, light_pct), opportunistic_job(4, light_pct)},
       opportunistic_job(2),
       QosShare::kPriority,
       true,
       true,
       light_pct,
       ""},
      {"a fourth beside the light one: refused",
       {protected_job(12, 0.10), opportunistic_job(3, light_pct), opportunistic_job(4, light_pct),
        opportunistic_job(5, light_pct)},
       opportunistic_job(2),
       QosShare::kPriority,
       false,
       false,
       std::nullopt,
       "protected: gpu0 holds job 12, protected at 0.90, which takes at most 3 opportunistic "
       "neighbours at its floor, and has 3"},
      {"a floor of 1.0 takes no neighbour",
       {protected_job(12, 0.84, 1.0)},
       opportunistic_job(2),
       QosShare::kPriority,
       false,
       false,
       std::nullopt,
       "protected: gpu0 holds job 12, protected at 1.00, which takes no neighbour at its floor, "
       "and has 0"},
      {"protected beside a normal job: refused",
       {normal_job(7), opportunistic_job(3)},
       protected_job(2, 0.10),
       QosShare::kPriority,
       false,
       false,
       std::nullopt,
       "protected: gpu0 holds job 7, which is normal; a protected job shares a GPU only with "
       "opportunistic jobs"},
      {"light protected beside opportunistic jobs started uncapped",
       {opportunistic_job(3), opportunistic_job(4)},
       protected_job(2, 0.10),
       QosShare::kPriority,
       true,
       false,
       std::nullopt,
       ""},
      {"heavy protected beside an uncapped opportunistic job: below its floor",
       {opportunistic_job(3)},
       protected_job(2, 0.84),
       QosShare::kPriority,
       false,
       false,
       std::nullopt,
       "protected: gpu0 holds job 3 (opportunistic); this job, protected at 0.90, takes at most "
       "1 opportunistic neighbour"},
      {"naive: one opportunistic neighbour",
       {protected_job(12, 0.84)},
       opportunistic_job(2),
       QosShare::kNone,
       true,
       true,
       std::nullopt,
       ""},
      {"naive: not a second",
       {protected_job(12, 0.10), opportunistic_job(3)},
       opportunistic_job(2),
       QosShare::kNone,
       false,
       false,
       std::nullopt,
       "protected: gpu0 holds job 12, protected at 0.90, which takes at most 1 opportunistic "
       "neighbour at its floor, and has 1"},
      {"naive: protected beside two opportunistic jobs",
       {opportunistic_job(3), opportunistic_job(4)},
       protected_job(2, 0.10),
       QosShare::kNone,
       false,
       false,
       std::nullopt,
       "protected: gpu0 holds job 3 and 1 more opportunistic jobs; this job, protected at 0.90, "
       "takes at most 1 opportunistic neighbour"},
      {"naive: normal beside a protected job refused",
       {protected_job(12, 0.10)},
       normal_job(2),
       QosShare::kNone,
       false,
       false,
       std::nullopt,
       "protected: gpu0 holds job 12, protected at 0.90, which takes only opportunistic "
       "neighbours"},
      {"MIG: nothing changes (normal beside protected)",
       {protected_job(12, 0.84)},
       normal_job(2),
       QosShare::kInstance,
       true,
       false,
       std::nullopt,
       ""},
      {"MIG: no levers for an opportunistic job",
       {protected_job(12, 0.84)},
       opportunistic_job(2),
       QosShare::kInstance,
       true,
       false,
       std::nullopt,
       ""},
  };
  for (const Case& c : cases) {
    const QosJoin j = qos_join(0, c.on_gpu, c.joining, c.share);
    EXPECT_EQ(j.admitted, c.admitted) << c.what;
    EXPECT_EQ(j.opportunistic, c.opportunistic) << c.what;
    EXPECT_EQ(j.thread_pct, c.thread_pct) << c.what;
    EXPECT_EQ(j.why ? describe(*j.why) : "", c.why) << c.what;
  }
}

}  // namespace
}  // namespace colo
