// MpsFaultLog: what the engine remembers of faults under MPS between ticks
// (docs/reliability.md): the latest fatal fault a client raised on each GPU
// (named in the records of the clients it reached), the pause of placement
// after a fault (the server recovers), and the back-off of starts a
// recovering server refused. Monotonic time in; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace colo {

// A fatal GPU fault's cause as the owner of each job it reached is told it:
// whole (the job that raised it and its line) to jobs of the same owner; to
// jobs of other owners, which share one multi-user MPS server, only where
// and that a job of another user raised it, none of that job's name,
// command line or log.
struct FaultCause {
  std::string whole;
  std::string for_others;
  uint32_t owner = 0;  // of the job that raised it, or that saw it first
  const std::string& told_to(uint32_t viewer) const { return viewer == owner ? whole : for_others; }
  bool operator==(const FaultCause&) const = default;
};

class MpsFaultLog {
 public:
  // A client's fault explains others' this long.
  static constexpr int64_t kRecentFaultMs = 60'000;
  // Placement waits this long after a fault.
  static constexpr int64_t kSettleMs = 2000;
  // The back-off after a refused start: this, doubling, up to kNotReadyMaxWaitMs.
  static constexpr int64_t kNotReadyFirstWaitMs = 2000;
  static constexpr int64_t kNotReadyMaxWaitMs = 30'000;
  // Starts refused in a row that call for the daemon's restart.
  static constexpr int kNotReadyRestartAfter = 4;

  // A client raised a fatal fault (`cause`, as the others' records name it) on `gpus`.
  void raised(const std::vector<int>& gpus, const FaultCause& cause, int64_t now_ms);
  // The fault a client raised on one of `gpus` in the last kRecentFaultMs.
  std::optional<FaultCause> recent(const std::vector<int>& gpus, int64_t now_ms) const;
  // A fault was seen: no job is placed for kSettleMs.
  void settle(int64_t now_ms) { pause_until(now_ms + kSettleMs); }
  // A recovering server refused a start: placement backs off (returned),
  // longer with each refusal in a row.
  int64_t refused_start(int64_t now_ms);
  // Refusals in a row since a client last got going (or the daemon restarted).
  int refused_in_a_row() const { return refused_in_a_row_; }
  // A client got going (the server accepts clients), or the daemon restarts.
  void accepted() { refused_in_a_row_ = 0; }
  // Whether placement waits at `now_ms`.
  bool paused(int64_t now_ms) const { return now_ms < paused_until_ms_; }

 private:
  void pause_until(int64_t until_ms);

  struct Fault {
    FaultCause cause;
    int64_t at_ms = 0;
  };
  std::map<int, Fault> latest_;  // by GPU
  int64_t paused_until_ms_ = 0;
  int refused_in_a_row_ = 0;
};

}  // namespace colo
