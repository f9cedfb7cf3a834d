// The signal that last asked this process to stop, for the messages that
// tell a user how to insist: after a Ctrl-C, "Ctrl-C again to kill now";
// after a SIGTERM (systemd, kill, a scheduler), "SIGTERM again". colo run's
// and colo serve's signal handlers note it; the engine and the service name
// it. One process-wide value, as signal dispositions are.
#pragma once

#include <string>

namespace colo {

// Notes `signo` (SIGINT, SIGTERM, ...). Async-signal-safe: a lock-free atomic store.
void note_stop_signal(int signo);

// How a user sends the signal last noted: "Ctrl-C" (SIGINT), "SIGTERM",
// "SIGHUP", else "signal N"; `otherwise` when none was noted.
std::string stop_signal_name(const std::string& otherwise);

}  // namespace colo
