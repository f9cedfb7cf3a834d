// MpsControl: the seam between colo and the MPS control program
// (nvidia-cuda-mps-control). It starts the control daemon and sends it
// commands on stdin; tests substitute a fake program or a fake MpsControl.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "sharing/mechanism.h"

namespace colo {

// What a finished program said.
struct CommandOutput {
  int exit_status = 0;  // the exit code, or 128 + signal number when killed by a signal
  std::string stdout_text;
  std::string stderr_text;
};

// Runs the MPS control program. Environment changes are applied on top of
// colo's own environment; an empty value removes the variable.
//
// Threading: implementations need not be thread-safe.
class MpsControl {
 public:
  virtual ~MpsControl() = default;

  // Runs `<program> -d` (`-d -M` with `multiuser`: one root server for the
  // clients of every user), which starts the control daemon in the
  // background and returns. Success means the program ran and exited; the
  // caller checks exit_status and then whether the daemon answers.
  virtual Result<CommandOutput> start_daemon(const Environment& env_changes, bool multiuser) = 0;

  // Runs `<program> -h` and returns what it printed (its help text, on
  // stdout or stderr; its exit status says nothing).
  virtual Result<CommandOutput> help() = 0;

  // Runs `<program>` with `input` (one or more newline-terminated commands) on
  // stdin and returns what it printed.
  virtual Result<CommandOutput> run_command(const Environment& env_changes,
                                            std::string_view input) = 0;
};

// The real MPS control program, run with fork/exec. The program is looked up
// on the PATH of the child's environment unless it contains a '/'. Each run is
// placed in a new session so that a Ctrl-C aimed at colo does not reach the
// daemon before colo has stopped it; each run is killed after `timeout_ms`.
// `clock` must outlive this object. Not thread-safe.
class ProcessMpsControl final : public MpsControl {
 public:
  ProcessMpsControl(std::string program, Clock& clock, int timeout_ms = 10'000)
      : program_(std::move(program)), clock_(clock), timeout_ms_(timeout_ms) {}

  Result<CommandOutput> start_daemon(const Environment& env_changes, bool multiuser) override;
  Result<CommandOutput> help() override;
  Result<CommandOutput> run_command(const Environment& env_changes,
                                    std::string_view input) override;

 private:
  std::string program_;
  Clock& clock_;
  int timeout_ms_;
};

// Runs argv (argv[0] resolved as ProcessMpsControl describes) with `input` on
// stdin (at most 4096 bytes), waits for it to exit and returns its output. Only
// the program itself is waited for: a daemon it leaves behind may keep running.
// Kills the program and fails when it runs longer than `timeout_ms`.
Result<CommandOutput> run_program(const std::vector<std::string>& argv,
                                  const Environment& env_changes, std::string_view input,
                                  int timeout_ms, Clock& clock);

}  // namespace colo
