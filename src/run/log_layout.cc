#include "run/log_layout.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>

#include "common/names.h"
#include "common/paths.h"

namespace colo {
namespace {

// "<file stem>-<8 hex digits of its absolute path>", e.g. "colo-3fa2c1d0"
// (std::hash: stable for a given colo build; the store keeps each log's path).
std::string store_logs_key(const std::string& store_path) {
  std::string absolute = absolute_path(store_path);
  if (char* real = realpath(absolute.c_str(), nullptr)) {
    absolute = real;
    free(real);  // NOLINT(cppcoreguidelines-no-malloc)
  }
  std::string name = absolute.substr(absolute.rfind('/') + 1);
  std::string stem = name.substr(0, name.rfind('.'));
  if (stem.empty()) stem = "store";
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return fmt::format("{}-{:08x}", stem.substr(0, 40),
                     static_cast<uint32_t>(std::hash<std::string>{}(absolute)));
}

}  // namespace

std::string run_logs_dir(const std::string& logs_root, const std::string& store_path,
                         int64_t run_id) {
  return fmt::format("{}/{}/{}", logs_root.empty() ? default_state_dir() + "/runs" : logs_root,
                     store_logs_key(store_path), run_id);
}

std::string run_job_stem(const std::string& logs_dir, size_t index, const std::string& name) {
  return logs_dir + "/" + file_stem(fmt::format("{:03}-", index + 1), name);
}

std::string service_logs_dir(const std::string& logs_root, const std::string& store_path) {
  return fmt::format("{}/{}", logs_root.empty() ? default_state_dir() + "/serve" : logs_root,
                     store_logs_key(store_path));
}

std::string service_job_stem(const std::string& service_dir, int64_t job_id,
                             const std::string& name) {
  return service_dir + "/jobs/" + file_stem(fmt::format("{}-", job_id), name);
}

std::string service_checkpoint_dir(const std::string& service_dir, int64_t job_id) {
  return fmt::format("{}/checkpoints/{}", service_dir, job_id);
}

void remove_run_logs(int64_t run_id, const std::vector<std::string>& log_paths) {
  namespace fs = std::filesystem;
  std::set<fs::path> dirs;
  for (const std::string& p : log_paths) dirs.insert(fs::path(p).parent_path());
  std::error_code ec;
  if (dirs.size() == 1 && dirs.begin()->filename() == std::to_string(run_id)) {
    fs::remove_all(*dirs.begin(), ec);
  } else {
    for (const std::string& p : log_paths) fs::remove(p, ec);
  }
}

}  // namespace colo
