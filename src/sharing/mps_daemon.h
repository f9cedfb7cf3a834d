// MpsDaemon: one private MPS control daemon that colo started, and
// everything needed to find and stop it again, also from a later colo after a
// crash.
//
// Layout: <state_dir>/<pid>-<monotonic ms>/ holds pipe/ (the daemon's
// CUDA_MPS_PIPE_DIRECTORY), log/ (CUDA_MPS_LOG_DIRECTORY) and owner.json (who
// started it), all mode 0700 (a daemon for another user's jobs: see
// MpsDaemonOptions::client; a multi-user daemon: multiuser_group). Every
// directory is made by mkdir (which follows no link) and given its owner and
// mode through a descriptor opened without following links. owner.json is
// written before the daemon starts, so a daemon colo started always has a
// record naming it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "sharing/mechanism.h"
#include "sharing/mps_control.h"
#include "sharing/process_finder.h"

namespace colo {

inline constexpr const char* kMpsPipeDirectoryEnv = "CUDA_MPS_PIPE_DIRECTORY";
inline constexpr const char* kMpsLogDirectoryEnv = "CUDA_MPS_LOG_DIRECTORY";
inline constexpr const char* kMpsOwnerFileName = "owner.json";

// The ownership record <dir>/owner.json.
struct MpsOwnerRecord {
  int64_t colo_pid = 0;
  std::string hostname;
  UnixMillis start_time_ms = 0;
  std::string pipe_dir;
  std::string log_dir;
  std::string control_program;
};

// Writes the record atomically (temporary file, then rename).
Status write_owner_record(const std::string& path, const MpsOwnerRecord& record);
Result<MpsOwnerRecord> read_owner_record(const std::string& path);

struct MpsDaemonOptions {
  // Parent of the daemon's private directory; created (0700) if missing. Required.
  std::string state_dir;
  // The control program. Its base name, like the real MPS program names, is
  // accepted as the name of a daemon process when stopping one.
  std::string control_program = "nvidia-cuda-mps-control";
  // CUDA_VISIBLE_DEVICES for the daemon (comma-separated UUIDs of the run's
  // devices); empty: the variable is removed from the daemon's environment.
  std::string visible_devices;
  // Set when the daemon serves the jobs of a user other than colo's own (MPS
  // runs the servers of different users one after another, never together):
  // its pipe/ and log/ belong to that user (0700), its directory and
  // state_dir let others pass through (0711), and start() fails, naming the
  // directory, when the user cannot reach pipe/.
  std::optional<ClientUser> client;
  // Set (colo runs as root; not with `client`): a multi-user daemon
  // (`-d -M`), whose one root server serves the clients of every user
  // together. Who reaches its pipe directory is MPS's only access control,
  // so its directory is root's with this group, 0710 (members pass through,
  // list nothing; everyone else is stopped there), and holds pipe/ (root,
  // this group, 0750: members reach the server's sockets, write nothing)
  // and log/ (root, this group, 0710). colo serve gives its socket's group:
  // those who may submit jobs.
  std::optional<gid_t> multiuser_group;
  // How long start() waits for the daemon to answer a health check.
  int start_timeout_ms = 10'000;
  // Interval between checks while waiting for start or exit.
  int poll_interval_ms = 50;
  // How long stop() waits for the daemon to exit after `quit`.
  int quit_timeout_ms = 5'000;
  // How long stop() waits after SIGTERM before sending SIGKILL.
  int term_timeout_ms = 2'000;
};

// Owns one private MPS control daemon (and the servers it spawns) together
// with its directory. The destructor stops the daemon if stop() was not
// called, so every exit path that unwinds stops it; a daemon that outlives a
// killed colo is found through its owner.json by cleanup_stale_mps_daemons().
//
// A process is treated as part of the daemon only if its environment names
// this daemon's private pipe directory and its name is an MPS program name
// (or its pid is in the daemon's pid file); MPS clients (the jobs) also carry
// the pipe directory but are never signalled.
//
// Borrows `control`, `finder` and `clock`, which must outlive it. Not
// thread-safe.
class MpsDaemon {
 public:
  // Creates the private directory, writes owner.json, runs `<program> -d`
  // and waits until the daemon answers. On error nothing is left behind: no
  // daemon process and no directory.
  static Result<std::unique_ptr<MpsDaemon>> start(const MpsDaemonOptions& options,
                                                  MpsControl& control, ProcessFinder& finder,
                                                  Clock& clock);

  // Takes over the daemon recorded in `dir`/owner.json (left by an earlier
  // colo), so that it can be stopped. Fails if the record is unreadable or
  // names a pipe directory other than `dir`/pipe.
  static Result<std::unique_ptr<MpsDaemon>> adopt(const std::string& dir,
                                                  const MpsDaemonOptions& options,
                                                  MpsControl& control, ProcessFinder& finder,
                                                  Clock& clock);

  // Construction goes through start() or adopt(); the key keeps it private.
  class Key {
    friend class MpsDaemon;
    Key() = default;
  };
  MpsDaemon(Key, std::string dir, MpsOwnerRecord owner, const MpsDaemonOptions& options,
            MpsControl& control, ProcessFinder& finder, Clock& clock);
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;
  ~MpsDaemon();

  // Asks the daemon for its default active thread percentage; ok if it
  // answers with a number.
  Status health_check();

  // Ok when `user` may enter the pipe directory: every directory from / down
  // to it lets them through (owner, group or other execute bit, as the
  // kernel decides); else an error naming the first that does not, and
  // what to do.
  Status reachable_by(const ClientUser& user) const;

  // Whether it is a multi-user daemon (MpsDaemonOptions::multiuser_group).
  bool multiuser() const { return options_.multiuser_group.has_value(); }

  // Sends `quit`, waits for the daemon's processes to exit, then SIGTERM and
  // SIGKILL those still there, and removes the directory. Idempotent. If a
  // process survives SIGKILL the directory is kept (so the next colo retries)
  // and an error says so.
  Status stop();

  // CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY of this daemon: what
  // both its clients and the control program need.
  Environment control_environment() const;

  // Processes currently taken to be this daemon's (control daemon, servers).
  std::vector<ProcessInfo> daemon_processes();

  const std::string& dir() const { return dir_; }
  const std::string& pipe_dir() const { return owner_.pipe_dir; }
  const std::string& log_dir() const { return owner_.log_dir; }
  const MpsOwnerRecord& owner() const { return owner_; }

 private:
  // Polls until no daemon process is left or `timeout_ms` passes; true if none is left.
  bool wait_until_gone(int timeout_ms);
  // The last lines of the daemon's control.log, for error messages.
  std::string control_log_tail() const;

  std::string dir_;
  MpsOwnerRecord owner_;
  MpsDaemonOptions options_;
  MpsControl& control_;
  ProcessFinder& finder_;
  Clock& clock_;
  bool launched_ = false;  // `<program> -d` succeeded in this object
  bool stopped_ = false;
};

}  // namespace colo
