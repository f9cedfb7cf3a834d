// RunEngine's judges: the rules that stop a running job for what it
// reported or what the policy found, each deciding one job to stop and why
// (early stopping of a trial, a protected job's floor, a job the policy can
// never place). Split from run_engine.cc, whose class they belong to; they
// run on the engine's thread, as every RunEngine member does.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/units.h"
#include "jobs/progress.h"
#include "run/early_stop.h"
#include "run/floor_watch.h"
#include "run/job_runtime.h"
#include "run/log_layout.h"
#include "run/run_engine.h"
#include "sched/profile.h"

namespace colo {

using Cause = StopCause::Kind;

void RunEngine::judge_early_stop(JobRuntime& job, const ProgressEvent& e) {
  const JobSpec& spec = job.job.spec;
  if (!spec.early_stop || spec.objective.empty() || state_.stopping || job.pid <= 0 ||
      !job.cause.yields_to(Cause::kEarlyStop))
    return;
  const std::string& sweep = job.sweep();
  const auto trial = static_cast<int64_t>(job.key);
  const int64_t last_ended = job.epoch.value_or(job.epochs);
  std::optional<std::string> verdict;
  // At work past the last epoch that ended: a verdict held there comes now.
  if (e.kind == "step" || e.kind == "epoch_start")
    verdict = early_stop_.went_past(sweep, trial, last_ended);
  auto value = e.metrics.find(spec.objective);
  if (!verdict && (e.kind == "epoch_end" || e.kind == "metric") && value != e.metrics.end()) {
    // An epoch's end counts for that epoch; a metric for its own epoch, else
    // for the last epoch that ended before it.
    const int64_t epoch = e.kind == "epoch_end" ? last_ended : e.epoch.value_or(job.epochs);
    auto goal = spec.lower_is_better.find(spec.objective);
    verdict = early_stop_.report(
        sweep, trial, *spec.early_stop,
        TrialReport{spec.objective, goal == spec.lower_is_better.end() || goal->second, epoch,
                    value->second});
  }
  if (!verdict) return;
  // Its results freeze here: what it reports while it stops is not its
  // (analysis/training_metrics.h). Stamped with the report's own time, the
  // job's clock, as its other events are.
  ProgressEvent stopped;
  stopped.time_ms = e.time_ms;
  stopped.kind = kEarlyStoppedEvent;
  pending_events_.emplace_back(job.job.id, std::move(stopped));
  const std::string what = fmt::format("{}; stopping it (TERM, then KILL after {})", *verdict,
                                       format_duration_ms(options_.stop_grace_ms));
  stop_job(job, {Cause::kEarlyStop, *verdict}, options_.stop_grace_ms,
           fmt::format("{}: {}", job.label(), what), what);
}

void RunEngine::watch_objective(JobRuntime& job, const ProgressEvent& e) {
  const JobSpec& spec = job.job.spec;
  if (spec.objective.empty()) return;
  if (!job.objective) job.objective.emplace(spec.objective, job.label());
  objective_warning(job, job.objective->saw(e, job.epochs));
}

void RunEngine::objective_warning(JobRuntime& job, const std::optional<std::string>& warning) {
  if (!warning) return;
  display_.event("warning: " + *warning);
  append_note_to_log(log_path(job), "warning: " + *warning);
}

namespace {

// Whether `job` runs on one of `gpus`.
bool on_any_of(const JobRuntime& job, const std::vector<int>& gpus) {
  const std::vector<int> theirs = job.gpus();
  return std::any_of(theirs.begin(), theirs.end(),
                     [&](int d) { return std::find(gpus.begin(), gpus.end(), d) != gpus.end(); });
}

}  // namespace

bool RunEngine::shares_a_gpu(const JobRuntime& job, const std::vector<int>& gpus) const {
  return std::any_of(by_pid_.begin(), by_pid_.end(), [&](const auto& entry) {
    const JobRuntime& other = *jobs_[entry.second];
    return other.key != job.key && other.state == JobState::kRunning && on_any_of(other, gpus);
  });
}

void RunEngine::judge_floor(JobRuntime& job, const EpochRate& epoch) {
  const std::vector<int> gpus = job.gpus();
  if (!job.floor->solo_rate()) {
    if (auto solo = known_.solo_rates.find(job.signature); solo != known_.solo_rates.end()) {
      job.floor->solo(solo->second);
    } else if (epoch.steady && epoch.samples_per_s > 0 && !job.measuring && !job.record_only &&
               !shares_a_gpu(job, gpus)) {
      // No solo rate known and none being measured: its first steady epoch
      // alone is one (the auto policy keeps a protected job without a solo
      // rate alone until it has one; AutoScheduler::learned()).
      known_.solo_rates[job.signature] = epoch.samples_per_s;
      job.floor->solo(epoch.samples_per_s);
      JobProfile alone;
      alone.samples_per_s = epoch.samples_per_s;
      alone.source = fmt::format("{}'s first steady epoch alone, run {}", job.label(), run_.id);
      display_.event(
          fmt::format("auto: measured {} alone for its floor: {:.0f} samples/s (its "
                      "first steady epoch)",
                      job.label(), epoch.samples_per_s));
      scheduler_->learned(job.signature, alone, ctx_.clock.monotonic_ms());
    }
  }
  const std::optional<FloorBreach> breach = job.floor->report(epoch);
  if (!breach || state_.stopping) return;
  // The most recently started opportunistic job on one of its GPUs.
  JobRuntime* newest = nullptr;
  for (const auto& [pid, key] : by_pid_) {
    JobRuntime& other = *jobs_[key];
    if (key == job.key || other.job.spec.qos != QosClass::kOpportunistic ||
        other.state != JobState::kRunning || other.pid <= 0 ||
        !other.cause.yields_to(Cause::kFloor) || !on_any_of(other, gpus))
      continue;
    if (!newest || other.started_ms > newest->started_ms) newest = &other;
  }
  const std::string below = fmt::format(
      "below its floor {:.2f} of its solo rate (it ran at {:.2f})", breach->floor, breach->speed);
  if (!newest) {
    if (job.floor_alone_said) return;
    job.floor_alone_said = true;
    const std::string what = below + "; no opportunistic job left beside it to stop";
    display_.event(fmt::format("{}: {}", job.label(), what));
    append_note_to_log(log_path(job), what);
    return;
  }
  job.floor_alone_said = false;
  const std::string why =
      floor_stop_reason(job.job.id > 0 ? fmt::format("job {}", job.job.id) : job.label(), *breach);
  // Not formed again: the policy remembers the pair as a bad combination.
  scheduler_->avoid_together({job.signature, newest->signature});
  append_note_to_log(log_path(job), fmt::format("{}; stopping {}", below, newest->label()));
  const std::string grace = format_duration_ms(options_.stop_grace_ms);
  newest->note = why;
  stop_job(*newest, {Cause::kFloor, why}, options_.stop_grace_ms,
           fmt::format("{}: {}; stopping it (TERM, then KILL after {}); it runs again later",
                       newest->label(), why, grace),
           fmt::format("{}; TERM now, KILL after {}: save a checkpoint into COLO_CHECKPOINT_DIR "
                       "and exit",
                       why, grace));
}

void RunEngine::stop_doomed() {
  if (!scheduler_) return;
  for (const Unplaceable& u : scheduler_->take_stops()) {
    JobRuntime& job = *jobs_[u.job];
    if (job.state != JobState::kRunning || job.pid <= 0 || !job.cause.yields_to(Cause::kDoomed) ||
        state_.stopping)
      continue;
    stop_job(job, {Cause::kDoomed, u.reason}, 0, fmt::format("{}: {}", job.label(), u.reason),
             "stopped by colo: " + u.reason);
  }
}

}  // namespace colo
