// GpuLocks: which colo process owns which GPU on this machine, so that two
// colo processes (two `colo run`, a run and the service) never place jobs on
// one GPU unknowingly.
//
// Whoever owns a GPU holds an exclusive flock(2) on <lock dir>/<GPU UUID>.lock
// for as long as it may run jobs there, and writes into that file who it is
// (pid, user, since when, its command line). The kernel drops the lock when
// the process dies, whatever the way, so a lock is never stale; what the
// file says about an earlier holder is only read while its lock is held.
// Simulated GPUs have UUIDs too, so tests exercise the same path; they are
// not the machine's but one COLO_HOME's (SimBackend), and so are their locks
// (gpu_lock_dir).
//
// Locks are taken in UUID order, so two processes that want overlapping
// sets of GPUs cannot deadlock. Lock file descriptors are close-on-exec:
// jobs do not inherit them.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"

namespace colo {

// The machine-wide lock directory: $COLO_LOCK_DIR when set; else
// /run/colo/locks when it exists or can be created (root); else
// /tmp/colo-locks. A directory colo creates gets mode 1777 (every user's
// colo locks there; the sticky bit keeps them from removing each other's files).
std::string default_gpu_lock_dir();

// The lock directory of a run's GPUs: `named` (--lock-dir) when not empty;
// else $COLO_LOCK_DIR when set; else, for simulated GPUs, <state_dir>/sim-locks
// (they belong to that COLO_HOME: a simulated run never waits for one of
// another COLO_HOME, and leaves nothing in the machine's directory); else
// default_gpu_lock_dir().
std::string gpu_lock_dir(const std::string& named, bool simulated, const std::string& state_dir);

// Creates <dir>/<name>.lock (mode 0666) where it is missing, the file of a
// lock taken with GpuLocks::acquire_one_per_machine(name). A colo running as
// root does so when it takes its GPUs, so that no user owns that file before
// it (in the sticky directory a user's own file, mode 0600, would keep
// everyone else from opening it).
Status create_machine_lock_file(const std::string& dir, const std::string& name);

// Who holds a GPU, as its lock file says.
struct GpuLockHolder {
  pid_t pid = 0;
  uid_t uid = 0;
  std::string user;
  UnixMillis since_ms = 0;
  std::string command;  // "colo run jobs.toml", "colo serve"
};

// "colo pid 1234 (user alice) since 2026-11-24 10:02:03 UTC: colo run jobs.toml"
std::string describe(const GpuLockHolder& holder);

struct GpuLockOptions {
  std::string dir;        // required; created if missing (see default_gpu_lock_dir)
  std::string command;    // written for others to read
  bool wait = true;       // false: refuse at once when a GPU is held
  int64_t poll_ms = 250;  // how often a waiting acquire() tries again
  // Called when acquire() starts waiting for a GPU, and again when its holder changes.
  std::function<void(const std::string&)> on_wait;
  // A waiting acquire() gives up once this is non-zero (Ctrl-C). May be null.
  const std::atomic<int>* stop_requests = nullptr;
};

// Holds the locks of a set of GPUs; the destructor releases them.
// Not thread-safe.
class GpuLocks {
 public:
  // Locks every device of `devices` (by UUID). A device held by another
  // process: waits until it is free (options.wait), or fails with a message
  // naming the holder and what to do. On failure nothing stays locked.
  static Result<std::unique_ptr<GpuLocks>> acquire(const std::vector<DeviceInfo>& devices,
                                                   const GpuLockOptions& options, Clock& clock);
  // The lock of one thing on this machine, not a GPU, that one process at a
  // time may use (its file <dir>/<name>.lock; `what` names it in messages:
  // "ncu's MPS control (one per machine)"). Waits or refuses as acquire().
  static Result<std::unique_ptr<GpuLocks>> acquire_one_per_machine(const std::string& name,
                                                                   const std::string& what,
                                                                   const GpuLockOptions& options,
                                                                   Clock& clock);
  ~GpuLocks();
  GpuLocks(const GpuLocks&) = delete;
  GpuLocks& operator=(const GpuLocks&) = delete;

  // The lock files held.
  std::vector<std::string> paths() const;

  // The current holder of `uuid`'s lock in `dir`, when some process holds it.
  static std::optional<GpuLockHolder> holder_of(const std::string& dir, const std::string& uuid);

 private:
  struct Held {
    std::string path;
    int fd = -1;
  };
  GpuLocks() = default;
  // Opens and locks `path` (held_ keeps it, so a failure leaves it closed
  // with this object); `what` and `refusal` are for messages.
  Status lock(const std::string& path, const std::string& what, const std::string& refusal,
              const GpuLockOptions& options, const GpuLockHolder& me, Clock& clock);
  std::vector<Held> held_;
};

}  // namespace colo
