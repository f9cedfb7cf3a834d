#include "data/ring_owner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "common/names.h"
#include "common/paths.h"
#include "common/proc_stat.h"
#include "common/replace_file.h"
#include "common/user_file.h"
#include "data/ring_memory.h"

namespace colo {
namespace fs = std::filesystem;
namespace {

bool alive(int pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

// The process's command line with NULs as spaces; empty when unreadable.
std::string command_line(int pid) {
  std::string text = read_proc_file(fmt::format("/proc/{}/cmdline", pid)).value_or("");
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

// The uid that owns process `pid` (its /proc directory's); nullopt when gone.
std::optional<uid_t> process_uid(int pid) {
  struct stat st {};
  if (::stat(fmt::format("/proc/{}", pid).c_str(), &st) != 0) return std::nullopt;
  return st.st_uid;
}

// The uid that owns shared memory `name`; nullopt when there is none.
std::optional<uid_t> shm_uid(const std::string& name) {
  const int fd = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0;
  ::close(fd);
  return ok ? std::optional<uid_t>(st.st_uid) : std::nullopt;
}

}  // namespace

std::string ring_owner_dir(const std::string& state_dir) { return state_dir + "/data"; }

std::string ring_owner_path(const std::string& state_dir, const std::string& shm_name) {
  std::string file = shm_name;
  if (!file.empty() && file[0] == '/') file.erase(0, 1);
  return ring_owner_dir(state_dir) + "/" + file + ".json";
}

Status write_ring_owner(const std::string& path, const RingOwnerRecord& r) {
  if (Status s = make_dirs(fs::path(path).parent_path().string(), 0700); !s.ok()) return s;
  nlohmann::json j = {{"shm_name", r.shm_name},
                      {"socket_name", r.socket_name},
                      {"loader_pid", r.loader_pid},
                      {"owner_pid", r.owner_pid},
                      {"hostname", r.hostname.empty() ? host_name() : r.hostname},
                      {"started_ms", r.started_ms}};
  return replace_file(path, j.dump(2) + '\n');
}

Result<RingOwnerRecord> read_ring_owner(const std::string& path) {
  // Under a root service the record is in the loader's user's directory.
  constexpr uint64_t kMaxRecordBytes = 64 << 10;
  Result<std::string> text = read_user_file(path, kMaxRecordBytes);
  if (!text.ok()) return text.error();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("shm_name") || !j["shm_name"].is_string()) {
    return Error(fmt::format("{} is not a loader ownership record", path));
  }
  RingOwnerRecord r;
  r.shm_name = j["shm_name"].get<std::string>();
  r.socket_name = j.value("socket_name", "");
  r.loader_pid = j.value("loader_pid", 0);
  r.owner_pid = j.value("owner_pid", 0);
  r.hostname = j.value("hostname", "");
  r.started_ms = j.value("started_ms", int64_t{0});
  if (r.shm_name.rfind("/colo-data-", 0) != 0) {
    return Error(
        fmt::format("{} names shared memory '{}', which is not a colo ring", path, r.shm_name));
  }
  return r;
}

Result<std::vector<std::string>> cleanup_stale_data_loaders(const std::string& state_dir) {
  std::vector<std::string> lines;
  const std::string dir = ring_owner_dir(state_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return lines;
  std::vector<std::string> records;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") records.push_back(e.path().string());
  if (ec) return Error(fmt::format("cannot list {}: {}", dir, ec.message()));
  std::sort(records.begin(), records.end());
  const std::string host = host_name();
  for (const std::string& path : records) {
    Result<RingOwnerRecord> r = read_ring_owner(path);
    if (!r.ok()) {
      lines.push_back(fmt::format("left {} alone: {}", path, r.error().message()));
      continue;
    }
    if (r->hostname != host) continue;  // a shared home directory: not ours to judge
    if (alive(r->owner_pid)) continue;
    // A record speaks only for what its writer owns: a user's record (in
    // their data/<uid>/ under a root service) names that user's loader and
    // ring, never another user's, which a root colo would otherwise kill
    // and remove for them.
    struct stat record {};
    if (::lstat(path.c_str(), &record) != 0) continue;
    const auto owned = [&](std::optional<uid_t> uid) {
      return record.st_uid == 0 || (uid && *uid == record.st_uid);
    };
    if (alive(r->loader_pid) && !owned(process_uid(r->loader_pid))) {
      lines.push_back(fmt::format("left {} alone: it names process {}, which is not its writer's",
                                  path, r->loader_pid));
      continue;
    }
    if (std::optional<uid_t> ring = shm_uid(r->shm_name); ring && !owned(ring)) {
      lines.push_back(
          fmt::format("left {} alone: it names shared memory {}, which is not its writer's", path,
                      r->shm_name));
      continue;
    }
    if (alive(r->loader_pid)) {
      if (command_line(r->loader_pid).find(r->shm_name) == std::string::npos) {
        // The pid was reused by an unrelated process; the loader is gone.
      } else {
        kill(r->loader_pid, SIGKILL);
        for (int i = 0; i < 100 && alive(r->loader_pid); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        lines.push_back(fmt::format("stopped data loader pid {} left by colo pid {}", r->loader_pid,
                                    r->owner_pid));
      }
    }
    if (Status s = unlink_ring(r->shm_name); !s.ok()) {
      lines.push_back(s.error().message());
      continue;
    }
    fs::remove(path, ec);
    lines.push_back(
        fmt::format("removed shared memory {} left by colo pid {}", r->shm_name, r->owner_pid));
  }
  return lines;
}

}  // namespace colo
