// Job cgroups (cgroup v2): each job runs in a cgroup of its own, so that
// everything it starts, also a daemon double-forked into a new session, can
// be killed with it, and its CPU time and peak memory are known.
//
// Layout: <parent>/run-<host>-<colo pid>-<colo start time>/job-<job id>. The parent
// is $COLO_CGROUP_PARENT when set ("off": no cgroups); else this process's
// own cgroup when systemd delegated it (a unit with Delegate=yes, which
// systemd marks with the xattr trusted.delegate, or user.delegate under a
// user manager: the packaged colo.service, or `systemd-run --user --scope -p
// Delegate=yes colo run ...`), colo itself moving into its leaf "colo" there
// so that the unit's limits and systemd's final kill reach every job; else,
// as root, "colo" at the top of the cgroup v2 hierarchy this process sees;
// else this process's own cgroup when the user may write it. Where none of
// these can be had, jobs run in process groups only, and the caller says so.
//
// A run cgroup is named after its colo (pid and start time), so any later
// colo finds those whose colo is gone (cleanup_stale_run_cgroups) and kills
// what is left in them, whatever command it runs.
//
// Threading: the functions are safe to call from any thread; a RunCgroup
// belongs to one. Nothing here talks to NVML.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "jobs/job_state.h"

namespace colo {

// Where cgroup v2 is mounted, from /proc/self/mountinfo text; nullopt when it
// is not.
std::optional<std::string> cgroup2_mount(std::string_view mountinfo);

// This process's cgroup v2 path ("/user.slice/..."), from /proc/self/cgroup
// text (the "0::" line); nullopt when there is none.
std::optional<std::string> own_cgroup(std::string_view proc_self_cgroup);

// Whether systemd delegated the cgroup directory `dir` (its xattr
// trusted.delegate or user.delegate is "1").
bool is_delegated(const std::string& dir);
// Moves this process into <dir>/<kOwnLeaf> (made if needed) and passes the
// cpu, memory and pids controllers on from `dir` where it may: cgroup v2
// puts processes only in leaves of a subtree whose controllers are passed on.
inline constexpr const char* kOwnLeaf = "colo";
Status move_self_into_leaf(const std::string& dir);

// The directory under which run cgroups are made (see the file comment), or
// why there is none (then jobs run in process groups).
// `override_value` is $COLO_CGROUP_PARENT (null when unset).
Result<std::string> choose_cgroup_parent(const char* override_value);

// Kills every process in the cgroup and its descendants (cgroup.kill, or
// SIGKILL to each member where the kernel has no cgroup.kill), waits up to
// `wait_ms` for them to be gone, then removes the cgroup directories. Ok when
// the cgroup is gone (also when it never existed).
Status kill_and_remove_cgroup(const std::string& path, int wait_ms = 1000);

// The same, returning what the cgroup used (read after the kill, before the
// removal): the end of a job.
Result<JobUsage> end_cgroup(const std::string& path, int wait_ms = 1000);

// CPU time (cpu.stat usage_usec), peak memory (memory.peak), and, where the
// memory controller is on, the memory limit (memory.max) and how often the
// kernel killed for it (memory.events oom_kill) in the cgroup.
JobUsage read_cgroup_usage(const std::string& path);

// A job's host limits.
struct CgroupLimits {
  std::optional<uint64_t> memory_bytes;  // memory.max; swap is off for it (memory.swap.max 0)
  std::optional<int> cpus;               // cpu.max: `cpus` periods of CPU time per period
};

// Writes `limits` into the cgroup at `path`. An error names the limit the
// cgroup cannot take: its controller is not enabled there (as on a machine
// whose memory controller is still on cgroup v1).
Status apply_cgroup_limits(const std::string& path, const CgroupLimits& limits);

// A process's start time in clock ticks since boot (/proc/<pid>/stat field
// 22); nullopt when there is no such process.
std::optional<uint64_t> process_start_ticks(pid_t pid);

// Kills and removes the run cgroups under `parent` whose colo (by pid and
// start time) is gone. Returns one line per run cgroup cleaned
// ("stopped 2 leftover processes of a colo that died (cgroup ...)").
std::vector<std::string> cleanup_stale_run_cgroups(const std::string& parent);

// The cgroup of one colo run: made under the parent, with the cpu, memory and
// pids controllers passed on to its jobs where the parent has them. The
// destructor kills and removes whatever is left in it.
class RunCgroup {
 public:
  // Makes <parent>/run-<host>-<this pid>-<its start time>.
  static Result<RunCgroup> create(const std::string& parent);
  ~RunCgroup();
  RunCgroup(RunCgroup&& other) noexcept;
  RunCgroup& operator=(RunCgroup&&) = delete;
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;

  const std::string& path() const { return path_; }
  // Makes the cgroup of job `job_id` (empty first if a retry left one) and
  // returns its path.
  Result<std::string> make_job_cgroup(int64_t job_id);

 private:
  explicit RunCgroup(std::string path) : path_(std::move(path)) {}
  std::string path_;  // empty once moved from
};

}  // namespace colo
