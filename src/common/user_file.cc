#include "common/user_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/paths.h"
#include "common/units.h"

namespace colo {

Result<std::optional<UserFile>> open_user_file(const std::string& path, int dir_fd,
                                               const std::string& shown) {
  const std::string& name = shown.empty() ? path : shown;
  UserFile file;
  file.fd = UniqueFd(open_regular_file_at(dir_fd, path, O_RDONLY, 0, &file.info));
  if (file.fd.get() >= 0) return std::optional<UserFile>(std::move(file));
  if (errno == ENOENT) return std::optional<UserFile>();
  if (errno == ELOOP) {
    return Error(fmt::format("{} is a symbolic link; colo does not read it", name));
  }
  if (errno == EINVAL) {
    return Error(fmt::format("{} is {}, not a regular file; colo does not read it", name,
                             file_kind(file.info.st_mode)));
  }
  return Error(fmt::format("cannot open {}: {}", name, std::strerror(errno)));
}

Result<std::string> read_user_file_range(const UserFile& file, uint64_t offset, uint64_t length,
                                         const std::string& shown) {
  // Sized by what fstat said is there (one byte more, to see it end), grown
  // only if the file grew since.
  const uint64_t there = file.size() > offset ? file.size() - offset : 0;
  std::string out;
  out.resize(static_cast<size_t>(std::min<uint64_t>(length, std::max<uint64_t>(there + 1, 4096))));
  uint64_t got = 0;
  while (got < length) {
    if (out.size() == got) out.resize(static_cast<size_t>(std::min<uint64_t>(length, got * 2)));
    const ssize_t n = ::pread(file.fd.get(), out.data() + got, out.size() - got,
                              static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error(fmt::format("cannot read {}: {}", shown, std::strerror(errno)));
    if (n == 0) break;
    got += static_cast<uint64_t>(n);
  }
  out.resize(static_cast<size_t>(got));
  return out;
}

Result<std::string> read_user_file_tail(const std::string& path, uint64_t max_bytes) {
  Result<std::optional<UserFile>> file = open_user_file(path);
  if (!file.ok()) return file.error();
  if (!*file) return Error(fmt::format("{} does not exist", path));
  const uint64_t size = (*file)->size();
  const uint64_t from = size > max_bytes ? size - max_bytes : 0;
  return read_user_file_range(**file, from, size - from, path);
}

Result<std::string> read_user_file(const std::string& path, uint64_t max_bytes, int dir_fd,
                                   const std::string& shown) {
  const std::string& name = shown.empty() ? path : shown;
  Result<std::optional<UserFile>> file = open_user_file(path, dir_fd, name);
  if (!file.ok()) return file.error();
  if (!*file) return Error(fmt::format("{} does not exist", name));
  auto too_large = [&](uint64_t size) {
    return Error(fmt::format("{} holds {}, more than the {} colo reads of it; it is not read", name,
                             format_bytes(size), format_bytes(max_bytes)));
  };
  if ((*file)->size() > max_bytes) return too_large((*file)->size());
  // One byte more than the bound: a file that grew past it since is refused too.
  Result<std::string> text = read_user_file_range(**file, 0, max_bytes + 1, name);
  if (text.ok() && text->size() > max_bytes) return too_large(text->size());
  return text;
}

}  // namespace colo
