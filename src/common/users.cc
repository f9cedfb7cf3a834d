#include "common/users.h"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <vector>

namespace colo {

std::string user_name_of(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr)
    return pw.pw_name;
  return std::to_string(uid);
}

Result<uid_t> user_id(const std::string& name) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
    return Error(fmt::format("there is no user '{}' (name a login of this machine)", name));
  return pw.pw_uid;
}

Result<gid_t> group_id(const std::string& name) {
  std::vector<char> buf(16384);
  group gr{};
  group* found = nullptr;
  if (getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found) != 0 || found == nullptr)
    return Error(
        fmt::format("there is no group '{}' (create it with groupadd, or name another)", name));
  return gr.gr_gid;
}

std::string primary_group_name_of(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return "";
  std::vector<char> group_buf(16384);
  group gr{};
  group* named = nullptr;
  if (getgrgid_r(pw.pw_gid, &gr, group_buf.data(), group_buf.size(), &named) == 0 &&
      named != nullptr)
    return gr.gr_name;
  return std::to_string(pw.pw_gid);
}

bool user_in_group(uid_t uid, gid_t gid) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return false;
  if (pw.pw_gid == gid) return true;
  int count = 64;
  std::vector<gid_t> groups(static_cast<size_t>(count));
  while (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &count) < 0)
    groups.resize(static_cast<size_t>(count));
  groups.resize(static_cast<size_t>(count));
  return std::find(groups.begin(), groups.end(), gid) != groups.end();
}

}  // namespace colo
