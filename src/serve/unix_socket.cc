#include "serve/unix_socket.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "common/paths.h"
#include "common/units.h"

namespace colo {
namespace {

int64_t monotonic_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Result<sockaddr_un> address_of(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return Error(
        fmt::format("socket path {} is too long ({} bytes; at most {}): choose a shorter "
                    "one with --socket",
                    path, path.size(), sizeof addr.sun_path - 1));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace

Result<std::unique_ptr<LockFile>> LockFile::acquire(const std::string& path,
                                                    const std::string& who_else,
                                                    const std::string& what_to_do) {
  // Never through a link: a service running as root would truncate its target.
  int fd = open_regular_file(path, O_RDWR | O_CREAT, 0644);
  if (fd < 0) {
    const int e = errno;
    if (e == ELOOP || e == EINVAL) {
      return Error(
          fmt::format("{} is a symbolic link or not a regular file; colo opens its lock "
                      "files only as regular files: remove it, and keep the directory "
                      "writable only by colo's user",
                      path));
    }
    return Error(fmt::format("cannot open {}: {}", path, std::strerror(e)));
  }
  std::unique_ptr<LockFile> lock(new LockFile(fd));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    (void)!::pread(fd, pid, sizeof pid - 1, 0);
    std::string holder(pid);
    return Error(
        fmt::format("{} (pid {}) {}", who_else, holder.substr(0, holder.find('\n')), what_to_do));
  }
  std::string me = std::to_string(getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, me.data(), me.size(), 0);
  return lock;
}

LockFile::~LockFile() { ::close(fd_); }

Result<std::unique_ptr<SocketServer>> SocketServer::listen(const ListenOptions& options) {
  Result<sockaddr_un> addr = address_of(options.path);
  if (!addr.ok()) return addr.error();
  if (size_t slash = options.path.rfind('/'); slash != std::string::npos && slash > 0) {
    // Others may only pass through (0711): the socket's own mode says who connects.
    if (Status s = make_dirs(options.path.substr(0, slash), 0711); !s.ok()) return s.error();
  }
  std::unique_ptr<SocketServer> server(new SocketServer(options));

  // One service per socket: the kernel drops the lock with the process, so a
  // socket file left by a killed service is stale.
  Result<std::unique_ptr<LockFile>> lock = LockFile::acquire(
      options.path + ".lock", "another colo serve",
      "listens on " + options.path + "; stop it first, or choose another socket with --socket");
  if (!lock.ok()) return lock.error();
  server->lock_ = std::move(lock).value();

  ::unlink(options.path.c_str());
  server->listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (server->listen_fd_ < 0)
    return Error(fmt::format("cannot create a Unix socket: {}", std::strerror(errno)));
  if (::bind(server->listen_fd_, reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0)
    return Error(fmt::format("cannot bind {}: {}", options.path, std::strerror(errno)));
  if (::chmod(options.path.c_str(), options.mode) != 0)
    return Error(fmt::format("cannot chmod {}: {}", options.path, std::strerror(errno)));
  if (options.group && ::chown(options.path.c_str(), static_cast<uid_t>(-1), *options.group) != 0)
    return Error(fmt::format("cannot give {} to group {}: {}", options.path, *options.group,
                             std::strerror(errno)));
  if (::listen(server->listen_fd_, 64) != 0)
    return Error(fmt::format("cannot listen on {}: {}", options.path, std::strerror(errno)));
  server->spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return server;
}

SocketServer::~SocketServer() {
  for (auto& [fd, c] : connections_) ::close(fd);
  if (spare_fd_ >= 0) ::close(spare_fd_);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    ::unlink(options_.path.c_str());
  }
}

namespace {

// `busy`: the refusal is about load, and the client may try again.
std::string error_line(const std::string& message, bool busy = false) {
  return fmt::format(R"({{"ok":false,"error":"{}"{}}})", message, busy ? R"(,"busy":true)" : "") +
         "\n";
}

}  // namespace

std::map<std::string, Occupancy> SocketServer::occupancy() const {
  std::map<std::string, Occupancy> users;
  for (const auto& [fd, c] : connections_) {
    if (!c.refusal.empty()) continue;
    Occupancy& o = users[std::to_string(c.caller.uid)];
    ++o.open;
    if (!c.answered) ++o.waiting;
  }
  return users;
}

void SocketServer::shed_oldest_waiting_of(uid_t uid, const std::string& reason) {
  auto oldest = connections_.end();
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    const Connection& c = it->second;
    if (c.caller.uid == uid && c.refusal.empty() && !c.answered &&
        (oldest == connections_.end() || c.opened_ms < oldest->second.opened_ms))
      oldest = it;
  }
  if (oldest == connections_.end()) return;
  answer(oldest->second, error_line(reason, /*busy=*/true));
  write_to(oldest->first, oldest->second);
  ::close(oldest->first);
  connections_.erase(oldest);
}

void SocketServer::accept_all() {
  while (true) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
      // Out of descriptors: accept and close the waiting ones, or poll spins on them.
      ::close(spare_fd_);
      fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        const std::string line =
            error_line("colo serve is out of file descriptors; try again", true);
        (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
        ::close(fd);
      }
      spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd >= 0) continue;
    }
    if (fd < 0) return;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      ::close(fd);
      continue;
    }
    Connection c;
    c.caller = Caller{cred.uid, cred.gid, cred.pid, user_name_of(cred.uid)};
    c.opened_ms = monotonic_ms();
    const Admission admission = admit(occupancy(), std::to_string(cred.uid), limits());
    if (admission.kind == Admission::Kind::kShed) {
      shed_oldest_waiting_of(static_cast<uid_t>(std::stoul(admission.shed_from)), admission.reason);
    } else if (admission.kind == Admission::Kind::kRefuse) {
      // Told why once its request line is read (closing first would reset
      // it unanswered); a few per user, the rest closed at once.
      const auto refusing = [&](uid_t uid) {
        return static_cast<size_t>(
            std::count_if(connections_.begin(), connections_.end(), [&](const auto& entry) {
              return !entry.second.refusal.empty() &&
                     (uid == kAnyone || entry.second.caller.uid == uid);
            }));
      };
      if (refusing(cred.uid) >= kRefusingPerUser || refusing(kAnyone) >= kRefusingConnections) {
        ::close(fd);
        continue;
      }
      c.refusal = admission.reason;
    }
    connections_.emplace(fd, std::move(c));
  }
}

// The answer replaces what was read: its bytes no longer count.
void SocketServer::answer(Connection& c, std::string line) {
  buffered_bytes_ -= c.in.size();
  std::string().swap(c.in);
  c.out = std::move(line);
  c.answered = true;
}

void SocketServer::read_from(int fd, Connection& c, const Handler& handler) {
  char buf[65536];
  while (!c.answered) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0 && !c.refusal.empty()) {  // read to the end of the request line, kept nowhere
      if (std::memchr(buf, '\n', static_cast<size_t>(n)) != nullptr)
        answer(c, error_line(c.refusal, /*busy=*/true));
      continue;
    }
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      buffered_bytes_ += static_cast<size_t>(n);
      if (c.in.size() > options_.max_request_bytes) {
        answer(c, error_line(fmt::format("the request is larger than {}",
                                         format_bytes(options_.max_request_bytes))));
      } else if (buffered_bytes_ > options_.max_buffered_bytes &&
                 std::memchr(buf, '\n', static_cast<size_t>(n)) == nullptr) {
        answer(c, error_line("colo serve is reading too many large requests; try again", true));
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    c.eof = true;  // the client shut down its side, or an error
    break;
  }
  if (c.answered) return;
  if (!c.refusal.empty()) {
    if (c.eof) answer(c, error_line(c.refusal, /*busy=*/true));
    return;
  }
  size_t newline = c.in.find('\n');
  if (newline == std::string::npos) return;
  buffered_bytes_ -= c.in.size() - newline;
  c.in.resize(newline);
  std::string line = handler(c.caller, c.in) + "\n";
  answer(c, std::move(line));
}

void SocketServer::write_to(int fd, Connection& c) {
  while (c.written < c.out.size()) {
    ssize_t n = ::send(fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
    if (n > 0) {
      c.written += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    c.written = c.out.size();  // the client is gone
  }
}

void SocketServer::poll_once(int timeout_ms, const Handler& handler) {
  std::vector<pollfd> fds;
  fds.push_back({listen_fd_, POLLIN, 0});
  for (const auto& [fd, c] : connections_)
    fds.push_back({fd, static_cast<short>(c.answered ? POLLOUT : POLLIN), 0});
  // Even when nothing is ready, idle connections expire below.
  if (::poll(fds.data(), fds.size(), timeout_ms) < 0) return;
  const int64_t now = monotonic_ms();
  for (size_t i = 1; i < fds.size(); ++i) {
    auto it = connections_.find(fds[i].fd);
    if (it == connections_.end()) continue;
    Connection& c = it->second;
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_from(fds[i].fd, c, handler);
    if (c.answered) write_to(fds[i].fd, c);
    const bool done = c.answered && c.written >= c.out.size();
    const bool hung_up = !c.answered && (c.eof || (fds[i].revents & (POLLHUP | POLLERR)));
    if (done || hung_up || now - c.opened_ms > options_.idle_timeout_ms) {
      ::close(fds[i].fd);
      buffered_bytes_ -= c.in.size();
      connections_.erase(it);
    }
  }
  // After the others: accepting may shed a connection, and its descriptor
  // may be reused by the next one accepted, which this round's events are
  // not about.
  if (fds[0].revents & POLLIN) accept_all();
}

Result<std::string> call_socket(const std::string& path, const std::string& request, int timeout_ms,
                                bool* dropped) {
  if (dropped != nullptr) *dropped = false;
  const auto was_dropped = [&](int e) {
    if (dropped != nullptr && (e == ECONNRESET || e == EPIPE)) *dropped = true;
  };
  Result<sockaddr_un> addr = address_of(path);
  if (!addr.ok()) return addr.error();
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error(fmt::format("cannot create a Unix socket: {}", std::strerror(errno)));
  timeval tv{timeout_ms / 1000, static_cast<suseconds_t>(timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    int e = errno;
    ::close(fd);
    if (e == ENOENT || e == ECONNREFUSED)
      return Error(fmt::format("no colo serve listens on {}", path));
    if (e == EACCES) {
      struct stat st {};
      std::string group = "the socket's group";
      if (::stat(path.c_str(), &st) == 0) {
        std::vector<char> buf(16384);
        struct group gr {};
        struct group* found = nullptr;
        if (getgrgid_r(st.st_gid, &gr, buf.data(), buf.size(), &found) == 0 && found != nullptr)
          group = fmt::format("group '{}'", found->gr_name);
      }
      return Error(fmt::format(
          "colo serve at {} does not let you ({}) connect: only members of {} may; ask the "
          "administrator to add you (usermod -aG GROUP USER, then log in again)",
          path, user_name_of(geteuid()), group));
    }
    return Error(fmt::format("cannot connect to colo serve at {}: {}", path, std::strerror(e)));
  }
  std::string line = request + "\n";
  size_t sent = 0;
  while (sent < line.size()) {
    ssize_t n = ::send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      was_dropped(e);
      return Error(fmt::format("sending to colo serve at {}: {}", path, std::strerror(e)));
    }
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  char buf[65536];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      answer.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      if (answer.empty()) was_dropped(e);
      return Error(fmt::format("waiting for colo serve at {}: {}", path,
                               e == EAGAIN ? "no answer in time" : std::strerror(e)));
    }
    break;
  }
  ::close(fd);
  if (answer.empty() && dropped != nullptr) *dropped = true;
  if (answer.empty() || answer.back() != '\n')
    return Error(fmt::format("colo serve at {} closed the connection without an answer", path));
  answer.pop_back();
  return answer;
}

}  // namespace colo
