// RunSession: the one life cycle of a run, shared by `colo run` and `colo
// serve`. Its start-up is a list of named steps, each a member function
// callable and testable alone; open() calls them in order:
//
//   clean_up()           after a colo that died: its runs marked interrupted
//                        (the store did that when it opened) and their
//                        leftover processes stopped, its MPS daemons, MIG
//                        instances and data loaders' shared memory removed
//   take_devices()       the GPUs the run may use (a Slurm allocation's, or
//                        those asked for), locked machine-wide (GpuLocks)
//   record_run()         the run's row in the store
//   start_mechanism()    the mechanism prepared (the MPS daemon started),
//                        and the cgroup under which each job gets its own
//
// A front end may do its own work between the steps (`colo run` records its
// jobs before the mechanism starts, so that a mechanism that cannot start
// leaves them recorded failed).
//
// close(state) is the one teardown, and runs on every path out: what the
// jobs left running that escaped their cgroups and process groups is
// stopped, the cgroup removed, the mechanism torn down, the run ended with
// `state` and every queued write drained to the store; then the GPUs are
// released. The destructor closes a session that was not closed, as failed.
// Each step undone by close() is only undone when it was done.
//
// Not thread-safe: the caller's thread owns it. Borrows everything in its
// context.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "gpu/gpu_lock.h"
#include "jobs/cgroup.h"
#include "run/run_engine.h"
#include "sharing/mechanism.h"
#include "slurm/allocation.h"
#include "store/run_store.h"
#include "store/store_writer.h"

namespace colo {

// How a colo process takes its GPUs (see GpuLocks).
struct LockOptions {
  std::string dir;      // empty: as gpu_lock_dir() says (simulated GPUs: the state dir's)
  bool wait = true;     // false: refuse when another colo holds a GPU
  std::string command;  // what the holder is doing, for others to read; empty: the command line
};

struct SessionOptions {
  // The GPUs (backend indices) the run may use; empty: every GPU found (in a
  // Slurm allocation: every GPU Slurm gave the job).
  std::vector<int> only_devices;
  // The Slurm allocation colo runs in: limits the GPUs and is recorded.
  std::optional<SlurmAllocation> slurm;
  LockOptions locks;
  // Recorded with the run: the job file ("" for the service) and the command line.
  std::string job_file;
  std::string command_line;
  // $COLO_CGROUP_PARENT: the cgroup under which jobs' cgroups are made, or
  // "off" for process groups only; empty: chosen as jobs/cgroup.h says.
  std::string cgroup_parent_override;
  // Parent of data/ (the data loaders' ownership records) and of sim-locks/
  // (simulated GPUs' locks); empty: the state dir.
  std::string state_dir;
  // How long writes whose result is needed at once (the run's row), and at
  // the end what is left to write, wait out a store locked by another colo
  // or on a full disk before giving up.
  int64_t store_retry_ms = 60'000;
  // What a person called the run (`colo run --name --tag --note`).
  RunLabel label;
  // The run it resumes (`colo run --resume`), recorded with it.
  std::optional<int64_t> resumes_run;
};

// Everything the session talks to, borrowed.
struct SessionContext {
  Clock& clock;
  GpuBackend& backend;
  RunStore& store;
  Mechanism& mechanism;
  MechanismOptions mechanism_options;  // for stale MPS daemon and MIG instance cleanup
  std::ostream& out;                   // what it did, for people
  // Incremented by the signal handler; a stop request ends a wait for a GPU lock.
  const std::atomic<int>& stop_requests;
};

class RunSession {
 public:
  RunSession(SessionContext ctx, SessionOptions options);
  ~RunSession();
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  // The four steps below, in order; stops at the first error (the session
  // is then closed failed, as far as it got).
  Status open();

  // Once per session: open() after a front end's own clean_up() (`colo
  // serve` cleans up before it takes its lock) does not repeat it.
  void clean_up();
  Status take_devices();
  Status record_run();
  // On error the session is closed failed; what the caller recorded of the
  // run stays (jobs: the caller ends them failed with the error first).
  Status start_mechanism();

  // The one teardown (file comment). Idempotent: a second call returns the
  // first one's status. The error names writes that could not be made.
  Status close(RunState state);

  // Valid after take_devices().
  const std::vector<DeviceInfo>& devices() const { return devices_; }
  // Valid after record_run().
  int64_t run_id() const { return run_id_; }
  const NewRun& record() const { return record_; }
  // COLO_RUN_TOKEN of the run's jobs (run/leftovers.h).
  const std::string& token() const { return token_; }
  StoreWriter& writer() { return writer_; }
  // What the engine of this run talks to.
  EngineContext engine_context(std::ostream& out);
  bool closed() const { return closed_.has_value(); }

 private:
  SessionContext ctx_;
  SessionOptions options_;
  StoreWriter writer_;
  std::vector<DeviceInfo> devices_;
  std::unique_ptr<GpuLocks> locks_;
  std::string lock_dir_;  // where locks_ are
  int64_t run_id_ = 0;
  NewRun record_;
  std::string token_;
  bool mechanism_started_ = false;
  bool cleaned_up_ = false;
  std::optional<RunCgroup> cgroup_;
  std::optional<Status> closed_;
};

// The devices of `found` whose indices are in `wanted` (in that order,
// repeats once); an error names an index that is not there.
Result<std::vector<DeviceInfo>> select_devices(const std::vector<DeviceInfo>& found,
                                               const std::vector<int>& wanted);

// The GPUs a run or the service may use: every GPU the backend finds (inside
// a Slurm allocation, those Slurm gave the job), or those of them `wanted`
// names. The one place where that choice is made.
Result<std::vector<DeviceInfo>> run_devices(GpuBackend& backend, const std::vector<int>& wanted,
                                            const std::optional<SlurmAllocation>& slurm);

// The cgroup under which each job of a run gets its own (jobs/cgroup.h):
// under `parent_override` ($COLO_CGROUP_PARENT; "off" for none), else where
// jobs/cgroup.h chooses. None: jobs run in their process groups only, which
// `out` is told with the reason.
std::optional<RunCgroup> make_run_cgroup(const std::string& parent_override, std::ostream& out);

// The default mechanism when neither the command line nor the job file names
// one: mps where the backend is real and the MPS control program is on PATH,
// naive otherwise.
MechanismKind default_mechanism(const GpuBackend& backend, const std::string& mps_control_program);

}  // namespace colo
