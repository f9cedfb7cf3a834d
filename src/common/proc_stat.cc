#include "common/proc_stat.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

namespace colo {

std::optional<std::string> read_proc_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[8192];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (n < 0) return std::nullopt;
  return text;
}

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

namespace {

int64_t clock_ticks_per_s() {
  static const int64_t ticks = std::max<int64_t>(1, ::sysconf(_SC_CLK_TCK));
  return ticks;
}

}  // namespace

std::vector<ProcessState> process_group_states(int pgid, size_t max) {
  std::vector<ProcessState> out;
  std::error_code ec;
  std::vector<int> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pids.push_back(std::stoi(name));
  }
  std::sort(pids.begin(), pids.end());
  for (int pid : pids) {
    if (out.size() >= max) break;
    const std::optional<std::string> stat = read_proc_file(fmt::format("/proc/{}/stat", pid));
    if (!stat) continue;
    const size_t open = stat->find('(');
    const size_t close = stat->rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream fields{stat->substr(close + 1)};
    char state = '?';
    int ppid = 0;
    int group = 0;
    if (!(fields >> state >> ppid >> group) || group != pgid) continue;
    ProcessState p{pid, stat->substr(open + 1, close - open - 1), state, "", 0};
    std::string skipped;
    for (int field = 6; field < 14 && fields >> skipped; ++field) {
    }
    int64_t user = 0;
    int64_t system = 0;
    if (fields >> user >> system) p.cpu_ms = (user + system) * 1000 / clock_ticks_per_s();
    if (std::optional<std::string> wchan = read_proc_file(fmt::format("/proc/{}/wchan", pid));
        wchan && *wchan != "0")
      p.wchan = *wchan;
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<int64_t> process_group_cpu_ms(int pgid) {
  const std::vector<ProcessState> processes = process_group_states(pgid, 4096);
  if (processes.empty()) return std::nullopt;
  int64_t total = 0;
  for (const ProcessState& p : processes) total += p.cpu_ms;
  return total;
}

size_t raise_open_file_limit(size_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  const rlim_t target = std::min<rlim_t>(limit.rlim_max, wanted);
  if (limit.rlim_cur < target) {
    rlimit raised = limit;
    raised.rlim_cur = target;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return static_cast<size_t>(limit.rlim_cur);
}

}  // namespace colo
