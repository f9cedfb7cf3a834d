// Profiles: what earlier runs measured about each job signature on each GPU
// model (peak memory; and from the latest run in which it ran alone on its
// GPU: steady SM activity and utilization, solo rate, time per epoch, time
// alone, start-up), merged with a job file's hints; and the solo rates and
// calibration inputs taken from them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/run_summary.h"
#include "jobs/job_spec.h"
#include "sched/family.h"
#include "sched/interference.h"
#include "sched/prior.h"
#include "sched/profile.h"

namespace colo {

// A job signature's profile on one GPU model, learned from runs: peak memory
// from every completed job of it (the largest); the solo numbers from the
// latest run in which it ran alone on its GPU and ended ok.
struct LearnedProfile {
  std::string signature;
  std::string gpu_name;  // "NVIDIA H200"
  std::string job_name;  // of the latest job measured alone, else of the latest ("resnet26#3")
  std::string group;     // its [[job]] block
  std::string family;    // its jobs' family (JobSpec::family); "" before families were recorded
  std::map<std::string, std::string> params;  // its grid values
  std::vector<std::string> command;           // of job_name's job
  bool simulated = false;
  int runs = 0;  // completed jobs that contributed
  // Its time alone (profile.solo_ms): measured by a job that ran alone, which
  // no probe's estimate replaces; else the latest probe's estimate.
  JobProfile profile;
  bool solo_alone = false;
  // The latest run that placed a job of it by an estimate from its family:
  // the estimate beside what that job then measured.
  struct EstimateCheck {
    int64_t run_id = 0;
    std::string job_name;
    JobProfile estimate;
    std::optional<uint64_t> measured_peak_bytes;  // that job's peak memory
    bool operator==(const EstimateCheck&) const = default;
  };
  std::optional<EstimateCheck> estimate;
  bool operator==(const LearnedProfile&) const = default;
};

// What one job that ended ok adds to its signature's profile on its GPU
// (ProfileLearner): its memory, names and estimate, and its solo numbers when
// it ran alone on its GPU (`alone`), else what the auto policy measured of it
// while its GPU was its own (`probe`), else none. A run's contributions are
// what the store keeps of it for learning (stored.h).
struct ProfileContribution {
  enum class Solo { kNone, kProbe, kAlone };
  std::string signature;
  std::string gpu_name;
  bool simulated = false;
  std::string job_name;
  std::string group;
  std::string family;
  std::map<std::string, std::string> params;
  std::vector<std::string> command;
  std::optional<uint64_t> peak_memory_bytes;
  std::optional<LearnedProfile::EstimateCheck> estimate;
  Solo solo = Solo::kNone;
  // kAlone: SM activity, utilization, rate, epoch time, duration, start-up;
  // kProbe: SM activity, utilization, rate, start-up and their uncertainties,
  // and its time alone estimated from them (start-up, then its samples at
  // the rate measured alone).
  // With the source of either.
  JobProfile measured;
  // How many jobs it stands for: more than one after fold_contributions.
  int64_t jobs = 1;
  bool operator==(const ProfileContribution&) const = default;
};

// The contributions of a run's jobs, in job order; none while it runs.
// `job_ids`, when given, gets the id of each contribution's job.
std::vector<ProfileContribution> profile_contributions(const RunSummary& run,
                                                       std::vector<int64_t>* job_ids = nullptr);

// The contributions that ProfileLearner::add would still see the effect of,
// in their order, the others counted into the `jobs` of the last one kept of
// their (signature, GPU name): learning from the result gives the same
// profiles as learning from `contributions`. A run of 100,000 jobs of 50
// signatures keeps a few hundred.
std::vector<ProfileContribution> fold_contributions(std::vector<ProfileContribution> contributions);

// Learns profiles from runs handed to it oldest first (later runs' solo
// numbers replace earlier ones). Not thread-safe.
class ProfileLearner {
 public:
  // profile_contributions(run), each in turn.
  void add(const RunSummary& run);
  void add(const ProfileContribution& job);
  // One per (signature, GPU name), ordered by them.
  std::vector<LearnedProfile> profiles() const;

 private:
  std::map<std::pair<std::string, std::string>, LearnedProfile> by_key_;
};

// The name of the GPU `device` of a run ("" when the run did not record it).
std::string gpu_name_of(const RunSummary& run, std::optional<int> device);

// For each job of the run, in order: whether it started and ended, and no
// other job of the run shared its GPU while it ran. In one sweep per GPU.
std::vector<bool> ran_alone(const RunSummary& run);

// The profile of `signature` on a GPU named `gpu_name` whose name contains
// `gpu_model` ("H200" matches "NVIDIA H200"; case is ignored), measured
// (simulated ones only when `simulated`, and then preferred); nullptr if none.
const LearnedProfile* find_profile(const std::vector<LearnedProfile>& profiles,
                                   const std::string& signature, std::string_view gpu_model,
                                   bool simulated);

// The measured instances of each family of `jobs` on GPU model `gpu_model`
// (as find_profile picks them), for the scheduler's and the simulator's
// family estimates: every signature of the family the store has measured,
// named by its latest job without the repeat suffix.
std::map<std::string, std::vector<FamilyInstance>> family_instances(
    const std::vector<LearnedProfile>& learned, const std::vector<JobSpec>& jobs,
    std::string_view gpu_model, bool simulated);

// What the auto policy would place each signature of `jobs` by, before the
// run: its own profile (known_profiles) when complete enough for admission,
// else that over its family's estimate (sched/family.h) from `instances`;
// signatures with neither are absent (they would be probed).
ProfilesBySignature usable_profiles(
    const ProfilesBySignature& known,
    const std::map<std::string, std::vector<FamilyInstance>>& instances,
    const std::vector<JobSpec>& jobs);
// The same, given each job's signature (job_signatures(jobs)).
ProfilesBySignature usable_profiles(
    const ProfilesBySignature& known,
    const std::map<std::string, std::vector<FamilyInstance>>& instances,
    const std::vector<JobSpec>& jobs, const std::vector<std::string>& signatures);

// What the auto policy's priors (sched/prior.h) draw on for GPU model
// `gpu_model` (as find_profile matches it): each learned profile with peak
// memory and SM activity, with the features of its command.
std::vector<PriorSample> prior_samples(const std::vector<LearnedProfile>& learned,
                                       std::string_view gpu_model, bool simulated);

// A profile's solo rate, when it has one (JobProfile::has_solo_rate;
// estimated: its rate is uncertain).
std::optional<SoloRate> solo_rate_of(const JobProfile& profile);

// The profile hints a job file gives for `job` (gpu_memory, sm_activity,
// gpu_util, solo_time), with its source ("hint: jobs.toml:3").
JobProfile hint_profile(const JobSpec& job);

// What is known before a run about each signature of `jobs` on GPU model
// `gpu_model`: the learned profile (find_profile) merged field by field over
// the job file's hints. Signatures with neither are absent.
ProfilesBySignature known_profiles(const std::vector<LearnedProfile>& learned,
                                   const std::vector<JobSpec>& jobs, std::string_view gpu_model,
                                   bool simulated);
// The same, given each job's signature (job_signatures(jobs)).
ProfilesBySignature known_profiles(const std::vector<LearnedProfile>& learned,
                                   const std::vector<JobSpec>& jobs,
                                   const std::vector<std::string>& signatures,
                                   std::string_view gpu_model, bool simulated);

// The input calibrate() takes from one analysed run: jobs that shared one GPU
// under mps or naive in a run that ended ok, with the summed normalized rate
// of the collocated speed-up (together.h) as the measured total and each
// job's solo load from its profile. nullopt when the run is not such a
// measurement (fewer than two jobs, several GPUs, no speed-up, a job without
// a profile with SM activity measured the way the run was: simulated or not).
std::optional<Collocation> measured_collocation(const RunSummary& run,
                                                const std::vector<LearnedProfile>& profiles);

// Whether `run` can be such a measurement, whatever the solo rates: it ended
// ok, and two or more jobs ran together on one GPU under mps or naive.
bool may_be_collocation(const RunSummary& run);

}  // namespace colo
