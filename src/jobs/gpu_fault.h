// What a job's log says of a fatal GPU fault (docs/reliability.md). Under
// MPS, a fatal fault raised by one client (a device-side assert, an illegal
// address) reaches every client of that GPU's server, and the server refuses
// new clients until they have all exited; it does not say which client
// caused it. The clients' own errors tell the cause from its consequences.
#pragma once

#include <string>
#include <string_view>

namespace colo {

enum class GpuFault {
  kNone,
  kOwn,       // a fault its own kernels raised: a device-side assert, an illegal address, ...
  kAffected,  // a fault it suffered: its MPS client terminated, the server not ready, busy
};

struct GpuFaultSeen {
  GpuFault kind = GpuFault::kNone;
  std::string line;        // the line that says so, trimmed
  bool assertion = false;  // a device-side assertion ("Assertion `t < n` failed."): only
                           // the client whose kernel failed prints it
};

// Looks through `log_text` (a job's log tail) for a fault: kOwn when any line
// shows one of the job's own (its `line` the assertion when there is one, else
// the first such line), else kAffected when a line shows the consequence of
// another's, else kNone. colo's own notes (kColoLogNotePrefix) are skipped. Pure.
GpuFaultSeen find_gpu_fault(std::string_view log_text);

}  // namespace colo
