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
// Protected GPUs (docs/serve.md, "What protection costs"): a protected job
// keeps each of its GPUs from every normal job, so, apart from GPUs' worth,
// an owner may hold at most --max-protected-gpus-per-user GPUs with
// protected jobs at once, and the members of each primary group together at
// most --max-protected-gpus-per-group (its room going to its members in
// fair-share order, as a group's GPUs' worth does). A protected job past
// either waits; others of the owner's go on (RunEngine::set_protected_left).
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
  // At most this many GPUs held by one user's protected jobs at once (a
  // protected job holds each of its GPUs whole), and by the protected jobs of
  // the members of one primary group together; the rest wait, saying so.
  // Unset: none (`colo run`: never set).
  std::optional<int> max_protected_gpus_per_user;
  std::optional<int> max_protected_gpus_per_group;
  // Some bound on GPUs' worth or on protected GPUs is set (the engine must
  // hold jobs back).
  bool bound_gpus() const;
  bool bound_protected() const {
    return max_protected_gpus_per_user || max_protected_gpus_per_group;
  }
};

// Who is in which group, and a user's name (common/users.h in the service).
struct QuotaDirectory {
  std::function<bool(uid_t, gid_t)> in_group;
  std::function<std::string(uid_t)> name_of;
  // The name of a user's primary group; "" (or no function): unknown, and
  // then no group's bound on protected GPUs holds them.
  std::function<std::string(uid_t)> primary_group_of;
};

// What one owner runs now, as update() reads it.
struct OwnerLoad {
  size_t running = 0;           // their jobs running
  double gpus_held = 0;         // each job's share of each GPU it runs on (one over the jobs there)
  double share = 0;             // fair share: their usage over their weight (less goes first)
  std::string name;             // for messages; empty: the directory's
  int protected_gpus = 0;       // GPUs their running protected jobs hold
  size_t protected_queued = 0;  // their protected jobs waiting
};

class QuotaBook {
 public:
  // Borrows `bounds`, which must outlive it (colo serve's options).
  QuotaBook(const QuotaBounds& bounds, QuotaDirectory directory);
  QuotaBook(QuotaBounds&&, QuotaDirectory) = delete;

  bool bound_gpus() const { return bounds_.bound_gpus(); }
  bool bound_protected() const { return bounds_.bound_protected(); }

  // A job of `owner` was admitted, or has ended (queued or running no more).
  void job_added(uid_t owner) { ++unfinished_[owner]; }
  void job_ended(uid_t owner);
  // Each owner's jobs not yet ended (no entry: none).
  const std::map<uid_t, size_t>& unfinished() const { return unfinished_; }

  // Why `specs`, submitted for `owner`, would pass their bound on jobs
  // queued or running (their own, or a group's), or hold a gang that needs
  // more GPUs at once than their bound on GPUs' worth (or, protected, on
  // protected GPUs) ever lets them hold; nullopt: they would not.
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

  // What update() left each owner with jobs not yet ended of protected GPUs
  // (inf: no bound); empty while no bound on protected GPUs is set.
  const std::map<uint32_t, double>& protected_left() const { return protected_left_; }
  // The owner's protected GPUs leave no room for one more protected job.
  bool holds_protected(uid_t owner) const;
  // The bound on protected GPUs that leaves `owner` least, in words; nullptr: none.
  const std::string* why_protected(uid_t owner) const;

 private:
  // The groups of bounds_.groups `owner` is in.
  const std::vector<gid_t>& groups_of(uid_t owner) const;
  // A protected gang of `specs` wider than the owner's bound on protected
  // GPUs, in words (over_quota()); nullopt: none.
  std::optional<std::string> protected_past_bound(uid_t owner,
                                                  const std::vector<JobSpec>& specs) const;
  // The name of `owner`'s primary group ("" unknown).
  const std::string& primary_group_of(uid_t owner) const;
  // update()'s part for protected GPUs, with the owners in fair-share order.
  void update_protected(const std::vector<uid_t>& owners,
                        const std::function<const OwnerLoad&(uid_t)>& load_of);

  const QuotaBounds& bounds_;
  const QuotaDirectory directory_;
  std::map<uid_t, size_t> unfinished_;
  std::map<uint32_t, double> left_;
  std::map<uid_t, std::string> why_;
  std::map<uint32_t, double> protected_left_;
  std::map<uid_t, std::string> why_protected_;
  mutable std::map<uid_t, std::string> primary_group_of_;  // read once per owner
  mutable std::map<uid_t, std::vector<gid_t>> groups_of_;  // read once per owner
};

}  // namespace colo
