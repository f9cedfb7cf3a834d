// ProcessFinder: the seam through which colo finds and signals the processes
// of an MPS daemon it started. A process is identified by an exact entry in
// its environment (CUDA_MPS_PIPE_DIRECTORY=<colo's private pipe dir>), so
// colo never signals a process it did not start.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace colo {

struct ProcessInfo {
  int pid = 0;
  std::string comm;  // the kernel's short name (/proc/PID/comm, at most 15 characters)
  // When it started (clock ticks after boot, /proc/PID/stat field 22): with
  // the pid, it tells a process from a later one given the same pid.
  uint64_t start_ticks = 0;
};

// Threading: implementations need not be thread-safe.
class ProcessFinder {
 public:
  virtual ~ProcessFinder() = default;

  // Every live process other than this one whose environment holds exactly
  // `name=value`. Processes whose environment cannot be read are skipped.
  virtual std::vector<ProcessInfo> find_with_env(std::string_view name, std::string_view value) = 0;

  // Whether a process with this pid exists (it may belong to another user).
  virtual bool is_alive(int pid) = 0;

  // Sends `sig` to `pid` only if its environment still holds `name=value`
  // (checked again right before the signal, against pid reuse); fails
  // otherwise and sends nothing.
  virtual Status send_signal(int pid, int sig, std::string_view name, std::string_view value) = 0;
};

// The real process table, read from /proc. Reading other users' environments
// needs root (or the same user); colo runs the daemon as itself, so the
// daemon's processes are always readable. Stateless; thread-safe.
class ProcFsProcessFinder final : public ProcessFinder {
 public:
  explicit ProcFsProcessFinder(std::string proc_root = "/proc")
      : proc_root_(std::move(proc_root)) {}

  std::vector<ProcessInfo> find_with_env(std::string_view name, std::string_view value) override;
  bool is_alive(int pid) override;
  Status send_signal(int pid, int sig, std::string_view name, std::string_view value) override;

 private:
  bool environment_has(int pid, std::string_view entry) const;

  std::string proc_root_;
};

}  // namespace colo
