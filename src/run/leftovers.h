// What a colo that died left running, and how any later colo stops it.
//
// A job's processes carry COLO_RUN_TOKEN=<host>:<colo pid>:<run start> and
// COLO_JOB_TOKEN=<that>:<job id>, so the processes of a run, or of one job,
// can be found through /proc without mistaking anyone else's (a process that
// clears its environment escapes this; a cgroup it cannot escape). With cgroups (jobs/cgroup.h) a
// run's cgroup holds them all, and is found by its name. Every colo command that opens the store
// calls stop_leftovers_of_dead_colos, so the cleanup never waits for the next `colo run`.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "store/run_store.h"

namespace colo {

inline constexpr const char* kRunTokenEnv = "COLO_RUN_TOKEN";
inline constexpr const char* kJobTokenEnv = "COLO_JOB_TOKEN";

// The token of the run that colo `colo_pid` on `host` started at `started_ms`.
std::string run_token(const std::string& host, pid_t colo_pid, UnixMillis started_ms);
// The token of one job of that run.
std::string job_token(const std::string& run_token, int64_t job_id);

// Kills (SIGKILL) every process whose environment holds `env`=`token`
// (kRunTokenEnv or kJobTokenEnv). Returns how many.
int stop_token_processes(const char* env, const std::string& token);

// The parent of run cgroups (choose_cgroup_parent with $COLO_CGROUP_PARENT),
// or why there is none.
Result<std::string> cgroup_parent_from_environment();

// Stops what colos that died left running: every run cgroup whose colo is
// gone, and the processes carrying the token of each run the store marked
// interrupted when it was opened. Returns lines for people.
std::vector<std::string> stop_leftovers_of_dead_colos(RunStore& store);

}  // namespace colo
