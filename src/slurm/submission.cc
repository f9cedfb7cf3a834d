#include "slurm/submission.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/paths.h"
#include "common/replace_file.h"

namespace colo {
namespace {

std::string resubmission_json(const Resubmission& r) {
  nlohmann::json j = {{"shard", r.shard},
                      {"first_attempt", r.first_attempt},
                      {"array_job_id", r.array_job_id},
                      {"submitted_ms", r.submitted_ms}};
  return j.dump(2) + "\n";
}

// The record at `path`, its shard and first attempt from its name; without
// an array job id when it cannot be read.
Resubmission read_resubmission(const std::string& path, int shard, int first_attempt) {
  Resubmission r;
  r.shard = shard;
  r.first_attempt = first_attempt;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    const nlohmann::json id = j.value("array_job_id", nlohmann::json());
    const nlohmann::json when = j.value("submitted_ms", nlohmann::json());
    if (id.is_string()) r.array_job_id = id.get<std::string>();
    if (when.is_number_integer()) r.submitted_ms = when.get<int64_t>();
  }
  return r;
}

}  // namespace

Result<Submission> write_submission(ShardPlan plan, const std::string& dir,
                                    const SbatchOptions& sbatch) {
  if (std::filesystem::exists(plan_path(dir)))
    return Error(
        fmt::format("{} already holds a submission (plan.json): choose another --dir", dir));
  Result<std::string> script = batch_script(plan, dir, sbatch);
  if (!script.ok()) return script.error();
  for (const std::string& d : {dir, dir + "/slurm", dir + "/shards"}) {
    if (Status s = make_dirs(d); !s.ok()) return s.error();
  }
  Submission out{dir, dir + "/shard.sbatch", std::move(plan)};
  {
    std::ofstream file(out.script_path);
    file << *script;
    if (!file) return Error("cannot write " + out.script_path);
  }
  if (Status s = write_plan(plan_path(dir), out.plan); !s.ok()) return s.error();
  return out;
}

Status submit_array(Submission& submission, const CommandRunner& run, Clock& clock) {
  Result<CommandOutput> out = run(sbatch_command(submission.script_path));
  if (!out.ok() || out->exit_status != 0) {
    return Error("sbatch failed: " +
                 (out.ok() ? out->stderr_text + out->stdout_text : out.error().message()));
  }
  Result<std::string> id = parse_sbatch_output(out->stdout_text);
  if (!id.ok()) return id.error();
  submission.plan.array_job_id = *id;
  submission.plan.submitted_ms = clock.now_ms();
  return write_plan(plan_path(submission.dir), submission.plan);
}

std::vector<Resubmission> read_resubmissions(const std::string& dir, int shards) {
  std::vector<Resubmission> out;
  for (int shard = 0; shard < shards; ++shard) {
    for (int first : shard_attempts(dir, shard).resubmitted)
      out.push_back(read_resubmission(resubmission_path(dir, shard, first), shard, first));
  }
  return out;
}

int next_attempt(const ShardAttempts& attempts) {
  int last = 0;
  for (const std::vector<int>* v :
       {&attempts.published, &attempts.started, &attempts.resubmitted}) {
    if (!v->empty()) last = std::max(last, v->back());
  }
  return last + 1;
}

Result<Resubmission> resubmit_shard(const Submission& submission, int shard,
                                    const CommandRunner& run, Clock& clock) {
  const int shards = static_cast<int>(submission.plan.shards.size());
  if (shard < 0 || shard >= shards) {
    return Error(
        fmt::format("there is no shard {}: the plan has {} (0 to {})", shard, shards, shards - 1));
  }
  std::ifstream in(submission.script_path);
  std::stringstream script;
  script << in.rdbuf();
  if (!in || !script_numbers_attempts(script.str())) {
    return Error(fmt::format(
        "{} was written by an older colo, which numbers a shard's attempts by Slurm's requeues "
        "alone: run again, the shard would overwrite its attempt 0. Submit the sweep anew with "
        "this colo (colo slurm submit)",
        submission.script_path));
  }

  Resubmission r;
  r.shard = shard;
  r.first_attempt = next_attempt(shard_attempts(submission.dir, shard));
  const std::string record = resubmission_path(submission.dir, shard, r.first_attempt);
  if (Status s = make_dirs(fmt::format("{}/shards/{}", submission.dir, shard)); !s.ok())
    return s.error();
  {
    // Taking the attempt number: two resubmissions at once never share one.
    const int fd =
        ::open(record.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST) {
        return Error(fmt::format(
            "{} exists: another colo slurm resubmit of shard {} is under way; wait for it, then "
            "see colo slurm status {}",
            record, shard, submission.dir));
      }
      return Error(fmt::format("cannot create {}: {}", record, std::strerror(errno)));
    }
    const std::string text = resubmission_json(r);
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!written) {
      ::unlink(record.c_str());
      return Error(fmt::format("cannot write {}: is the submission directory writable?", record));
    }
  }
  Result<CommandOutput> out = run(sbatch_command(submission.script_path, shard, r.first_attempt));
  Result<std::string> id = !out.ok() ? Result<std::string>(out.error())
                           : out->exit_status != 0
                               ? Result<std::string>(Error(out->stderr_text + out->stdout_text))
                               : parse_sbatch_output(out->stdout_text);
  if (!id.ok()) {
    ::unlink(record.c_str());
    return Error("sbatch failed: " + id.error().message());
  }
  r.array_job_id = *id;
  r.submitted_ms = clock.now_ms();
  if (Status s = replace_file(record, resubmission_json(r)); !s.ok()) {
    return s.error().with_context(
        fmt::format("shard {} was submitted as array job {}, but colo slurm status will not "
                    "know it",
                    shard, r.array_job_id));
  }
  return r;
}

std::vector<SubmittedArray> submitted_arrays(const ShardPlan& plan,
                                             const std::vector<Resubmission>& resubmissions) {
  std::vector<SubmittedArray> out;
  if (!plan.array_job_id.empty()) {
    SubmittedArray array{plan.array_job_id, {}, std::nullopt};
    for (size_t i = 0; i < plan.shards.size(); ++i) array.shards.push_back(static_cast<int>(i));
    out.push_back(std::move(array));
  }
  for (const Resubmission& r : resubmissions) {
    if (!r.array_job_id.empty()) out.push_back({r.array_job_id, {r.shard}, r});
  }
  return out;
}

ShardsInSlurm merge_slurm_states(const std::vector<SubmittedArray>& arrays,
                                 const std::map<std::string, ArrayJobState>& states) {
  ShardsInSlurm out;
  for (const SubmittedArray& array : arrays) {
    auto said = states.find(array.array_job_id);
    for (int shard : array.shards) {
      if (array.resubmission) out.resubmitted[shard] = *array.resubmission;
      // What an earlier array said of the shard is out of date, even when
      // Slurm no longer knows this one's element.
      out.latest.erase(shard);
      if (said == states.end()) continue;
      for (const std::vector<ElementState>* elements :
           {&said->second.accounted, &said->second.queued}) {
        for (const ElementState& e : *elements) {
          if (e.task == shard) out.latest[shard] = e;  // the queue, read last, is newer
        }
      }
    }
    if (said != states.end()) {
      out.queued.insert(out.queued.end(), said->second.queued.begin(), said->second.queued.end());
    }
  }
  return out;
}

}  // namespace colo
