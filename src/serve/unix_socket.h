// The service's Unix socket: one request line, one answer line per
// connection, the caller identified by the kernel (SO_PEERCRED), nothing
// reachable from the network.
//
// SocketServer listens at a path (mode 0660 and a chosen group by default, so
// the file system decides who may connect), owns `<path>.lock` so that one
// service listens per path (a second one is refused with the first one's
// pid), and answers on the caller's thread: poll_once() accepts, reads
// complete requests, calls the handler, and writes answers without blocking.
// Not thread-safe.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/users.h"
#include "serve/admission.h"

namespace colo {

// Who is on the other end of a connection, as the kernel says.
struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  std::string user;  // login name, or the uid as text
};

// An exclusive flock on a file (created if needed), with this pid written in
// it, held while the object lives; the kernel drops it when the process dies.
class LockFile {
 public:
  // Fails when another process holds it: "<who_else> (pid N) <holds_what>".
  static Result<std::unique_ptr<LockFile>> acquire(const std::string& path,
                                                   const std::string& who_else,
                                                   const std::string& what_to_do);
  ~LockFile();
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

 private:
  explicit LockFile(int fd) : fd_(fd) {}
  int fd_;
};

// The bounds that keep any local user from exhausting the service's file
// descriptors or memory (docs/serve.md, "Limits"). Connections are let in by
// admit() (serve/admission.h): a user at a bound sheds their own oldest idle
// connection, the heaviest user is shed at the total, and a connection that
// is refused gets one error line and is closed; the others go on.
struct ListenOptions {
  std::string path;
  unsigned mode = 0660;
  std::optional<gid_t> group;                    // chgrp of the socket; unset: the service's group
  size_t max_request_bytes = size_t{16} << 20;   // one request line
  size_t max_buffered_bytes = size_t{64} << 20;  // unanswered request bytes, all connections
  size_t max_connections = 256;
  size_t max_connections_per_user = 32;
  int64_t idle_timeout_ms = 10'000;  // a connection that sends no full request is dropped
};

class SocketServer {
 public:
  using Handler = std::function<std::string(const Caller&, const std::string& request)>;

  static Result<std::unique_ptr<SocketServer>> listen(const ListenOptions& options);
  ~SocketServer();  // closes every connection, removes the socket file
  SocketServer(const SocketServer&) = delete;
  SocketServer& operator=(const SocketServer&) = delete;

  // Waits up to `timeout_ms` for activity, then handles what is ready.
  void poll_once(int timeout_ms, const Handler& handler);
  const std::string& path() const { return options_.path; }

 private:
  struct Connection {
    Caller caller;
    std::string in;
    std::string out;
    size_t written = 0;
    bool answered = false;
    bool eof = false;
    int64_t opened_ms = 0;
    // Set for a connection over a limit: its request is read and dropped,
    // and this is the answer (closing before reading would reset the
    // connection, and the client would not learn why).
    std::string refusal;
  };
  explicit SocketServer(ListenOptions options) : options_(std::move(options)) {}
  void accept_all();
  AdmissionLimits limits() const {
    return {options_.max_connections_per_user, options_.max_connections};
  }
  // Every user's served connections (by uid), for admit().
  std::map<std::string, Occupancy> occupancy() const;
  // Answers `reason` to the oldest connection of `uid` still waiting for its
  // request, and closes it.
  void shed_oldest_waiting_of(uid_t uid, const std::string& reason);
  // Connections being refused, beyond the limits, per user and in all; past
  // these, a connection is closed at once, unanswered.
  static constexpr size_t kRefusingPerUser = 4;
  static constexpr size_t kRefusingConnections = 64;
  static constexpr uid_t kAnyone = static_cast<uid_t>(-1);
  void read_from(int fd, Connection& c, const Handler& handler);
  void answer(Connection& c, std::string line);
  void write_to(int fd, Connection& c);

  ListenOptions options_;
  int listen_fd_ = -1;
  // Held open so that, when the process runs out of descriptors, one can be
  // freed to accept and close the waiting connections instead of spinning.
  int spare_fd_ = -1;
  size_t buffered_bytes_ = 0;  // the sum of the connections' unanswered `in`
  std::unique_ptr<LockFile> lock_;
  std::map<int, Connection> connections_;
};

// Connects to `path`, sends `request` (one line), and returns the answer
// line. Errors say whether no service listens there. `dropped` (when given)
// is set when the service closed or reset the connection before any of an
// answer came: a service at its connection bounds does that to the
// connections beyond the few it tells why, so the caller may try again.
Result<std::string> call_socket(const std::string& path, const std::string& request, int timeout_ms,
                                bool* dropped = nullptr);

}  // namespace colo
