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

namespace colo {

// Who is on the other end of a connection, as the kernel says.
struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  std::string user;  // login name, or the uid as text
};

// The login name of `uid`, or the uid as text when it has none.
std::string user_name_of(uid_t uid);
// The gid of group `name`; an error when there is no such group.
Result<gid_t> group_id(const std::string& name);
// Whether `uid` is in group `gid` (primary or supplementary).
bool user_in_group(uid_t uid, gid_t gid);

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

struct ListenOptions {
  std::string path;
  unsigned mode = 0660;
  std::optional<gid_t> group;  // chgrp of the socket; unset: the service's group
  size_t max_request_bytes = size_t{64} << 20;
  int64_t idle_timeout_ms = 30'000;  // a connection that sends no full request is dropped
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
  };
  explicit SocketServer(ListenOptions options) : options_(std::move(options)) {}
  void accept_all();
  void read_from(int fd, Connection& c, const Handler& handler);
  void write_to(int fd, Connection& c);

  ListenOptions options_;
  int listen_fd_ = -1;
  std::unique_ptr<LockFile> lock_;
  std::map<int, Connection> connections_;
};

// Connects to `path`, sends `request` (one line), and returns the answer
// line. Errors say whether no service listens there.
Result<std::string> call_socket(const std::string& path, const std::string& request,
                                int timeout_ms);

}  // namespace colo
