#include "mig/mig_job_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "common/units.h"

namespace colo {
namespace {

// Jobs that share one GPU instance (a group), or one job alone.
struct Unit {
  std::string group;
  std::vector<std::string> jobs;
  std::optional<std::string> profile;
  uint64_t memory_bytes = 0;  // summed hints; 0 when none given
};

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string unit_name(const Unit& u) {
  return u.group.empty() ? fmt::format("job '{}'", u.jobs.front())
                         : fmt::format("mig_group '{}'", u.group);
}

// Largest compute-instance size with one per member in a `slices` instance.
int compute_slices_per_job(int members, int slices) {
  for (int s : {7, 4, 3, 2, 1}) {
    if (s * members <= slices && compute_instance_fits(s, slices)) return s;
  }
  return 0;
}

// Profiles colo may choose itself: no "+me" variants; largest first.
std::vector<const MigProfileSpec*> choosable(const MigGeometry& g) {
  std::vector<const MigProfileSpec*> out;
  for (const MigProfileSpec& p : g.profiles) {
    if (p.name.find('+') == std::string::npos && p.name.find("-me") == std::string::npos) {
      out.push_back(&p);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const MigProfileSpec* a, const MigProfileSpec* b) {
    if (a->memory_slices != b->memory_slices) return a->memory_slices > b->memory_slices;
    return a->compute_slices > b->compute_slices;
  });
  return out;
}

Result<std::vector<Unit>> units_of(const MigGeometry& geometry,
                                   const std::vector<MigJobDemand>& demands) {
  std::vector<Unit> units;
  for (const MigJobDemand& d : demands) {
    Unit* unit = nullptr;
    if (d.group) {
      for (Unit& u : units) {
        if (u.group == *d.group) unit = &u;
      }
    }
    if (unit == nullptr) {
      units.push_back({d.group.value_or(""), {}, std::nullopt, 0});
      unit = &units.back();
    }
    unit->jobs.push_back(d.job);
    unit->memory_bytes += d.memory_bytes.value_or(0);
    if (d.profile) {
      const MigProfileSpec* p = geometry.find_profile(*d.profile);
      if (p == nullptr) {
        return Error(fmt::format("job '{}': unknown mig_profile '{}' for {}; valid profiles: {}",
                                 d.job, *d.profile, geometry.model, geometry.profile_names()));
      }
      if (unit->profile && lower(*unit->profile) != lower(p->name)) {
        return Error(fmt::format(
            "mig_group '{}': its jobs ask for different mig_profile values ({} and {}); give the "
            "group one profile",
            unit->group, *unit->profile, p->name));
      }
      unit->profile = p->name;
    }
  }
  return units;
}

}  // namespace

Result<std::vector<MigInstancePlan>> plan_mig_for_jobs(const MigGeometry& geometry,
                                                       const std::vector<MigJobDemand>& demands,
                                                       const std::vector<MigPlacement>& occupied) {
  if (demands.empty()) return Error("no jobs to lay out on MIG instances");
  Result<std::vector<Unit>> units = units_of(geometry, demands);
  if (!units.ok()) return units.error();

  // Profiles from mig_profile or memory hints; the rest are chosen together below.
  const std::vector<const MigProfileSpec*> candidates = choosable(geometry);
  std::vector<size_t> open;  // units with neither
  int widest_open = 1;       // most members of an open unit
  for (size_t i = 0; i < units->size(); ++i) {
    Unit& u = (*units)[i];
    if (u.profile) continue;
    if (u.memory_bytes == 0) {
      open.push_back(i);
      widest_open = std::max(widest_open, static_cast<int>(u.jobs.size()));
      continue;
    }
    const MigProfileSpec* best = nullptr;
    for (const MigProfileSpec* p : candidates) {
      if (p->memory_bytes < u.memory_bytes || p->compute_slices < static_cast<int>(u.jobs.size())) {
        continue;
      }
      if (best == nullptr || p->memory_slices < best->memory_slices ||
          (p->memory_slices == best->memory_slices && p->compute_slices < best->compute_slices)) {
        best = p;
      }
    }
    if (best == nullptr) {
      return Error(fmt::format(
          "{}: no MIG profile of {} holds {}{}", unit_name(u), geometry.model,
          format_bytes(u.memory_bytes),
          u.jobs.size() > 1 ? fmt::format(" with {} compute slices", u.jobs.size()) : ""));
    }
    u.profile = best->name;
  }

  auto requests_with = [&](const MigProfileSpec* open_profile) {
    std::vector<MigRequest> requests;
    for (const Unit& u : *units) {
      const std::string name = u.profile ? *u.profile : open_profile->name;
      requests.push_back(
          {name, 1, u.memory_bytes > 0 ? std::optional(u.memory_bytes) : std::nullopt});
    }
    return requests;
  };
  Result<std::vector<MigPlacement>> placements = Error("no MIG profile to try");
  if (open.empty()) {
    placements = plan_mig(geometry, requests_with(nullptr), occupied);
  } else {
    for (const MigProfileSpec* p : candidates) {
      if (p->compute_slices < widest_open) continue;
      placements = plan_mig(geometry, requests_with(p), occupied);
      if (placements.ok()) break;
    }
  }
  if (!placements.ok()) {
    return placements.error().with_context(
        fmt::format("{} job(s) do not fit on one {}", demands.size(), geometry.model));
  }

  // Equal profiles are interchangeable: units with a profile of their own
  // claim placements of that profile first, open units take what is left.
  std::vector<bool> taken(placements->size(), false);
  std::vector<size_t> assigned(units->size(), 0);
  for (bool fixed_pass : {true, false}) {
    for (size_t i = 0; i < units->size(); ++i) {
      const Unit& u = (*units)[i];
      if (u.profile.has_value() != fixed_pass) continue;
      for (size_t k = 0; k < placements->size(); ++k) {
        if (taken[k] || (fixed_pass && (*placements)[k].profile != *u.profile)) continue;
        taken[k] = true;
        assigned[i] = k;
        break;
      }
    }
  }
  std::vector<MigInstancePlan> plans;
  for (size_t i = 0; i < units->size(); ++i) {
    const Unit& u = (*units)[i];
    MigInstancePlan plan;
    plan.placement = (*placements)[assigned[i]];
    plan.group = u.group;
    plan.jobs = u.jobs;
    plan.compute_slices_per_job =
        compute_slices_per_job(static_cast<int>(u.jobs.size()), plan.placement.compute_slices);
    if (plan.compute_slices_per_job == 0) {
      return Error(fmt::format(
          "{} has {} jobs but its profile {} has only {} compute slices; one compute instance "
          "per job needs a profile with at least {}",
          unit_name(u), u.jobs.size(), plan.placement.profile, plan.placement.compute_slices,
          u.jobs.size()));
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace colo
