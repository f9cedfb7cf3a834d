#include "jobs/run_as.h"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cstring>

namespace colo {

Result<RunAs> run_as_user(uid_t uid) {
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd pw{};
  passwd* found = nullptr;
  int rc = 0;
  while ((rc = getpwuid_r(uid, &pw, buf.data(), buf.size(), &found)) == ERANGE)
    buf.resize(buf.size() * 2);
  if (rc != 0 || found == nullptr) {
    return Error(fmt::format("uid {} is not in the user database{}", uid,
                             rc != 0 ? std::string(": ") + std::strerror(rc) : ""));
  }
  RunAs who;
  who.uid = uid;
  who.gid = pw.pw_gid;
  who.user = pw.pw_name;
  who.home = pw.pw_dir;
  int count = 32;
  std::vector<gid_t> groups(static_cast<size_t>(count));
  while (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &count) < 0)
    groups.resize(static_cast<size_t>(count));
  groups.resize(static_cast<size_t>(count));
  who.groups = std::move(groups);
  return who;
}

Status give_to(const std::string& path, const RunAs& who) {
  if (::lchown(path.c_str(), who.uid, who.gid) != 0) {
    return Error(
        fmt::format("cannot give {} to user {}: {}", path, who.user, std::strerror(errno)));
  }
  return OkStatus();
}

}  // namespace colo
