#include "sharing/mps_daemon.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/names.h"
#include "common/paths.h"
#include "common/replace_file.h"
#include "common/unique_fd.h"
#include "common/user_file.h"

namespace colo {
namespace {

// The MPS programs as the kernel names them (/proc/PID/comm keeps at most 15
// characters, so both nvidia-cuda-mps-control and nvidia-cuda-mps-server
// show as "nvidia-cuda-mps").
constexpr size_t kCommLength = 15;
const char* const kMpsProgramNames[] = {"nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};

// The real daemon is believed to write its pid here; absence is fine.
constexpr const char* kDaemonPidFile = "nvidia-cuda-mps-control.pid";

// Longest pipe directory accepted: MPS is believed to create Unix sockets in
// it, whose paths are limited to 107 bytes; this leaves room for their names.
constexpr size_t kMaxPipeDirLength = 84;

std::string trim(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::set<std::string> daemon_comm_names(const std::string& control_program) {
  std::set<std::string> names;
  for (const char* name : kMpsProgramNames) names.insert(std::string(name).substr(0, kCommLength));
  names.insert(base_name(control_program).substr(0, kCommLength));
  return names;
}

// A short description of a finished command, for error messages.
std::string describe(const CommandOutput& out) {
  std::string text = trim(out.stderr_text);
  std::string stdout_text = trim(out.stdout_text);
  if (!stdout_text.empty()) text += (text.empty() ? "" : "; ") + stdout_text;
  if (text.size() > 400) text = text.substr(0, 400) + "...";
  return fmt::format("exit status {}{}", out.exit_status, text.empty() ? "" : ": " + text);
}

// Gives the directory `path` its owner and mode through a descriptor opened
// without following links (a link put in its place is refused, not followed).
Status set_owner_and_mode(const std::string& path, uid_t uid, gid_t gid, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0)
    return Error(fmt::format("cannot open directory {}: {}", path, std::strerror(errno)));
  if (::fchown(fd.get(), uid, gid) != 0) {
    return Error(
        fmt::format("cannot give {} to uid {} gid {}: {}", path, uid, gid, std::strerror(errno)));
  }
  if (::fchmod(fd.get(), mode) != 0)
    return Error(fmt::format("cannot set the mode of {}: {}", path, std::strerror(errno)));
  return OkStatus();
}

Status make_private_dir(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0) {
    return Error(fmt::format("cannot create directory {}: {}", path, std::strerror(errno)));
  }
  return set_owner_and_mode(path, ::geteuid(), ::getegid(), 0700);
}

// Ok when `user` may enter `path` (MpsDaemon::reachable_by()); else an
// error naming the first directory that stops them, without advice.
Status check_reachable(const std::string& path, const ClientUser& user) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = pos == std::string::npos ? path : path.substr(0, pos);
    if (partial.empty()) partial = "/";
    struct stat st {};
    if (::stat(partial.c_str(), &st) != 0)
      return Error(fmt::format("cannot stat {}: {}", partial, std::strerror(errno)));
    const bool in_group = st.st_gid == user.gid || std::find(user.groups.begin(), user.groups.end(),
                                                             st.st_gid) != user.groups.end();
    const mode_t bit = st.st_uid == user.uid ? S_IXUSR : in_group ? S_IXGRP : S_IXOTH;
    if ((st.st_mode & bit) == 0) {
      return Error(fmt::format(
          "user {} cannot enter {} (mode {:04o}, owner uid {}, group gid {}), so their jobs "
          "cannot reach the MPS pipe directory {}",
          user.uid, partial, st.st_mode & 07777, st.st_uid, st.st_gid, path));
    }
  }
  return OkStatus();
}

// What to do when check_reachable() fails for a daemon of `options`.
std::string reach_advice(const MpsDaemonOptions& options) {
  if (options.multiuser_group) {
    return fmt::format(
        "; the multi-user MPS server is reached through group {} (colo serve's socket group: "
        "those who may submit): add the user to it, or start colo serve with "
        "--mps-users separate",
        *options.multiuser_group);
  }
  return "; put colo's state directory (COLO_HOME) where every user may pass through, as the "
         "packaged service does (/var/lib/colo, mode 0711)";
}

// Creates <state_dir>/<pid>-<monotonic ms>[-k] and returns its path.
Result<std::string> make_unique_dir(const std::string& state_dir, Clock& clock) {
  if (Status made = make_dirs(state_dir, 0700); !made.ok()) return made.error();
  const std::string base =
      fmt::format("{}/{}-{}", state_dir, static_cast<long>(getpid()), clock.monotonic_ms());
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string path = attempt == 0 ? base : fmt::format("{}-{}", base, attempt);
    if (mkdir(path.c_str(), 0700) == 0) {
      if (Status mode = set_owner_and_mode(path, ::geteuid(), ::getegid(), 0700); !mode.ok()) {
        ::rmdir(path.c_str());
        return mode.error();
      }
      return path;
    }
    if (errno != EEXIST) {
      return Error(fmt::format("cannot create MPS directory {}: {}", path, std::strerror(errno)));
    }
  }
  return Error(fmt::format("cannot create a fresh MPS directory under {}", state_dir));
}

// Whether two paths name the same place (after making them absolute and normal).
bool same_path(const std::string& a, const std::string& b) {
  auto normal = [](const std::string& p) {
    std::string text = std::filesystem::path(absolute_path(p)).lexically_normal().string();
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    return text;
  };
  return normal(a) == normal(b);
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace

Status write_owner_record(const std::string& path, const MpsOwnerRecord& record) {
  nlohmann::json j = {
      {"colo_pid", record.colo_pid},
      {"hostname", record.hostname},
      {"start_time_ms", record.start_time_ms},
      {"pipe_dir", record.pipe_dir},
      {"log_dir", record.log_dir},
      {"control_program", record.control_program},
  };
  if (Status s = replace_file(path, j.dump(2) + "\n"); !s.ok())
    return s.error().with_context("MPS ownership record");
  return OkStatus();
}

Result<MpsOwnerRecord> read_owner_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Error(fmt::format("{} is not a JSON object", path));
  }
  MpsOwnerRecord record;
  auto pid = j.find("colo_pid");
  auto pipe = j.find("pipe_dir");
  auto log = j.find("log_dir");
  if (pid == j.end() || !pid->is_number_integer() || pipe == j.end() || !pipe->is_string() ||
      log == j.end() || !log->is_string()) {
    return Error(fmt::format("{} lacks colo_pid, pipe_dir or log_dir", path));
  }
  record.colo_pid = pid->get<int64_t>();
  record.pipe_dir = pipe->get<std::string>();
  record.log_dir = log->get<std::string>();
  record.hostname = j.value("hostname", "");
  record.start_time_ms = j.value("start_time_ms", int64_t{0});
  record.control_program = j.value("control_program", "");
  return record;
}

MpsDaemon::MpsDaemon(Key, std::string dir, MpsOwnerRecord owner, const MpsDaemonOptions& options,
                     MpsControl& control, ProcessFinder& finder, Clock& clock)
    : dir_(std::move(dir)),
      owner_(std::move(owner)),
      options_(options),
      control_(control),
      finder_(finder),
      clock_(clock) {}

MpsDaemon::~MpsDaemon() {
  if (stopped_) return;
  if (Status stopped = stop(); !stopped.ok()) {
    fmt::print(stderr, "colo: {}\n", stopped.error().message());
  }
}

Result<std::unique_ptr<MpsDaemon>> MpsDaemon::start(const MpsDaemonOptions& options,
                                                    MpsControl& control, ProcessFinder& finder,
                                                    Clock& clock) {
  if (options.state_dir.empty()) return Error("MPS: no state directory given");
  std::string state_dir =
      std::filesystem::path(absolute_path(options.state_dir)).lexically_normal().string();
  while (state_dir.size() > 1 && state_dir.back() == '/') state_dir.pop_back();
  // <state_dir>/<pid>-<monotonic ms>/pipe, with pids and times of up to 10 digits.
  const size_t expected_pipe_len = state_dir.size() + 1 + 21 + 5;
  if (expected_pipe_len > kMaxPipeDirLength) {
    return Error(fmt::format(
        "MPS state directory {} is too long ({} characters): MPS creates Unix sockets in a "
        "pipe directory below it, and socket paths are limited to 107 bytes; set COLO_HOME to "
        "a shorter directory",
        state_dir, state_dir.size()));
  }
  Result<std::string> dir = make_unique_dir(state_dir, clock);
  if (!dir.ok()) return dir.error();

  MpsOwnerRecord owner;
  owner.colo_pid = getpid();
  owner.hostname = host_name();
  owner.start_time_ms = clock.now_ms();
  owner.pipe_dir = *dir + "/pipe";
  owner.log_dir = *dir + "/log";
  owner.control_program = options.control_program;
  if (options.client && options.multiuser_group)
    return Error("MPS: a daemon is either one user's or multi-user, not both");
  for (const std::string* sub : {&owner.pipe_dir, &owner.log_dir}) {
    Status made = make_private_dir(*sub);
    // Another user's daemon: its server runs as that user and writes both.
    if (made.ok() && options.client)
      made = set_owner_and_mode(*sub, options.client->uid, options.client->gid, 0700);
    // A multi-user daemon: the group's members reach the server's sockets.
    if (made.ok() && options.multiuser_group) {
      made = set_owner_and_mode(*sub, ::geteuid(), *options.multiuser_group,
                                sub == &owner.pipe_dir ? 0750 : 0710);
    }
    if (!made.ok()) {
      remove_tree(*dir);
      return made.error();
    }
  }
  if (options.multiuser_group) {
    Status gate = set_owner_and_mode(state_dir, ::geteuid(), ::getegid(), 0711);
    if (gate.ok()) gate = set_owner_and_mode(*dir, ::geteuid(), *options.multiuser_group, 0710);
    if (!gate.ok()) {
      remove_tree(*dir);
      return gate.error();
    }
  }
  if (options.client) {
    // The user passes through to pipe/ and log/; the record stays colo's.
    Status pass = set_owner_and_mode(state_dir, ::geteuid(), ::getegid(), 0711);
    if (pass.ok()) pass = set_owner_and_mode(*dir, ::geteuid(), ::getegid(), 0711);
    if (pass.ok()) pass = check_reachable(owner.pipe_dir, *options.client);
    if (!pass.ok()) {
      remove_tree(*dir);
      return Error(pass.error().message() + reach_advice(options));
    }
  }
  if (Status written = write_owner_record(*dir + "/" + kMpsOwnerFileName, owner); !written.ok()) {
    remove_tree(*dir);
    return written.error();
  }
  // From here on the object owns the directory; its destructor cleans up.
  auto daemon =
      std::make_unique<MpsDaemon>(Key(), *dir, std::move(owner), options, control, finder, clock);

  Environment env = daemon->control_environment();
  env["CUDA_VISIBLE_DEVICES"] = options.visible_devices;  // empty: removed
  const bool multiuser = options.multiuser_group.has_value();
  Result<CommandOutput> started = control.start_daemon(env, multiuser);
  if (!started.ok() || started->exit_status != 0) {
    std::string why = started.ok() ? describe(*started) : started.error().message();
    std::string log = daemon->control_log_tail();
    (void)daemon->stop();
    return Error(fmt::format("could not start the MPS control daemon ({} -d{}): {}{}",
                             options.control_program, multiuser ? " -M" : "", why, log));
  }
  daemon->launched_ = true;

  const int64_t deadline = clock.monotonic_ms() + options.start_timeout_ms;
  Status health = daemon->health_check();
  while (!health.ok() && clock.monotonic_ms() < deadline) {
    clock.sleep_for_ms(options.poll_interval_ms);
    health = daemon->health_check();
  }
  if (!health.ok()) {
    std::string log = daemon->control_log_tail();
    Status stopped = daemon->stop();
    return Error(fmt::format(
        "the MPS control daemon started by {} did not answer within {} ms ({}){}{}; check "
        "that the GPUs are visible and not in exclusive-process mode used by another daemon",
        options.control_program, options.start_timeout_ms, health.error().message(), log,
        stopped.ok() ? "" : "; " + stopped.error().message()));
  }
  return daemon;
}

Result<std::unique_ptr<MpsDaemon>> MpsDaemon::adopt(const std::string& dir,
                                                    const MpsDaemonOptions& options,
                                                    MpsControl& control, ProcessFinder& finder,
                                                    Clock& clock) {
  Result<MpsOwnerRecord> owner = read_owner_record(dir + "/" + kMpsOwnerFileName);
  if (!owner.ok()) return owner.error();
  if (!same_path(owner->pipe_dir, dir + "/pipe") || !same_path(owner->log_dir, dir + "/log")) {
    return Error(fmt::format(
        "{}/{} names pipe directory {} and log directory {}, not the ones inside {}; leaving it "
        "alone (remove it by hand if no MPS daemon uses it)",
        dir, kMpsOwnerFileName, owner->pipe_dir, owner->log_dir, dir));
  }
  return std::make_unique<MpsDaemon>(Key(), dir, std::move(owner).value(), options, control, finder,
                                     clock);
}

Environment MpsDaemon::control_environment() const {
  return {{kMpsPipeDirectoryEnv, owner_.pipe_dir}, {kMpsLogDirectoryEnv, owner_.log_dir}};
}

Status MpsDaemon::reachable_by(const ClientUser& user) const {
  if (Status reach = check_reachable(owner_.pipe_dir, user); !reach.ok())
    return Error(reach.error().message() + reach_advice(options_));
  return OkStatus();
}

Status MpsDaemon::health_check() {
  Result<CommandOutput> out =
      control_.run_command(control_environment(), "get_default_active_thread_percentage\n");
  if (!out.ok()) return Error(fmt::format("MPS health check failed: {}", out.error().message()));
  if (out->exit_status != 0) {
    return Error(
        fmt::format("MPS health check failed: {} ({})", options_.control_program, describe(*out)));
  }
  const std::string answer = trim(out->stdout_text);
  double value = 0;
  auto [end, ec] = std::from_chars(answer.data(), answer.data() + answer.size(), value);
  if (answer.empty() || ec != std::errc() || end != answer.data() + answer.size()) {
    return Error(fmt::format(
        "MPS health check failed: get_default_active_thread_percentage answered '{}', not a "
        "number",
        answer.size() > 200 ? answer.substr(0, 200) + "..." : answer));
  }
  return OkStatus();
}

std::vector<ProcessInfo> MpsDaemon::daemon_processes() {
  const std::set<std::string> names = daemon_comm_names(options_.control_program);
  // The pipe directory is the daemon's user's: read as their file.
  int pid_from_file = 0;
  if (Result<std::string> text = read_user_file(owner_.pipe_dir + "/" + kDaemonPidFile, 64);
      text.ok()) {
    const std::string digits = trim(*text);
    std::from_chars(digits.data(), digits.data() + digits.size(), pid_from_file);
  }
  std::vector<ProcessInfo> daemon;
  for (ProcessInfo& p : finder_.find_with_env(kMpsPipeDirectoryEnv, owner_.pipe_dir)) {
    if (names.count(p.comm) || (pid_from_file > 0 && p.pid == pid_from_file)) {
      daemon.push_back(std::move(p));
    }
  }
  return daemon;
}

bool MpsDaemon::wait_until_gone(int timeout_ms) {
  const int64_t deadline = clock_.monotonic_ms() + timeout_ms;
  for (;;) {
    if (daemon_processes().empty()) return true;
    if (clock_.monotonic_ms() >= deadline) return false;
    clock_.sleep_for_ms(options_.poll_interval_ms);
  }
}

Status MpsDaemon::stop() {
  if (stopped_) return OkStatus();
  stopped_ = true;
  // Ask politely when something may be listening: always for a daemon this
  // object started, otherwise only if any process still uses the pipe dir
  // (the control program may wait long when no daemon answers).
  const bool anyone_there = !finder_.find_with_env(kMpsPipeDirectoryEnv, owner_.pipe_dir).empty();
  if (anyone_there || launched_) {
    (void)control_.run_command(control_environment(), "quit\n");
  }
  bool gone = wait_until_gone(options_.quit_timeout_ms);
  for (int sig : {SIGTERM, SIGKILL}) {
    if (gone) break;
    for (const ProcessInfo& p : daemon_processes()) {
      (void)finder_.send_signal(p.pid, sig, kMpsPipeDirectoryEnv, owner_.pipe_dir);
    }
    gone = wait_until_gone(sig == SIGTERM ? options_.term_timeout_ms : 1'000);
  }
  if (!gone) {
    std::string pids;
    for (const ProcessInfo& p : daemon_processes()) pids += fmt::format(" {}", p.pid);
    return Error(fmt::format(
        "MPS daemon processes{} (pipe dir {}) survived quit, SIGTERM and SIGKILL; kept {} so "
        "that the next colo start retries; kill them by hand if they remain",
        pids, owner_.pipe_dir, dir_));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  if (ec) {
    return Error(
        fmt::format("stopped the MPS daemon but cannot remove {}: {}", dir_, ec.message()));
  }
  return OkStatus();
}

std::string MpsDaemon::control_log_tail() const {
  // The log directory is the daemon's user's: its last 64 KiB, read as their file.
  constexpr uint64_t kTailBytes = 64 << 10;
  Result<std::string> text = read_user_file_tail(owner_.log_dir + "/control.log", kTailBytes);
  if (!text.ok()) return {};
  std::vector<std::string> lines;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (!trim(line).empty()) lines.push_back(line);
  }
  if (lines.empty()) return {};
  std::string tail = fmt::format("; last lines of {}/control.log:", owner_.log_dir);
  for (size_t i = lines.size() > 5 ? lines.size() - 5 : 0; i < lines.size(); ++i) {
    tail += "\n  " + lines[i];
  }
  return tail;
}

}  // namespace colo
