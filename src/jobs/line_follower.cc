#include "jobs/line_follower.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/user_file.h"

namespace colo {
namespace {

constexpr size_t kReadChunkBytes = size_t{64} << 10;

bool is_terminator(char c) { return c == '\n' || c == '\r'; }

}  // namespace

LineFollower::LineFollower(std::string path, FollowLimits limits)
    : path_(std::move(path)), limits_(limits) {
  partial_.reserve(std::min<size_t>(limits_.max_line_bytes, 4096));
}

void LineFollower::reset(std::string path) {
  path_ = std::move(path);
  offset_ = 0;
  inode_ = 0;
  partial_.clear();
  discarding_ = false;
}

void LineFollower::refuse(std::string why) {
  refused_ = true;
  if (!notice_) notice_ = std::move(why);
}

std::optional<std::string> LineFollower::take_notice() {
  if (!notice_ || notice_taken_) return std::nullopt;
  notice_taken_ = true;
  return notice_;
}

void LineFollower::skip_to(int fd, uint64_t offset) {
  if (offset <= offset_) return;
  skipped_bytes_ += offset - offset_;
  offset_ = offset;
  partial_.clear();
  // Reading resumes mid-line unless the byte before `offset` ends a line.
  char last = 0;
  discarding_ =
      !(::pread(fd, &last, 1, static_cast<off_t>(offset - 1)) == 1 && is_terminator(last));
}

void LineFollower::consume(std::string_view chunk, const LineSink& on_line) {
  while (!chunk.empty()) {
    const auto end = std::find_if(chunk.begin(), chunk.end(), is_terminator);
    const auto length = static_cast<size_t>(end - chunk.begin());
    if (!discarding_) {
      const size_t room = limits_.max_line_bytes - partial_.size();
      if (length > room) {
        partial_.append(chunk.substr(0, room));
        on_line(partial_, /*truncated=*/true);
        partial_.clear();
        discarding_ = true;
      } else {
        partial_.append(chunk.substr(0, length));
      }
    }
    if (end == chunk.end()) return;  // the line goes on in the next chunk
    if (!discarding_ && !partial_.empty()) on_line(partial_, /*truncated=*/false);
    partial_.clear();
    discarding_ = false;
    chunk.remove_prefix(length + 1);
  }
}

void LineFollower::resume_at(uint64_t offset) {
  offset_ = offset;
  partial_.clear();
  discarding_ = false;
}

void LineFollower::read(bool writer_exited, const LineSink& on_line) {
  if (path_.empty()) return;
  Result<std::optional<UserFile>> opened = open_user_file(path_);
  if (!opened.ok()) {
    refuse(opened.error().message());
    return;
  }
  if (!*opened) return;  // not written yet
  const UniqueFd& fd = (*opened)->fd;
  const struct stat& st = (*opened)->info;
  const auto inode = static_cast<uint64_t>(st.st_ino);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < offset_ || (inode_ != 0 && inode != inode_)) {
    // Truncated or replaced: start over.
    offset_ = 0;
    partial_.clear();
    discarding_ = false;
  }
  inode_ = inode;
  if (!writer_exited && size - offset_ > limits_.max_backlog_bytes) skip_to(fd.get(), size);

  const uint64_t budget = writer_exited ? limits_.max_final_bytes : limits_.max_read_bytes;
  this_read_bytes_ = partial_.size() + std::min(size - offset_, budget);
  this_read_written_ms_ = static_cast<UnixMillis>(st.st_mtim.tv_sec) * 1000 +
                          static_cast<UnixMillis>(st.st_mtim.tv_nsec / 1'000'000);
  uint64_t read_bytes = 0;
  bool at_end = false;
  char buf[kReadChunkBytes];
  while (read_bytes < budget) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof buf, budget - read_bytes));
    ssize_t n = ::pread(fd.get(), buf, want, static_cast<off_t>(offset_));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      at_end = true;
      break;
    }
    offset_ += static_cast<uint64_t>(n);
    read_bytes += static_cast<uint64_t>(n);
    consume(std::string_view(buf, static_cast<size_t>(n)), on_line);
  }
  if (!writer_exited) return;
  if (!at_end) {
    // The job has exited and left more than the final budget: skip the rest.
    struct stat now {};
    if (fstat(fd.get(), &now) == 0) skip_to(fd.get(), static_cast<uint64_t>(now.st_size));
    return;
  }
  if (!discarding_ && !partial_.empty()) on_line(partial_, /*truncated=*/false);
  partial_.clear();
}

}  // namespace colo
