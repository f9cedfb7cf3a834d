#include "sharing/process_finder.h"

#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "common/proc_stat.h"

namespace colo {
bool ProcFsProcessFinder::environment_has(int pid, std::string_view entry) const {
  std::optional<std::string> environ_file =
      read_proc_file(fmt::format("{}/{}/environ", proc_root_, pid));
  if (!environ_file) return false;
  const std::string& environ_text = *environ_file;
  size_t start = 0;
  while (start < environ_text.size()) {
    size_t end = environ_text.find('\0', start);
    if (end == std::string::npos) end = environ_text.size();
    if (std::string_view(environ_text).substr(start, end - start) == entry) return true;
    start = end + 1;
  }
  return false;
}

std::vector<ProcessInfo> ProcFsProcessFinder::find_with_env(std::string_view name,
                                                            std::string_view value) {
  std::vector<ProcessInfo> found;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(proc_root_.c_str()), closedir);
  if (!dir) return found;
  const std::string entry = fmt::format("{}={}", name, value);
  const int self = static_cast<int>(getpid());
  while (dirent* d = readdir(dir.get())) {
    char* end = nullptr;
    long pid = std::strtol(d->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == self) continue;
    if (!environment_has(static_cast<int>(pid), entry)) continue;
    std::optional<std::string> comm_file =
        read_proc_file(fmt::format("{}/{}/comm", proc_root_, pid));
    if (!comm_file) continue;  // exited meanwhile
    std::string comm = std::move(*comm_file);
    while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\0')) comm.pop_back();
    const std::string stat =
        read_proc_file(fmt::format("{}/{}/stat", proc_root_, pid)).value_or("");
    found.push_back({static_cast<int>(pid), comm, start_ticks_in_stat(stat).value_or(0)});
  }
  return found;
}

bool ProcFsProcessFinder::is_alive(int pid) {
  if (pid <= 0) return false;
  return kill(pid, 0) == 0 || errno == EPERM;
}

Status ProcFsProcessFinder::send_signal(int pid, int sig, std::string_view name,
                                        std::string_view value) {
  if (pid <= 0) return Error(fmt::format("refusing to signal invalid pid {}", pid));
  if (!environment_has(pid, fmt::format("{}={}", name, value))) {
    return Error(fmt::format("refusing to signal pid {}: its environment does not hold {}={}", pid,
                             name, value));
  }
  if (kill(pid, sig) != 0 && errno != ESRCH) {
    return Error(
        fmt::format("cannot send signal {} to pid {}: {}", sig, pid, std::strerror(errno)));
  }
  return OkStatus();
}

}  // namespace colo
