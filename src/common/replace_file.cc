#include "common/replace_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace colo {

Status replace_file(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out.flush()) {
      const std::string why = std::strerror(errno);
      std::remove(tmp.c_str());
      return Error(fmt::format("cannot write {}: {}", tmp, why));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Error(fmt::format("cannot write {}: {}", path, why));
  }
  return OkStatus();
}

}  // namespace colo
