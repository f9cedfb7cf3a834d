#include "common/replace_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "common/paths.h"

namespace colo {
namespace {

// The directory `dir`, opened for the *at calls: a link at its last
// component is followed only when the writer or root owns it.
Result<UniqueFd> open_directory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() >= 0) return fd;
  const int open_errno = errno;
  struct stat link {};
  if ((open_errno == ELOOP || open_errno == ENOTDIR) && ::lstat(dir.c_str(), &link) == 0 &&
      S_ISLNK(link.st_mode)) {
    if (link.st_uid != ::geteuid() && link.st_uid != 0) {
      return Error(fmt::format(
          "{} is a symbolic link of another user (uid {}); colo does not write through it", dir,
          link.st_uid));
    }
    fd = UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() >= 0) return fd;
  }
  return Error(fmt::format("cannot open the directory {}: {}", dir, std::strerror(errno)));
}

// ".<name>.<16 hex digits>", its name cut so that the whole stays a valid
// file name.
std::string temp_name(const std::string& name) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  constexpr size_t kMaxStem = 200;
  return fmt::format(".{}.{:016x}", name.substr(0, kMaxStem), random());
}

// Moves `from` onto `to` in `dir` only when nothing is at `to`: renameat2's
// RENAME_NOREPLACE, else (a file system without it) a hard link, which
// fails just as atomically on an existing name, and the old name removed.
int rename_no_replace(int dir, const std::string& from, const std::string& to) {
  if (::renameat2(dir, from.c_str(), dir, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (::linkat(dir, from.c_str(), dir, to.c_str(), 0) != 0) return -1;
  ::unlinkat(dir, from.c_str(), 0);
  return 0;
}

Status write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error(std::strerror(errno));
    content.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

}  // namespace

Result<StagedFile> StagedFile::create(const std::string& final_path,
                                      const ReplaceOptions& options) {
  const size_t slash = final_path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : final_path.substr(0, slash));
  StagedFile staged;
  staged.final_path_ = final_path;
  staged.final_name_ = slash == std::string::npos ? final_path : final_path.substr(slash + 1);
  staged.options_ = options;
  auto failed = [&](const std::string& why) {
    return Error(fmt::format("cannot write {}: {}", final_path, why));
  };
  if (staged.final_name_.empty() || staged.final_name_ == "." || staged.final_name_ == "..")
    return failed("not a file name (give the path of the file to write)");
  Result<UniqueFd> dir_fd = open_directory(dir);
  if (!dir_fd.ok()) return failed(dir_fd.error().message());
  staged.dir_ = std::move(dir_fd).value();
  struct stat dir_info {};
  if (::fstat(staged.dir_.get(), &dir_info) != 0) return failed(std::strerror(errno));
  // Root writing in another user's directory writes as that user.
  staged.give_to_owner_ = ::geteuid() == 0 && dir_info.st_uid != 0;
  staged.owner_ = dir_info.st_uid;
  staged.group_ = dir_info.st_gid;

  for (int attempt = 0; attempt < 16 && staged.fd_.get() < 0; ++attempt) {
    staged.name_ = temp_name(staged.final_name_);
    staged.fd_ = UniqueFd(
        open_regular_file_at(staged.dir_.get(), staged.name_, O_RDWR | O_CREAT | O_EXCL, 0600));
    if (staged.fd_.get() < 0 && errno != EEXIST) return failed(std::strerror(errno));
  }
  if (staged.fd_.get() < 0) return failed("no free temporary name beside it");
  staged.path_ = (dir == "/" ? "" : dir) + "/" + staged.name_;
  if (::fchmod(staged.fd_.get(), options.mode) != 0) {
    return failed(fmt::format("cannot set the mode of {} to {:o}: {}", staged.path_, options.mode,
                              std::strerror(errno)));
  }
  return staged;
}

StagedFile::StagedFile(StagedFile&& other) noexcept
    : path_(std::move(other.path_)),
      final_path_(std::move(other.final_path_)),
      name_(std::move(other.name_)),
      final_name_(std::move(other.final_name_)),
      dir_(std::move(other.dir_)),
      fd_(std::move(other.fd_)),
      options_(other.options_),
      give_to_owner_(other.give_to_owner_),
      owner_(other.owner_),
      group_(other.group_),
      committed_(other.committed_) {
  other.committed_ = true;  // the moved-from object removes nothing
}

StagedFile::~StagedFile() {
  if (!committed_ && fd_.get() >= 0 && still_ours()) ::unlinkat(dir_.get(), name_.c_str(), 0);
}

bool StagedFile::still_ours() const {
  struct stat held {};
  struct stat named {};
  return ::fstat(fd_.get(), &held) == 0 &&
         ::fstatat(dir_.get(), name_.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(named.st_mode) && held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

Status StagedFile::commit(ExistingFile existing) {
  if (!still_ours()) {
    return Error(fmt::format(
        "{} was replaced or removed while colo wrote it: {} was not written; write it into a "
        "directory only you can write",
        path_, final_path_));
  }
  auto failed = [&](const std::string& why) {
    return Error(fmt::format("cannot write {}: {}", final_path_, why));
  };
  if (give_to_owner_ && ::fchown(fd_.get(), owner_, group_) != 0)
    return failed(fmt::format("cannot give it to uid {}: {}", owner_, std::strerror(errno)));
  if (options_.sync && ::fsync(fd_.get()) != 0)
    return failed(fmt::format("cannot flush {} to disk: {}", path_, std::strerror(errno)));
  const int moved = existing == ExistingFile::kReplace
                        ? ::renameat(dir_.get(), name_.c_str(), dir_.get(), final_name_.c_str())
                        : rename_no_replace(dir_.get(), name_, final_name_);
  if (moved != 0) {
    if (errno == EEXIST) return failed("it already exists (it appeared while colo wrote it)");
    return failed(fmt::format("cannot rename {} onto it: {}", path_, std::strerror(errno)));
  }
  committed_ = true;
  // The rename itself reaches the disk with the directory.
  if (options_.sync) ::fsync(dir_.get());
  return OkStatus();
}

Status replace_file_with(const std::string& path, const FileWriter& write,
                         const ReplaceOptions& options) {
  Result<StagedFile> staged = StagedFile::create(path, options);
  if (!staged.ok()) return staged.error();
  if (Status written = write(staged->fd(), staged->path()); !written.ok())
    return Error(fmt::format("cannot write {}: {}", path, written.error().message()));
  return staged->commit(ExistingFile::kReplace);
}

Status replace_file(const std::string& path, std::string_view content,
                    const ReplaceOptions& options) {
  return replace_file_with(
      path, [&](int fd, const std::string&) { return write_all(fd, content); }, options);
}

}  // namespace colo
