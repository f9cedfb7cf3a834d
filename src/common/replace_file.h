// Writing a file that others read while it changes (a job's request, a page
// a browser may have open, an ownership record, a copy of a store) so that no
// reader sees half of it: the one temp-then-rename of colo, safe where colo
// runs as root in a directory a user may write.
//
// The rule:
//  - the directory is opened once, its last component without following a
//    link unless the link is the writer's own or root's (a user's job cannot
//    point root's write elsewhere by swapping its directory for a link), and
//    every later step is relative to that descriptor (openat, renameat);
//  - the content goes to a new file of a random name beside the target
//    (`.NAME.<16 hex digits>`), created exclusively (O_CREAT | O_EXCL |
//    O_NOFOLLOW): nothing planted at the target's name, or at any temporary
//    name, is opened or written through; its mode is exactly the one asked,
//    whatever the umask; it is then renamed onto the target (rename(2)
//    replaces a link at the target's name, never what it points to);
//  - written as the directory's owner: when the writer is root and the
//    directory is another user's, the new file is given to that user (owner
//    and group) through its descriptor before it is renamed, so root leaves
//    no file of its own in a user's directory;
//  - on any error the temporary file is removed (when its name still holds
//    the file made), and the error names the file and why.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace colo {

struct ReplaceOptions {
  unsigned mode = 0644;  // the file's permission bits, exactly (the umask is not applied)
  bool sync = false;     // fsync(2) the file, and its directory after the rename
};

// A private file that must outlive a crash: a store's copy, a secret.
inline constexpr ReplaceOptions kPrivateDurableFile{0600, true};

// What putting a file in place does to one already at its path (a symbolic
// link there counts as a file, and is never followed).
enum class ExistingFile {
  kRefuse,   // an error; what is there stays untouched
  kReplace,  // replaced (a link itself, never where it points)
};

// Writes `content` to `path` under the rule above: a reader finds the old
// file or the new one, whole.
Status replace_file(const std::string& path, std::string_view content,
                    const ReplaceOptions& options = {});

// The same, with the content written by `write` into the temporary file,
// given its descriptor (open for writing, at offset 0) and its path.
using FileWriter = std::function<Status(int fd, const std::string& temp_path)>;
Status replace_file_with(const std::string& path, const FileWriter& write,
                         const ReplaceOptions& options = {});

// The file of the rule above, for writers that need it between its creation
// and its rename: a copy another program writes through path() (SQLite's
// backup, which opens it again without following a link; the directory
// must then be one only the writer's user may change, as a swapped name is
// only detected at commit()). commit() puts it in place; until then, and if
// that fails, the destructor removes it, provided the name still holds the
// file it created (a file put in its place by someone else stays). Not
// thread-safe; owns its descriptors.
class StagedFile {
 public:
  static Result<StagedFile> create(const std::string& final_path,
                                   const ReplaceOptions& options = {});
  StagedFile(StagedFile&& other) noexcept;
  StagedFile& operator=(StagedFile&&) = delete;
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  ~StagedFile();

  const std::string& path() const { return path_; }
  const std::string& final_path() const { return final_path_; }
  // The descriptor of the file created, open for writing.
  int fd() const { return fd_.get(); }

  // Checks that path() still names the file created (nobody swapped it while
  // another program wrote through the name), gives it to the directory's
  // owner (root in a user's directory), flushes it (options.sync), renames
  // it onto final_path() (kRefuse: atomically, only when nothing is there)
  // and flushes the directory (options.sync). An error names the file.
  Status commit(ExistingFile existing);

 private:
  StagedFile() = default;
  // Whether path() still names the file fd() holds.
  bool still_ours() const;

  std::string path_;
  std::string final_path_;
  std::string name_;        // path_'s last component
  std::string final_name_;  // final_path_'s
  UniqueFd dir_;
  UniqueFd fd_;
  ReplaceOptions options_;
  bool give_to_owner_ = false;  // root writing in another user's directory
  uid_t owner_ = 0;
  gid_t group_ = 0;
  bool committed_ = false;
};

}  // namespace colo
