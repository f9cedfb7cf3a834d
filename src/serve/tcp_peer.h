// Who is on the other end of an accepted TCP connection. A client on this
// machine is named by the owner of its socket, as the kernel's socket table
// says (sock_diag, the interface `ss` uses), so that limits per user cover the
// HTTP port as they do the Unix socket; a client elsewhere by its address.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace colo {

// The uid owning the client's end of accepted TCP connection `fd`, when that
// end is a socket of this machine (in this network namespace); nullopt when
// it is not, or the kernel does not say.
std::optional<uid_t> local_tcp_peer_uid(int fd);

// "uid 1000" for a local client, "address 10.0.0.7" for another; the key
// limits per user count by.
std::string tcp_peer_key(int fd);

}  // namespace colo
