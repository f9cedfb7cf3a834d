// Who runs a process on a GPU and what it is called, read from /proc, for the
// snapshot's process rows (the service's and `colo top`'s own).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace colo {

struct ProcessIdentity {
  std::string user;     // login name, or the uid as text; "" when unknown
  std::string command;  // the kernel's short name (/proc/PID/comm); "" when unknown
};

// A seam for tests. Implementations must be callable from any thread.
using ProcessDescriber = std::function<ProcessIdentity(uint32_t pid)>;

// /proc/PID/comm and the real uid of /proc/PID/status; a process gone (or in
// another pid namespace) gives empty fields.
ProcessIdentity describe_process_from_proc(uint32_t pid);

}  // namespace colo
