#include "jobs/job_supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"
#include "common/units.h"
#include "jobs/cgroup.h"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace colo {
namespace {

// How much of the end of a job's log is searched for an out-of-memory line.
constexpr size_t kLogTailBytes = size_t{64} * 1024;
// The stack the child of start() runs on until exec: it calls a few system
// calls and holds no buffers.
constexpr size_t kChildStackBytes = size_t{64} * 1024;

// What the child reports through the exec pipe when it cannot exec.
// kCgroup is not fatal: the job runs, in its process group only.
enum class ChildStep : int { kChdir = 1, kExec = 2, kParentGone = 3, kIdentity = 4, kCgroup = 5 };
struct ChildReport {
  ChildStep step;
  int error;
};

std::string signal_name(int sig) {
  if (const char* abbrev = sigabbrev_np(sig)) return fmt::format("SIG{}", abbrev);
  return fmt::format("signal {}", sig);
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// `text` with ASCII control characters written as \xNN: a line from a job's
// log is shown to people, and escape codes must not reach their terminal.
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

// The last `max_bytes` of the file, or "" when it cannot be read.
std::string read_tail(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    const auto size = static_cast<uint64_t>(st.st_size);
    const uint64_t start = size > max_bytes ? size - max_bytes : 0;
    out.resize(size - start);
    size_t got = 0;
    while (got < out.size()) {
      ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(start + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    out.resize(got);
  }
  ::close(fd);
  return out;
}

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

// Tells the parent why the child could not exec, then ends the child.
[[noreturn]] void report_and_exit(int report_fd, ChildStep step, int error) {
  ChildReport report{step, error};
  ssize_t ignored = ::write(report_fd, &report, sizeof report);
  (void)ignored;
  _exit(127);
}

// What the child of start() needs, all of it built before the child runs:
// the child shares colo's memory (clone with CLONE_VM), so it allocates
// nothing and writes nothing of colo's but `sh_argv[1]` and errno.
struct ChildArgs {
  pid_t parent = 0;
  int report_fd = -1;
  int stdin_fd = -1;
  int log_fd = -1;
  int cgroup_procs_fd = -1;  // the job cgroup's cgroup.procs, or -1
  const char* working_dir = "";
  // The paths to execute in turn, as execvp would find them on the job's
  // own PATH (null-terminated); then the job's argv and environment.
  char* const* candidates = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  // "/bin/sh", a slot for the candidate, argv[1...]: what execvp runs a
  // file with that the kernel cannot execute (ENOEXEC: a script without #!).
  char** sh_argv = nullptr;
  const RunAs* run_as = nullptr;
};

// Runs in the child between clone and exec: only async-signal-safe calls,
// and the identity through raw system calls (glibc's setuid would try to
// change every thread of colo's, whose memory the child shares).
[[noreturn]] int exec_child(void* arg) {
  const ChildArgs& a = *static_cast<const ChildArgs*>(arg);
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != a.parent) report_and_exit(a.report_fd, ChildStep::kParentGone, 0);
  // Joined before exec, so everything the job starts is in its cgroup.
  if (a.cgroup_procs_fd >= 0 && ::write(a.cgroup_procs_fd, "0", 1) != 1) {
    ChildReport report{ChildStep::kCgroup, errno};
    ssize_t ignored = ::write(a.report_fd, &report, sizeof report);
    (void)ignored;
  }

  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);  // fails harmlessly for some
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  if (dup2(a.stdin_fd, STDIN_FILENO) < 0 || dup2(a.log_fd, STDOUT_FILENO) < 0 ||
      dup2(a.log_fd, STDERR_FILENO) < 0) {
    report_and_exit(a.report_fd, ChildStep::kExec, errno);
  }
  if (a.run_as != nullptr &&
      (syscall(SYS_setgroups, a.run_as->groups.size(), a.run_as->groups.data()) != 0 ||
       syscall(SYS_setgid, a.run_as->gid) != 0 || syscall(SYS_setuid, a.run_as->uid) != 0)) {
    report_and_exit(a.report_fd, ChildStep::kIdentity, errno);
  }
  if (a.working_dir[0] != '\0' && chdir(a.working_dir) != 0)
    report_and_exit(a.report_fd, ChildStep::kChdir, errno);
  // execvp's search, over the candidates: a file that cannot be executed
  // for want of permission is passed over, and reported if no other runs.
  bool denied = false;
  int error = ENOENT;
  for (char* const* path = a.candidates; *path != nullptr; ++path) {
    execve(*path, a.argv, a.envp);
    error = errno;
    if (error == ENOEXEC) {
      a.sh_argv[1] = *path;
      execve(a.sh_argv[0], a.sh_argv, a.envp);
      error = errno;
    }
    if (error == EACCES) {
      denied = true;
    } else if (error != ENOENT && error != ENOTDIR && error != ESTALE && error != ENODEV &&
               error != ETIMEDOUT) {
      break;
    }
  }
  report_and_exit(a.report_fd, ChildStep::kExec, denied ? EACCES : error);
}

// The paths execvp would try for `file` with `path_variable` as PATH: the
// file itself when it names a directory, else each PATH entry joined to it
// (an empty entry is the working directory).
std::vector<std::string> exec_candidates(const std::string& file,
                                         std::optional<std::string_view> path_variable) {
  if (file.find('/') != std::string::npos) return {file};
  const std::string_view path = path_variable.value_or("/bin:/usr/bin");  // glibc's default
  std::vector<std::string> out;
  size_t from = 0;
  while (true) {
    const size_t colon = path.find(':', from);
    const std::string_view dir =
        path.substr(from, colon == std::string_view::npos ? std::string_view::npos : colon - from);
    out.push_back(dir.empty() ? file : std::string(dir) + "/" + file);
    if (colon == std::string_view::npos) break;
    from = colon + 1;
  }
  return out;
}

// The job's log, emptied for this start. It may be in a directory its user
// owns (a shared loader's, under a root service), so nothing there is
// followed or emptied that is not a log of theirs or colo's: a link at the
// path is refused (O_NOFOLLOW), and an existing file is emptied only once
// seen to be a regular file with no other name, owned by root or by the user
// the job runs as. A new one is given to that user, who may then read it.
Result<UniqueFd> open_log(const LaunchRequest& request) {
  const std::string& path = request.log_path;
  // O_NONBLOCK: a FIFO placed there fails at once instead of blocking colo.
  UniqueFd fd(::open(path.c_str(),
                     O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                     0600));
  if (fd.get() < 0) {
    const int e = errno;
    return Error(fmt::format(
        "cannot open log file {}: {}", path,
        e == ELOOP ? "it is a symbolic link, which colo does not follow" : std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Error(fmt::format("cannot read log file {}: {}", path, std::strerror(errno)));
  }
  const uid_t owner = request.run_as ? request.run_as->uid : ::geteuid();
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || (st.st_uid != 0 && st.st_uid != owner)) {
    return Error(fmt::format(
        "log file {} is not a plain file of its own (a hard link, a device or another user's "
        "file): colo leaves it as it is; remove it",
        path));
  }
  if (::fcntl(fd.get(), F_SETFL, O_APPEND) != 0 || ::ftruncate(fd.get(), 0) != 0) {
    return Error(fmt::format("cannot empty log file {}: {}", path, std::strerror(errno)));
  }
  if (request.run_as && st.st_uid != request.run_as->uid &&
      ::fchown(fd.get(), request.run_as->uid, request.run_as->gid) != 0) {
    return Error(fmt::format("cannot give log file {} to {}: {}", path, request.run_as->user,
                             std::strerror(errno)));
  }
  return fd;
}

}  // namespace

JobExit classify_exit(int wait_status, bool stop_requested, const std::string& log_tail) {
  JobExit exit;
  auto oom_reason = [&]() -> std::optional<std::string> {
    auto line = find_oom_message(log_tail);
    if (!line) return std::nullopt;
    std::string text = trim(*line);
    if (text.size() > kMaxReasonLineChars) text = text.substr(0, kMaxReasonLineChars) + "...";
    text = printable(text);
    // The line itself, when it already says so; else what it means, then it.
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.find("out of memory") != std::string::npos) return text;
    return "CUDA out of memory: " + text;
  };

  if (WIFEXITED(wait_status)) {
    const int code = WEXITSTATUS(wait_status);
    exit.exit_code = code;
    if (stop_requested) {
      exit.state = JobState::kCancelled;
      exit.reason = fmt::format("stopped by colo (exited with code {})", code);
    } else if (code == 0) {
      exit.state = JobState::kOk;
      exit.reason = "exit code 0";
    } else if (auto oom = oom_reason()) {
      exit.state = JobState::kOutOfMemory;
      exit.reason = *oom;
    } else {
      exit.state = JobState::kFailed;
      // What the log says most about why: a CUDA assertion, an NCCL error,
      // the exception a traceback ends with, else what the job said last.
      const std::string said = informative_log_line(log_tail);
      exit.reason = said.empty() ? fmt::format("exit code {}", code)
                                 : fmt::format("exit code {}: {}", code, said);
    }
    return exit;
  }
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    exit.signal = sig;
    if (stop_requested) {
      exit.state = JobState::kCancelled;
      exit.reason = sig == SIGTERM   ? "stopped by colo (SIGTERM)"
                    : sig == SIGKILL ? "stopped by colo (SIGKILL after grace period)"
                                     : fmt::format("stopped by colo ({})", signal_name(sig));
    } else if (auto oom = oom_reason()) {
      exit.state = JobState::kOutOfMemory;
      exit.reason = *oom;
    } else {
      exit.state = JobState::kKilled;
      exit.reason = fmt::format("killed by signal {} ({}{})", sig, signal_name(sig),
                                WCOREDUMP(wait_status) ? ", core dumped" : "");
      // An abort after an assertion or an error says why; a line that is
      // merely the last (a progress line) does not.
      const InformativeLine said = find_informative_log_line(log_tail);
      if (said.kind == LogLineKind::kCudaAssertion || said.kind == LogLineKind::kNcclError ||
          said.kind == LogLineKind::kException) {
        exit.reason += ": " + said.text;
      }
    }
    return exit;
  }
  exit.state = JobState::kFailed;
  exit.reason = fmt::format("unexpected wait status {:#x}", wait_status);
  return exit;
}

JobSupervisor::~JobSupervisor() {
  for (auto& [pid, job] : running_) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
  for (auto& [pid, job] : running_) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    JobUsage ignored;
    (void)kill_leftovers(job, ignored);
  }
}

bool JobSupervisor::kill_leftovers(const Running& job, JobUsage& usage) {
  if (!job.cgroup.empty()) {
    Result<JobUsage> ended = end_cgroup(job.cgroup);
    if (ended.ok()) {
      usage = *ended;
      return true;
    }
  }
  ::kill(-job.pid, SIGKILL);
  return false;
}

Result<pid_t> JobSupervisor::start(const LaunchRequest& request) {
  const std::string who = fmt::format("job '{}'", request.job_name);
  if (request.argv.empty() || request.argv[0].empty()) {
    return Error(fmt::format("{}: cannot start: the command is empty", who));
  }
  // Everything the child needs is prepared here: after fork it may not allocate.
  Result<UniqueFd> log = open_log(request);
  if (!log.ok()) return log.error().with_context(who);
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (devnull.get() < 0) {
    return Error(fmt::format("{}: cannot open /dev/null: {}", who, std::strerror(errno)));
  }
  std::string cgroup_problem;
  UniqueFd cgroup_procs(request.cgroup.empty() ? -1
                                               : ::open((request.cgroup + "/cgroup.procs").c_str(),
                                                        O_WRONLY | O_CLOEXEC));
  if (!request.cgroup.empty() && cgroup_procs.get() < 0) cgroup_problem = std::strerror(errno);
  std::vector<char*> argv;
  for (const std::string& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::map<std::string, std::string> env = request.env;
  if (request.run_as) {
    env.try_emplace("HOME", request.run_as->home);
    env.try_emplace("USER", request.run_as->user);
    env.try_emplace("LOGNAME", request.run_as->user);
  }
  std::vector<std::string> env_storage;
  if (request.base_env) {
    for (const auto& [name, value] : *request.base_env) {
      if (env.count(name) == 0) env_storage.push_back(name + "=" + value);
    }
  } else {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view entry(*e);
      std::string name(entry.substr(0, entry.find('=')));
      if (env.count(name) == 0) env_storage.emplace_back(entry);
    }
  }
  for (const auto& [name, value] : env) env_storage.push_back(name + "=" + value);
  std::vector<char*> envp;
  std::optional<std::string_view> path_variable;
  for (std::string& entry : env_storage) {
    envp.push_back(entry.data());
    if (entry.starts_with("PATH=")) path_variable = std::string_view(entry).substr(5);
  }
  envp.push_back(nullptr);
  std::vector<std::string> candidates = exec_candidates(request.argv[0], path_variable);
  std::vector<char*> candidate_ptrs;
  for (std::string& c : candidates) candidate_ptrs.push_back(c.data());
  candidate_ptrs.push_back(nullptr);
  std::string shell = "/bin/sh";
  std::vector<char*> sh_argv{shell.data(), nullptr};
  sh_argv.insert(sh_argv.end(), argv.begin() + 1, argv.end());

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Error(fmt::format("{}: cannot start: pipe: {}", who, std::strerror(errno)));
  }
  UniqueFd report_read(pipe_fds[0]);
  UniqueFd report_write(pipe_fds[1]);

  ChildArgs child;
  child.parent = getpid();
  child.report_fd = report_write.get();
  child.stdin_fd = devnull.get();
  child.log_fd = log->get();
  child.cgroup_procs_fd = cgroup_procs.get();
  child.working_dir = request.working_dir.c_str();
  child.candidates = candidate_ptrs.data();
  child.argv = argv.data();
  child.envp = envp.data();
  child.sh_argv = sh_argv.data();
  child.run_as = request.run_as ? &*request.run_as : nullptr;
  // The child runs on its own stack in colo's memory, and colo waits until
  // it has exec'd or exited (CLONE_VFORK): unlike fork(), nothing of colo's
  // is copied, so a start costs the same in a colo holding 10,000 jobs as
  // in one holding 10 (posix_spawn starts processes the same way).
  std::vector<char> stack(kChildStackBytes);
  // Block every signal across the start so that no handler of colo's runs in
  // the child before it has reset them to their defaults.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid =
      clone(exec_child, stack.data() + stack.size(), CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
  const int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    return Error(fmt::format("{}: cannot start: clone: {}", who, std::strerror(clone_errno)));
  }
  // Also here, so the group exists before start() returns (the child may not
  // have run yet). EACCES means the child already exec'd, after its own call.
  setpgid(pid, pid);
  report_write.reset();

  // Reports until the pipe closes at exec: a cgroup report, then maybe a fatal one.
  ChildReport report{};
  ssize_t n;
  while (true) {
    do {
      n = ::read(report_read.get(), &report, sizeof report);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof report) || report.step != ChildStep::kCgroup) break;
    cgroup_problem = std::strerror(report.error);
  }
  if (n == static_cast<ssize_t>(sizeof report)) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    std::string message;
    switch (report.step) {
      case ChildStep::kChdir:
        message = fmt::format("{}: cannot change to working directory '{}': {}", who,
                              request.working_dir, std::strerror(report.error));
        break;
      case ChildStep::kIdentity:
        message =
            fmt::format("{}: cannot run as user {} (uid {}): {}", who,
                        request.run_as ? request.run_as->user : "?",
                        request.run_as ? request.run_as->uid : 0, std::strerror(report.error));
        break;
      case ChildStep::kParentGone:
        message = fmt::format("{}: cannot start: colo exited while starting it", who);
        break;
      case ChildStep::kExec:
      default:
        message = fmt::format("{}: cannot start '{}': {}", who, request.argv[0],
                              std::strerror(report.error));
        break;
    }
    write_all(log->get(), "colo: " + message + "\n");
    return Error(message);
  }

  Running job;
  job.job_name = request.job_name;
  job.pid = pid;
  job.log_path = request.log_path;
  if (!request.cgroup.empty() && cgroup_problem.empty()) {
    job.cgroup = request.cgroup;
  } else if (!request.cgroup.empty()) {
    write_all(log->get(), fmt::format("colo: job not in its cgroup {} ({}): what it leaves "
                                      "running is stopped through its process group only\n",
                                      request.cgroup, cgroup_problem));
  }
  running_.emplace(pid, std::move(job));
  return pid;
}

std::vector<FinishedJob> JobSupervisor::poll() {
  std::vector<FinishedJob> finished;
  const int64_t now = clock_.monotonic_ms();
  const UnixMillis wall = clock_.now_ms();
  const UnixMillis since = last_poll_ms_;
  last_poll_ms_ = wall;
  for (auto it = running_.begin(); it != running_.end();) {
    Running& job = it->second;
    int status = 0;
    pid_t r;
    do {
      r = waitpid(job.pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    const int wait_errno = errno;

    if (r == 0) {
      if (job.kill_at_ms && now >= *job.kill_at_ms) {
        if (!job.cgroup.empty()) {
          std::ofstream(job.cgroup + "/cgroup.kill") << "1";
        }
        ::kill(-job.pid, SIGKILL);
        ::kill(job.pid, SIGKILL);
        job.kill_at_ms.reset();
      }
      ++it;
      continue;
    }

    FinishedJob done;
    done.job_name = job.job_name;
    done.pid = job.pid;
    done.ended_ms = wall;
    if (since > 0 && wall - since > kLateReapMs) {
      // It ended somewhere in the gap: its last output is the best witness.
      struct stat st {};
      if (::stat(job.log_path.c_str(), &st) == 0) {
        const UnixMillis written =
            static_cast<UnixMillis>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
        done.ended_ms = std::clamp(written, since, wall);
      }
    }
    if (r == job.pid) {
      done.exit = classify_exit(status, job.stop_requested, read_tail(job.log_path, kLogTailBytes));
    } else {
      // ECHILD: someone else reaped it (a SIGCHLD handler set to SIG_IGN?).
      done.exit.state = job.stop_requested ? JobState::kCancelled : JobState::kFailed;
      done.exit.reason = fmt::format("exit status lost: waitpid: {}", std::strerror(wait_errno));
    }
    // What the job left running (grandchildren, daemons) ends with it.
    done.contained = kill_leftovers(job, done.exit.usage);
    const JobUsage& used = done.exit.usage;
    if (used.oom_kills > 0 && done.exit.state == JobState::kFailed) {
      done.exit.reason = fmt::format(
          "killed by its host memory limit (host_memory {}{}; {} process{} killed): {}",
          used.memory_max_bytes ? format_bytes(*used.memory_max_bytes) : "?",
          used.memory_peak_bytes ? ", peak " + format_bytes(*used.memory_peak_bytes) : "",
          used.oom_kills, used.oom_kills == 1 ? "" : "es", done.exit.reason);
    }
    finished.push_back(std::move(done));
    it = running_.erase(it);
  }
  return finished;
}

void JobSupervisor::stop_all(int64_t grace_ms) {
  for (auto& [pid, job] : running_) stop(pid, grace_ms);
}

void JobSupervisor::stop(pid_t pid, int64_t grace_ms) {
  auto it = running_.find(pid);
  if (it == running_.end()) return;
  Running& job = it->second;
  if (grace_ms <= 0) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  } else if (!job.stop_requested) {
    if (::kill(-pid, SIGTERM) != 0) ::kill(pid, SIGTERM);
  }
  job.stop_requested = true;
  const int64_t kill_at = clock_.monotonic_ms() + std::max<int64_t>(grace_ms, 0);
  if (!job.kill_at_ms || kill_at < *job.kill_at_ms) job.kill_at_ms = kill_at;
}

std::vector<pid_t> JobSupervisor::running_pids() const {
  std::vector<pid_t> pids;
  for (const auto& [pid, job] : running_) pids.push_back(pid);
  return pids;
}

std::string read_log_tail(const std::string& path) { return read_tail(path, kLogTailBytes); }

}  // namespace colo
