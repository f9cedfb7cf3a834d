// Families: the jobs of one sweep, and what the measured ones say about the
// others. A family is the instances of one [[job]] block (or of blocks with
// the same template: jobs/JobSpec::family); they differ only in their
// parameter values. Measuring one instance tells colo about all of them,
// except where a parameter that changes memory, SM activity or rate differs.
//
// Which parameters matter, for each quantity: those the job file names in
// `resource_params`, else what the measured instances show (two instances
// that differ in that parameter alone, by more than the quantity's noise),
// else a guess from the parameter's name (batch, size, resolution, ... are
// presumed to matter; anything else, such as lr, seed or weight decay, is
// presumed neutral). Measurements replace the guess as they come.
//
// Estimates: an instance whose values of the parameters that matter were
// measured takes that measurement ("from sibling toy[lr=0.1]"). Otherwise the
// quantity is fitted linearly against the product of the numeric parameters
// that matter (each to its power: "image_size^2" for pixels), with a fixed
// part: for memory, activations grow with the batch on top of weights,
// optimizer state and the CUDA context. Each estimate carries a relative
// uncertainty: the fit's largest relative residual, at least 5%, growing
// with the distance outside the measured values (extrapolation). Categorical
// parameters that matter (a model name) are never fitted across: an instance
// needs a measured sibling with the same value.
//
// The free functions are pure, over plain values; FamilyFit keeps what they
// read of one family as its measurements come. No I/O, no clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sched/profile.h"

namespace colo {

// One measured instance of a family.
struct FamilyInstance {
  std::string name;                           // "toy[lr=0.1]", for labels
  std::map<std::string, std::string> params;  // its parameter values (as text)
  JobProfile measured;                        // what was measured; fields may be absent
};

// A signature's place in its family.
struct FamilyMember {
  std::string family;                         // jobs/JobSpec::family
  std::string name;                           // "toy[lr=0.1]", for notes and sources
  std::map<std::string, std::string> params;  // its parameter values
  // The job file's resource_params; nullopt: learned.
  std::optional<std::vector<std::string>> resource_params;
};

enum class Quantity { kMemory, kSmActivity, kRate };
std::string_view to_string(Quantity q);  // "peak memory", "SM activity", "solo rate"

// Whether a parameter changes a quantity, and why colo thinks so.
struct ParamEffect {
  std::string param;
  int power = 1;  // the fit uses the value to this power
  bool matters = false;
  bool measured = false;  // decided by measurements (not stated, not guessed)
  std::string reason;     // "stated in resource_params", "measured: a 1.2 GiB, b 2.4 GiB", ...
};

// The effect of each of `params` on `q`. `declared`: the job file's
// resource_params ("batch_size", "image_size^2"); when set, exactly those
// matter. Otherwise from pairs of `instances` that differ in one parameter
// alone, else from the parameter's name.
std::vector<ParamEffect> param_effects(const std::vector<FamilyInstance>& instances, Quantity q,
                                       const std::vector<std::string>& params,
                                       const std::optional<std::vector<std::string>>& declared);

// param_effects() of a family's instances by quantity and parameter names,
// kept by a caller that estimates many instances of one family from the same
// measurements (a sweep's points): valid while those measurements stay as
// they are.
using EffectsMemo =
    std::map<std::pair<Quantity, std::vector<std::string>>, std::vector<ParamEffect>>;

// A parameter name colo presumes to change resource use before anything is
// measured (batch, size, resolution, ...; see family.cc).
bool presumed_to_matter(std::string_view param);

// What a family's measurements say about one instance.
struct FamilyEstimate {
  // Complete enough for admission (peak memory and SM activity) when set;
  // its *_uncertainty fields are relative (0.1 = 10%) and its source says
  // where it came from ("from sibling toy[lr=0.1]", "fit over batch_size
  // from toy[batch_size=32], toy[batch_size=512]").
  std::optional<JobProfile> profile;
  // Why there is none: "no measured instance yet", "one measured value of
  // batch_size (32): a fit needs two".
  std::string missing;
};

FamilyEstimate estimate_from_family(const std::vector<FamilyInstance>& instances,
                                    const std::map<std::string, std::string>& params,
                                    const std::optional<std::vector<std::string>>& declared,
                                    EffectsMemo* memo = nullptr);

// How much measuring an instance with `params` would teach: its distance
// from the measured values of the numeric parameters that matter (summed
// over quantities, in log scale when the values are positive), infinite when
// a categorical one has no measured instance. The scheduler probes the
// queued instance with the largest, so that later estimates interpolate.
double probe_value(const std::vector<FamilyInstance>& instances,
                   const std::map<std::string, std::string>& params,
                   const std::optional<std::vector<std::string>>& declared,
                   EffectsMemo* memo = nullptr);

// What FamilyFit::estimate() keeps of one point (a target's parameter
// values) from call to call, for a caller that asks for the same point at
// every event (a queued signature of a sweep; issue 59): its values in the
// family's parameter order, and its timed sibling (the instance whose time
// it scales: the fewest differing values, the first by index among those)
// with how many of the family's timed instances that choice has seen, so
// that the next call looks only at the instances timed since. Timed
// instances only come (a time taken back starts every point afresh), so the
// choice moves only to one that matches more closely. One point belongs to
// one FamilyFit and one set of values: a caller whose values change
// starts a fresh FamilyPoint. Its fields are FamilyFit's.
struct FamilyPoint {
  int names_match = 0;  // its parameter names are the family's: 1, they are not: -1, unknown: 0
  uint64_t epoch = 0;   // FamilyFit's timed epoch it was filled in (0: never)
  std::vector<std::string> values;  // in the family's parameter order
  size_t timed_seen = 0;            // timed instances looked at, in the order they were timed
  std::optional<size_t> sibling;    // its timed sibling's index
  size_t sibling_diff = 0;          // how many values differ from the sibling's
};

// A family's measured instances with what estimate_from_family(),
// probe_value() and param_effects() read of them kept up to date as each
// measurement comes (issue 59): per quantity and parameter, the instances
// alike in every other parameter grouped by value; per quantity and values
// of the categorical parameters that matter, the count, extremes and sum of
// the matching instances; the first timed instance at each set of values and
// at each set but one. The answers are exactly those of the free functions
// over instances() (the same values, sums taken in the same order, the same
// ties); where a numeric parameter matters (a fit along a line) or the
// instances name different parameters, those functions run over instances()
// as they are. Its const members fill the kept state (a cache of
// instances()): not thread-safe. Instances are only added or re-measured.
class FamilyFit {
 public:
  const std::vector<FamilyInstance>& instances() const { return instances_; }
  // Adds a measured instance; returns its index.
  size_t add(FamilyInstance instance);
  // Instance `index` is now measured as `measured`.
  void remeasure(size_t index, JobProfile measured);
  // Room for `count` instances in all, added without moving those before.
  void reserve(size_t count) { instances_.reserve(count); }

  // estimate_from_family(), probe_value() and param_effects() over
  // instances(); `memo` serves the free functions where they run (valid
  // while instances() stay as they are, as theirs). `point`, when given,
  // keeps what estimate() found of `params` for the next call with the same
  // params (see FamilyPoint); the answer is the same without it.
  FamilyEstimate estimate(const std::map<std::string, std::string>& params,
                          const std::optional<std::vector<std::string>>& declared,
                          EffectsMemo* memo = nullptr, FamilyPoint* point = nullptr) const;
  // estimate(), shared: the answer kept for the points alike in what it is
  // made of (no copy), or one made for the caller alone.
  std::shared_ptr<const FamilyEstimate> shared_estimate(
      const std::map<std::string, std::string>& params,
      const std::optional<std::vector<std::string>>& declared, EffectsMemo* memo = nullptr,
      FamilyPoint* point = nullptr) const;
  double probe_value(const std::map<std::string, std::string>& params,
                     const std::optional<std::vector<std::string>>& declared,
                     EffectsMemo* memo = nullptr) const;
  std::vector<ParamEffect> effects(Quantity q, const std::vector<std::string>& params,
                                   const std::optional<std::vector<std::string>>& declared) const;

  // The kept state, opaque here (family.cc).
  struct Index;
  FamilyFit();
  ~FamilyFit();
  FamilyFit(FamilyFit&&) noexcept;
  FamilyFit& operator=(FamilyFit&&) noexcept;

 private:
  void changed(size_t index, const JobProfile* before);
  // shared_estimate() when the names of `params` are the family's: each
  // field's fit kept in its aggregate, the answer by what it is made of.
  std::shared_ptr<const FamilyEstimate> kept_estimate(
      const std::map<std::string, std::string>& params,
      const std::optional<std::vector<std::string>>& declared, FamilyPoint* point) const;
  std::vector<FamilyInstance> instances_;
  std::unique_ptr<Index> index_;
};

// A hash of a set of parameter values, names and values both: equal maps
// hash alike (for hashed lookups of instances by their values).
size_t params_hash(const std::map<std::string, std::string>& params);

// "toy[lr=0.1]" from "toy[lr=0.1]#3": a job's name without its repeat suffix.
std::string instance_label(std::string_view job_name);

}  // namespace colo
