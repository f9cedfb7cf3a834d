#include "serve/admission.h"

#include <fmt/format.h>

namespace colo {

Admission admit(const std::map<std::string, Occupancy>& users, const std::string& user,
                const AdmissionLimits& limits) {
  const auto found = users.find(user);
  const Occupancy mine = found == users.end() ? Occupancy{} : found->second;
  if (mine.open >= limits.per_user) {
    if (mine.waiting > 0) {
      return {Admission::Kind::kShed, user,
              fmt::format("closed to make room: you have {} connections open to colo serve, the "
                          "limit per user, and this one had sent no whole request",
                          mine.open)};
    }
    return {Admission::Kind::kRefuse, "",
            fmt::format("you have {} connections open to colo serve, the limit per user; try "
                        "again when some have been answered",
                        mine.open)};
  }
  size_t total = 0;
  const std::pair<const std::string, Occupancy>* heaviest = nullptr;
  for (const auto& entry : users) {
    total += entry.second.open;
    if (entry.second.waiting > 0 &&
        (heaviest == nullptr || entry.second.open > heaviest->second.open))
      heaviest = &entry;
  }
  if (total < limits.total) return {};
  if (heaviest != nullptr && heaviest->second.open > mine.open + 1) {
    return {Admission::Kind::kShed, heaviest->first,
            fmt::format("closed to make room for another user: colo serve is at its limit of {} "
                        "connections and you held the most ({}), this one without a whole request",
                        limits.total, heaviest->second.open)};
  }
  return {Admission::Kind::kRefuse, "",
          fmt::format("colo serve has {} connections open, its limit; try again shortly", total)};
}

}  // namespace colo
