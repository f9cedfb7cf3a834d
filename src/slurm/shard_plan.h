// A sweep split into shards, one per element of a Slurm job array (one node
// each), and how many nodes to ask for: the plan `colo slurm submit` writes
// as <dir>/plan.json and every later step reads (`colo run --shard-plan`,
// `colo slurm status`, `colo slurm collect`).
//
// The submission directory:
//   plan.json                         this plan (with the array job id once submitted)
//   shard.sbatch                      the batch script
//   slurm/shard-<i>.out               Slurm's output of element i, every attempt
//   shards/<i>/attempt-<r>.db         the store attempt r of shard i published
//                                     (r = the first attempt of its submission, 0
//                                     for the array, + SLURM_RESTART_COUNT)
//   shards/<i>/attempt-<r>/logs/      that attempt's job logs
//   shards/<i>/resubmission-<r>.json  shard i submitted again (`colo slurm
//                                     resubmit`), its attempts numbered from r
//   colo.db                           the merged store (`colo slurm collect`)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "jobs/job_spec.h"
#include "simulate/simulator.h"

namespace colo {

struct Shard {
  std::vector<std::string> jobs;  // JobSpec names, in job-file order
  int64_t estimated_ms = 0;       // simulated makespan on one node
};

struct ShardPlan {
  std::string job_file;   // absolute path
  int total_jobs = 0;     // jobs the file expanded to when planned
  std::string mechanism;  // passed to colo run ("" = its default)
  std::string policy;     // passed to colo run ("" = the job file's)
  int gpus_per_node = 1;
  std::string how;  // how the node count was chosen, for people
  std::vector<Shard> shards;
  std::vector<std::string> run_arguments;  // extra colo run arguments (backend flags)
  std::string colo_binary;                 // absolute path of the colo each element runs
  std::string array_job_id;                // set once sbatch accepted the array
  UnixMillis submitted_ms = 0;
};

// <dir>/plan.json and the other paths of the layout above.
std::string plan_path(const std::string& dir);
std::string shard_store_path(const std::string& dir, int shard, int attempt);
std::string shard_logs_dir(const std::string& dir, int shard, int attempt);
std::string resubmission_path(const std::string& dir, int shard, int first_attempt);

// The attempt numbers the directory of `shard` names, each ascending: the
// stores attempts published, the attempts that started (their log
// directories), the resubmissions recorded (their first attempts).
struct ShardAttempts {
  std::vector<int> published;
  std::vector<int> started;
  std::vector<int> resubmitted;
};
ShardAttempts shard_attempts(const std::string& dir, int shard);

// Written atomically (temporary file, then rename).
Status write_plan(const std::string& path, const ShardPlan& plan);
// An error names the file and what is wrong with it.
Result<ShardPlan> read_plan(const std::string& path);

// Splits jobs into `shards` groups of about equal work: longest first, each
// to the group with the least work so far (ties: the lowest group). Indices
// in each group ascend. `work_ms` is each job's time alone.
std::vector<std::vector<size_t>> split_by_work(const std::vector<int64_t>& work_ms, int shards);

// The simulator's policy for a run with this mechanism and policy (as given
// to colo run; "" = its default: mps on a real GPU, naive on the simulated
// one). MIG is planned as exclusive (one job per instance is close to one per
// GPU in time); `note` says so.
PolicySpec planning_policy(const std::string& mechanism, const std::string& policy,
                           bool simulated_backend, std::string* note = nullptr);

// How many nodes and which jobs on each.
struct NodePlan {
  std::vector<std::vector<size_t>> shards;  // job indices per node
  std::vector<int64_t> makespan_ms;         // each shard simulated on one node
  std::string how;                          // "--nodes 2", "deadline 2d: ..."
};

// `nodes` given: that many shards (at most one per job). `deadline_ms`
// given: the fewest nodes on which every shard, simulated on one node of
// `node.gpus` GPUs under `policy`, ends every job ok within the deadline,
// starting from fewest_gpus() over the whole sweep and adding nodes up to
// `max_nodes`; an error when even that misses. Neither: one node.
Result<NodePlan> plan_nodes(const std::vector<SimJob>& jobs, const PolicySpec& policy,
                            const SimOptions& node, std::optional<int> nodes,
                            std::optional<int64_t> deadline_ms, int max_nodes);

// The plan of `file` (at `job_file_path`) split as `nodes` says: its shards'
// jobs by name and estimated times. The caller adds how the shards run
// (mechanism, policy, GPUs per node, the colo binary and its arguments).
ShardPlan make_shard_plan(const std::string& job_file_path, const JobFile& file,
                          const NodePlan& nodes);

}  // namespace colo
