#include "slurm/slurm_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "common/paths.h"

namespace colo {
namespace {

// The fields of a `sep`-separated line, empty ones kept.
std::vector<std::string> split_fields(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(line);
  while (std::getline(in, item, sep)) out.push_back(item);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

std::optional<int> parse_task(const std::string& text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

std::string trimmed(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

// The colo run flag through which the batch script passes its argument.
constexpr std::string_view kFirstAttemptFlag = "--shard-first-attempt";

std::string said(const CommandOutput& out) {
  std::string text = trimmed(out.stderr_text.empty() ? out.stdout_text : out.stderr_text);
  return text.empty() ? fmt::format("exit status {}", out.exit_status) : text;
}

}  // namespace

CommandRunner process_runner(Clock& clock, int timeout_ms) {
  return [&clock, timeout_ms](const std::vector<std::string>& argv) {
    return run_program(argv, {}, "", timeout_ms, clock);
  };
}

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Result<std::string> batch_script(const ShardPlan& plan, const std::string& dir,
                                 const SbatchOptions& options) {
  if (dir.find_first_of(" \t\n'\"\\%") != std::string::npos) {
    return Error(fmt::format(
        "{}: #SBATCH lines cannot carry this directory (it has a space, quote, backslash or %): "
        "choose another with --dir",
        dir));
  }
  std::string s = "#!/bin/sh\n";
  s += "# Written by `colo slurm submit`; the plan is " + plan_path(dir) + ".\n";
  s += "# Element i of this array runs shard i of the sweep with `colo run` on the GPUs\n";
  s += "# Slurm gave it. A requeued element runs its shard again as attempt\n";
  s += "# $1 + $SLURM_RESTART_COUNT, where $1 is the first attempt of this submission (0;\n";
  s += "# `colo slurm resubmit` submits one shard again with a new one); `colo slurm\n";
  s += "# collect` keeps each shard's last attempt.\n";
  auto sbatch = [&s](const std::string& option) { s += "#SBATCH " + option + "\n"; };
  sbatch("--job-name=" + (options.job_name.empty() ? std::string("colo") : options.job_name));
  sbatch(fmt::format("--array=0-{}", plan.shards.size() - 1));
  sbatch("--nodes=1");
  sbatch("--ntasks=1");
  sbatch(fmt::format("--gres=gpu:{}", plan.gpus_per_node));
  sbatch("--requeue");
  sbatch("--open-mode=append");
  sbatch("--output=" + dir + "/slurm/shard-%a.out");
  if (!options.partition.empty()) sbatch("--partition=" + options.partition);
  if (!options.time_limit.empty()) sbatch("--time=" + options.time_limit);
  for (const std::string& extra : options.extra) sbatch(extra);
  s +=
      "\necho \"colo shard $SLURM_ARRAY_TASK_ID, attempt $((${1:-0} + ${SLURM_RESTART_COUNT:-0})), "
      "on $SLURMD_NODENAME, job $SLURM_JOB_ID, $(date)\"\n";
  std::string command = fmt::format("exec {} run {} --shard-plan {} {} \"${{1:-0}}\" --plain",
                                    shell_quote(plan.colo_binary), shell_quote(plan.job_file),
                                    shell_quote(plan_path(dir)), kFirstAttemptFlag);
  if (!plan.mechanism.empty())
    command += fmt::format(" --mechanism {}", shell_quote(plan.mechanism));
  if (!plan.policy.empty()) command += fmt::format(" --policy {}", shell_quote(plan.policy));
  for (const std::string& a : plan.run_arguments) command += fmt::format(" {}", shell_quote(a));
  return s + command + "\n";
}

bool script_numbers_attempts(const std::string& text) {
  return text.find(kFirstAttemptFlag) != std::string::npos;
}

std::vector<std::string> sbatch_command(const std::string& script_path) {
  return {"sbatch", "--parsable", script_path};
}

std::vector<std::string> sbatch_command(const std::string& script_path, int shard,
                                        int first_attempt) {
  return {"sbatch", "--parsable", fmt::format("--array={}", shard), script_path,
          std::to_string(first_attempt)};
}

Result<std::string> parse_sbatch_output(const std::string& text) {
  std::string line = trimmed(text);
  if (size_t nl = line.find_last_of('\n'); nl != std::string::npos) line = line.substr(nl + 1);
  std::string id = line.substr(0, line.find(';'));
  if (id.empty() || !std::all_of(id.begin(), id.end(), ::isdigit))
    return Error(fmt::format("sbatch printed no job id: '{}'", trimmed(text)));
  return id;
}

std::vector<std::string> squeue_command(const std::string& array_job_id) {
  return {"squeue", "--noheader", "--array", "--jobs", array_job_id, "--format", "%K|%A|%T|%N|%r"};
}

std::vector<std::string> sacct_command(const std::string& array_job_id) {
  return {"sacct",  "--noheader", "--parsable2", "--allocations",
          "--jobs", array_job_id, "--format",    "JobID,JobIDRaw,State,NodeList"};
}

std::vector<ElementState> parse_squeue(const std::string& text) {
  std::vector<ElementState> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = split_fields(trimmed(line), '|');
    if (f.size() < 5) continue;
    std::optional<int> task = parse_task(f[0]);
    if (!task) continue;
    out.push_back({*task, f[1], f[2], f[3], f[4], /*in_queue=*/true});
  }
  return out;
}

std::vector<ElementState> parse_sacct(const std::string& text) {
  std::vector<ElementState> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = split_fields(trimmed(line), '|');
    if (f.size() < 4) continue;
    size_t underscore = f[0].find('_');
    if (underscore == std::string::npos || f[0].find('.') != std::string::npos) continue;
    std::optional<int> task = parse_task(f[0].substr(underscore + 1));
    if (!task) continue;
    std::string state = f[2].substr(0, f[2].find(' '));  // "CANCELLED by 0"
    out.push_back({*task, f[1], state, f[3] == "None assigned" ? "" : f[3], ""});
  }
  return out;
}

Result<std::vector<ElementState>> queued_elements(const CommandRunner& run,
                                                  const std::string& array_job_id) {
  Result<CommandOutput> out = run(squeue_command(array_job_id));
  if (!out.ok()) return out.error().with_context("squeue");
  if (out->exit_status != 0) {
    // A job no longer in the queue at all is not an error: it has ended.
    if (out->stderr_text.find("Invalid job id") != std::string::npos)
      return std::vector<ElementState>{};
    return Error("squeue: " + said(*out));
  }
  return parse_squeue(out->stdout_text);
}

Result<std::vector<ElementState>> accounted_elements(const CommandRunner& run,
                                                     const std::string& array_job_id) {
  Result<CommandOutput> out = run(sacct_command(array_job_id));
  if (!out.ok()) return out.error().with_context("sacct");
  if (out->exit_status != 0) return Error("sacct: " + said(*out));
  return parse_sacct(out->stdout_text);
}

}  // namespace colo
