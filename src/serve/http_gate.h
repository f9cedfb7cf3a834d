// The HTTP port's front door. cpp-httplib gives each connection a worker
// thread from the moment it is accepted, so idle and slow clients hold one
// each: 1,035 idle connections left /metrics unanswered for 10 s. GatedServer
// keeps httplib's request handling and replaces its threading:
// - the listening thread hands each accepted connection to the gate, which
//   admits it by the rule every colo connection follows (serve/admission.h),
//   its user named by the kernel (serve/tcp_peer.h);
// - one gate thread waits on every admitted connection at once (epoll) until
//   its whole request head has arrived, within a deadline from its accept
//   (408 after it, 431 for a head over the bound), holding no worker;
// - only then a worker answers it, one request per connection, and closes it.
// Limits are in docs/serve.md ("Limits").
#pragma once

#include <httplib.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "serve/admission.h"

namespace colo {

struct GateOptions {
  AdmissionLimits limits{64, 512};
  int64_t head_deadline_ms = 2'000;  // from accept to the whole request head
  size_t max_head_bytes = 8192;
  size_t workers = 16;
};

class GatedServer : public httplib::Server {
 public:
  explicit GatedServer(GateOptions options);
  ~GatedServer() override;  // stop_gate()
  GatedServer(const GatedServer&) = delete;
  GatedServer& operator=(const GatedServer&) = delete;

  // Starts the gate and the workers; call before listen_after_bind().
  void start_gate();
  // After stop() and the listening thread's end: closes the connections
  // still waiting and waits for the workers. Idempotent.
  void stop_gate();

 private:
  struct Waiting {
    std::string user;
    int64_t accepted_ms = 0;
  };
  // Called by httplib on the listening thread for each accepted connection
  // (the task queue runs it inline): admits it to the gate and returns.
  bool process_and_close_socket(socket_t sock) override;
  void gate_loop();
  // With mu_ held: answers `status` and `why` to a waiting connection without
  // blocking, and closes it.
  void drop_waiting(int fd, int status, const std::string& why);
  void serve_one(int fd, const std::string& user);
  // With mu_ held: one connection of `user` fewer (`waiting`: it was one).
  void release(const std::string& user, bool waiting);

  GateOptions options_;
  SystemClock clock_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd that ends gate_loop
  std::thread gate_;
  std::unique_ptr<httplib::ThreadPool> workers_;
  std::mutex mu_;
  std::map<int, Waiting> waiting_;          // guarded by mu_
  std::map<std::string, Occupancy> users_;  // guarded by mu_: waiting and in a worker
  bool stopping_ = false;                   // guarded by mu_
};

}  // namespace colo
