#include "jobs/rendezvous.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "jobs/job_spec.h"

namespace colo {

Result<int> free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error(fmt::format("cannot open a socket: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok) return Error(fmt::format("cannot find a free TCP port: {}", std::strerror(error)));
  return static_cast<int>(ntohs(addr.sin_port));
}

Status fill_in_port(LaunchRequest& request, bool gang) {
  auto asks = [](const std::string& text) {
    return text.find(kPortPlaceholder) != std::string::npos;
  };
  bool wanted = gang || asks(request.working_dir);
  for (const std::string& arg : request.argv) wanted = wanted || asks(arg);
  for (const auto& [name, value] : request.env) wanted = wanted || asks(value);
  if (!wanted) return OkStatus();
  Result<int> port = free_tcp_port();
  if (!port.ok()) return port.error().with_context(fmt::format("job '{}'", request.job_name));
  const std::string text = std::to_string(*port);
  auto fill = [&](std::string& s) {
    for (size_t at = s.find(kPortPlaceholder); at != std::string::npos;
         at = s.find(kPortPlaceholder, at + text.size()))
      s.replace(at, std::strlen(kPortPlaceholder), text);
  };
  fill(request.working_dir);
  for (std::string& arg : request.argv) fill(arg);
  for (auto& [name, value] : request.env) fill(value);
  request.env[kPortEnv] = text;
  if (gang) request.env.try_emplace("MASTER_PORT", text);
  return OkStatus();
}

}  // namespace colo
