// The colo subcommands. Each function parses nothing itself: CLI11 fills an
// options struct, the function calls into the libraries, prints, and returns
// the process exit code (see ExitCode).
#pragma once

#include <atomic>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "store/rows.h"

namespace CLI {
class App;
}

namespace colo {

enum ExitCode : int {
  kExitOk = 0,
  kExitJobsFailed = 1,   // colo ran, but at least one job did not end ok
  kExitBadInput = 2,     // bad command line or job file
  kExitEnvironment = 3,  // no driver, store unusable, mechanism failed to start
  kExitNotYet = 4,       // Slurm still has shards queued or running: try again later
  kExitPermission = 5,   // refused: the caller may not (another user's job, an admin's command)
  kExitCancelled = 130,  // stopped with Ctrl-C
};

// Adds every subcommand to `app`; the chosen one runs from CLI11's callback
// and leaves its exit code in `exit_code`. `command_line` is recorded with runs.
void add_commands(CLI::App& app, int& exit_code, const std::string& command_line);

// Installs SIGINT/SIGTERM/SIGHUP handlers that count stop requests.
void install_stop_handlers();

// The exit code of a command that failed with `error`: kExitPermission for a
// refusal of permission (ErrorKind::kPermissionDenied), else `otherwise`.
int exit_code_of(const Error& error, int otherwise = kExitEnvironment);
// Stop requests counted by those handlers.
const std::atomic<int>& stop_requests();

// `colo bench` (bench_command.cc) and `colo report` (report_command.cc).
void add_bench_command(CLI::App& app, int& exit_code, const std::string& command_line);
void add_report_command(CLI::App& app, int& exit_code);
// `colo mig plan` and `colo mig profiles` (mig_command.cc).
void add_mig_command(CLI::App& app, int& exit_code);
// `colo data make-synthetic|pack|serve|cleanup` (data_command.cc).
void add_data_command(CLI::App& app, int& exit_code);
// `colo simulate` (simulate_command.cc).
void add_simulate_commands(CLI::App& app, int& exit_code);
// `colo experiments`, `colo rm`, `colo gc`, `colo backup` (store_command.cc).
void add_store_commands(CLI::App& app, int& exit_code);
// `colo export mlflow` (export_command.cc).
void add_export_command(CLI::App& app, int& exit_code);
// `colo profiles [FILE]` (profiles_command.cc).
void add_profiles_command(CLI::App& app, int& exit_code);
// `colo slurm submit|status|resubmit|collect` (slurm_command.cc).
void add_slurm_command(CLI::App& app, int& exit_code, const std::string& command_line);
// `colo profile JOB` (profile_command.cc).
void add_profile_command(CLI::App& app, int& exit_code);
// `colo top` (top_command.cc).
void add_top_command(CLI::App& app, int& exit_code);
// `colo serve`, `submit`, `queue`, `cancel`, `logs`, `wait` (serve_command.cc).
void add_serve_commands(CLI::App& app, int& exit_code, const std::string& command_line);
struct QosFlags;  // cli_common.h

// `colo run FILE` when a colo serve answers (at `socket`, else where clients
// look): submits the file there and follows its jobs; the exit code. nullopt
// when no service runs. `label` names the submission (colo show NAME); `qos`
// gives every job its class (checked already).
std::optional<int> run_through_service(const std::string& path, const std::string& socket,
                                       const RunLabel& label, const QosFlags& qos);

}  // namespace colo
