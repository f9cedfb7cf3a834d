#include "jobs/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/names.h"
#include "common/proc_stat.h"

namespace colo {
namespace {

constexpr std::string_view kRunPrefix = "run-";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes `text` to a cgroup control file; the error says which and why.
Status write_control(const std::string& path, std::string_view text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  ssize_t n = ::write(fd, text.data(), text.size());
  int error = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return Error(fmt::format("cannot write '{}' to {}: {}", text, path, std::strerror(error)));
  return OkStatus();
}

std::vector<std::string> subdirectories(const std::string& path) {
  std::vector<std::string> out;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return out;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (stat((path + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back(name);
  }
  closedir(dir);
  return out;
}

std::vector<pid_t> members(const std::string& cgroup) {
  std::vector<pid_t> pids;
  std::istringstream in(read_text(cgroup + "/cgroup.procs"));
  for (pid_t pid = 0; in >> pid;) pids.push_back(pid);
  for (const std::string& child : subdirectories(cgroup)) {
    std::vector<pid_t> more = members(cgroup + "/" + child);
    pids.insert(pids.end(), more.begin(), more.end());
  }
  return pids;
}

// Removes the cgroup and its descendants, deepest first.
bool remove_cgroup_tree(const std::string& path) {
  for (const std::string& child : subdirectories(path)) remove_cgroup_tree(path + "/" + child);
  return rmdir(path.c_str()) == 0 || errno == ENOENT;
}

// "run-<host>-<pid>-<start ticks>" of this host -> pid and start ticks. A run
// cgroup of another host (a parent shared between containers) is not ours to
// judge: its pids mean nothing here.
std::optional<std::pair<pid_t, uint64_t>> run_owner(std::string_view name,
                                                    const std::string& host) {
  const std::string prefix = std::string(kRunPrefix) + host + "-";
  if (!name.starts_with(prefix)) return std::nullopt;
  unsigned long long pid = 0;
  unsigned long long ticks = 0;
  char tail = 0;
  if (std::sscanf(std::string(name.substr(prefix.size())).c_str(), "%llu-%llu%c", &pid, &ticks,
                  &tail) != 2)
    return std::nullopt;
  return std::make_pair(static_cast<pid_t>(pid), static_cast<uint64_t>(ticks));
}

}  // namespace

std::optional<std::string> cgroup2_mount(std::string_view mountinfo) {
  // "36 25 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw"
  std::istringstream in{std::string(mountinfo)};
  for (std::string line; std::getline(in, line);) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream after(line.substr(dash + 3));
    std::string fstype;
    after >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream before(line.substr(0, dash));
    std::string id, parent, devices, root, mount_point;
    before >> id >> parent >> devices >> root >> mount_point;
    if (!mount_point.empty()) return mount_point;
  }
  return std::nullopt;
}

std::optional<std::string> own_cgroup(std::string_view proc_self_cgroup) {
  std::istringstream in{std::string(proc_self_cgroup)};
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("0::")) return line.substr(3);
  }
  return std::nullopt;
}

bool is_delegated(const std::string& dir) {
  for (const char* name : {"trusted.delegate", "user.delegate"}) {
    char value[8] = {};
    const ssize_t n = ::getxattr(dir.c_str(), name, value, sizeof value - 1);
    if (n > 0 && std::string_view(value, static_cast<size_t>(n)) == "1") return true;
  }
  return false;
}

Status move_self_into_leaf(const std::string& dir) {
  const std::string leaf = dir + "/" + kOwnLeaf;
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST)
    return Error(fmt::format("cannot make {}: {}", leaf, std::strerror(errno)));
  if (Status s = write_control(leaf + "/cgroup.procs", std::to_string(getpid())); !s.ok())
    return s.error().with_context(fmt::format("moving colo into {}", leaf));
  // Controllers for the jobs' cgroups: only once nothing else is left in
  // `dir` (cgroup v2 lets no cgroup with processes pass them on), else the
  // jobs run without host limits and the caller's apply_cgroup_limits says so.
  std::istringstream controllers(read_text(dir + "/cgroup.controllers"));
  for (std::string c; controllers >> c;) {
    if (c == "cpu" || c == "memory" || c == "pids")
      (void)write_control(dir + "/cgroup.subtree_control", "+" + c);
  }
  return OkStatus();
}

Result<std::string> choose_cgroup_parent(const char* override_value) {
  if (override_value != nullptr && *override_value != '\0') {
    std::string value = override_value;
    if (value == "off") return Error("COLO_CGROUP_PARENT=off");
    if (access((value + "/cgroup.procs").c_str(), W_OK) != 0) {
      return Error(fmt::format("COLO_CGROUP_PARENT={} is not a cgroup this user may write ({})",
                               value, std::strerror(errno)));
    }
    return value;
  }
  std::optional<std::string> mount = cgroup2_mount(read_text("/proc/self/mountinfo"));
  if (!mount) return Error("cgroup v2 is not mounted here");
  std::optional<std::string> own = own_cgroup(read_text("/proc/self/cgroup"));
  if (own && *own != "/" && is_delegated(*mount + *own)) {
    // A cgroup of our own (a systemd unit with Delegate=yes): jobs go in it,
    // so the unit's limits and its final kill reach them.
    const std::string dir = *mount + *own;
    if (Status s = move_self_into_leaf(dir); !s.ok()) return s.error();
    return dir;
  }
  if (geteuid() == 0) {
    std::string parent = *mount + "/colo";
    if (mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) {
      return Error(fmt::format("cannot make {}: {}", parent, std::strerror(errno)));
    }
    // Pass on what the hierarchy offers (colo's own cgroup holds no process).
    std::istringstream controllers(read_text(parent + "/cgroup.controllers"));
    for (std::string c; controllers >> c;) {
      if (c == "cpu" || c == "memory" || c == "pids")
        (void)write_control(parent + "/cgroup.subtree_control", "+" + c);
    }
    return parent;
  }
  if (!own) return Error("this process has no cgroup v2");
  std::string dir = *mount + *own;
  if (access((dir + "/cgroup.procs").c_str(), W_OK) != 0 || access(dir.c_str(), W_OK) != 0) {
    return Error(fmt::format(
        "this user may not make cgroups under {} (no delegated cgroup: run colo as root, or "
        "under `systemd-run --user --scope -p Delegate=yes`)",
        dir));
  }
  return dir;
}

Status kill_and_remove_cgroup(const std::string& path, int wait_ms) {
  Result<JobUsage> ended = end_cgroup(path, wait_ms);
  if (!ended.ok()) return ended.error();
  return OkStatus();
}

Result<JobUsage> end_cgroup(const std::string& path, int wait_ms) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return JobUsage{};
  const bool has_kill = access((path + "/cgroup.kill").c_str(), F_OK) == 0;
  if (has_kill) (void)write_control(path + "/cgroup.kill", "1");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (true) {
    std::vector<pid_t> left = members(path);
    if (left.empty()) break;
    if (!has_kill) {
      for (pid_t pid : left) ::kill(pid, SIGKILL);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error(fmt::format("{} still holds {} processes after SIGKILL", path, left.size()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  JobUsage usage = read_cgroup_usage(path);
  if (!remove_cgroup_tree(path)) {
    return Error(fmt::format("cannot remove cgroup {}: {}", path, std::strerror(errno)));
  }
  return usage;
}

JobUsage read_cgroup_usage(const std::string& path) {
  JobUsage usage;
  std::istringstream cpu(read_text(path + "/cpu.stat"));
  for (std::string key; cpu >> key;) {
    uint64_t value = 0;
    if (!(cpu >> value)) break;
    if (key == "usage_usec") usage.cpu_ms = static_cast<int64_t>(value / 1000);
  }
  std::istringstream peak(read_text(path + "/memory.peak"));
  if (uint64_t bytes = 0; peak >> bytes) usage.memory_peak_bytes = bytes;
  std::istringstream max(read_text(path + "/memory.max"));  // "max" when unlimited
  if (uint64_t bytes = 0; max >> bytes) usage.memory_max_bytes = bytes;
  std::istringstream events(read_text(path + "/memory.events"));
  for (std::string key; events >> key;) {
    int64_t value = 0;
    if (!(events >> value)) break;
    if (key == "oom_kill") usage.oom_kills = value;
  }
  return usage;
}

Status apply_cgroup_limits(const std::string& path, const CgroupLimits& limits) {
  // Each file exists only where its controller is enabled for the cgroup.
  auto write = [&](const char* file, const std::string& value, const char* what) -> Status {
    const std::string target = path + "/" + file;
    if (::access(target.c_str(), W_OK) != 0) {
      return Error(
          fmt::format("cannot set {}: {} is missing (is the {} controller enabled for "
                      "colo's cgroups? colo needs cgroup v2 with it)",
                      what, target, file[0] == 'c' ? "cpu" : "memory"));
    }
    return write_control(target, value);
  };
  if (limits.memory_bytes) {
    if (Status s = write("memory.max", std::to_string(*limits.memory_bytes), "host_memory");
        !s.ok())
      return s;
    // Without this the limit would only push the job into swap.
    const std::string swap = path + "/memory.swap.max";
    if (::access(swap.c_str(), W_OK) == 0) (void)write_control(swap, "0");
  }
  if (limits.cpus) {
    constexpr int64_t kPeriodUs = 100'000;
    if (Status s =
            write("cpu.max", fmt::format("{} {}", *limits.cpus * kPeriodUs, kPeriodUs), "cpus");
        !s.ok())
      return s;
  }
  return OkStatus();
}

std::optional<uint64_t> process_start_ticks(pid_t pid) {
  return start_ticks_in_stat(read_proc_file(fmt::format("/proc/{}/stat", pid)).value_or(""));
}

std::vector<std::string> cleanup_stale_run_cgroups(const std::string& parent) {
  std::vector<std::string> lines;
  const std::string host = host_name();
  for (const std::string& name : subdirectories(parent)) {
    auto owner = run_owner(name, host);
    if (!owner || process_start_ticks(owner->first) == owner->second) continue;
    const std::string path = parent + "/" + name;
    const size_t left = members(path).size();
    Status done = kill_and_remove_cgroup(path);
    if (!done.ok()) {
      lines.push_back("warning: " + done.error().message());
    } else if (left > 0) {
      lines.push_back(
          fmt::format("stopped {} leftover job processes of a colo that died (pid {}; cgroup {})",
                      left, owner->first, path));
    }
  }
  return lines;
}

Result<RunCgroup> RunCgroup::create(const std::string& parent) {
  const pid_t self = getpid();
  std::optional<uint64_t> ticks = process_start_ticks(self);
  if (!ticks) return Error("cannot read this process's start time from /proc");
  std::string path = fmt::format("{}/{}{}-{}-{}", parent, kRunPrefix, host_name(), self, *ticks);
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error(fmt::format("cannot make cgroup {}: {}", path, std::strerror(errno)));
  }
  std::istringstream controllers(read_text(path + "/cgroup.controllers"));
  for (std::string c; controllers >> c;) {
    if (c == "cpu" || c == "memory" || c == "pids")
      (void)write_control(path + "/cgroup.subtree_control", "+" + c);
  }
  return RunCgroup(std::move(path));
}

RunCgroup::RunCgroup(RunCgroup&& other) noexcept : path_(std::exchange(other.path_, "")) {}

RunCgroup::~RunCgroup() {
  if (!path_.empty()) (void)kill_and_remove_cgroup(path_);
}

Result<std::string> RunCgroup::make_job_cgroup(int64_t job_id) {
  std::string path = fmt::format("{}/job-{}", path_, job_id);
  if (Status s = kill_and_remove_cgroup(path); !s.ok()) return s.error();
  if (mkdir(path.c_str(), 0755) != 0) {
    return Error(fmt::format("cannot make cgroup {}: {}", path, std::strerror(errno)));
  }
  return path;
}

}  // namespace colo
