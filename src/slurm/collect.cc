#include "slurm/collect.h"

#include <fmt/format.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/clock.h"
#include "common/names.h"
#include "common/replace_file.h"
#include "common/units.h"
#include "common/users.h"
#include "slurm/submission.h"
#include "store/run_store.h"

namespace colo {
namespace {

void remove_store_files(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(path + suffix, ec);
}

// What the last published attempt of a shard holds.
struct Published {
  int attempt = 0;
  std::string path;
  RunRow run;
  std::vector<JobRow> jobs;
};

Result<Published> read_published(const std::string& dir, int shard, int attempt) {
  Published p;
  p.attempt = attempt;
  p.path = shard_store_path(dir, shard, attempt);
  Result<std::unique_ptr<RunStore>> store = RunStore::open(p.path);
  if (!store.ok()) return store.error();
  Result<RunRecord> record = (*store)->run_record(0);
  if (!record.ok()) return record.error();
  p.run = record->run;
  p.jobs = record->jobs;
  return p;
}

// What a shard that published no store left to go by: the last line of its
// Slurm output, or that there is none.
std::string unpublished(const std::string& dir, int shard) {
  const std::string path = fmt::format("{}/slurm/shard-{}.out", dir, shard);
  std::ifstream in(path);
  if (!in) return fmt::format("no store published, and no output at {}", path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last.empty() ? fmt::format("no store published; {} is empty", path)
                      : fmt::format("no store published; {} ends: {}", path, last);
}

}  // namespace

namespace {

// What squeue and, with `accounting`, sacct say of every array of the
// submission; what they could not say goes to `notes`, each once.
std::map<std::string, ArrayJobState> ask_slurm(const std::vector<SubmittedArray>& arrays,
                                               const CommandRunner& run, bool accounting,
                                               std::vector<std::string>& notes) {
  auto note = [&notes](const std::string& message) {
    std::string line = message.substr(0, message.find('\n'));
    if (std::find(notes.begin(), notes.end(), line) == notes.end()) notes.push_back(line);
  };
  std::map<std::string, ArrayJobState> states;
  for (const SubmittedArray& array : arrays) {
    ArrayJobState& state = states[array.array_job_id];
    if (accounting) {
      Result<std::vector<ElementState>> accounted = accounted_elements(run, array.array_job_id);
      if (accounted.ok()) {
        state.accounted = std::move(accounted).value();
      } else {
        note(accounted.error().message());
      }
    }
    Result<std::vector<ElementState>> queued = queued_elements(run, array.array_job_id);
    if (queued.ok()) {
      state.queued = std::move(queued).value();
    } else {
      note(queued.error().message());
    }
  }
  return states;
}

}  // namespace

Result<std::vector<ElementState>> queued_shards(const ShardPlan& plan, const std::string& dir,
                                                const CommandRunner& run) {
  std::vector<SubmittedArray> arrays =
      submitted_arrays(plan, read_resubmissions(dir, static_cast<int>(plan.shards.size())));
  std::vector<std::string> failed;
  std::map<std::string, ArrayJobState> states = ask_slurm(arrays, run, false, failed);
  if (!failed.empty()) return Error(failed.front());
  return merge_slurm_states(arrays, states).queued;
}

Resubmittable resubmittable(const ShardStatus& shard, bool force) {
  if (shard.slurm && shard.slurm->in_queue) return Resubmittable::kStillInSlurm;
  const bool ended_ok = shard.error.empty() && shard.run_state == "ok" && shard.jobs_not_ok == 0;
  return ended_ok && !force ? Resubmittable::kEndedOk : Resubmittable::kYes;
}

SweepStatus sweep_status(const ShardPlan& plan, const std::string& dir, const CommandRunner& run) {
  SweepStatus status;
  if (plan.array_job_id.empty())
    status.notes.push_back("the plan was never submitted (colo slurm submit --dry-run?)");
  std::vector<SubmittedArray> arrays =
      submitted_arrays(plan, read_resubmissions(dir, static_cast<int>(plan.shards.size())));
  ShardsInSlurm slurm =
      merge_slurm_states(arrays, ask_slurm(arrays, run, /*accounting=*/true, status.notes));
  for (size_t i = 0; i < plan.shards.size(); ++i) {
    ShardStatus s;
    s.shard = static_cast<int>(i);
    s.jobs = static_cast<int>(plan.shards[i].jobs.size());
    if (auto it = slurm.latest.find(s.shard); it != slurm.latest.end()) s.slurm = it->second;
    if (auto it = slurm.resubmitted.find(s.shard); it != slurm.resubmitted.end())
      s.resubmitted = it->second;
    s.attempts = shard_attempts(dir, s.shard).published;
    const bool queued = s.slurm && s.slurm->in_queue;
    // Ended (or unknown to Slurm without accounting) without a store: what
    // its output says, which is where the reason is.
    if (s.attempts.empty() && !queued && !plan.array_job_id.empty())
      s.error = unpublished(dir, s.shard);
    if (!s.attempts.empty()) {
      Result<Published> p = read_published(dir, s.shard, s.attempts.back());
      if (p.ok()) {
        s.run_state = to_string(p->run.state);
        s.node = p->run.slurm.node;
        for (const JobRow& j : p->jobs) (ended_well(j.state) ? s.jobs_ok : s.jobs_not_ok)++;
      } else {
        s.error = p.error().message();
      }
    }
    status.shards.push_back(std::move(s));
  }
  return status;
}

Result<CollectResult> collect_shards(const ShardPlan& plan, const std::string& dir,
                                     const std::vector<ElementState>& queued, const JobFile* file,
                                     const CollectOptions& options) {
  if (!queued.empty() && !options.partial) {
    std::string which;
    for (const ElementState& e : queued)
      which += fmt::format("{}shard {} {}", which.empty() ? "" : ", ", e.task, e.state);
    return Error(fmt::format(
        "Slurm still has shards of this submission in its queue ({}): wait until they end (colo "
        "slurm status {}), or pass --partial to merge what has been published so far",
        which, dir));
  }
  CollectResult result;
  result.out_path = options.out_path.empty() ? dir + "/colo.db" : options.out_path;

  // Each shard's winning attempt, and the jobs it must hold.
  std::vector<RunSource> sources;
  std::vector<std::pair<std::string, std::string>> missing;  // job name, why
  std::optional<RunRow> first_run;
  std::vector<std::string> nodes;
  for (size_t i = 0; i < plan.shards.size(); ++i) {
    const int shard = static_cast<int>(i);
    const std::vector<std::string>& planned = plan.shards[i].jobs;
    std::vector<int> attempts = shard_attempts(dir, shard).published;
    if (attempts.empty()) {
      for (const std::string& name : planned) {
        missing.emplace_back(name, fmt::format("shard {}: no attempt published a store (see "
                                               "{}/slurm/shard-{}.out)",
                                               shard, dir, shard));
      }
      result.lines.push_back(fmt::format("shard {}: {}; its {} jobs recorded failed", shard,
                                         unpublished(dir, shard), planned.size()));
      continue;
    }
    Result<Published> p = read_published(dir, shard, attempts.back());
    if (!p.ok()) return p.error().with_context(fmt::format("shard {}", shard));
    std::set<std::string> expected(planned.begin(), planned.end());
    for (const JobRow& j : p->jobs) {
      if (expected.erase(j.name) == 0) {
        return Error(fmt::format(
            "{} holds job '{}', which shard {} of {} does not: is the store from another "
            "submission?",
            p->path, j.name, shard, plan_path(dir)));
      }
    }
    for (const std::string& name : planned) {
      if (expected.count(name) > 0) {
        missing.emplace_back(
            name, fmt::format("shard {}: attempt {} did not record it", shard, p->attempt));
      }
    }
    if (!first_run) first_run = p->run;
    if (!p->run.slurm.node.empty() &&
        std::find(nodes.begin(), nodes.end(), p->run.slurm.node) == nodes.end())
      nodes.push_back(p->run.slurm.node);
    std::string label =
        fmt::format("shard {} attempt {}{}", shard, p->attempt,
                    p->run.slurm.job_id.empty()
                        ? ""
                        : fmt::format(" (Slurm {} on {})", p->run.slurm.job_id, p->run.slurm.node));
    sources.push_back({p->path, p->run.id, label});
    std::string earlier;
    for (int a : attempts) {
      if (a != p->attempt) earlier += fmt::format("{}{}", earlier.empty() ? "" : ", ", a);
    }
    result.lines.push_back(
        fmt::format("{}: {}, run {}{}", label,
                    count_of(static_cast<int64_t>(p->jobs.size()), "job"), to_string(p->run.state),
                    earlier.empty() ? "" : fmt::format("; earlier attempt {} ignored", earlier)));
  }

  // Built beside the output under a name of its own, and put in place whole
  // (common/replace_file.h); the store is closed first, so that its WAL is
  // checkpointed into the file and removed.
  Result<StagedFile> staged = StagedFile::create(result.out_path, kPrivateDurableFile);
  if (!staged.ok()) return staged.error();
  {
    Result<std::unique_ptr<RunStore>> store = RunStore::open(staged->path());
    if (!store.ok()) return store.error();
    NewRun header;
    header.mechanism = first_run ? first_run->mechanism : plan.mechanism;
    header.backend = first_run ? first_run->backend : "";
    header.simulated = first_run && first_run->simulated;
    header.job_file = plan.job_file;
    header.command_line = options.command_line;
    header.host = host_name();
    header.colo_pid = getpid();
    header.owner_uid = getuid();
    header.owner_name = user_name_of(getuid());
    std::string node_list;
    for (const std::string& n : nodes) node_list += (node_list.empty() ? "" : ",") + n;
    header.slurm = {plan.array_job_id, "", node_list, 0};
    header.started_ms = sources.empty() ? SystemClock().now_ms() : 0;
    Result<int64_t> run = (*store)->merge_runs(header, sources);
    if (!run.ok()) return run.error();
    result.run_id = *run;

    if (!missing.empty()) {
      std::vector<JobSpec> specs;
      for (const auto& entry : missing) {
        const std::string& name = entry.first;
        JobSpec spec;
        spec.name = name;
        if (file != nullptr) {
          auto it = std::find_if(file->jobs.begin(), file->jobs.end(),
                                 [&](const JobSpec& j) { return j.name == name; });
          if (it != file->jobs.end()) spec = *it;
        }
        specs.push_back(std::move(spec));
      }
      const UnixMillis now = SystemClock().now_ms();
      Result<std::vector<int64_t>> ids = (*store)->add_jobs(*run, specs, {}, now);
      if (!ids.ok()) return ids.error();
      for (size_t k = 0; k < ids->size(); ++k) {
        Status s = (*store)->job_finished(
            (*ids)[k],
            JobExit{JobState::kFailed, std::nullopt, std::nullopt, missing[k].second, {}}, now, 0);
        if (!s.ok()) return s.error();
      }
      Result<std::vector<RunRow>> rows = (*store)->list_runs(1);
      if (!rows.ok()) return rows.error();
      Status s = (*store)->end_run(*run, RunState::kFailed, rows->front().ended_ms.value_or(now));
      if (!s.ok()) return s.error();
    }
    Result<RunRecord> record = (*store)->run_record(*run);
    if (!record.ok()) return record.error();
    result.jobs = static_cast<int>(record->jobs.size());
    for (const JobRow& j : record->jobs) result.jobs_ok += ended_well(j.state);
    result.jobs_missing = static_cast<int>(missing.size());
  }
  remove_store_files(result.out_path);
  Status placed = staged->commit(ExistingFile::kReplace);
  if (!placed.ok()) return placed.error();
  return result;
}

}  // namespace colo
