#include "common/share_dir.h"

#include <unistd.h>

#include <array>
#include <climits>
#include <cstdlib>
#include <vector>

#include "common/paths.h"

namespace colo {

std::optional<std::string> find_share_dir(const std::string& name, const std::string& marker,
                                          const char* env_var) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(env_var); env && *env) candidates.emplace_back(env);
  std::array<char, 4096> exe{};
  ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  if (n > 0) {
    std::string dir(exe.data(), static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    candidates.push_back(dir + "/" + name);
    candidates.push_back(dir + "/../" + name);
    candidates.push_back(dir + "/../share/colo/" + name);
  }
  candidates.push_back(absolute_path(name));
  for (const std::string& c : candidates) {
    if (access((c + "/" + marker).c_str(), R_OK) != 0) continue;
    std::array<char, PATH_MAX> resolved{};
    return realpath(c.c_str(), resolved.data()) != nullptr ? std::string(resolved.data()) : c;
  }
  return std::nullopt;
}

std::optional<std::string> find_python_client_dir() {
  return find_share_dir("python", "colo_progress.py", "COLO_PYTHON_DIR");
}

std::string append_python_path(const std::string& value, const std::string& dir) {
  if (value.empty()) return dir;
  if ((":" + value + ":").find(":" + dir + ":") != std::string::npos) return value;
  return value + ":" + dir;
}

}  // namespace colo
