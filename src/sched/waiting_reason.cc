#include "sched/waiting_reason.h"

#include <fmt/format.h>

#include "common/units.h"

namespace colo {

std::string describe_waiting(const WaitingReason& reason, int64_t now_ms,
                             const std::function<std::string(size_t)>& job_name) {
  if (reason.kind == WaitingReason::Kind::kBackfill)
    return fmt::format("backfill: may start only where it does not delay {}",
                       job_name(reason.head));
  if (reason.kind == WaitingReason::Kind::kProtected) {
    if (reason.qos_self)
      return fmt::format("protected: gpu{} holds {}{}", reason.device, job_name(reason.head),
                         reason.qos_why);
    return fmt::format("protected: gpu{} holds {}, protected at {:.2f}, {}", reason.device,
                       job_name(reason.head), reason.min_speed, reason.qos_why);
  }
  std::string when;
  if (reason.start_ms) {
    when = *reason.start_ms > now_ms
               ? fmt::format(" (expected in {})", format_duration_ms(*reason.start_ms - now_ms))
               : std::string(" (expected now)");
  }
  if (!reason.ending.empty()) {
    std::string jobs;
    for (size_t i = 0; i < reason.ending.size(); ++i) {
      const char* separator = i == 0 ? "" : i + 1 == reason.ending.size() ? " and " : ", ";
      jobs += separator + job_name(reason.ending[i]);
    }
    return fmt::format("reserved: starts when gpu{}'s {} end{}{}", reason.device, jobs,
                       reason.ending.size() == 1 ? "s" : "", when);
  }
  return fmt::format("reserved: next on gpu{}, when {} there end{}{}", reason.device,
                     reason.jobs_to_end <= 1 ? std::string("a job")
                                             : fmt::format("{} of the jobs", reason.jobs_to_end),
                     reason.jobs_to_end <= 1 ? "s" : "", when);
}

}  // namespace colo
