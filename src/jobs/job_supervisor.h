// JobSupervisor: starts jobs as real child processes, each in its own process
// group (and its own cgroup when given one) with stdout and stderr going to a
// per-job log file; reaps them and classifies how they ended; stops them (TERM
// to the group, then KILL after a grace period). When a job's main process
// ends, whatever it left running ends too: its cgroup is killed (which reaches
// daemons in new sessions) or, without one, its process group.
//
// Threading: not thread-safe; the run engine's thread owns it. It never
// talks to NVML. A child is started without copying colo (clone with
// CLONE_VM and CLONE_VFORK, as posix_spawn does): a start costs the same
// whatever colo holds. PR_SET_PDEATHSIG fires when the *thread* that started
// a child exits, so start() must be called from a thread that outlives the
// jobs.
// Ownership: owns the child processes it started (the destructor kills and
// reaps them); borrows the clock.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "jobs/job_state.h"
#include "jobs/log_reason.h"
#include "jobs/run_as.h"

namespace colo {

struct LaunchRequest {
  std::string job_name;
  std::vector<std::string> argv;  // argv[0] looked up on PATH
  std::string working_dir;
  std::map<std::string, std::string> env;  // set on top of the base environment
  std::string log_path;                    // stdout+stderr, created/truncated
  // The environment the job starts from: colo's own when null (`colo run`),
  // the submitter's for a job a service runs (shared by the jobs of one
  // submission).
  std::shared_ptr<const std::map<std::string, std::string>> base_env;
  // When set, the job runs as this user (supplementary groups, group, then
  // user are set before exec; needs root) with HOME, USER and LOGNAME theirs.
  std::optional<RunAs> run_as;
  // The job's own cgroup (jobs/cgroup.h), which the child joins before exec;
  // empty: its process group only.
  std::string cgroup;
};

// Classifies a finished process from its wait status, whether colo asked it
// to stop, and the tail of its log. A failed exit's reason ends with the log's
// most informative line (informative_log_line, jobs/log_reason.h: "exit code
// 1: ModuleNotFoundError: No module named 'foo'"); a kill by a signal adds a
// CUDA assertion, NCCL error or exception when the log has one; out of memory
// names the log's out-of-memory line (find_oom_message). Pure; unit-tested.
JobExit classify_exit(int wait_status, bool stop_requested, const std::string& log_tail);

struct FinishedJob {
  std::string job_name;
  pid_t pid = 0;
  JobExit exit;
  UnixMillis ended_ms = 0;
  // True when its cgroup was emptied: nothing it started is left. Else only
  // its process group was killed, and a daemon it started in a new session
  // may still run (the caller finds those another way).
  bool contained = false;
};

class JobSupervisor {
 public:
  explicit JobSupervisor(Clock& clock) : clock_(clock) {}
  ~JobSupervisor();  // kills (KILL) any job still running
  JobSupervisor(const JobSupervisor&) = delete;
  JobSupervisor& operator=(const JobSupervisor&) = delete;

  // Starts the job. Fails (and nothing runs) when the program cannot be
  // executed: "job 'a': cannot start 'pythn3': No such file or directory".
  // The child gets its own process group, and is killed if colo dies
  // (PR_SET_PDEATHSIG).
  Result<pid_t> start(const LaunchRequest& request);

  // Non-blocking: returns the jobs that ended since the last call, and
  // escalates TERM to KILL for groups whose grace period has passed. A job
  // found ended after a long gap between calls (colo was stopped, or its
  // host suspended) is given the time of its log's last write as its end,
  // when that falls within the gap, instead of the time it was found.
  std::vector<FinishedJob> poll();
  // A gap between polls longer than this is such a gap.
  static constexpr int64_t kLateReapMs = 2'000;

  // Asks every running job to stop: TERM to its process group now, KILL
  // after `grace_ms`. Jobs stopped this way end as kCancelled.
  void stop_all(int64_t grace_ms);
  // The same for the job whose process is `pid`.
  void stop(pid_t pid, int64_t grace_ms);

  size_t running_count() const { return running_.size(); }
  std::vector<pid_t> running_pids() const;

 private:
  struct Running {
    std::string job_name;
    pid_t pid = 0;
    std::string log_path;
    std::string cgroup;  // empty: not in one (none given, or joining it failed)
    bool stop_requested = false;
    std::optional<int64_t> kill_at_ms;  // monotonic
  };
  // Kills what is left of a job: its cgroup (true, and what it used into
  // `usage`), else its process group (false).
  static bool kill_leftovers(const Running& job, JobUsage& usage);

  Clock& clock_;
  std::map<pid_t, Running> running_;
  UnixMillis last_poll_ms_ = 0;  // wall clock
};

// The tail of a job's log that classify_exit reads (its last 64 KiB), or ""
// when it cannot be read.
std::string read_log_tail(const std::string& path);

}  // namespace colo
