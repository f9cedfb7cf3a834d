// SignatureKnowledge: what the `auto` policy knows of each signature (a kind
// of job): its own profile (store, hints, measurements of this run), its
// prior (prior.h), its label, its family (family.h) and the estimate its
// family's measured instances give it, and the work the latest of its jobs
// that ended ok did.
//
// usable(sig) is what admission reads: the signature's own profile when
// complete enough, else that profile over its family's estimate, cached per
// signature until the family's next measurement; nullptr when neither is
// enough or the estimate exceeds every GPU (a probe is needed). version()
// changes whenever an answer of usable(), own(), prior_of() or the
// families could change: it keys the policy's caches of what it derived
// from them (likenesses, probe targets, the longest queued start-up).
//
// Owns its profiles: pointers it returns stay valid until the next call that
// changes the same signature's profile or its family's measurements (own
// profiles are never moved or dropped; an estimate is its family's answer,
// shared by the signatures it is the same for, and replaced when the family
// learns). Pure, not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sched/family.h"
#include "sched/profile.h"

namespace colo {

class SignatureKnowledge {
  struct Member;

 public:
  // A caller's cached lookups of one signature, kept per queued job (a
  // sweep's signatures are long and many, and every event reads thousands):
  // its family membership, which keeps its own profile and estimate with it,
  // found once and kept (a membership never moves nor goes); without one, its
  // own profile. Looked up again only while no membership was found and
  // something was added since (records_added()).
  class Lookups {
    friend class SignatureKnowledge;
    uint64_t added = UINT64_MAX;      // records_added() when last looked up
    const Member* member = nullptr;   // its membership, once found
    const JobProfile* own = nullptr;  // without one: its own profile, as of `added`
  };

  // `largest_memory_bytes`: the largest GPU's memory, which caps estimates
  // and sizes the default prior.
  explicit SignatureKnowledge(uint64_t largest_memory_bytes)
      : largest_memory_(largest_memory_bytes) {}

  // Room for `count` signatures' labels, priors, profiles and memberships
  // (set_*()) without growing their tables one rehash at a time.
  void reserve(size_t count);

  // Its own profile, replaced.
  void set_profile(const std::string& signature, const JobProfile& profile);
  // What is assumed when nothing better is known (prior.h).
  void set_prior(const std::string& signature, const JobProfile& prior);
  // A short name for its jobs in notes; label() is the first 8 characters
  // of the signature without one. set_label_if_none keeps an existing one.
  void set_label(const std::string& signature, std::string label);
  void set_label_if_none(const std::string& signature, const std::string& label);
  std::string label(const std::string& signature) const;
  // Its family (call before its jobs are queued); signatures without one are
  // families of their own.
  void set_family(const std::string& signature, FamilyMember member);
  // An instance of `family` measured before the run.
  void add_family_instance(const std::string& family, FamilyInstance instance);

  // A measurement of this run: merged over its own profile (the newer wins
  // field by field) and added to its family. Returns the merged profile.
  JobProfile learned(const std::string& signature, const JobProfile& measured);
  // A peak memory measured of one of its jobs: its own peak becomes the
  // larger of the two, with no uncertainty, and its family learns it.
  // Through `lookups` (usable()'s, as below): a queued job's keep its
  // membership, so that no lookup by signature is made once it was found.
  void measured_memory(const std::string& signature, Lookups& lookups, const JobProfile& measured);
  // Its own peak becomes at least `bytes` (a job ran out of memory).
  void raise_peak(const std::string& signature, uint64_t bytes);

  // Its own profile; nullptr without one.
  const JobProfile* own(const std::string& signature) const;
  // Counts own profiles and family memberships ever added (Lookups).
  uint64_t records_added() const { return records_added_; }
  // What admission uses (see above).
  const JobProfile* usable(const std::string& signature) const;
  // usable(signature), with `lookups` sparing the lookups by signature.
  const JobProfile* usable(const std::string& signature, Lookups& lookups) const;
  // A stamp of what usable(signature, lookups) answered last (call it
  // first): while the stamp is the same, its answer is the same profile,
  // unchanged. A family member's changes when its own profile, its
  // membership or (unless its own profile is admissible alone) its
  // family's measurements change; without a membership found, it is
  // version(). Read without the profile itself.
  uint64_t usable_stamp(const Lookups& lookups) const;
  // Whether usable() comes from its family's estimate (its own profile is
  // not admissible alone).
  bool estimated(const std::string& signature, Lookups& lookups) const;
  // Its prior (set_prior(), else the default PriorModel's), with its own
  // profile (a hint's memory or SM activity) over it field by field.
  JobProfile prior_of(const std::string& signature) const;

  // Its family membership; nullptr without one.
  const FamilyMember* member(const std::string& signature) const;
  const FamilyMember* member(const std::string& signature, Lookups& lookups) const;
  // How many measured instances its family has, and how many signatures;
  // {0, 0} without a family.
  std::pair<size_t, size_t> family_size(const std::string& signature) const;
  // What its family's measurements lack to estimate it ("" when nothing
  // was estimated).
  std::string missing(const std::string& signature) const;
  // The key newcomers are counted by: "family:NAME", else the signature.
  std::string probe_key(const std::string& signature) const;
  // The queued instance of `family` that measuring would teach most
  // (family.h probe_value), among its signatures that `queued` says have
  // jobs queued and that have no usable profile; "" when none. Cached per
  // family until keep_probe_targets_while() sees a change.
  std::string probe_target(const std::string& family,
                           const std::function<bool(const std::string&)>& queued);
  // The same answer, looking only at `candidates` (any order, others'
  // signatures too): they must include every signature of `family` that
  // `queued` is true for, and `queued` be true for each of them. A family
  // of a sweep's thousands of signatures, few queued, costs its queued ones.
  // Every signature is looked at, as above, once any signature was given a
  // second family (set_family) or mark_unlisted_queued() was called.
  std::string probe_target(const std::string& family,
                           const std::function<bool(const std::string&)>& queued,
                           const std::vector<const std::string*>& candidates);
  // A caller whose candidates could miss a queued signature (its jobs were
  // queued before its family was set) says so: probe_target() scans again.
  void mark_unlisted_queued() { scan_every_signature_ = true; }
  // Empties the probe-target cache when version() or `queue_changes` (the
  // caller's count of changes to which signatures are queued) differ from
  // the last call's.
  void keep_probe_targets_while(uint64_t queue_changes);
  // True the first time it is asked for `signature` since its family's last
  // measurement (the estimate it is placed by is new: note it once).
  bool announce(const std::string& signature, Lookups& lookups);

  // A job of `signature` ended ok having done `samples` from its first
  // observed rate on; ended_samples() is the latest of its signature, else
  // of its family.
  void ended(const std::string& signature, Lookups& lookups, double samples);
  std::optional<double> ended_samples(const std::string& signature, Lookups& lookups) const;

  uint64_t version() const { return version_; }

 private:
  struct Family {
    // Its measured instances (the store's, then this run's), with what its
    // estimates read of them kept as each measurement comes.
    FamilyFit fit;
    // The first of fit's instances with each set of parameter values, by
    // params_hash() of them (a sweep's measurement finds its own instance
    // without a scan of them all, nor a copy of its values: first_with()):
    // open addressing, linear probing, a power of two of slots at most half
    // full (a lookup reads one slot, where a node-based table reads a node
    // of another bucket, then its own, each a cache miss at 10,000).
    struct Slot {
      size_t hash = 0;
      size_t index = SIZE_MAX;  // SIZE_MAX: empty
    };
    std::vector<Slot> first_with;
    size_t first_with_count = 0;
    std::optional<std::vector<std::string>> resource_params;
    std::vector<std::string> signatures;  // its members
    uint64_t version = 0;                 // bumped by each new measurement
    uint64_t changed = 0;                 // version_ after its last measurement (usable_stamp())
    // What its measurements say of each parameter, shared by its members'
    // estimates while `version` is effects_version.
    mutable EffectsMemo effects;
    mutable uint64_t effects_version = UINT64_MAX;
    // The samples of the last of its jobs to end ok (ended()).
    std::optional<double> ended_samples;
  };
  struct Estimated {
    uint64_t version = UINT64_MAX;  // of the family when it was computed
    // Its family's answer, shared with the points it was the same for
    // (FamilyFit::shared_estimate()); null until first asked.
    std::shared_ptr<const FamilyEstimate> estimate;
    // usable()'s answer (nullptr, Member::merged or the estimate's profile)
    // while version_ is this.
    uint64_t answered = 0;
    const JobProfile* answer = nullptr;
  };
  // A signature's family membership, its family and its estimate: one
  // lookup by signature for what usable() reads. What usable_stamp() and
  // usable() read at every event a sweep's point is queued comes first, in
  // its first few cache lines; what is read when it is measured or named,
  // after (at 10,000 points, each line read is a cache miss).
  struct Member {
    Family* family = nullptr;
    // Its own profile (its entry in profiles_, kept as one is added; a
    // measurement of the member updates it through this, without a lookup).
    JobProfile* own = nullptr;
    // version_ after its own profile or membership last changed, and
    // whether that profile is admissible alone (usable_stamp()).
    uint64_t changed = 0;
    bool own_admissible = false;
    mutable Estimated estimated;
    // What its family's estimate() keeps of its values (FamilyPoint):
    // started afresh, as `estimated` is, whenever set_family() sets its
    // membership.
    mutable FamilyPoint point;
    FamilyMember member;
    // The family whose `signatures` list it, and where (set_family() lists a
    // signature in the first family it is given).
    const Family* listed_in = nullptr;
    size_t position = 0;
    // params_hash() of member.params, kept from set_family() (read when it
    // is measured, by then long out of the cache).
    size_t values_hash = 0;
    // Its family's first instance with its values, once its measurements
    // found or added it (instances are only added: it stays the first).
    std::optional<size_t> instance;
    // Its own profile over the estimate, when it has one (usable()).
    mutable JobProfile merged;
    // Its family's version when announce() last answered true for it.
    mutable uint64_t announced = UINT64_MAX;
    // The samples of the last of its jobs to end ok as a member (ended()).
    std::optional<double> ended_samples;
  };
  // Fills `lookups` for `signature` where they may be stale (see Lookups).
  void look_up(const std::string& signature, Lookups& lookups) const;
  // announce() of a signature with `member` (nullptr: none).
  bool announce(const Member* member);
  // The membership `lookups` found, to change (a Lookups keeps a pointer
  // into members_, which is this object's).
  static Member* changeable(const Lookups& lookups) { return const_cast<Member*>(lookups.member); }
  void measured_memory(const std::string& signature, Member* member, const JobProfile& measured);
  void ended(const std::string& signature, Member* member, double samples);
  std::optional<double> ended_samples(const std::string& signature, const Member* member) const;
  // usable() of a signature with `member` (nullptr: none) and `own_profile`.
  const JobProfile* usable_over(const Member* member, const JobProfile* own_profile) const;
  const Member* find_member(const std::string& signature) const;
  // The signature's entry in profiles_, added empty when it has none;
  // `member`: its membership when the caller found it (else looked up).
  JobProfile& own_profile(const std::string& signature, Member* member = nullptr);
  // Its own profile, now `profile`, changed at version_ (usable_stamp()):
  // by signature, or through its membership (nullptr: none).
  void own_changed(const std::string& signature, const JobProfile& profile);
  void own_changed(Member* member, const JobProfile& profile);
  // `profile` was added to profiles_ for `signature`: counted, and kept by its membership.
  void profile_added(const std::string& signature, JobProfile& profile, Member* member = nullptr);
  // The family's EffectsMemo, emptied when its measurements changed.
  EffectsMemo& effects_of(const Family& f) const;
  // A measurement of `member`'s signature joins its family.
  void add_to_family(Member& member, const JobProfile& measured);
  // The signature's membership; nullptr without one.
  Member* find_member(const std::string& signature);
  // The index of `f`'s first instance with these values (`hash`: their
  // params_hash()); nullopt: none.
  static std::optional<size_t> first_with(const Family& f,
                                          const std::map<std::string, std::string>& params,
                                          size_t hash);
  // `f`'s instance `index` (just added) is the first with its values, whose
  // params_hash() is `hash`.
  static void list_first(Family& f, size_t index, size_t hash);

  uint64_t largest_memory_ = 0;
  // By signature, looked up for every queued class in each schedule():
  // hashed, as signatures are long and share their leading text.
  std::unordered_map<std::string, JobProfile> profiles_;
  uint64_t records_added_ = 0;  // entries ever added to profiles_ and members_
  // By signature, hashed (a sweep's thousands, looked up, never walked).
  std::unordered_map<std::string, JobProfile> priors_;
  std::unordered_map<std::string, std::string> labels_;
  std::unordered_map<std::string, Member> members_;  // by signature
  std::map<std::string, Family> families_;           // by family
  // By family: what probe_target() found, while version_ and the caller's
  // queue changes stay what they were when it was last emptied.
  std::map<std::string, std::string> probe_targets_;
  uint64_t probe_targets_version_ = 0;
  uint64_t probe_targets_queue_ = 0;
  // probe_target() with candidates looks at every signature instead.
  bool scan_every_signature_ = false;
  // ended() of signatures while they had no membership (members keep theirs).
  std::unordered_map<std::string, double> ended_samples_;
  // Starts at 1, so that a cache stamped 0 was never filled.
  uint64_t version_ = 1;
};

// Inline: asked of every queued class the walk tries, at every event.
inline uint64_t SignatureKnowledge::usable_stamp(const Lookups& lookups) const {
  const Member* m = lookups.member;
  if (m == nullptr) return version_;
  return m->own_admissible ? m->changed : std::max(m->changed, m->family->changed);
}

}  // namespace colo
