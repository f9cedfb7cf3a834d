#include "common/paths.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace colo {

std::string default_state_dir() {
  if (const char* home = std::getenv("COLO_HOME"); home && *home) return home;
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/colo";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.local/state/colo";
  return "/tmp/colo-" + std::to_string(getuid());
}

std::string default_db_path() { return default_state_dir() + "/colo.db"; }

Status make_dirs(const std::string& path, unsigned mode, std::optional<unsigned> parents_mode) {
  if (path.empty()) return OkStatus();
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    const unsigned wanted = pos == std::string::npos ? mode : parents_mode.value_or(mode);
    if (mkdir(partial.c_str(), wanted) == 0) {
      if (::chmod(partial.c_str(), wanted) != 0) {
        return Error(fmt::format("cannot set the mode of directory {} to {:o}: {}", partial, wanted,
                                 std::strerror(errno)));
      }
    } else if (errno != EEXIST) {
      return Error(fmt::format("cannot create directory {}: {}", partial, std::strerror(errno)));
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Error(fmt::format("{} exists and is not a directory", path));
  }
  return OkStatus();
}

int open_regular_file(const std::string& path, int flags, unsigned mode) {
  return open_regular_file_at(AT_FDCWD, path, flags, mode);
}

int open_regular_file_at(int dir_fd, const std::string& name, int flags, unsigned mode,
                         struct stat* info) {
  const int fd =
      ::openat(dir_fd, name.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (info != nullptr) *info = st;
  if (!regular) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

const char* file_kind(unsigned st_mode) {
  if (S_ISREG(st_mode)) return "a regular file";
  if (S_ISFIFO(st_mode)) return "a FIFO";
  if (S_ISCHR(st_mode)) return "a character device";
  if (S_ISBLK(st_mode)) return "a block device";
  if (S_ISDIR(st_mode)) return "a directory";
  if (S_ISSOCK(st_mode)) return "a socket";
  if (S_ISLNK(st_mode)) return "a symbolic link";
  return "not a regular file";
}

std::string absolute_path(const std::string& path, const std::string& base) {
  if (!path.empty() && path[0] == '/') return path;
  std::string root = base;
  if (root.empty()) {
    char buf[4096];
    root = getcwd(buf, sizeof buf) ? buf : ".";
  }
  if (path.empty() || path == ".") return root;
  std::string rel = path;
  while (rel.rfind("./", 0) == 0) rel = rel.substr(2);
  return root + (root.back() == '/' ? "" : "/") + rel;
}

namespace {

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string self_executable() {
  std::string exe(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  return n > 0 ? exe.substr(0, static_cast<size_t>(n)) : "colo";
}

std::optional<std::string> find_program(const std::string& name,
                                        std::optional<std::string_view> path_value) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    return is_executable_file(name) ? std::optional<std::string>(name) : std::nullopt;
  }
  const char* env = std::getenv("PATH");
  std::string_view path = path_value ? *path_value : std::string_view(env ? env : "/usr/bin:/bin");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string_view::npos) end = path.size();
    std::string dir(path.substr(start, end - start));
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace colo
