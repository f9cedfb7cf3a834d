// Unix users and groups, read through the reentrant passwd/group calls.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"

namespace colo {

// The login name of `uid`, or the uid as text when it has none.
std::string user_name_of(uid_t uid);
// The uid of user `name`; an error when there is no such user.
Result<uid_t> user_id(const std::string& name);
// The gid of group `name`; an error when there is no such group.
Result<gid_t> group_id(const std::string& name);
// Whether `uid` is in group `gid` (primary or supplementary).
bool user_in_group(uid_t uid, gid_t gid);
// The name of `uid`'s primary group (its gid as text when the group has no
// name); "" when there is no such user.
std::string primary_group_name_of(uid_t uid);

}  // namespace colo
