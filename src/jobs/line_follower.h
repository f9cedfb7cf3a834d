// LineFollower: reads the lines a job appends to a file (its progress file
// or its output log) while the job runs, without letting the job make colo
// block, buffer without bound, or fall behind for ever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace colo {

// Bounds on what one follower reads. Defaults are for a job's progress file.
struct FollowLimits {
  size_t max_line_bytes = size_t{64} << 10;   // a longer line is cut here (see read())
  uint64_t max_read_bytes = 32ULL << 20;      // per read() while the writer runs
  uint64_t max_final_bytes = 64ULL << 20;     // per read() once the writer has exited
  uint64_t max_backlog_bytes = 256ULL << 20;  // unread bytes beyond which they are skipped
};

// Called for each line, without its terminator. `truncated`: the line was
// longer than max_line_bytes and this is its beginning.
using LineSink = std::function<void(std::string_view line, bool truncated)>;

// Follows one file by path. Each read() opens the path again, so a file the
// job replaced (new inode) or truncated is read from its start.
//
// What a job cannot do to colo through the file:
//  - block it: the path is opened with O_NONBLOCK, and read only when it is a
//    regular file, so a FIFO or a device is refused instead of waited on;
//  - redirect it: the path is opened with O_NOFOLLOW, so a symbolic link (to
//    /dev/zero, say) is refused;
//  - exhaust its memory: a line longer than max_line_bytes is handed out cut
//    to that length and the rest of it is skipped; at most one such line and
//    one 64 KiB read buffer are held;
//  - stall it: one read() reads at most max_read_bytes (max_final_bytes after
//    the job exited) and skips the rest when more than max_backlog_bytes wait
//    unread (or, after the job exited, whatever is left beyond the budget).
// Skipped bytes are counted; a refused file is reported once through
// take_notice(). '\n' and '\r' both end a line (progress bars redraw their
// line with '\r'); empty lines are not handed out. A missing file is not an
// error: the job has not written yet. Not thread-safe.
class LineFollower {
 public:
  explicit LineFollower(std::string path, FollowLimits limits = {});

  // Reads what was appended since the last call, calling `on_line` for each
  // complete line. With `writer_exited`, a last line without terminator is
  // handed out too.
  void read(bool writer_exited, const LineSink& on_line);

  const std::string& path() const { return path_; }
  // Follows another path from its start (a retried job's new log).
  void reset(std::string path);
  // Goes on from `offset` of the same file (one cut in place, jobs/log_cap.h,
  // whose kept part was read already), not from its start as after a
  // truncation by someone else. A line in progress there is dropped.
  void resume_at(uint64_t offset);
  uint64_t skipped_bytes() const { return skipped_bytes_; }
  // While read() hands out lines: about how many bytes it hands out in all
  // (what was appended, within its budget, with a partial line kept from
  // the read before), for placing a line within the read.
  uint64_t this_read_bytes() const { return this_read_bytes_; }
  // While read() hands out lines: the file's modification time, when the
  // last of what it read (or more) was written, by the real clock.
  UnixMillis this_read_written_ms() const { return this_read_written_ms_; }
  // Whether the path was ever refused (a link, FIFO, device, unreadable).
  bool refused() const { return refused_; }
  // Why the path was refused, once: the first call after the first refusal.
  std::optional<std::string> take_notice();

 private:
  void refuse(std::string why);
  void skip_to(int fd, uint64_t offset);
  void consume(std::string_view chunk, const LineSink& on_line);

  std::string path_;
  FollowLimits limits_;
  uint64_t offset_ = 0;
  uint64_t inode_ = 0;  // of the file last read; 0 before the first read
  std::string partial_;
  bool discarding_ = false;  // skipping the rest of a cut (or skipped-into) line
  uint64_t skipped_bytes_ = 0;
  uint64_t this_read_bytes_ = 0;
  UnixMillis this_read_written_ms_ = 0;
  bool refused_ = false;
  std::optional<std::string> notice_;
  bool notice_taken_ = false;
};

}  // namespace colo
