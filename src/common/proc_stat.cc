#include "common/proc_stat.h"

#include <sstream>
#include <string>

namespace colo {

std::optional<uint64_t> start_ticks_in_stat(std::string_view stat) {
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::istringstream fields{std::string(stat.substr(close + 1))};
  std::string field;
  for (int i = 3; i < 22 && fields >> field; ++i) {
  }
  uint64_t ticks = 0;
  if (!(fields >> ticks)) return std::nullopt;
  return ticks;
}

}  // namespace colo
