#include "run/resume.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "jobs/job_spec_json.h"
#include "run/log_layout.h"

namespace colo {

Result<ResumePlan> plan_resume(RunStore& store, int64_t run_id) {
  Result<RunRow> run = store.run(run_id);
  if (!run.ok()) return run.error();
  if (run->state == RunState::kRunning) {
    return Error(
        fmt::format("run {} is still running (colo pid {} on {}): resume it once it has "
                    "ended, or cancel it first",
                    run_id, run->colo_pid, run->host));
  }
  Result<std::vector<RunStore::StoredJobSpec>> jobs = store.job_specs(run_id);
  if (!jobs.ok()) return jobs.error();
  ResumePlan plan;
  plan.run_id = run->id;
  plan.label.name = run->label.name;
  plan.label.tags = run->label.tags;
  plan.file.path = run->job_file;
  if (!run->mechanism.empty()) plan.file.mechanism = run->mechanism;
  for (const RunStore::StoredJobSpec& job : *jobs) {
    if (ended_well(job.state)) {
      ++plan.ended_well;
      continue;
    }
    Result<JobSpec> spec = job_spec_from_json(nlohmann::json::parse(job.spec_json, nullptr, false));
    if (!spec.ok()) {
      return spec.error().with_context(
          fmt::format("run {}: job {} ({}): its recorded spec", run_id, job.id, job.name));
    }
    plan.file.jobs.push_back(std::move(*spec));
    plan.checkpoint_dirs.push_back(job_dir_of_log(job.log_path, JobDir::kCheckpoint));
    plan.job_ids.push_back(job.id);
  }
  if (plan.file.jobs.empty()) {
    return Error(
        fmt::format("run {}: all {} of its jobs ended ok (or were stopped early by "
                    "their rule): there is nothing to resume",
                    run_id, jobs->size()));
  }
  return plan;
}

}  // namespace colo
