#include "serve/queue_order.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "common/units.h"

namespace colo {
namespace {

OwnerShare share_of(const std::map<uid_t, OwnerShare>* shares, uid_t owner) {
  if (shares == nullptr) return OwnerShare{std::to_string(owner), 0, 1};
  auto it = shares->find(owner);
  return it != shares->end() ? it->second : OwnerShare{std::to_string(owner), 0, 1};
}

double weighted(const OwnerShare& s) { return s.usage_ms / (s.weight > 0 ? s.weight : 1); }

std::string used(const OwnerShare& s) {
  return fmt::format("{} used {}{}", s.name, format_duration_ms(static_cast<int64_t>(s.usage_ms)),
                     s.weight == 1.0 ? std::string() : fmt::format(" at weight {:g}", s.weight));
}

}  // namespace

std::vector<QueuedInOrder> in_start_order(std::vector<QueuedInOrder> jobs,
                                          const std::map<uid_t, OwnerShare>* shares) {
  std::stable_sort(jobs.begin(), jobs.end(), [&](const QueuedInOrder& a, const QueuedInOrder& b) {
    const double ua = shares != nullptr ? weighted(share_of(shares, a.owner)) : 0;
    const double ub = shares != nullptr ? weighted(share_of(shares, b.owner)) : 0;
    return std::tuple(a.opportunistic, -a.priority, ua, a.id) <
           std::tuple(b.opportunistic, -b.priority, ub, b.id);
  });
  return jobs;
}

std::string waits_behind(const QueuedInOrder& job, const QueuedInOrder& first,
                         const std::map<uid_t, OwnerShare>* shares, int64_t half_life_ms) {
  if (job.id == first.id || job.owner == first.owner) return "";
  const OwnerShare ahead = share_of(shares, first.owner);
  if (job.opportunistic && !first.opportunistic) {
    return fmt::format("opportunistic: starts after every other class's job (job {} of {} first)",
                       first.id, ahead.name);
  }
  if (first.priority != job.priority) {
    return fmt::format("priority: job {} of {} goes first (priority {} over {})", first.id,
                       ahead.name, first.priority, job.priority);
  }
  if (shares == nullptr) return "";  // first come, first served: it came later
  const OwnerShare own = share_of(shares, job.owner);
  if (weighted(own) <= weighted(ahead)) {
    return fmt::format("arrival: job {} of {} came first ({}, {} of GPU time lately)", first.id,
                       ahead.name, used(ahead), used(own));
  }
  return fmt::format("fair share: {}'s jobs go first ({}, {} of GPU time lately; half-life {})",
                     ahead.name, used(ahead), used(own), format_duration_ms(half_life_ms));
}

}  // namespace colo
