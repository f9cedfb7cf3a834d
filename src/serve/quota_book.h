// QuotaBook: the service's quotas (docs/serve.md, Quotas). It counts each
// owner's jobs not yet ended, says whether a submission would pass a bound
// on jobs queued or running (the owner's own, --max-jobs-for or
// --max-jobs-per-user, and each of their groups'), and, from the GPUs'
// worth each owner holds now, what each may still start under their bound
// on GPUs' worth (their own, else --max-gpus-per-user, and each bounded
// group's room, which goes to the group's members in fair-share order: what
// one member may take is not left to the next, so that the members together
// stay within it). The engine holds back what an owner's room does not let
// start (RunEngine::set_quota_left).
//
// Pure: no engine, no store; group membership and user names come through
// QuotaDirectory (a seam for tests), each owner's groups read once. Not
// thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_spec.h"

namespace colo {

// One user's or group's bound (--max-gpus-for NAME=N, --max-jobs-for NAME=M;
// a group's as @NAME). `name` is the user's or group's, for messages.
struct QuotaBound {
  std::string name;
  std::optional<double> gpus;  // GPUs' worth at once
  std::optional<size_t> jobs;  // queued or running
};

struct QuotaBounds {
  // Jobs one user may have not yet ended (queued or running), where they
  // have no bound of their own; a submission that would pass it is refused
  // whole, saying so.
  size_t max_jobs_per_user = 10'000;
  // At most this many GPUs' worth of one user's jobs run at once (a job
  // counts its share of each GPU it runs on: one over the jobs there), where
  // they have no bound of their own; the rest wait, saying so. Unset: none.
  std::optional<double> max_gpus_per_user;
  // A user's own bounds (--max-gpus-for alice=N, --max-jobs-for alice=M), in
  // place of the two above; and a group's (@vision=N), which bounds its
  // members' jobs together.
  std::map<uid_t, QuotaBound> users;
  std::map<gid_t, QuotaBound> groups;
  // Some bound on GPUs' worth is set (the engine must hold jobs back).
  bool bound_gpus() const;
};

// Who is in which group, and a user's name (common/users.h in the service).
struct QuotaDirectory {
  std::function<bool(uid_t, gid_t)> in_group;
  std::function<std::string(uid_t)> name_of;
};

// What one owner runs now, as update() reads it.
struct OwnerLoad {
  size_t running = 0;    // their jobs running
  double gpus_held = 0;  // each job's share of each GPU it runs on (one over the jobs there)
  double share = 0;      // fair share: their usage over their weight (less goes first)
  std::string name;      // for messages; empty: the directory's
};

class QuotaBook {
 public:
  // Borrows `bounds`, which must outlive it (colo serve's options).
  QuotaBook(const QuotaBounds& bounds, QuotaDirectory directory);
  QuotaBook(QuotaBounds&&, QuotaDirectory) = delete;

  bool bound_gpus() const { return bounds_.bound_gpus(); }

  // A job of `owner` was admitted, or has ended (queued or running no more).
  void job_added(uid_t owner) { ++unfinished_[owner]; }
  void job_ended(uid_t owner);
  // Each owner's jobs not yet ended (no entry: none).
  const std::map<uid_t, size_t>& unfinished() const { return unfinished_; }

  // Why `specs`, submitted for `owner`, would pass their bound on jobs
  // queued or running (their own, or a group's), or hold a gang that needs
  // more GPUs at once than their bound on GPUs' worth ever lets them hold;
  // nullopt: they would not.
  std::optional<std::string> over_quota(uid_t owner, const std::vector<JobSpec>& specs) const;

  // Works out each owner's room again from `load` (owners with jobs not yet
  // ended; a missing owner runs nothing). Only while bound_gpus().
  void update(const std::map<uid_t, OwnerLoad>& load);
  // What update() left each owner with jobs not yet ended (inf: no bound).
  const std::map<uint32_t, double>& left() const { return left_; }
  // update() has bounded `owner` since they had jobs.
  bool knows(uid_t owner) const { return left_.contains(owner); }
  // The owner's room leaves no room for one more GPU's worth.
  bool holds(uid_t owner) const;
  // The bound that leaves `owner` least, in words; nullptr: none bounds them.
  const std::string* why(uid_t owner) const;

 private:
  // The groups of bounds_.groups `owner` is in.
  const std::vector<gid_t>& groups_of(uid_t owner) const;

  const QuotaBounds& bounds_;
  const QuotaDirectory directory_;
  std::map<uid_t, size_t> unfinished_;
  std::map<uint32_t, double> left_;
  std::map<uid_t, std::string> why_;
  mutable std::map<uid_t, std::vector<gid_t>> groups_of_;  // read once per owner
};

}  // namespace colo
