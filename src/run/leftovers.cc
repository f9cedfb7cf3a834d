#include "run/leftovers.h"

#include <fmt/format.h>
#include <signal.h>

#include <cstdlib>

#include "jobs/cgroup.h"
#include "sharing/process_finder.h"

namespace colo {

std::string run_token(const std::string& host, pid_t colo_pid, UnixMillis started_ms) {
  return fmt::format("{}:{}:{}", host, colo_pid, started_ms);
}

std::string job_token(const std::string& run_token, int64_t job_id) {
  return fmt::format("{}:{}", run_token, job_id);
}

int stop_token_processes(const char* env, const std::string& token) {
  ProcFsProcessFinder finder;
  int stopped = 0;
  for (const ProcessInfo& p : finder.find_with_env(env, token)) {
    stopped += finder.send_signal(p.pid, SIGKILL, env, token).ok();
  }
  return stopped;
}

Result<std::string> cgroup_parent_from_environment() {
  return choose_cgroup_parent(std::getenv("COLO_CGROUP_PARENT"));
}

std::vector<std::string> stop_leftovers_of_dead_colos(RunStore& store) {
  std::vector<std::string> lines;
  if (Result<std::string> parent = cgroup_parent_from_environment(); parent.ok()) {
    lines = cleanup_stale_run_cgroups(*parent);
  }
  if (store.runs_interrupted_at_open().empty()) return lines;
  Result<std::vector<RunRow>> runs = store.list_run_rows(0);  // no job counts needed
  if (!runs.ok()) return lines;
  for (int64_t id : store.runs_interrupted_at_open()) {
    for (const RunRow& run : *runs) {
      if (run.id != id) continue;
      const int stopped =
          stop_token_processes(kRunTokenEnv, run_token(run.host, run.colo_pid, run.started_ms));
      if (stopped > 0)
        lines.push_back(
            fmt::format("stopped {} leftover job processes of run {}", stopped, run.id));
    }
  }
  return lines;
}

}  // namespace colo
