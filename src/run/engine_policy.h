// The policy a RunEngine drives (its Scheduler: fixed or auto, wrapped for
// gangs, and for owners' quotas where asked), made from what earlier runs
// learned: the store's profiles (and those from other stores), the
// interference model calibrated on them, and priors for jobs nothing speaks
// for. What it was made from stays with the engine (PolicyKnowledge), which
// tells the policy of each job's signature as it arrives.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/profiles.h"
#include "gpu/gpu_backend.h"
#include "jobs/job_spec.h"
#include "sched/prior.h"
#include "sched/scheduler.h"
#include "sharing/mechanism.h"
#include "store/rows.h"

namespace colo {

// What the engine knows of signatures beside its policy. Not thread-safe.
struct PolicyKnowledge {
  std::vector<LearnedProfile> measured;      // the store's profiles and those from elsewhere
  std::optional<PriorModel> priors;          // auto: for signatures nothing else speaks for
  std::set<std::string> introduced;          // signatures the policy was told of
  std::set<std::string> families_loaded;     // families whose measured instances it got
  std::map<std::string, double> solo_rates;  // signature -> samples/s alone
  std::string gpu_name;                      // the GPUs' (profiles are per GPU model)
  bool simulated = false;                    // the GPUs are simulated

  // What the policy is told of a signature the first time one of its jobs
  // (`spec`) comes: the store's profile merged over the spec's hints (also
  // in `known`, and its rate alone in solo_rates), its family (and, once per
  // family, the family's measured instances), its prior. nullopt when the
  // signature was introduced before.
  struct Introduction {
    SignatureFacts facts;
    std::optional<JobProfile> known;
  };
  std::optional<Introduction> introduce(const std::string& signature, const JobSpec& spec,
                                        const std::optional<HostCost>& host_cost);
  // What the policy is told of job `key` when it is queued (again): the
  // fixed policy keeps it off a GPU that its known or hinted memory does
  // not fit.
  SchedJob queued_as(size_t key, const std::string& signature, const JobSpec& spec,
                     uint32_t owner) const;
};

// "auto: resnet26 profile: 3.1 GiB peak, 40% SM activity, 900 samples/s
// alone; from run 4": how the engine shows a profile it introduced.
std::string describe_known_profile(const std::string& group, const JobProfile& p);

struct PolicyInputs {
  std::string policy = "auto";  // "fixed" or "auto"
  int jobs_per_gpu = 1;         // at most this many jobs per GPU
  MechanismKind mechanism = MechanismKind::kNaive;
  bool simulated = false;           // the GPUs are simulated (their profiles apart)
  std::vector<DeviceInfo> devices;  // not empty
  // Profiles learned from other stores; the store's own of a signature on a GPU wins.
  std::vector<LearnedProfile> profiles_elsewhere;
  bool quotas = false;  // wrap the policy in a QuotaScheduler
  // Jobs of different owners on one GPU take turns (Mechanism::
  // users_time_slice()): the auto policy models such a GPU as naive sharing.
  bool users_time_slice = false;
};

struct EnginePolicy {
  std::unique_ptr<Scheduler> scheduler;
  PolicyKnowledge knowledge;
  std::vector<std::string> events;  // what the engine shows, in order
};

// Reads the store's profiles and model; a store that cannot be read leaves
// the policy to learn from scratch (said in `events`).
EnginePolicy make_engine_policy(RunReader& store, const PolicyInputs& in);

}  // namespace colo
