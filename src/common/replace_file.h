// Writing a file that others read while it changes (a job's request, a page
// a browser may have open) so that no reader sees half of it.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace colo {

// Writes `content` to `path` through a file beside it (`path`.tmp) renamed
// over it: a reader finds the old file or the new one, whole. An error names
// the file and why; the file beside it is removed then.
Status replace_file(const std::string& path, std::string_view content);

// What putting a file in place does to one already at its path (a symbolic
// link there counts as a file, and is never followed).
enum class ExistingFile {
  kRefuse,   // an error; what is there stays untouched
  kReplace,  // replaced (a link itself, never where it points)
};

// A file made beside its final path and moved onto it only when whole (a
// copy another program writes through path(), such as SQLite's backup):
// created exclusively as `.NAME.XXXXXX` in the final path's directory
// (O_EXCL: never through a link), mode 0600 whatever the umask, owned by the
// caller. commit() renames it onto the final path; until then, and if that
// fails, the destructor removes it, provided the name still holds the file
// it created (a file put in its place by someone else stays). Not
// thread-safe; owns its descriptor.
class StagedFile {
 public:
  static Result<StagedFile> create(const std::string& final_path);
  StagedFile(StagedFile&& other) noexcept;
  StagedFile& operator=(StagedFile&&) = delete;
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  ~StagedFile();

  const std::string& path() const { return path_; }
  const std::string& final_path() const { return final_path_; }
  // The descriptor of the file created (for fstat, fsync).
  int fd() const { return fd_.get(); }

  // Checks that path() still names the file created (nobody swapped it while
  // another program wrote through the name), flushes it to disk, renames it
  // onto final_path() (kRefuse: atomically, only when nothing is there) and
  // flushes the directory. An error names the file and what to do.
  Status commit(ExistingFile existing);

 private:
  StagedFile(std::string path, std::string final_path, UniqueFd fd)
      : path_(std::move(path)), final_path_(std::move(final_path)), fd_(std::move(fd)) {}
  // Whether path() still names the file fd() holds.
  bool still_ours() const;

  std::string path_;
  std::string final_path_;
  UniqueFd fd_;
  bool committed_ = false;
};

}  // namespace colo
