// Reading /proc: files of processes that may exit while they are read, and
// /proc/PID/stat, the one place that knows its layout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colo {

// The whole of a /proc file, with read(2); nullopt when it cannot be opened
// or its process went away while it was read (ESRCH), which libstdc++'s
// streams would turn into an exception.
std::optional<std::string> read_proc_file(const std::string& path);

// A process's start time (clock ticks after boot, field 22) in the text of
// its /proc/PID/stat; nullopt when the text holds none. Fields are counted
// after the command name's closing ')', since the name may hold spaces and ')'.
std::optional<uint64_t> start_ticks_in_stat(std::string_view stat);

// What a process is doing, from /proc: evidence for a job that stopped making
// progress.
struct ProcessState {
  int pid = 0;
  std::string command;  // its name (comm)
  char state = '?';     // R running, S sleeping, D uninterruptible (I/O, a driver), Z, T, ...
  std::string wchan;    // the kernel function it waits in ("" when running or hidden)
  int64_t cpu_ms = 0;   // CPU time it has used, user and system (fields 14 and 15)
};

// The processes of process group `pgid` (a job's: its main process's pid),
// at most `max`, by pid.
std::vector<ProcessState> process_group_states(int pgid, size_t max);

// The CPU time the processes of group `pgid` now alive have used, in ms;
// nullopt when none is left.
std::optional<int64_t> process_group_cpu_ms(int pgid);

// Raises this process's soft limit on open files toward its hard limit, to
// at most `wanted`; returns the soft limit now. A service that bounds its
// connections below this limit never runs out of descriptors first.
size_t raise_open_file_limit(size_t wanted);

}  // namespace colo
