#include "common/remove_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace colo {
namespace {

constexpr int kMaxDepth = 256;

// Removes entry `name` of the directory open as `parent` (`where` names it
// for errors).
Status remove_at(int parent, const std::string& name, const std::string& where, int depth) {
  const std::string path = where + "/" + name;
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return OkStatus();
    return Error(fmt::format("cannot remove {}: {}", path, std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    if (depth >= kMaxDepth)
      return Error(fmt::format("cannot remove {}: more than {} levels deep", path, kMaxDepth));
    UniqueFd dir(::openat(parent, name.c_str(),
                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (dir.get() >= 0) {
      // The entries first, read whole before any is removed.
      std::vector<std::string> entries;
      if (DIR* d = ::fdopendir(::dup(dir.get())); d != nullptr) {
        while (const dirent* e = ::readdir(d)) {
          const std::string n = e->d_name;
          if (n != "." && n != "..") entries.push_back(n);
        }
        ::closedir(d);
      }
      for (const std::string& e : entries) {
        if (Status s = remove_at(dir.get(), e, path, depth + 1); !s.ok()) return s;
      }
      if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) return OkStatus();
      return Error(fmt::format("cannot remove {}: {}", path, std::strerror(errno)));
    }
    if (errno != ELOOP && errno != ENOTDIR)
      return Error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
    // Swapped for a link or a file since: removed as that.
  }
  if (::unlinkat(parent, name.c_str(), 0) == 0 || errno == ENOENT) return OkStatus();
  return Error(fmt::format("cannot remove {}: {}", path, std::strerror(errno)));
}

}  // namespace

Status remove_tree(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  const std::string parent = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : p.substr(0, slash);
  const std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
  if (name.empty() || name == "." || name == "..")
    return Error(fmt::format("cannot remove '{}': not a file or directory name", path));
  UniqueFd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    if (errno == ENOENT) return OkStatus();
    return Error(fmt::format("cannot open {}: {}", parent, std::strerror(errno)));
  }
  return remove_at(dir.get(), name, parent, 0);
}

}  // namespace colo
