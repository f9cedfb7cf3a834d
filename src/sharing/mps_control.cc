#include "sharing/mps_control.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "common/paths.h"
#include "common/unique_fd.h"

extern char** environ;

namespace colo {
namespace {

std::string errno_text() { return std::strerror(errno); }

// colo's environment with the changes applied (empty value = removed).
std::map<std::string, std::string> child_environment(const Environment& changes) {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  for (const auto& [name, value] : changes) {
    if (value.empty()) {
      env.erase(name);
    } else {
      env[name] = value;
    }
  }
  return env;
}

// Everything written to a memory file so far.
std::string read_memfd(int fd) {
  std::string text;
  char buf[4096];
  off_t offset = 0;
  for (;;) {
    ssize_t n = pread(fd, buf, sizeof buf, offset);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  return text;
}

}  // namespace

Result<CommandOutput> run_program(const std::vector<std::string>& argv,
                                  const Environment& env_changes, std::string_view input,
                                  int timeout_ms, Clock& clock) {
  if (argv.empty()) return Error("run_program: empty command line");
  if (input.size() > 4096) {
    return Error(
        fmt::format("{}: input of {} bytes is too long (at most 4096)", argv[0], input.size()));
  }
  std::map<std::string, std::string> env = child_environment(env_changes);
  auto path_it = env.find("PATH");
  const std::string path_value = path_it == env.end() ? "/usr/bin:/bin" : path_it->second;
  std::optional<std::string> path = find_program(argv[0], path_value);
  if (!path) {
    return Error(fmt::format("{} not found on PATH ({}); install it or name its full path", argv[0],
                             path_value));
  }

  // stdin: a pipe filled before the child starts (the text fits in the pipe
  // buffer), so writing can neither block nor raise SIGPIPE.
  int in_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) {
    return Error(fmt::format("cannot create a pipe for {}: {}", argv[0], errno_text()));
  }
  UniqueFd in_read(in_pipe[0]);
  {
    UniqueFd in_write(in_pipe[1]);
    if (!input.empty() &&
        write(in_write.get(), input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
      return Error(fmt::format("cannot write the input of {}: {}", argv[0], errno_text()));
    }
  }
  // stdout/stderr: memory files rather than pipes, so a daemon that inherits
  // them can never block colo or be killed by SIGPIPE.
  UniqueFd out(memfd_create("colo-mps-stdout", MFD_CLOEXEC));
  UniqueFd err(memfd_create("colo-mps-stderr", MFD_CLOEXEC));
  if (out.get() < 0 || err.get() < 0) {
    return Error(fmt::format("cannot create output files for {}: {}", argv[0], errno_text()));
  }

  // Everything the child needs is built before fork(): after it, only
  // async-signal-safe calls.
  std::vector<std::string> env_strings;
  env_strings.reserve(env.size());
  for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);
  const char* exe = path->c_str();

  pid_t pid = fork();
  if (pid < 0) return Error(fmt::format("cannot start {}: fork failed: {}", *path, errno_text()));
  if (pid == 0) {
    setsid();
    dup2(in_read.get(), STDIN_FILENO);
    dup2(out.get(), STDOUT_FILENO);
    dup2(err.get(), STDERR_FILENO);
    if (close_range(3, ~0U, 0) != 0) {
      for (int fd = 3; fd < 4096; ++fd) close(fd);
    }
    execve(exe, argp.data(), envp.data());
    _exit(127);
  }
  in_read.reset();

  const int64_t deadline = clock.monotonic_ms() + timeout_ms;
  int status = 0;
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      return Error(fmt::format("waiting for {} failed: {}", *path, errno_text()));
    }
    if (clock.monotonic_ms() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return Error(fmt::format("{} did not finish within {} ms and was killed", *path, timeout_ms));
    }
    clock.sleep_for_ms(5);
  }
  CommandOutput result;
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.stdout_text = read_memfd(out.get());
  result.stderr_text = read_memfd(err.get());
  return result;
}

Result<CommandOutput> ProcessMpsControl::start_daemon(const Environment& env_changes,
                                                      bool multiuser) {
  std::vector<std::string> argv{program_, "-d"};
  if (multiuser) argv.push_back("-M");
  return run_program(argv, env_changes, "", timeout_ms_, clock_);
}

Result<CommandOutput> ProcessMpsControl::help() {
  // A pipe directory that names nothing: should a control program take -h
  // for a client's command, it reaches no daemon.
  return run_program({program_, "-h"}, {{"CUDA_MPS_PIPE_DIRECTORY", "/nonexistent/colo-mps-help"}},
                     "", timeout_ms_, clock_);
}

Result<CommandOutput> ProcessMpsControl::run_command(const Environment& env_changes,
                                                     std::string_view input) {
  return run_program({program_}, env_changes, input, timeout_ms_, clock_);
}

}  // namespace colo
