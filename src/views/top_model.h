// `colo top`, without a terminal: what the screen shows (render_top) and what
// a key does (handle_key), both pure functions of a snapshot and the view's
// state, so they are tested with no terminal at all. The ncurses layer
// (top_terminal.h) only draws the lines and reads keys.
//
// The screen, top to bottom: one line about the source (a colo serve, or this
// machine's GPUs read directly); per GPU a line of bars (SM activity,
// memory, power) and PCIe, then its processes one by one (MPS clients each
// with their memory, and the job each belongs to); the job table (the
// service's queued, running and recently ended jobs: owner, state, GPU,
// mechanism, epoch, rate, slowdown against alone, the class when some job
// shown has one other than normal (qos_marker: a protected job's floor, its
// speed of solo and its share of steady time below the floor), memory, MPS
// limits or MIG instance, predicted end); a footer with the keys and the last
// message.
// A job's log replaces the GPUs and the table while it is followed (a queued
// job's says it has none yet, and what it waits for).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "serve/snapshot.h"

namespace colo {

// How a piece of text is drawn; the terminal layer maps these to attributes.
enum class TopStyle {
  kNormal,
  kDim,
  kBold,
  kHeader,    // the table's header, the title line
  kSelected,  // the selected job's row
  kBarLow,    // a bar's filled part under 50%
  kBarMid,    // 50-80%
  kBarHigh,   // over 80%
  kGood,      // state ok
  kBad,       // failed, out of memory, killed
  kNote,      // the footer's message
};

struct TopSpan {
  std::string text;
  TopStyle style = TopStyle::kNormal;
};
using TopLine = std::vector<TopSpan>;

// What the view reads each refresh.
struct TopInput {
  ServiceSnapshot snapshot;
  // True when the snapshot comes from a colo serve; false when it was read
  // from this machine's GPUs directly (no jobs then, only processes).
  bool from_service = false;
  std::string source;  // "colo serve at /run/colo.sock", "local GPUs (nvml)"
  std::string error;   // the last refresh failed (shown; the snapshot is the last good one)
};

enum class TopSort { kQueue, kId, kOwner, kGpu, kEpoch, kRate, kSlowdown, kMemory, kName };
const char* to_string(TopSort sort);

enum class TopMode {
  kTable,          // GPUs and jobs
  kFilter,         // typing a filter
  kConfirmCancel,  // "cancel job N? y/n"
  kLog,            // following a job's log
  kHelp,
};

// The view's state between keys. Plain data.
struct TopState {
  TopMode mode = TopMode::kTable;
  TopSort sort = TopSort::kQueue;
  bool descending = false;
  std::string filter;        // jobs whose name, owner, state or group contains it
  std::string filter_draft;  // while typing
  // A job id. When unset, or when that job is no longer in the table (it left
  // the list, or a state filter no longer matches it after a cancel), the
  // job now at `selected_row` (the next row), else the last one.
  std::optional<int64_t> selected;
  int selected_row = 0;  // the selected job's row when it was last seen
  int first_row = 0;     // of the job table, when it scrolls
  std::string message;   // shown in the footer until the next key
  // While following a log.
  int64_t log_job = 0;
  std::string log_text;  // its tail (at most kLogKeptBytes)
  uint64_t log_offset = 0;
  std::string log_path;
  bool log_ended = false;
};

inline constexpr size_t kLogKeptBytes = size_t{256} * 1024;

// Keys beyond plain characters (values outside the byte range, as curses has them).
enum TopKey : int {
  kTopKeyUp = 0x1001,
  kTopKeyDown,
  kTopKeyPageUp,
  kTopKeyPageDown,
  kTopKeyHome,
  kTopKeyEnd,
  kTopKeyEnter,
  kTopKeyEscape,
  kTopKeyBackspace,
};

// What the caller must do after a key.
struct TopCommand {
  enum class Kind { kNone, kQuit, kCancel, kFollowLog, kStopLog };
  Kind kind = Kind::kNone;
  int64_t job = 0;
};

// The jobs the table shows: filtered, then sorted as the state says (ties in
// queue order).
std::vector<const QueueJob*> visible_jobs(const TopInput& input, const TopState& state);

// The screen for a terminal of `width` x `height` cells: at most `height`
// lines, each at most `width` characters (ASCII only). `now_ms` ages ended
// jobs and predicted ends.
std::vector<TopLine> render_top(const TopInput& input, const TopState& state, int width, int height,
                                UnixMillis now_ms);

// The lines as plain text (a pipe, TERM=dumb): trailing spaces trimmed.
std::string plain_text(const std::vector<TopLine>& lines);

// Applies one key to the state; the command tells the caller what to do.
TopCommand handle_key(TopState& state, int key, const TopInput& input);

// After a refresh: keeps the selection on the same job id where the table
// still shows it (noting its row), else moves it to the job now in its row
// (the next one; the last when the table got shorter), so that a cancel or a
// job leaving the list never sends it back to the first row.
void follow_selection(TopState& state, const TopInput& input);

// Appends a log chunk to the state's tail (kept at most kLogKeptBytes).
void append_log(TopState& state, const std::string& path, const std::string& data,
                uint64_t next_offset, bool ended);

}  // namespace colo
