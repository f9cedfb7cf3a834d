#include "profiling/ncu_launch.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "gpu/gpu_lock.h"

namespace colo {
namespace {

volatile sig_atomic_t g_control = 0;
volatile sig_atomic_t g_client = 0;
std::atomic<int> g_stops{0};  // signals seen (a wait for the machine's lock gives up)
static_assert(std::atomic<int>::is_always_lock_free);

void pass_on(int sig) {
  g_stops.fetch_add(1);
  if (g_control > 0) ::kill(static_cast<pid_t>(g_control), sig);
  if (g_client > 0) ::kill(static_cast<pid_t>(g_client), sig);
}

pid_t start(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(args[0], args.data());
    // Raw writes only after fork.
    const char* what = "colo: could not start ncu\n";
    (void)!::write(STDERR_FILENO, what, std::strlen(what));
    ::_exit(127);
  }
  return pid;
}

// The job's exit code for a wait status: its code, or 128 + its signal.
int code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

void say(const std::string& line) {
  std::fputs(("colo: " + line + "\n").c_str(), stderr);
  std::fflush(stderr);
}

void nap_ms(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1'000'000};
  ::nanosleep(&t, nullptr);
}

// Waits for `pid` up to `bound`; false when it is still running then.
bool wait_within(pid_t pid, std::chrono::milliseconds bound, int& status) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    nap_ms(50);
  }
}

// Ends `pid`: SIGTERM, then SIGKILL 5 s later.
void stop(pid_t pid) {
  int status = 0;
  ::kill(pid, SIGTERM);
  if (!wait_within(pid, std::chrono::seconds(5), status)) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace

std::vector<std::string> ncu_alone_argv(const NcuLaunch& launch) {
  std::vector<std::string> argv = {launch.ncu,
                                   "--target-processes",
                                   "all",
                                   "--clock-control",
                                   "none",
                                   "--export",
                                   launch.report,
                                   "--force-overwrite",
                                   "--launch-count",
                                   std::to_string(launch.launch_count)};
  argv.insert(argv.end(), launch.command.begin(), launch.command.end());
  return argv;
}

std::vector<std::string> ncu_mps_pair_argv(const std::string& colo_binary, const NcuLaunch& pair) {
  std::vector<std::string> argv = {colo_binary,
                                   "ncu-mps-pair",
                                   "--ncu",
                                   pair.ncu,
                                   "--export",
                                   pair.report,
                                   "--launch-count",
                                   std::to_string(pair.launch_count),
                                   "--port",
                                   std::to_string(pair.port),
                                   "--lock-dir",
                                   pair.lock_dir,
                                   "--"};
  argv.insert(argv.end(), pair.command.begin(), pair.command.end());
  return argv;
}

std::vector<std::string> ncu_control_argv(const NcuLaunch& pair) {
  return {pair.ncu,
          "--mps",
          "control",
          "--mps-num-clients",
          "1",
          "--port",
          std::to_string(pair.port),
          "--max-connections",
          "1",
          "--clock-control",
          "none",
          "--launch-count",
          std::to_string(pair.launch_count),
          "--export",
          pair.report,
          "--force-overwrite"};
}

std::vector<std::string> ncu_client_argv(const NcuLaunch& pair) {
  std::vector<std::string> argv = {
      pair.ncu, "--mps", "client", "--port", std::to_string(pair.port), "--max-connections", "1"};
  argv.insert(argv.end(), pair.command.begin(), pair.command.end());
  return argv;
}

int run_ncu_mps_pair(const NcuLaunch& pair, std::chrono::milliseconds report_bound) {
  struct sigaction forward {};
  forward.sa_handler = pass_on;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &forward, nullptr);

  SystemClock clock;
  GpuLockOptions wait;
  wait.dir = pair.lock_dir;
  wait.command = "ncu-mps-pair (a job profiled by ncu under MPS)";
  wait.poll_ms = 500;
  wait.on_wait = [](const std::string& line) {
    say(line + "; this job starts once that control ends");
  };
  wait.stop_requests = &g_stops;
  Result<std::unique_ptr<GpuLocks>> held = GpuLocks::acquire_one_per_machine(
      kNcuMpsControlLock, "ncu's MPS control (one per machine)", wait, clock);
  if (!held.ok()) {
    say(held.error().message());
    return 1;
  }
  std::unique_ptr<GpuLocks> machine_control = std::move(held).value();

  const pid_t control = start(ncu_control_argv(pair));
  if (control < 0) {
    say(fmt::format("cannot start ncu's control: fork: {}", std::strerror(errno)));
    return 127;
  }
  g_control = control;
  const pid_t client = start(ncu_client_argv(pair));
  if (client < 0) {
    say(fmt::format("cannot start the job under ncu: fork: {}", std::strerror(errno)));
    stop(control);
    return 127;
  }
  g_client = client;

  bool control_running = true;
  while (true) {
    int status = 0;
    const pid_t got = ::waitpid(-1, &status, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      say(fmt::format("lost ncu's processes: waitpid: {}", std::strerror(errno)));
      return 1;
    }
    if (got == control) {
      control_running = false;
      g_control = 0;
      machine_control.reset();             // the next pair's control may start
      if (code_of(status) == 0) continue;  // done profiling; the job trains on
      say(fmt::format(
          "ncu's control exited {} before the job's end (its own message is above); the job "
          "was stopped rather than left waiting for a profiler that will not attach",
          code_of(status)));
      stop(client);
      return 1;
    }
    if (got != client) continue;  // not ours to judge
    g_client = 0;
    const int code = code_of(status);
    if (control_running && !wait_within(control, report_bound, status)) {
      say(fmt::format(
          "ncu's control had not ended {:g} s after the job: stopped it; its report {}.ncu-rep "
          "may be missing",
          static_cast<double>(report_bound.count()) / 1000, pair.report));
      stop(control);
    } else if (control_running && code_of(status) != 0) {
      say(fmt::format("ncu's control exited {}: its report {}.ncu-rep may be missing",
                      code_of(status), pair.report));
    }
    g_control = 0;
    return code;
  }
}

}  // namespace colo
