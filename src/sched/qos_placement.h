// QosPlacement: which quality-of-service classes may share a GPU, and the
// levers an opportunistic neighbour of a protected job starts with
// (docs/policy.md, "Protected and opportunistic jobs"). Both placing
// policies (AutoScheduler, JobQueue under FixedScheduler) ask qos_join()
// before any other admission check; it only ever refuses, never admits a
// job that their own checks refuse.
//
// The rules, for a job joining a GPU:
//   - Under MIG (QosShare::kInstance) nothing changes: the instance is the
//     protection.
//   - A GPU holding a protected job takes only opportunistic neighbours:
//     under MPS (kPriority) at most choose_opportunistic_levers(its solo SM
//     activity, its min_speed).neighbours of them, and only while
//     predict_qos() of them all, at the largest thread percentage among
//     them, keeps its floor; under naive sharing (kNone, no priority lever)
//     at most one.
//   - A protected job joins a GPU only where every job is opportunistic, no
//     more of them than the rule above allows it, and (MPS) the prediction
//     with their levers keeps its floor.
//   - A normal job never joins a GPU with a protected job.
//   - An opportunistic job always starts as an opportunistic client (below
//     normal priority); beside a protected job with the thread percentage
//     chosen for it, elsewhere uncapped.
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "jobs/job_qos.h"
#include "sched/waiting_reason.h"

namespace colo {

// The lever the sharing mechanism gives colo over an opportunistic client.
enum class QosShare {
  kPriority,  // MPS: below-normal client priority and an active thread percentage
  kNone,      // naive time slicing: none
  kInstance,  // MIG: each job has an instance of its own
};

// A job on a GPU, or joining one, as the rules read it.
struct QosTenant {
  size_t job = 0;  // the caller's job index
  QosClass qos = QosClass::kNormal;
  double min_speed = kDefaultMinSpeed;  // protected: its floor
  double sm = 0;                        // protected: its solo SM activity, 0..1
  int thread_pct = 100;                 // opportunistic, placed: the percentage it started with
};

struct QosJoin {
  bool admitted = true;
  // Start it as an opportunistic client (Placement::opportunistic), with
  // `thread_pct` (Placement::opportunistic_thread_pct) where colo chose one.
  bool opportunistic = false;
  std::optional<int> thread_pct;
  // Refused: why it waits (WaitingReason::Kind::kProtected).
  std::optional<WaitingReason> why;
};

// Whether `joining` may join GPU `device` holding `on_gpu` under `share`,
// and as what (the rules in the header comment).
QosJoin qos_join(int device, std::span<const QosTenant> on_gpu, const QosTenant& joining,
                 QosShare share);

// How many opportunistic neighbours `protector` (a protected job) takes
// under `share`, and the thread percentage each starts with (nullopt: no
// lever). kInstance: unbounded (INT_MAX).
struct QosRoom {
  int neighbours = 0;
  std::optional<int> thread_pct;
};
QosRoom qos_room(const QosTenant& protector, QosShare share);

}  // namespace colo
