// Turns a job file into the simulator's jobs: what is known about each
// (store profiles and hints, as a real run would know it) and the truth the
// simulated GPU follows (the same, with documented defaults for what nobody
// knows, each default reported as an assumption).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "jobs/job_spec.h"
#include "sched/prior.h"
#include "simulate/simulator.h"

namespace colo {

// Defaults for what neither the store nor a hint says.
inline constexpr uint64_t kAssumedMemoryBytes = 2ull << 30;
inline constexpr double kAssumedSmActivePct = 30;
inline constexpr int64_t kAssumedSoloMs = 10LL * 60 * 1000;

struct SimJobSet {
  std::vector<SimJob> jobs;
  // One line per signature and assumed field: "resnet26: SM activity
  // assumed 30% (no store profile, no hint)"; the first 50.
  std::vector<std::string> assumptions;
  // One line per signature: its label, job count and where its profile came
  // from; the first 50, then one saying how many more.
  std::vector<std::string> sources;
};

// `known` from known_profiles() (analysis/profiles.h): what the scheduler is
// told of each signature itself. `usable` from usable_profiles(): that, or
// its family's estimate, which the truth takes before any default. `priors`:
// each job's prior from its command's features (none: the scheduler's default).
SimJobSet make_sim_jobs(const JobFile& file, const ProfilesBySignature& known,
                        const ProfilesBySignature& usable = {}, const PriorModel* priors = nullptr);
// The same, given each job's signature (job_signatures(file.jobs)).
SimJobSet make_sim_jobs(const JobFile& file, const std::vector<std::string>& signatures,
                        const ProfilesBySignature& known, const ProfilesBySignature& usable,
                        const PriorModel* priors);

}  // namespace colo
