// Talking to Slurm through its own commands: the batch script of a shard
// array, sbatch, squeue and sacct. Parsing is separate from running, so
// tests check it on text Slurm printed; the runner is a seam.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "sharing/mps_control.h"
#include "slurm/shard_plan.h"

namespace colo {

// Runs argv (argv[0] looked up on PATH) and returns what it printed.
using CommandRunner = std::function<Result<CommandOutput>(const std::vector<std::string>& argv)>;

// The real programs, each killed after `timeout_ms`. Borrows `clock`.
CommandRunner process_runner(Clock& clock, int timeout_ms = 60'000);

// What sbatch is asked for besides the plan.
struct SbatchOptions {
  std::string partition;           // --partition; "" = Slurm's default
  std::string time_limit;          // --time; "" = the partition's default
  std::string job_name;            // --job-name
  std::vector<std::string> extra;  // more sbatch options, one per line ("--account=x")
};

// The batch script of the array: one element per shard, one node each with
// `plan.gpus_per_node` GPUs (--gres=gpu:N), requeued on node failure
// (--requeue; output appended across attempts), running
//   <colo> run <job file> --shard-plan <dir>/plan.json --shard-first-attempt "${1:-0}"
//       [mechanism, policy, run arguments]
// Its one argument is the number of the first attempt it runs (0 for the
// array; a resubmission's, sbatch_command). An error when `dir` holds
// characters #SBATCH lines cannot carry.
Result<std::string> batch_script(const ShardPlan& plan, const std::string& dir,
                                 const SbatchOptions& options);

// sbatch of the batch script: the whole array, or only its element `shard`
// (--array=K) with its attempts numbered from `first_attempt` (the script's
// argument).
std::vector<std::string> sbatch_command(const std::string& script_path);
std::vector<std::string> sbatch_command(const std::string& script_path, int shard,
                                        int first_attempt);

// The job id in `sbatch --parsable` output ("1234" or "1234;cluster").
Result<std::string> parse_sbatch_output(const std::string& text);

// One element of the array as Slurm sees it.
struct ElementState {
  int task = 0;           // array index = shard
  std::string job_id;     // the element's own job id
  std::string state;      // PENDING, RUNNING, COMPLETED, FAILED, NODE_FAIL, ...
  std::string node;       // "" while pending
  std::string reason;     // squeue's reason ("None", "Resources", ...)
  bool in_queue = false;  // squeue lists it (pending, running, ...); else sacct's, ended
};

// Whether the batch script at `text` takes the first attempt as its
// argument (scripts of a colo before `colo slurm resubmit` do not).
bool script_numbers_attempts(const std::string& text);

// The arguments that list the array's elements in the form parse_squeue /
// parse_sacct read.
std::vector<std::string> squeue_command(const std::string& array_job_id);
std::vector<std::string> sacct_command(const std::string& array_job_id);
// Lines "task|jobid|state|node|reason"; malformed lines are skipped.
std::vector<ElementState> parse_squeue(const std::string& text);
// Lines "JobID|JobIDRaw|State|NodeList" with JobID "1234_5"; steps and
// pending ranges ("1234_[6-9]") are skipped.
std::vector<ElementState> parse_sacct(const std::string& text);

// squeue and sacct through `run`. An error carries what the command printed
// (sacct says so when accounting is off).
Result<std::vector<ElementState>> queued_elements(const CommandRunner& run,
                                                  const std::string& array_job_id);
Result<std::vector<ElementState>> accounted_elements(const CommandRunner& run,
                                                     const std::string& array_job_id);

// The string as one shell word ('...', with ' written '\'').
std::string shell_quote(const std::string& word);

}  // namespace colo
