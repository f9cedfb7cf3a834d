#include "serve/tcp_peer.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/unique_fd.h"

namespace colo {
namespace {

// A loopback listener, a client connected to it, and the server's end.
struct LoopbackPair {
  UniqueFd listener;
  UniqueFd client;
  UniqueFd server;
};

LoopbackPair connect_loopback() {
  LoopbackPair p;
  p.listener = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(::bind(p.listener.get(), reinterpret_cast<sockaddr*>(&addr), len), 0);
  EXPECT_EQ(::listen(p.listener.get(), 4), 0);
  EXPECT_EQ(::getsockname(p.listener.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  p.client = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(::connect(p.client.get(), reinterpret_cast<sockaddr*>(&addr), len), 0);
  p.server = UniqueFd(::accept4(p.listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  return p;
}

TEST(TcpPeer, ALocalClientIsNamedByTheOwnerOfItsSocket) {
  LoopbackPair p = connect_loopback();
  ASSERT_GE(p.server.get(), 0);
  std::optional<uid_t> uid = local_tcp_peer_uid(p.server.get());
  ASSERT_TRUE(uid.has_value()) << "the kernel's socket table (sock_diag) did not answer";
  EXPECT_EQ(*uid, ::geteuid());
  EXPECT_EQ(tcp_peer_key(p.server.get()), "uid " + std::to_string(::geteuid()));
}

TEST(TcpPeer, WhatIsNotAConnectedTcpSocketHasNoOwnerToName) {
  UniqueFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  EXPECT_FALSE(local_tcp_peer_uid(udp.get()).has_value());
  EXPECT_EQ(tcp_peer_key(udp.get()), "address unknown");
}

}  // namespace
}  // namespace colo
