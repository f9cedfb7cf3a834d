#include "serve/http_gate.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "common/clock.h"
#include "serve/tcp_peer.h"

namespace colo {
namespace {

// Runs each task on the thread that enqueues it: the listening thread, for
// GatedServer's hand-over, which does not block.
class InlineQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

const char* reason_phrase(int status) {
  switch (status) {
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Service Unavailable";
  }
}

}  // namespace

GatedServer::GatedServer(GateOptions options) : options_(options) {
  new_task_queue = [] { return new InlineQueue(); };
}

GatedServer::~GatedServer() { stop_gate(); }

void GatedServer::start_gate() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake);
  workers_ = std::make_unique<httplib::ThreadPool>(options_.workers);
  gate_ = std::thread([this] { gate_loop(); });
}

void GatedServer::stop_gate() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || !gate_.joinable()) return;
    stopping_ = true;
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  gate_.join();
  workers_->shutdown();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [fd, w] : waiting_) ::close(fd);
  waiting_.clear();
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

bool GatedServer::process_and_close_socket(socket_t sock) {
  const std::string user = tcp_peer_key(sock);
  std::lock_guard<std::mutex> lock(mu_);
  const Admission admission = admit(users_, user, options_.limits);
  if (stopping_ || admission.kind == Admission::Kind::kRefuse) {
    const std::string why = stopping_ ? "colo serve is stopping" : admission.reason;
    const std::string answer = fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: "
        "text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}\n",
        why.size() + 1, why);
    (void)!::send(sock, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(sock);
    return false;
  }
  if (admission.kind == Admission::Kind::kShed) {
    auto oldest = waiting_.end();
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if (it->second.user == admission.shed_from &&
          (oldest == waiting_.end() || it->second.accepted_ms < oldest->second.accepted_ms))
        oldest = it;
    }
    if (oldest != waiting_.end()) drop_waiting(oldest->first, 503, admission.reason);
  }
  waiting_[sock] = Waiting{user, clock_.monotonic_ms()};
  Occupancy& o = users_[user];
  ++o.open;
  ++o.waiting;
  // Edge-triggered: a client that sent part of its head is not reported
  // again until more arrives.
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
  event.data.fd = sock;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sock, &event);
  return true;
}

void GatedServer::drop_waiting(int fd, int status, const std::string& why) {
  auto it = waiting_.find(fd);
  if (it == waiting_.end()) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  if (status != 0) {
    const std::string answer = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: "
        "close\r\n\r\n{}\n",
        status, reason_phrase(status), why.size() + 1, why);
    (void)!::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::close(fd);
  release(it->second.user, /*waiting=*/true);
  waiting_.erase(it);
}

void GatedServer::release(const std::string& user, bool waiting) {
  auto it = users_.find(user);
  if (it == users_.end()) return;
  --it->second.open;
  if (waiting) --it->second.waiting;
  if (it->second.open == 0) users_.erase(it);
}

void GatedServer::gate_loop() {
  std::vector<epoll_event> events(256);
  std::vector<char> head(options_.max_head_bytes);
  while (true) {
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 100);
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      auto it = waiting_.find(fd);
      if (it == waiting_.end()) continue;
      // Peeked, not read: the worker's httplib reads the request itself.
      const ssize_t got = ::recv(fd, head.data(), head.size(), MSG_PEEK | MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        drop_waiting(fd, 0, "");
        continue;
      }
      if (got < 0) continue;
      const std::string_view seen(head.data(), static_cast<size_t>(got));
      if (seen.find("\r\n\r\n") != std::string_view::npos) {
        const std::string user = it->second.user;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        waiting_.erase(it);
        --users_[user].waiting;
        workers_->enqueue([this, fd, user] { serve_one(fd, user); });
      } else if (static_cast<size_t>(got) >= head.size()) {
        drop_waiting(fd, 431,
                     fmt::format("the request head is over {} bytes", options_.max_head_bytes));
      }
    }
    const int64_t now = clock_.monotonic_ms();
    std::vector<int> late;
    for (const auto& [fd, w] : waiting_)
      if (now - w.accepted_ms > options_.head_deadline_ms) late.push_back(fd);
    for (int fd : late) {
      drop_waiting(
          fd, 408,
          fmt::format("the request head did not arrive within {} ms", options_.head_deadline_ms));
    }
  }
}

void GatedServer::serve_one(int fd, const std::string& user) {
  httplib::detail::SocketStream stream(fd, read_timeout_sec_, read_timeout_usec_,
                                       write_timeout_sec_, write_timeout_usec_);
  bool closed = false;
  process_request(stream, /*close_connection=*/true, closed, nullptr);
  httplib::detail::shutdown_socket(fd);
  httplib::detail::close_socket(fd);
  std::lock_guard<std::mutex> lock(mu_);
  release(user, /*waiting=*/false);
}

}  // namespace colo
