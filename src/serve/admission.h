// Who gets a connection when colo serve is at its bounds. One rule for the
// Unix socket and the HTTP port (docs/serve.md, "Limits"):
// - a user below their own bound and the service below its total is let in;
// - a user at their own bound makes room by closing their own oldest
//   connection that has not sent a whole request yet ("waiting"), so one user
//   who opens connections and sends nothing harms only themselves, and their
//   newest (real) request still gets through;
// - at the total, the heaviest user's oldest waiting connection is closed,
//   as long as that user holds more than the newcomer would: reserved room
//   for everyone else, shed from the user who took the most;
// - otherwise the newcomer is refused, told why, and may try again.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace colo {

// One user's connections: all that are open, and those of them still
// waiting for a whole request.
struct Occupancy {
  size_t open = 0;
  size_t waiting = 0;
};

struct AdmissionLimits {
  size_t per_user = 32;
  size_t total = 256;
};

struct Admission {
  enum class Kind { kAdmit, kShed, kRefuse };
  Kind kind = Kind::kAdmit;
  std::string shed_from;  // kShed: whose oldest waiting connection to close
  std::string reason;     // kShed: told to the closed one; kRefuse: to the newcomer
};

// What to do with a new connection of `user`, given every user's current
// connections (the newcomer not among them).
Admission admit(const std::map<std::string, Occupancy>& users, const std::string& user,
                const AdmissionLimits& limits);

}  // namespace colo
