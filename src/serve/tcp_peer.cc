#include "serve/tcp_peer.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "common/unique_fd.h"

namespace colo {
namespace {

// An endpoint as sock_diag names it: the family, the address in network
// order (an IPv4 one in the first word), the port in network order. An
// IPv4 client of an IPv6 socket ("::ffff:127.0.0.1") is the IPv4 socket it is.
struct Endpoint {
  int family = AF_UNSPEC;
  uint32_t address[4] = {0, 0, 0, 0};
  uint16_t port = 0;
};

std::optional<Endpoint> endpoint_of(const sockaddr_storage& s) {
  Endpoint e;
  if (s.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(s);
    e.family = AF_INET;
    e.address[0] = in.sin_addr.s_addr;
    e.port = in.sin_port;
    return e;
  }
  if (s.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(s);
    e.port = in6.sin6_port;
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      e.family = AF_INET;
      std::memcpy(&e.address[0], &in6.sin6_addr.s6_addr[12], 4);
    } else {
      e.family = AF_INET6;
      std::memcpy(e.address, &in6.sin6_addr, 16);
    }
    return e;
  }
  return std::nullopt;
}

std::optional<sockaddr_storage> socket_address(int fd, bool peer) {
  sockaddr_storage s{};
  socklen_t len = sizeof s;
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&s), &len)
                      : ::getsockname(fd, reinterpret_cast<sockaddr*>(&s), &len);
  if (rc != 0) return std::nullopt;
  return s;
}

}  // namespace

std::optional<uid_t> local_tcp_peer_uid(int fd) {
  std::optional<sockaddr_storage> peer_address = socket_address(fd, true);
  std::optional<sockaddr_storage> local_address = socket_address(fd, false);
  if (!peer_address || !local_address) return std::nullopt;
  std::optional<Endpoint> peer = endpoint_of(*peer_address);
  std::optional<Endpoint> local = endpoint_of(*local_address);
  if (!peer || !local || peer->family != local->family) return std::nullopt;

  UniqueFd nl(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (nl.get() < 0) return std::nullopt;
  timeval tv{0, 200'000};
  ::setsockopt(nl.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  // The client's socket: its own end is our peer, its remote end is us.
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = static_cast<uint8_t>(peer->family);
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0U;
  message.request.id.idiag_sport = peer->port;
  message.request.id.idiag_dport = local->port;
  std::memcpy(message.request.id.idiag_src, peer->address, sizeof peer->address);
  std::memcpy(message.request.id.idiag_dst, local->address, sizeof local->address);
  message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(nl.get(), &message, sizeof message, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) != static_cast<ssize_t>(sizeof message))
    return std::nullopt;
  alignas(nlmsghdr) char buffer[8192];
  const ssize_t n = ::recv(nl.get(), buffer, sizeof buffer, 0);
  if (n < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(inet_diag_msg)))) return std::nullopt;
  const auto* reply = reinterpret_cast<const nlmsghdr*>(buffer);
  if (!NLMSG_OK(reply, static_cast<unsigned>(n)) || reply->nlmsg_type != SOCK_DIAG_BY_FAMILY)
    return std::nullopt;  // NLMSG_ERROR: no such socket here
  const auto* found = static_cast<const inet_diag_msg*>(NLMSG_DATA(reply));
  return static_cast<uid_t>(found->idiag_uid);
}

std::string tcp_peer_key(int fd) {
  if (std::optional<uid_t> uid = local_tcp_peer_uid(fd)) return "uid " + std::to_string(*uid);
  std::optional<sockaddr_storage> peer = socket_address(fd, true);
  char text[INET6_ADDRSTRLEN] = "unknown";
  if (peer && peer->ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(*peer).sin_addr, text, sizeof text);
  } else if (peer && peer->ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(*peer).sin6_addr, text,
                sizeof text);
  }
  return std::string("address ") + text;
}

}  // namespace colo
