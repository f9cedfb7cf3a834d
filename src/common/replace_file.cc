#include "common/replace_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

namespace colo {

Status replace_file(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out.flush()) {
      const std::string why = std::strerror(errno);
      std::remove(tmp.c_str());
      return Error(fmt::format("cannot write {}: {}", tmp, why));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Error(fmt::format("cannot write {}: {}", path, why));
  }
  return OkStatus();
}

namespace {

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Moves `from` onto `to` only when nothing is at `to`: renameat2's
// RENAME_NOREPLACE, else (a file system without it) a hard link, which
// fails just as atomically on an existing name, and the old name removed.
int rename_no_replace(const std::string& from, const std::string& to) {
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (::link(from.c_str(), to.c_str()) != 0) return -1;
  ::unlink(from.c_str());
  return 0;
}

}  // namespace

Result<StagedFile> StagedFile::create(const std::string& final_path) {
  const std::string name = name_of(final_path);
  if (name.empty() || name == "." || name == "..") {
    return Error(
        fmt::format("{}: not a file name (give the path of the file to write)", final_path));
  }
  std::string pattern = fmt::format("{}/.{}.XXXXXX", directory_of(final_path), name);
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  UniqueFd fd(mkostemp(buffer.data(), O_CLOEXEC));
  if (fd.get() < 0) {
    return Error(fmt::format("cannot create a file in {} to write {}: {}", directory_of(final_path),
                             final_path, std::strerror(errno)));
  }
  StagedFile staged(buffer.data(), final_path, std::move(fd));
  if (fchmod(staged.fd(), 0600) != 0) {
    return Error(
        fmt::format("cannot make {} private (mode 0600): {}", staged.path(), std::strerror(errno)));
  }
  return staged;
}

StagedFile::StagedFile(StagedFile&& other) noexcept
    : path_(std::move(other.path_)),
      final_path_(std::move(other.final_path_)),
      fd_(std::move(other.fd_)),
      committed_(other.committed_) {
  other.committed_ = true;  // the moved-from object removes nothing
}

StagedFile::~StagedFile() {
  if (!committed_ && fd_.get() >= 0 && still_ours()) ::unlink(path_.c_str());
}

bool StagedFile::still_ours() const {
  struct stat held {};
  struct stat named {};
  return fstat(fd_.get(), &held) == 0 && ::lstat(path_.c_str(), &named) == 0 &&
         S_ISREG(named.st_mode) && held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

Status StagedFile::commit(ExistingFile existing) {
  if (!still_ours()) {
    return Error(fmt::format(
        "{} was replaced or removed while colo wrote it: {} was not written; write it into a "
        "directory only you can write",
        path_, final_path_));
  }
  if (fsync(fd_.get()) != 0) {
    return Error(fmt::format("cannot flush {} to disk: {}", path_, std::strerror(errno)));
  }
  const int moved = existing == ExistingFile::kReplace
                        ? std::rename(path_.c_str(), final_path_.c_str())
                        : rename_no_replace(path_, final_path_);
  if (moved != 0) {
    if (errno == EEXIST) {
      return Error(fmt::format("{} already exists (it appeared while colo wrote it): not replaced",
                               final_path_));
    }
    return Error(
        fmt::format("cannot rename {} to {}: {}", path_, final_path_, std::strerror(errno)));
  }
  committed_ = true;
  // The rename itself reaches the disk with the directory.
  UniqueFd dir(::open(directory_of(final_path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) fsync(dir.get());
  return OkStatus();
}

}  // namespace colo
