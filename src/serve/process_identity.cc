#include "serve/process_identity.h"

#include <fmt/format.h>
#include <sys/types.h>

#include <fstream>
#include <sstream>

#include "serve/unix_socket.h"

namespace colo {

ProcessIdentity describe_process_from_proc(uint32_t pid) {
  ProcessIdentity who;
  std::ifstream comm(fmt::format("/proc/{}/comm", pid));
  std::getline(comm, who.command);
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    long long uid = -1;
    if (fields >> uid && uid >= 0) who.user = user_name_of(static_cast<uid_t>(uid));
    break;
  }
  return who;
}

}  // namespace colo
