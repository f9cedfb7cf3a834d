// JobSpec: one job to run, after the job file's defaults, parameter grids and
// repeats have been applied. A JobFile is what a TOML job file says.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_qos.h"

namespace colo {

// What happens to a job whose attempt ended through no fault of its own: colo
// (or the service) was killed or stopped under it, or the MPS server died.
enum class RestartPolicy {
  kOnFailure,  // run it again, up to kMaxJobAttempts attempts in all (the default)
  kNever,      // record the end (interrupted, failed) and leave it
};
// The attempts a job gets in all, counting out-of-memory retries and restarts.
inline constexpr int kMaxJobAttempts = 3;
// Fail-fast: the jobs of a file that must all fail the same way, first.
inline constexpr int kFailFastJobs = 3;

// "on-failure", "never".
inline const char* to_string(RestartPolicy policy) {
  return policy == RestartPolicy::kNever ? "never" : "on-failure";
}

// The most GPUs one job (a gang: `gpus = N`) may ask for, all on one machine.
inline constexpr int kMaxJobGpus = 64;
// A job's `priority`: higher starts first.
inline constexpr int kMinJobPriority = -100;
inline constexpr int kMaxJobPriority = 100;
// What `{port}` in a job's command, workdir or env becomes at expansion; the
// engine replaces it with a free TCP port when the job starts (a gang's
// rendezvous port: torchrun --master_port {port}).
inline constexpr const char* kPortPlaceholder = "{port}";

// An [early_stop] table (docs/early-stopping.md): stop the trials of a sweep
// whose objective falls behind their siblings', judged at the end of their
// epochs, among the jobs of one [[job]] table in one run.
enum class EarlyStopRule {
  kMedian,  // below the median of the others' best so far at the same epoch
  kAsha,    // asynchronous successive halving: not in the best 1/reduction at a rung
};
// "median", "asha".
inline const char* to_string(EarlyStopRule rule) {
  return rule == EarlyStopRule::kAsha ? "asha" : "median";
}
struct EarlyStopSpec {
  EarlyStopRule rule = EarlyStopRule::kMedian;
  int min_epochs = 1;             // no trial is judged before its epoch min_epochs (grace)
  int min_trials = 3;             // median: others that reached the epoch, at least
  int reduction = 3;              // asha: rungs at min_epochs * reduction^k epochs
  std::optional<int> max_epochs;  // asha: no rung at or past it
  bool operator==(const EarlyStopSpec&) const = default;
};

// A job's `profile` (docs/profiling.md): one profiling window of the job
// with `tool`, opened after `after_epoch` epochs ended or `after_ms` from its
// start, for `steps` steps or `duration_ms`.
struct ProfileSpec {
  std::string tool;  // "torch" (through the Python client), "nsys", "ncu"
  std::optional<int> after_epoch;
  std::optional<int64_t> after_ms;
  std::optional<int> steps;
  std::optional<int64_t> duration_ms;
  bool operator==(const ProfileSpec&) const = default;
};

// A [data.NAME] table: a dataset that one shared loader serves to every job
// naming it (docs/data-sharing.md). Unset fields take the loader's defaults.
struct DataSourceSpec {
  std::string name;
  std::string path;                       // absolute
  std::optional<std::string> format;      // "imagefolder", "cifar10" or "packed"
  std::optional<int> image_size;          // crops are size x size (224)
  std::optional<bool> augment;            // random-resized-crop and flip (true)
  std::optional<int> threads;             // decoding threads (4)
  std::optional<uint64_t> ring_bytes;     // shared memory for the ring (1 GiB)
  std::optional<int> chunk;               // samples per ring slot (16)
  std::optional<int64_t> lag_timeout_ms;  // see docs/data-sharing.md (30 s)
  std::optional<std::string> cpus;        // CPU list for the loader ("0-3")
  std::optional<int64_t> seed;            // sample order and augmentation (1)
  std::string source;                     // "file.toml:12"
};

struct JobSpec {
  // Unique within the file: the job's name, then "[param=value,...]" for
  // sweep instances and "#k" (1-based) for repeats, e.g. "resnet26[lr=0.1]#3".
  std::string name;
  // The [[job]] name before expansion; jobs from one block share it.
  std::string group;
  // The job's family: the signature (job_signature) of its block's template,
  // with each grid placeholder in place of its value. Instances of one block,
  // and of blocks with the same template in other files, share it; a job
  // without a grid is its own family (its family is its signature). Empty for
  // jobs not read from a job file.
  std::string family;
  // The grid parameters that change the job's memory, SM activity or rate, as
  // the job file states them ("batch_size", "image_size^2": the value to that
  // power); nullopt: colo learns them (sched/family.h).
  std::optional<std::vector<std::string>> resource_params;
  std::vector<std::string> command;        // argv; {param} already substituted
  std::string working_dir;                 // absolute
  std::map<std::string, std::string> env;  // added to colo's own environment
  // GPUs it needs at once, on one machine: more than one makes it a gang
  // (docs/job-file.md), started only when all of them can take it. Its
  // memory and SM hints and its profile are per GPU.
  int gpus = 1;
  std::optional<uint64_t> gpu_memory_bytes;    // hint: peak GPU memory (per GPU)
  std::optional<int> sm_share_pct;             // hint / MPS limit: 1-100
  std::optional<uint64_t> memory_limit_bytes;  // MPS pinned memory limit
  // Host limits of the job's cgroup (memory.max, cpu.max) where colo runs
  // jobs in cgroups with the memory and cpu controllers.
  std::optional<uint64_t> host_memory_bytes;
  std::optional<int> cpus;
  std::optional<std::string> epoch_regex;  // marks an epoch end in stdout (RE2)
  std::optional<std::string> step_regex;   // a per-step line in stdout (RE2)
  std::optional<int64_t> epoch_samples;    // samples per epoch, when the job does not say
  // Profile hints for the auto policy and `colo simulate` (measured profiles win).
  std::optional<int> sm_activity_pct;      // solo SM activity, 1-100
  std::optional<int> gpu_util_pct;         // solo GPU utilization, 1-100
  std::optional<int64_t> solo_time_ms;     // how long it runs alone
  std::optional<int64_t> startup_time_ms;  // of that, start-up before the GPU works
  std::optional<std::string> mig_profile;  // mig: GPU-instance profile ("3g.40gb")
  std::optional<std::string> mig_group;    // mig: jobs of a group share one GPU instance
  std::optional<std::string> dataset;      // a [data.NAME] table: read through its shared loader
  // That table, carried with the job where the job leaves its file (`colo
  // submit` sends it to the service); unset within a file.
  std::optional<DataSourceSpec> data_source;
  RestartPolicy restart = RestartPolicy::kOnFailure;
  // How long it may go without reporting progress before colo calls it
  // stalled, stops it and runs it again (docs/reliability.md); 0: never.
  // nullopt: the run's default, else a bound from its own epoch and step times.
  std::optional<int64_t> stall_timeout_ms;
  // Its place among the service's queued jobs (docs/serve.md, Fair share):
  // higher goes first, before fair share orders the rest; -100 to 100, 0 by
  // default, above 0 only for the service's admins.
  int priority = 0;
  // Under `colo serve --preempt-after`, a job of higher priority that waits
  // may stop it (TERM, the grace to checkpoint), and it runs again later,
  // not counted as an attempt. Default: true for sweep points and repeats.
  bool preemptible = false;
  // Its quality-of-service class (jobs/job_qos.h, docs/policy.md): normal by
  // default; a protected job's floor is `min_speed` of its solo speed
  // (meaningful for protected jobs only; kDefaultMinSpeed otherwise).
  QosClass qos = QosClass::kNormal;
  double min_speed = kDefaultMinSpeed;
  // The job file's [objective]: the metric its sweep optimizes ("" when not
  // declared), and whether lower is better for each metric it declared (the
  // objective's among them), in place of the rule by name (`colo show`,
  // the report, the dashboard, the export).
  std::string objective;
  std::map<std::string, bool> lower_is_better;
  // The job file's [early_stop], on `objective` (set only with it).
  std::optional<EarlyStopSpec> early_stop;
  std::optional<ProfileSpec> profile;  // its `profile` window, if any
  // The job file's [run] fail_fast: when the first kFailFastJobs of its
  // jobs to end all failed the same way (and none ended ok), its jobs that
  // have not started are not started (they end cancelled, saying why).
  bool fail_fast = true;
  std::map<std::string, std::string> params;  // this instance's grid values
  int repeat_index = 1;                       // 1-based
  std::string source;                         // "file.toml:12" where it was defined
};

struct JobFile {
  std::string path;                                    // as given by the user
  std::vector<JobSpec> jobs;                           // in file order, expanded
  std::optional<int> max_jobs_per_gpu;                 // [run] max_per_gpu
  std::optional<std::string> mechanism;                // [run] mechanism, when the file names one
  std::optional<std::string> policy;                   // [run] policy: "fixed" or "auto"
  bool fail_fast = true;                               // [run] fail_fast (JobSpec::fail_fast)
  std::map<std::string, DataSourceSpec> data_sources;  // [data.NAME] tables, by name
};

}  // namespace colo
