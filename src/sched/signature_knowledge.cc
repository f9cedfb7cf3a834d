#include "sched/signature_knowledge.h"

#include <algorithm>

#include "sched/prior.h"

namespace colo {

void SignatureKnowledge::reserve(size_t count) {
  labels_.reserve(count);
  priors_.reserve(count);
  profiles_.reserve(count);
  members_.reserve(count);
}

void SignatureKnowledge::set_profile(const std::string& signature, const JobProfile& profile) {
  auto [it, added] = profiles_.insert_or_assign(signature, profile);
  if (added) profile_added(signature, it->second);
  ++version_;
  own_changed(signature, it->second);
}

void SignatureKnowledge::set_prior(const std::string& signature, const JobProfile& prior) {
  priors_[signature] = prior;
  ++version_;
}

void SignatureKnowledge::set_label(const std::string& signature, std::string label) {
  labels_[signature] = std::move(label);
}

void SignatureKnowledge::set_label_if_none(const std::string& signature, const std::string& label) {
  labels_.try_emplace(signature, label);
}

std::string SignatureKnowledge::label(const std::string& signature) const {
  auto it = labels_.find(signature);
  return it != labels_.end() ? it->second : signature.substr(0, 8);
}

void SignatureKnowledge::set_family(const std::string& signature, FamilyMember member) {
  Family& f = families_[member.family];
  auto [it, added] = members_.try_emplace(signature);
  Member& m = it->second;
  if (added) {
    ++records_added_;
    auto own_it = profiles_.find(signature);
    m.own = own_it == profiles_.end() ? nullptr : &own_it->second;
    m.listed_in = &f;
    m.position = f.signatures.size();
    f.signatures.push_back(signature);
  } else if (m.family != &f) {
    scan_every_signature_ = true;  // listed in a family it is no longer of
  }
  const bool resources = member.resource_params && member.resource_params != f.resource_params;
  if (resources) {
    f.resource_params = member.resource_params;
    ++f.version;  // its members' estimates and parameter effects read them
  }
  m.member = std::move(member);
  m.values_hash = params_hash(m.member.params);
  m.instance.reset();
  m.family = &f;
  // Its values may have changed: estimated afresh.
  m.estimated = {};
  m.point = {};
  ++version_;
  if (resources) f.changed = version_;
  m.changed = version_;
  m.own_admissible = m.own != nullptr && m.own->admissible();
}

void SignatureKnowledge::add_family_instance(const std::string& family, FamilyInstance instance) {
  Family& f = families_[family];
  const size_t hash = params_hash(instance.params);
  const bool first = !first_with(f, instance.params, hash);
  const size_t index = f.fit.add(std::move(instance));
  if (first) list_first(f, index, hash);
  ++f.version;
  ++version_;
  f.changed = version_;
}

std::optional<size_t> SignatureKnowledge::first_with(
    const Family& f, const std::map<std::string, std::string>& params, size_t hash) {
  const size_t mask = f.first_with.size() - 1;
  for (size_t i = hash & mask; !f.first_with.empty(); i = (i + 1) & mask) {
    const Family::Slot& slot = f.first_with[i];
    if (slot.index == SIZE_MAX) break;
    if (slot.hash == hash && f.fit.instances()[slot.index].params == params) return slot.index;
  }
  return std::nullopt;
}

void SignatureKnowledge::list_first(Family& f, size_t index, size_t hash) {
  auto place = [](std::vector<Family::Slot>& slots, Family::Slot slot) {
    const size_t mask = slots.size() - 1;
    size_t i = slot.hash & mask;
    while (slots[i].index != SIZE_MAX) i = (i + 1) & mask;
    slots[i] = slot;
  };
  if (2 * (f.first_with_count + 1) > f.first_with.size()) {
    std::vector<Family::Slot> grown(std::max<size_t>(16, 2 * f.first_with.size()));
    for (const Family::Slot& slot : f.first_with)
      if (slot.index != SIZE_MAX) place(grown, slot);
    f.first_with = std::move(grown);
  }
  place(f.first_with, {hash, index});
  ++f.first_with_count;
}

JobProfile SignatureKnowledge::learned(const std::string& signature, const JobProfile& measured) {
  // A member's own profile through its membership (one lookup, not three).
  Member* member = find_member(signature);
  JobProfile merged;
  JobProfile* own = nullptr;
  if (member != nullptr && member->own != nullptr) {
    merged = merge_profiles(measured, *member->own);
    *member->own = merged;
    own = member->own;
  } else {
    auto it = profiles_.find(signature);
    merged = it == profiles_.end() ? measured : merge_profiles(measured, it->second);
    auto [at, added] = profiles_.insert_or_assign(signature, merged);
    if (added) profile_added(signature, at->second, member);
    own = &at->second;
  }
  ++version_;
  own_changed(member, *own);
  if (member != nullptr) add_to_family(*member, measured);
  return merged;
}

void SignatureKnowledge::measured_memory(const std::string& signature, Lookups& lookups,
                                         const JobProfile& measured) {
  if (!measured.peak_memory_bytes) return;
  look_up(signature, lookups);
  measured_memory(signature, changeable(lookups), measured);
}

void SignatureKnowledge::measured_memory(const std::string& signature, Member* member,
                                         const JobProfile& measured) {
  JobProfile& own =
      member != nullptr && member->own != nullptr ? *member->own : own_profile(signature, member);
  own.peak_memory_bytes = std::max(own.peak_memory_bytes.value_or(0), *measured.peak_memory_bytes);
  own.memory_uncertainty = 0;
  ++version_;
  if (own.source.empty()) own.source = measured.source;
  own_changed(member, own);
  JobProfile memory_only;
  memory_only.peak_memory_bytes = measured.peak_memory_bytes;
  memory_only.source = measured.source;
  if (member != nullptr) add_to_family(*member, memory_only);
}

void SignatureKnowledge::raise_peak(const std::string& signature, uint64_t bytes) {
  JobProfile& p = own_profile(signature);
  p.peak_memory_bytes = std::max(p.peak_memory_bytes.value_or(0), bytes);
  ++version_;
  own_changed(signature, p);
}

JobProfile& SignatureKnowledge::own_profile(const std::string& signature, Member* member) {
  auto [it, added] = profiles_.try_emplace(signature);
  if (added) profile_added(signature, it->second, member);
  return it->second;
}

void SignatureKnowledge::profile_added(const std::string& signature, JobProfile& profile,
                                       Member* member) {
  ++records_added_;
  if (member == nullptr) member = find_member(signature);
  if (member != nullptr) member->own = &profile;
}

SignatureKnowledge::Member* SignatureKnowledge::find_member(const std::string& signature) {
  auto it = members_.find(signature);
  return it == members_.end() ? nullptr : &it->second;
}

void SignatureKnowledge::own_changed(const std::string& signature, const JobProfile& profile) {
  own_changed(find_member(signature), profile);
}

void SignatureKnowledge::own_changed(Member* member, const JobProfile& profile) {
  if (member == nullptr) return;
  member->changed = version_;
  member->own_admissible = profile.admissible();
}

const SignatureKnowledge::Member* SignatureKnowledge::find_member(
    const std::string& signature) const {
  auto it = members_.find(signature);
  return it == members_.end() ? nullptr : &it->second;
}

const JobProfile* SignatureKnowledge::own(const std::string& signature) const {
  auto it = profiles_.find(signature);
  return it == profiles_.end() ? nullptr : &it->second;
}

const JobProfile* SignatureKnowledge::usable(const std::string& signature) const {
  return usable_over(find_member(signature), own(signature));
}

const JobProfile* SignatureKnowledge::usable_over(const Member* member,
                                                  const JobProfile* own_profile) const {
  if (own_profile != nullptr && own_profile->admissible()) return own_profile;
  if (member == nullptr) return nullptr;
  const Family& f = *member->family;
  Estimated& e = member->estimated;
  // Nothing it reads changed since it last answered (every change to a
  // profile or a family bumps version_).
  if (e.version == f.version && e.answered == version_) return e.answer;
  if (e.version != f.version) {
    e.estimate = f.fit.shared_estimate(member->member.params, f.resource_params, &effects_of(f),
                                       &member->point);
    e.version = f.version;
  }
  e.answered = version_;
  e.answer = nullptr;
  if (!e.estimate->profile) return nullptr;
  // Without its own profile, the family's answer itself (shared, not copied).
  const JobProfile* usable = &*e.estimate->profile;
  if (own_profile != nullptr) {
    member->merged = merge_profiles(*own_profile, *e.estimate->profile);
    usable = &member->merged;
  }
  // Estimated beyond every GPU: measure it instead.
  if (usable->peak_memory_bytes.value_or(0) > largest_memory_) return nullptr;
  e.answer = usable;
  return e.answer;
}

void SignatureKnowledge::look_up(const std::string& signature, Lookups& lookups) const {
  if (lookups.member == nullptr && lookups.added != records_added_) {
    lookups.added = records_added_;
    lookups.member = find_member(signature);
    lookups.own = lookups.member == nullptr ? own(signature) : nullptr;
  }
}

const JobProfile* SignatureKnowledge::usable(const std::string& signature, Lookups& lookups) const {
  look_up(signature, lookups);
  if (lookups.member != nullptr) return usable_over(lookups.member, lookups.member->own);
  return usable_over(nullptr, lookups.own);
}

bool SignatureKnowledge::estimated(const std::string& signature, Lookups& lookups) const {
  const JobProfile* usable_profile = usable(signature, lookups);
  const JobProfile* own_profile = lookups.member != nullptr ? lookups.member->own : lookups.own;
  return !(own_profile != nullptr && own_profile->admissible()) && usable_profile != nullptr;
}

JobProfile SignatureKnowledge::prior_of(const std::string& signature) const {
  auto it = priors_.find(signature);
  JobProfile prior = it != priors_.end() && it->second.admissible()
                         ? it->second
                         : PriorModel({}, largest_memory_).prior({});
  // What is known of the job itself (a gpu_memory hint without an SM
  // activity one) wins field by field.
  const JobProfile* own_profile = own(signature);
  return own_profile != nullptr ? merge_profiles(*own_profile, prior) : prior;
}

const FamilyMember* SignatureKnowledge::member(const std::string& signature) const {
  auto it = members_.find(signature);
  return it == members_.end() ? nullptr : &it->second.member;
}

const FamilyMember* SignatureKnowledge::member(const std::string& signature,
                                               Lookups& lookups) const {
  look_up(signature, lookups);
  return lookups.member != nullptr ? &lookups.member->member : nullptr;
}

std::pair<size_t, size_t> SignatureKnowledge::family_size(const std::string& signature) const {
  auto it = members_.find(signature);
  if (it == members_.end()) return {0, 0};
  const Family& f = *it->second.family;
  return {f.fit.instances().size(), f.signatures.size()};
}

std::string SignatureKnowledge::missing(const std::string& signature) const {
  auto it = members_.find(signature);
  if (it == members_.end() || it->second.estimated.estimate == nullptr) return {};
  return it->second.estimated.estimate->missing;
}

std::string SignatureKnowledge::probe_key(const std::string& signature) const {
  auto it = members_.find(signature);
  return it == members_.end() ? signature : "family:" + it->second.member.family;
}

EffectsMemo& SignatureKnowledge::effects_of(const Family& f) const {
  if (f.effects_version != f.version) {
    f.effects.clear();
    f.effects_version = f.version;
  }
  return f.effects;
}

std::string SignatureKnowledge::probe_target(
    const std::string& family, const std::function<bool(const std::string&)>& queued) {
  auto [it, inserted] = probe_targets_.try_emplace(family);
  if (!inserted) return it->second;
  const Family& f = families_.at(family);
  double best = -1;
  for (const std::string& sig : f.signatures) {
    if (!queued(sig) || usable(sig) != nullptr) continue;
    const double value =
        f.fit.probe_value(members_.at(sig).member.params, f.resource_params, &effects_of(f));
    if (value > best) {
      best = value;
      it->second = sig;
    }
  }
  return it->second;
}

std::string SignatureKnowledge::probe_target(const std::string& family,
                                             const std::function<bool(const std::string&)>& queued,
                                             const std::vector<const std::string*>& candidates) {
  if (scan_every_signature_) return probe_target(family, queued);
  auto [it, inserted] = probe_targets_.try_emplace(family);
  if (!inserted) return it->second;
  const Family& f = families_.at(family);
  // As the scan of f.signatures finds it: the first, in their order, of
  // those of the highest value (above -1).
  double best = -1;
  size_t best_position = 0;
  bool found = false;
  for (const std::string* sig : candidates) {
    auto m = members_.find(*sig);
    if (m == members_.end() || m->second.listed_in != &f) continue;
    if (usable(*sig) != nullptr) continue;
    const double value =
        f.fit.probe_value(m->second.member.params, f.resource_params, &effects_of(f));
    const size_t position = m->second.position;
    if (found ? value > best || (value == best && position < best_position) : value > best) {
      best = value;
      best_position = position;
      found = true;
      it->second = *sig;
    }
  }
  return it->second;
}

void SignatureKnowledge::keep_probe_targets_while(uint64_t queue_changes) {
  if (probe_targets_version_ == version_ && probe_targets_queue_ == queue_changes) return;
  probe_targets_.clear();
  probe_targets_version_ = version_;
  probe_targets_queue_ = queue_changes;
}

bool SignatureKnowledge::announce(const std::string& signature, Lookups& lookups) {
  look_up(signature, lookups);
  return announce(lookups.member);
}

bool SignatureKnowledge::announce(const Member* member) {
  if (member == nullptr || member->announced == member->family->version) return false;
  member->announced = member->family->version;
  return true;
}

void SignatureKnowledge::add_to_family(Member& member, const JobProfile& measured) {
  Family& f = *member.family;
  const FamilyMember& m = member.member;
  const size_t hash = member.values_hash;
  std::optional<size_t>& first = member.instance;
  if (!first) first = first_with(f, m.params, hash);
  if (!first) {
    // Each of its members' sets of values adds one instance at most: room
    // for them all at once (a sweep's thousands), not grown by doubling.
    if (const size_t n = f.fit.instances().size(); n == f.fit.instances().capacity())
      f.fit.reserve(std::max(2 * n, n + f.signatures.size()));
    first = f.fit.add({m.name, m.params, measured});
    list_first(f, *first, hash);
  } else {
    const JobProfile& before = f.fit.instances()[*first].measured;
    // The newer measurement wins field by field; the peak is the largest seen.
    JobProfile merged = merge_profiles(measured, before);
    if (before.peak_memory_bytes && measured.peak_memory_bytes)
      merged.peak_memory_bytes = std::max(*before.peak_memory_bytes, *measured.peak_memory_bytes);
    f.fit.remeasure(*first, std::move(merged));
  }
  ++f.version;
  ++version_;
  f.changed = version_;
}

void SignatureKnowledge::ended(const std::string& signature, Lookups& lookups, double samples) {
  look_up(signature, lookups);
  ended(signature, changeable(lookups), samples);
}

void SignatureKnowledge::ended(const std::string& signature, Member* member, double samples) {
  if (member == nullptr) {
    ended_samples_[signature] = samples;
    return;
  }
  member->ended_samples = samples;
  member->family->ended_samples = samples;
}

std::optional<double> SignatureKnowledge::ended_samples(const std::string& signature,
                                                        Lookups& lookups) const {
  look_up(signature, lookups);
  return ended_samples(signature, lookups.member);
}

std::optional<double> SignatureKnowledge::ended_samples(const std::string& signature,
                                                        const Member* member) const {
  // Its own (as a member, else from before it had a membership), else its family's.
  if (member != nullptr && member->ended_samples) return member->ended_samples;
  if (auto own_samples = ended_samples_.find(signature); own_samples != ended_samples_.end())
    return own_samples->second;
  if (member != nullptr) return member->family->ended_samples;
  return std::nullopt;
}

}  // namespace colo
