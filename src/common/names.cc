#include "common/names.h"

#include <unistd.h>

#include <array>
#include <cctype>

namespace colo {

std::string host_name() {
  std::array<char, 256> name{};
  return gethostname(name.data(), name.size() - 1) == 0 ? std::string(name.data())
                                                        : std::string("unknown");
}

std::string file_stem(std::string_view prefix, std::string_view name) {
  std::string stem(prefix);
  for (char c : name) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '=';
    stem += keep ? c : '_';
  }
  return stem.substr(0, 120);
}

}  // namespace colo
