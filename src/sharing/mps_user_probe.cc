#include "sharing/mps_user_probe.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "common/unique_fd.h"

extern char** environ;

namespace colo {
namespace {

std::string errno_text() { return std::strerror(errno); }

// One `colo mps-probe-client` child: its stdin (the probe holds it open while
// the client must keep its context) and its stdout and stderr, merged.
class ProbeChild {
 public:
  ProbeChild() = default;
  ProbeChild(const ProbeChild&) = delete;
  ProbeChild& operator=(const ProbeChild&) = delete;
  ~ProbeChild() { end(); }

  // Starts `argv` with `env` (whole), as `user` where set and not colo's own
  // uid (raw system calls after fork: nothing there may allocate).
  Status start(const std::vector<std::string>& argv, const Environment& env,
               const std::optional<ClientUser>& user) {
    int in[2];
    int out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
      return Error(fmt::format("cannot create a pipe for the MPS probe: {}", errno_text()));
    UniqueFd in_read(in[0]);
    UniqueFd out_write(out[1]);
    stdin_ = UniqueFd(in[1]);
    output_ = UniqueFd(out[0]);
    std::vector<std::string> env_strings;
    for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (std::string& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = argv;
    std::vector<char*> argp;
    for (std::string& s : args) argp.push_back(s.data());
    argp.push_back(nullptr);
    const bool become = user && user->uid != ::geteuid();
    std::vector<gid_t> groups = user ? user->groups : std::vector<gid_t>{};
    pid_ = fork();
    if (pid_ < 0) return Error(fmt::format("cannot start the MPS probe: fork: {}", errno_text()));
    if (pid_ == 0) {
      dup2(in_read.get(), STDIN_FILENO);
      dup2(out_write.get(), STDOUT_FILENO);
      dup2(out_write.get(), STDERR_FILENO);
      if (become && (syscall(SYS_setgroups, groups.size(), groups.data()) != 0 ||
                     syscall(SYS_setgid, user->gid) != 0 || syscall(SYS_setuid, user->uid) != 0)) {
        _exit(126);
      }
      execve(argp[0], argp.data(), envp.data());
      _exit(127);
    }
    return OkStatus();
  }

  // Waits until the child prints its "ready" line (true), ends without it
  // or `timeout_ms` passes (false). What it printed is kept for messages
  // (its first 4 KiB).
  bool wait_ready(int timeout_ms, Clock& clock) {
    const int64_t deadline = clock.monotonic_ms() + timeout_ms;
    for (;;) {
      if (output_text_.find("ready ") != std::string::npos &&
          output_text_.find('\n', output_text_.find("ready ")) != std::string::npos)
        return true;
      const int64_t left = deadline - clock.monotonic_ms();
      if (left <= 0) return false;
      pollfd p{output_.get(), POLLIN, 0};
      const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (n < 0 && errno != EINTR) return false;
      if (n <= 0) continue;
      char buffer[512];
      const ssize_t got = ::read(output_.get(), buffer, sizeof buffer);
      if (got <= 0) return false;  // it closed its output: it ended
      if (output_text_.size() < 4096) output_text_.append(buffer, static_cast<size_t>(got));
    }
  }

  // What it printed, on one line, and how it ended (once end() reaped it).
  std::string said() const {
    std::string text = output_text_;
    for (char& c : text)
      if (c == '\n') c = ' ';
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (text.empty()) text = "nothing";
    if (exit_code_ == 126) text += " (exit 126: it could not take the user's identity)";
    if (exit_code_ == 127) text += " (exit 127: it could not execute colo's binary)";
    return text;
  }

  // Closes its stdin (a holding client lets go), then kills what is left
  // after a short wait, and reaps it. Idempotent.
  void end() {
    stdin_.reset();
    if (pid_ <= 0) return;
    int status = 0;
    for (int i = 0; i < 100; ++i) {  // up to 2 s to exit by itself
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return;
      }
      ::usleep(20'000);
    }
    kill(pid_, SIGKILL);
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;  // -1: not ended by itself (killed, or not reaped yet)
  UniqueFd stdin_;
  UniqueFd output_;
  std::string output_text_;
};

Environment with_environment(const Environment& changes) {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : changes) env[name] = value;
  return env;
}

}  // namespace

Result<MpsProbeOutcome> ProcessMpsUserProbe::run(const Environment& client_env) {
  const Environment env = with_environment(client_env);
  ProbeChild own;
  if (Status started = own.start({options_.program, "mps-probe-client", "--hold"}, env, {});
      !started.ok()) {
    return started.error();
  }
  if (!own.wait_ready(options_.own_timeout_ms, clock_)) {
    return Error(fmt::format("colo's own probe client did no CUDA work within {} s (it said: {})",
                             options_.own_timeout_ms / 1000, own.said()));
  }
  ProbeChild other;
  const int64_t start = clock_.monotonic_ms();
  if (Status started = other.start({options_.program, "mps-probe-client"}, env, options_.other);
      !started.ok()) {
    return started.error();
  }
  const bool together = other.wait_ready(options_.other_timeout_ms, clock_);
  const int64_t waited = clock_.monotonic_ms() - start;
  other.end();
  own.end();
  if (!together && waited < options_.other_timeout_ms) {
    // It ended before its bound without doing its work: not a verdict.
    return Error(fmt::format("the probe client of uid {} failed (it said: {})", options_.other.uid,
                             other.said()));
  }
  return MpsProbeOutcome{together, together ? waited : options_.other_timeout_ms};
}

}  // namespace colo
