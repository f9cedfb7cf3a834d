#include "run/log_layout.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>

#include "common/names.h"
#include "common/paths.h"
#include "common/remove_tree.h"

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

std::string service_profile_dir(const std::string& service_dir, int64_t job_id) {
  return fmt::format("{}/profiles/{}", service_dir, job_id);
}

std::string service_data_dir(const std::string& service_dir, int64_t uid) {
  return fmt::format("{}/data/{}", service_dir, uid);
}

std::vector<std::string> service_parent_dirs(const std::string& service_dir) {
  return {service_dir + "/jobs", service_dir + "/checkpoints", service_dir + "/profiles",
          service_dir + "/data"};
}

std::string job_dir_of_log(const std::string& log_path, JobDir which) {
  const size_t slash = log_path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "";
  const std::string dir = log_path.substr(0, slash);
  std::string name = log_path.substr(slash + 1);
  if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".log") != 0) return "";
  name.resize(name.size() - 4);
  // A later attempt's log: <stem>.attempt<N>.log.
  if (const size_t at = name.rfind(".attempt");
      at != std::string::npos && at + 8 < name.size() &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(at + 8), name.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
    name.resize(at);
  const size_t dash = name.find('-');
  if (dash == 0 || dash == std::string::npos ||
      !std::all_of(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(dash),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
    return "";
  const size_t parent = dir.rfind('/');
  const bool checkpoint = which == JobDir::kCheckpoint;
  if (parent != std::string::npos && dir.substr(parent + 1) == "jobs") {  // a service job's
    return fmt::format("{}/{}/{}", dir.substr(0, parent), checkpoint ? "checkpoints" : "profiles",
                       name.substr(0, dash));
  }
  return run_job_dir(dir + "/" + name, which);
}

std::string run_job_dir(const std::string& stem, JobDir which) {
  return stem + (which == JobDir::kCheckpoint ? ".checkpoint" : ".profile");
}

std::string profiler_output(const std::string& profile_dir, const std::string& tool, int attempt) {
  return fmt::format("{}/{}-attempt{}", profile_dir, tool, attempt);
}

std::string attempt_log_path(const std::string& stem, int attempt) {
  return attempt <= 1 ? stem + ".log" : fmt::format("{}.attempt{}.log", stem, attempt);
}

std::string attempt_progress_path(const std::string& stem, int attempt) {
  return attempt <= 1 ? stem + ".progress.jsonl"
                      : fmt::format("{}.attempt{}.progress.jsonl", stem, attempt);
}

Result<int64_t> remove_job_files(const std::string& log_path, int attempts) {
  const std::string checkpoint = job_dir_of_log(log_path, JobDir::kCheckpoint);
  if (checkpoint.empty())
    return Error(fmt::format("{} is not a job's log in colo's layout: nothing removed", log_path));
  std::string stem = log_path.substr(0, log_path.size() - 4);  // without ".log"
  if (const size_t at = stem.rfind(".attempt");
      at != std::string::npos && stem.find('/', at) == std::string::npos)
    stem.resize(at);
  std::vector<std::string> doomed = {checkpoint, job_dir_of_log(log_path, JobDir::kProfile)};
  for (int a = 1; a <= std::max(1, attempts); ++a) {
    doomed.push_back(attempt_log_path(stem, a));
    doomed.push_back(attempt_progress_path(stem, a));
  }
  int64_t removed = 0;
  for (const std::string& path : doomed) {
    struct stat st {};
    const bool there = ::lstat(path.c_str(), &st) == 0;
    if (Status s = remove_tree(path); !s.ok()) return s.error();
    removed += there ? 1 : 0;
  }
  return removed;
}

void remove_run_logs(int64_t run_id, const std::vector<std::string>& log_paths) {
  namespace fs = std::filesystem;
  std::set<fs::path> dirs;
  for (const std::string& p : log_paths) dirs.insert(fs::path(p).parent_path());
  if (dirs.size() == 1 && dirs.begin()->filename() == std::to_string(run_id)) {
    (void)remove_tree(dirs.begin()->string());
  } else {
    // Each job's last attempt's log: its attempts are up to the one it names.
    for (const std::string& p : log_paths) {
      int attempts = 1;
      if (const size_t at = p.rfind(".attempt"); at != std::string::npos)
        attempts = std::max(1, std::atoi(p.c_str() + at + 8));
      if (!remove_job_files(p, attempts).ok()) {
        std::error_code ec;
        fs::remove(p, ec);  // a log outside colo's layout: itself alone
      }
    }
  }
}

}  // namespace colo
