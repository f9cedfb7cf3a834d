#include "jobs/log_cap.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/paths.h"
#include "common/unique_fd.h"
#include "common/units.h"

namespace colo {
namespace {

Error io_error(const std::string& what, const std::string& path) {
  return Error(fmt::format("cannot {} the log {}: {}", what, path, std::strerror(errno)));
}

}  // namespace

Result<std::optional<uint64_t>> cut_log(const std::string& path, uint64_t max_bytes,
                                        const std::string& why) {
  UniqueFd fd(open_regular_file(path, O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::optional<uint64_t>();
    return io_error("open", path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return io_error("read the size of", path);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size <= max_bytes) return std::optional<uint64_t>();
  const uint64_t keep = max_bytes / 4;
  std::string tail(keep, '\0');
  const ssize_t got = ::pread(fd.get(), tail.data(), keep, static_cast<off_t>(size - keep));
  if (got < 0) return io_error("read", path);
  tail.resize(static_cast<size_t>(got));
  // What the job appended while the tail was read goes with it: the cut
  // below would drop it (a job's last line is often its reason). A window of
  // two system calls remains; re-reading closes the one of the copy.
  uint64_t read_to = size;
  for (int pass = 0; pass < 4; ++pass) {
    if (::fstat(fd.get(), &st) != 0) return io_error("read the size of", path);
    const uint64_t now = static_cast<uint64_t>(st.st_size);
    if (now <= read_to) break;
    std::string more(now - read_to, '\0');
    const ssize_t n = ::pread(fd.get(), more.data(), more.size(), static_cast<off_t>(read_to));
    if (n <= 0) break;
    tail.append(more.data(), static_cast<size_t>(n));
    read_to += static_cast<uint64_t>(n);
  }
  const std::string line = fmt::format(
      "\n[colo: {} of this log were cut here: it passed {} (its first and last {} are kept)]\n",
      format_bytes(size - keep - static_cast<uint64_t>(got)), why, format_bytes(keep));
  if (::ftruncate(fd.get(), static_cast<off_t>(keep)) != 0) return io_error("cut", path);
  // Appended, as the job appends: what it writes meanwhile lands after this,
  // never under it.
  const std::string rest = line + tail;
  if (::fcntl(fd.get(), F_SETFL, O_APPEND) != 0 ||
      ::write(fd.get(), rest.data(), rest.size()) != static_cast<ssize_t>(rest.size()))
    return io_error("write", path);
  if (::fstat(fd.get(), &st) != 0) return io_error("read the size of", path);
  return std::optional<uint64_t>(static_cast<uint64_t>(st.st_size));
}

}  // namespace colo
