#include "common/share_dir.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <vector>

#include "common/embedded_client.h"
#include "common/paths.h"
#include "common/replace_file.h"
#include "common/user_file.h"

namespace colo {

std::optional<std::string> find_share_dir(const std::string& name, const std::string& marker,
                                          const char* env_var) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(env_var); env && *env) candidates.emplace_back(env);
  if (const std::string exe = self_executable(); exe.find('/') != std::string::npos) {
    const std::string dir = exe.substr(0, exe.rfind('/'));
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

namespace {

// Writes `content` to `path` unless it holds it already: by a rename of a
// file written beside it, so that a job never reads half of it.
bool write_file_once(const std::string& path, std::string_view content) {
  if (Result<std::string> held = read_user_file(path, content.size());
      held.ok() && *held == content)
    return true;
  return replace_file(path, content).ok();
}

}  // namespace

std::optional<std::string> embedded_python_client_dir() {
  std::string all;
  for (const EmbeddedFile& f : embedded_python_client()) {
    all.append(f.name);
    all.append(f.content);
  }
  const std::string dir =
      fmt::format("{}/python-client/{:016x}", default_state_dir(), std::hash<std::string>{}(all));
  if (!make_dirs(dir).ok()) return std::nullopt;
  for (const EmbeddedFile& f : embedded_python_client()) {
    if (!write_file_once(dir + "/" + std::string(f.name), f.content)) return std::nullopt;
  }
  return dir;
}

std::optional<std::string> find_python_client_dir() {
  if (std::optional<std::string> dir =
          find_share_dir("python", "colo_progress.py", "COLO_PYTHON_DIR"))
    return dir;
  return embedded_python_client_dir();
}

std::string append_python_path(const std::string& value, const std::string& dir) {
  if (value.empty()) return dir;
  if ((":" + value + ":").find(":" + dir + ":") != std::string::npos) return value;
  return value + ":" + dir;
}

}  // namespace colo
