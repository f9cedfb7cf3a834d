// RunAs: the Unix identity a job runs under when a service running as root
// starts it for another user (never root on someone else's behalf).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace colo {

struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;              // primary group
  std::vector<gid_t> groups;  // supplementary groups, the primary one included
  std::string user;           // login name
  std::string home;           // home directory
};

// The identity of `uid` from the user database (passwd, its groups). Fails
// when the user is unknown.
Result<RunAs> run_as_user(uid_t uid);

// Hands `path` (a file or directory colo created for the job: its progress
// file, its checkpoint directory) to the job's user, so the job can write it.
// A link at `path` is never followed (lchown): only the link would change.
Status give_to(const std::string& path, const RunAs& who);

}  // namespace colo
