#include "sched/qos_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "sched/qos_model.h"

namespace colo {

namespace {

// Whether `protector` keeps its floor beside `neighbours` opportunistic
// clients whose largest thread percentage is `thread_pct`.
bool keeps_floor(const QosTenant& protector, int neighbours, int thread_pct, QosShare share) {
  if (share != QosShare::kPriority || neighbours == 0) return true;
  const QosPrediction p = predict_qos(protector.sm, neighbours, {true, thread_pct});
  return p.protected_speed + 1e-9 >= protector.min_speed;
}

WaitingReason refused_by(int device, const QosTenant& protector, std::string why) {
  WaitingReason r;
  r.kind = WaitingReason::Kind::kProtected;
  r.head = protector.job;
  r.device = device;
  r.min_speed = protector.min_speed;
  r.qos_why = std::move(why);
  return r;
}

std::string neighbours_text(int n) {
  return n == 0 ? std::string("no neighbour")
                : fmt::format("at most {} opportunistic neighbour{}", n, n == 1 ? "" : "s");
}

}  // namespace

QosRoom qos_room(const QosTenant& protector, QosShare share) {
  switch (share) {
    case QosShare::kInstance:
      return {INT_MAX, std::nullopt};
    case QosShare::kNone:
      return {1, std::nullopt};
    case QosShare::kPriority:
      break;
  }
  const OpportunisticChoice choice = choose_opportunistic_levers(protector.sm, protector.min_speed);
  return {choice.neighbours, choice.levers.thread_pct};
}

QosJoin qos_join(int device, std::span<const QosTenant> on_gpu, const QosTenant& joining,
                 QosShare share) {
  QosJoin out;
  out.opportunistic = joining.qos == QosClass::kOpportunistic && share != QosShare::kInstance;
  if (share == QosShare::kInstance) return out;
  const QosTenant* protector = nullptr;
  const QosTenant* other = nullptr;  // a job that is neither protected nor opportunistic
  int opportunistic = 0;
  int widest = 0;  // the largest thread percentage among the opportunistic ones
  for (const QosTenant& t : on_gpu) {
    if (t.qos == QosClass::kProtected && protector == nullptr) protector = &t;
    if (t.qos == QosClass::kProtected && protector != &t && other == nullptr) other = &t;
    if (t.qos == QosClass::kNormal && other == nullptr) other = &t;
    if (t.qos == QosClass::kOpportunistic) {
      ++opportunistic;
      widest = std::max(widest, t.thread_pct);
    }
  }
  auto refuse = [&](WaitingReason why) {
    out.admitted = false;
    out.opportunistic = false;
    out.why = std::move(why);
    return out;
  };
  if (protector != nullptr) {
    if (joining.qos != QosClass::kOpportunistic)
      return refuse(refused_by(device, *protector, "which takes only opportunistic neighbours"));
    const QosRoom room = qos_room(*protector, share);
    const int pct = room.thread_pct.value_or(100);
    if (opportunistic + 1 > room.neighbours ||
        !keeps_floor(*protector, opportunistic + 1, std::max(widest, pct), share))
      return refuse(refused_by(device, *protector,
                               fmt::format("which takes {} at its floor, and has {}",
                                           neighbours_text(room.neighbours), opportunistic)));
    out.thread_pct = room.thread_pct;
    return out;
  }
  if (joining.qos != QosClass::kProtected) return out;
  // The protected job waits for `blocker` (a job on the GPU) to end.
  auto self = [&](const QosTenant& blocker, std::string why) {
    WaitingReason r = refused_by(device, joining, std::move(why));
    r.head = blocker.job;
    r.qos_self = true;
    return r;
  };
  if (other != nullptr)
    return refuse(self(*other, fmt::format(", which is {}; a protected job shares a GPU only with "
                                           "opportunistic jobs",
                                           to_string(other->qos))));
  const QosRoom room = qos_room(joining, share);
  if (opportunistic > room.neighbours || !keeps_floor(joining, opportunistic, widest, share)) {
    const QosTenant& first = *std::find_if(on_gpu.begin(), on_gpu.end(), [](const QosTenant& t) {
      return t.qos == QosClass::kOpportunistic;
    });
    return refuse(self(
        first, fmt::format("{}; this job, protected at {:.2f}, takes {}",
                           opportunistic == 1
                               ? std::string(" (opportunistic)")
                               : fmt::format(" and {} more opportunistic jobs", opportunistic - 1),
                           joining.min_speed, neighbours_text(room.neighbours))));
  }
  return out;
}

}  // namespace colo
