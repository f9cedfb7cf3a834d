#include "serve/quota_book.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace colo {

bool QuotaBounds::bound_gpus() const {
  const auto has_gpus = [](const auto& q) { return q.second.gpus.has_value(); };
  return max_gpus_per_user || std::any_of(users.begin(), users.end(), has_gpus) ||
         std::any_of(groups.begin(), groups.end(), has_gpus) || bound_protected();
}

QuotaBook::QuotaBook(const QuotaBounds& bounds, QuotaDirectory directory)
    : bounds_(bounds), directory_(std::move(directory)) {}

void QuotaBook::job_ended(uid_t owner) {
  if (auto count = unfinished_.find(owner); count != unfinished_.end() && --count->second == 0)
    unfinished_.erase(count);
}

bool QuotaBook::holds(uid_t owner) const {
  auto left = left_.find(owner);
  return left != left_.end() && left->second < 1 - 1e-9;  // room for one GPU more
}

const std::string* QuotaBook::why(uid_t owner) const {
  auto it = why_.find(owner);
  return it == why_.end() ? nullptr : &it->second;
}

bool QuotaBook::holds_protected(uid_t owner) const {
  auto left = protected_left_.find(owner);
  return left != protected_left_.end() && left->second < 1 - 1e-9;
}

const std::string* QuotaBook::why_protected(uid_t owner) const {
  auto it = why_protected_.find(owner);
  return it == why_protected_.end() ? nullptr : &it->second;
}

const std::string& QuotaBook::primary_group_of(uid_t owner) const {
  auto [cached, is_new] = primary_group_of_.try_emplace(owner);
  if (is_new && bounds_.max_protected_gpus_per_group && directory_.primary_group_of)
    cached->second = directory_.primary_group_of(owner);
  return cached->second;
}

const std::vector<gid_t>& QuotaBook::groups_of(uid_t owner) const {
  auto [cached, is_new] = groups_of_.try_emplace(owner);
  if (is_new) {  // groups are read once per owner: update() runs at every change
    for (const auto& [gid, q] : bounds_.groups) {
      if (directory_.in_group(owner, gid)) cached->second.push_back(gid);
    }
  }
  return cached->second;
}

void QuotaBook::update(const std::map<uid_t, OwnerLoad>& load) {
  const OwnerLoad none;
  const auto load_of = [&](uid_t owner) -> const OwnerLoad& {
    auto it = load.find(owner);
    return it == load.end() ? none : it->second;
  };
  // Each bounded group's room: its bound less what its members hold.
  std::map<gid_t, double> group_held;
  for (const auto& [gid, q] : bounds_.groups) {
    if (q.gpus) group_held[gid] = 0;
  }
  for (const auto& [owner, n] : unfinished_) {
    for (gid_t gid : groups_of(owner)) {
      if (auto g = group_held.find(gid); g != group_held.end())
        g->second += load_of(owner).gpus_held;
    }
  }
  std::map<gid_t, double> group_room;
  for (const auto& [gid, held] : group_held) group_room[gid] = *bounds_.groups.at(gid).gpus - held;
  // Owners in fair-share order: a group's room goes first to whoever used least.
  std::vector<uid_t> owners;
  for (const auto& [owner, n] : unfinished_) owners.push_back(owner);
  std::stable_sort(owners.begin(), owners.end(),
                   [&](uid_t a, uid_t b) { return load_of(a).share < load_of(b).share; });
  update_protected(owners, load_of);
  left_.clear();
  why_.clear();
  for (uid_t owner : owners) {
    const OwnerLoad& l = load_of(owner);
    const double held = l.gpus_held;
    const std::string name = l.name.empty() ? directory_.name_of(owner) : l.name;
    double left = std::numeric_limits<double>::infinity();
    std::string why;
    auto own = bounds_.users.find(owner);
    if (own != bounds_.users.end() && own->second.gpus) {
      left = *own->second.gpus - held;
      why = fmt::format(
          "{} runs {:.1f} GPUs' worth, at most {:g} for them (colo serve --max-gpus-for {}={:g})",
          name, held, *own->second.gpus, name, *own->second.gpus);
    } else if (bounds_.max_gpus_per_user) {
      left = *bounds_.max_gpus_per_user - held;
      why = fmt::format(
          "{} runs {:.1f} GPUs' worth, at most {:g} per user (colo serve --max-gpus-per-user)",
          name, held, *bounds_.max_gpus_per_user);
    }
    const std::vector<gid_t>& groups = groups_of(owner);
    for (gid_t gid : groups) {
      auto room = group_room.find(gid);
      if (room == group_room.end() || room->second >= left) continue;
      left = room->second;
      const QuotaBound& q = bounds_.groups.at(gid);
      const std::string flag = fmt::format("colo serve --max-gpus-for @{}={:g}", q.name, *q.gpus);
      why = group_held.at(gid) + 1 > *q.gpus + 1e-9
                ? fmt::format("group {} runs {:.1f} GPUs' worth, at most {:g} ({})", q.name,
                              group_held.at(gid), *q.gpus, flag)
                : fmt::format(
                      "group {} runs {:.1f} of its {:g} GPUs' worth ({}); the rest goes "
                      "first to its members who used less lately",
                      q.name, group_held.at(gid), *q.gpus, flag);
    }
    left_[owner] = left;
    if (!why.empty()) why_[owner] = why;
    // What this owner may take of each group's room (each queued job counted
    // as one GPU) is not left to the members after them.
    const size_t unfinished = unfinished_.at(owner);
    const double queued = static_cast<double>(unfinished > l.running ? unfinished - l.running : 0);
    for (gid_t gid : groups) {
      if (auto room = group_room.find(gid); room != group_room.end())
        room->second -= std::clamp(std::min(left, queued), 0.0, std::max(0.0, room->second));
    }
  }
}

namespace {

std::string protected_gpus(int n) {
  return fmt::format("{} protected GPU{}", n, n == 1 ? "" : "s");
}

}  // namespace

void QuotaBook::update_protected(const std::vector<uid_t>& owners,
                                 const std::function<const OwnerLoad&(uid_t)>& load_of) {
  protected_left_.clear();
  why_protected_.clear();
  if (!bounds_.bound_protected()) return;
  // Each primary group's room: the bound less what its members' protected jobs hold.
  std::map<std::string, int> group_held;
  if (bounds_.max_protected_gpus_per_group) {
    for (uid_t owner : owners) {
      if (const std::string& g = primary_group_of(owner); !g.empty())
        group_held[g] += load_of(owner).protected_gpus;
    }
  }
  std::map<std::string, double> group_room;
  for (const auto& [g, held] : group_held)
    group_room[g] = *bounds_.max_protected_gpus_per_group - held;
  // In fair-share order: a group's room goes first to whoever used least.
  for (uid_t owner : owners) {
    const OwnerLoad& l = load_of(owner);
    const std::string name = l.name.empty() ? directory_.name_of(owner) : l.name;
    double left = std::numeric_limits<double>::infinity();
    std::string why;
    if (const std::optional<int>& most = bounds_.max_protected_gpus_per_user) {
      left = *most - l.protected_gpus;
      why = fmt::format(
          "{} already holds {}, at most {} per user (colo serve --max-protected-gpus-per-user {})",
          name, protected_gpus(l.protected_gpus), *most, *most);
    }
    auto room = group_room.find(primary_group_of(owner));
    if (room != group_room.end()) {
      const int most = *bounds_.max_protected_gpus_per_group;
      const int held = group_held.at(room->first);
      if (room->second < left) {
        left = room->second;
        const std::string flag = fmt::format("colo serve --max-protected-gpus-per-group {}", most);
        why = held + 1 > most
                  ? fmt::format("group {} already holds {}, at most {} per group ({})", room->first,
                                protected_gpus(held), most, flag)
                  : fmt::format(
                        "group {} holds {} of its {} ({}); the rest goes first to its members "
                        "who used less lately",
                        room->first, held, protected_gpus(most), flag);
      }
      // What this owner may take of the group's room (each protected job
      // waiting counted as one GPU) is not left to the members after them.
      room->second -= std::clamp(std::min(left, static_cast<double>(l.protected_queued)), 0.0,
                                 std::max(0.0, room->second));
    }
    protected_left_[owner] = left;
    if (!why.empty()) why_protected_[owner] = why;
  }
}

std::optional<std::string> QuotaBook::over_quota(uid_t owner,
                                                 const std::vector<JobSpec>& specs) const {
  const size_t adding = specs.size();
  const auto unfinished = [&](uid_t uid) {
    auto it = unfinished_.find(uid);
    return it == unfinished_.end() ? size_t{0} : it->second;
  };
  const auto jobs = [](size_t n) { return fmt::format("{} job{}", n, n == 1 ? "" : "s"); };
  const std::string what_to_do = fmt::format(
      "the {} of this submission would pass that: wait for some to end, or cancel some (colo "
      "cancel)",
      jobs(adding));
  const size_t have = unfinished(owner);
  auto own = bounds_.users.find(owner);
  if (own != bounds_.users.end() && own->second.jobs) {
    if (have + adding > *own->second.jobs) {
      return fmt::format(
          "submit: you have {} queued or running, and this colo serve takes at most {} of "
          "yours (its --max-jobs-for {}={}); {}",
          jobs(have), *own->second.jobs, own->second.name, *own->second.jobs, what_to_do);
    }
  } else if (have + adding > bounds_.max_jobs_per_user) {
    return fmt::format(
        "submit: you have {} queued or running, and this colo serve takes at most {} per user "
        "(its --max-jobs-per-user); {}",
        jobs(have), bounds_.max_jobs_per_user, what_to_do);
  }
  for (gid_t gid : groups_of(owner)) {
    const QuotaBound& q = bounds_.groups.at(gid);
    if (!q.jobs) continue;
    size_t members = 0;
    for (const auto& [uid, n] : unfinished_) {
      const std::vector<gid_t>& groups = groups_of(uid);
      if (std::find(groups.begin(), groups.end(), gid) != groups.end()) members += n;
    }
    if (members + adding > *q.jobs) {
      return fmt::format(
          "submit: group {}'s members have {} queued or running, and this colo serve takes at "
          "most {} of theirs together (its --max-jobs-for @{}={}); {}",
          q.name, jobs(members), *q.jobs, q.name, *q.jobs, what_to_do);
    }
  }
  if (std::optional<std::string> never = protected_past_bound(owner, specs)) return never;
  // A gang that needs more GPUs at once than the owner may ever hold would
  // wait for ever: refused now, with the bound that rules it out.
  auto widest =
      std::max_element(specs.begin(), specs.end(),
                       [](const JobSpec& a, const JobSpec& b) { return a.gpus < b.gpus; });
  if (widest == specs.end() || widest->gpus <= 1) return std::nullopt;
  std::optional<double> bound;
  std::string flag;
  if (own != bounds_.users.end() && own->second.gpus) {
    bound = own->second.gpus;
    flag = fmt::format("--max-gpus-for {}={:g}", own->second.name, *bound);
  } else if (bounds_.max_gpus_per_user) {
    bound = bounds_.max_gpus_per_user;
    flag = fmt::format("--max-gpus-per-user {:g}", *bound);
  }
  for (gid_t gid : groups_of(owner)) {
    const QuotaBound& q = bounds_.groups.at(gid);
    if (q.gpus && (!bound || *q.gpus < *bound)) {
      bound = q.gpus;
      flag = fmt::format("--max-gpus-for @{}={:g}", q.name, *q.gpus);
    }
  }
  if (!bound || static_cast<double>(widest->gpus) <= *bound + 1e-9) return std::nullopt;
  return fmt::format(
      "submit: job '{}' needs {} GPUs at once, but this colo serve lets {} hold at most {:g} "
      "GPUs' worth (its {}), so it could never start; give it at most {:g} GPUs, or ask the "
      "service's administrator for a larger quota",
      widest->name, widest->gpus, directory_.name_of(owner), *bound, flag,
      std::floor(*bound + 1e-9));
}

std::optional<std::string> QuotaBook::protected_past_bound(
    uid_t owner, const std::vector<JobSpec>& specs) const {
  std::optional<int> bound;
  std::string flag;
  if (const std::optional<int>& most = bounds_.max_protected_gpus_per_user) {
    bound = most;
    flag = fmt::format("--max-protected-gpus-per-user {}", *most);
  }
  if (const std::optional<int>& most = bounds_.max_protected_gpus_per_group;
      most && (!bound || *most < *bound) && !primary_group_of(owner).empty()) {
    bound = most;
    flag = fmt::format("--max-protected-gpus-per-group {}", *most);
  }
  if (!bound) return std::nullopt;
  for (const JobSpec& spec : specs) {
    if (spec.qos != QosClass::kProtected || spec.gpus <= *bound) continue;
    return fmt::format(
        "submit: job '{}' is protected and needs {} GPUs at once, but this colo serve lets {} "
        "hold at most {} (its {}), so it could never start; give it at most {} GPU{}, or make "
        "it normal (qos = \"normal\", or colo submit --qos normal)",
        spec.name, spec.gpus, directory_.name_of(owner), protected_gpus(*bound), flag, *bound,
        *bound == 1 ? "" : "s");
  }
  return std::nullopt;
}

}  // namespace colo
