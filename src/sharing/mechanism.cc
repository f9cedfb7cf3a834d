#include "sharing/mechanism.h"

#include <fmt/format.h>

namespace colo {

std::string to_string(MechanismKind kind) {
  switch (kind) {
    case MechanismKind::kExclusive:
      return "exclusive";
    case MechanismKind::kNaive:
      return "naive";
    case MechanismKind::kMps:
      return "mps";
    case MechanismKind::kMig:
      return "mig";
  }
  return "unknown";
}

Result<MechanismKind> parse_mechanism(std::string_view text) {
  for (MechanismKind kind : {MechanismKind::kExclusive, MechanismKind::kNaive, MechanismKind::kMps,
                             MechanismKind::kMig}) {
    if (text == to_string(kind)) return kind;
  }
  return Error(fmt::format(
      "unknown sharing mechanism '{}'; valid mechanisms: exclusive, naive, mps, mig", text));
}

}  // namespace colo
