#include "run/run_controller.h"

#include <fmt/format.h>
#include <unistd.h>

#include <ostream>

#include "analysis/stored.h"
#include "common/paths.h"
#include "common/units.h"
#include "run/data_loading.h"
#include "run/log_layout.h"
#include "run/run_engine.h"
#include "store/store_writer.h"

namespace colo {
namespace {

SessionOptions session_options(const JobFile& file, const RunOptions& options) {
  return SessionOptions{options.only_devices, options.slurm,
                        options.locks,        file.path,
                        options.command_line, options.cgroup_parent_override,
                        options.state_dir,    options.store_retry_ms,
                        options.label,        options.resumes_run};
}

EngineOptions engine_options(const JobFile& file, const RunOptions& options) {
  EngineOptions e;
  e.policy = options.policy.value_or(file.policy.value_or("auto"));
  e.max_jobs_per_gpu = options.max_jobs_per_gpu ? options.max_jobs_per_gpu : file.max_jobs_per_gpu;
  e.probe_ms = options.probe_ms;
  e.sample_period_ms = options.sample_period_ms;
  e.stop_grace_ms = options.stop_grace_ms;
  e.stall = options.stall;
  e.max_log_bytes = options.max_log_bytes;
  e.keep_checkpoints_ms = options.keep_checkpoints_ms;
  e.flush_ms = options.flush_ms;
  e.live_display = options.live_display;
  e.profiles_elsewhere = options.profiles_elsewhere;
  return e;
}

// The file's jobs, recorded queued, each with its files in the run's log
// directory (created: its owner's only, since logs may show what a job
// prints of its environment).
Result<std::vector<EngineJob>> record_jobs(const JobFile& file, const RunOptions& options,
                                           RunSession& session, RunContext& ctx) {
  const std::string logs_dir = run_logs_dir(options.logs_root, ctx.store.path(), session.run_id());
  if (Status s = make_dirs(logs_dir, 0700); !s.ok()) return s.error();
  std::vector<EngineJob> jobs(file.jobs.size());
  std::vector<std::string> log_paths;
  for (size_t i = 0; i < file.jobs.size(); ++i) {
    const std::string stem = run_job_stem(logs_dir, i, file.jobs[i].name);
    jobs[i].spec = file.jobs[i];
    jobs[i].log_stem = stem;
    jobs[i].progress_path = attempt_progress_path(stem, 1);
    jobs[i].checkpoint_dir =
        i < options.checkpoint_dirs.size() && !options.checkpoint_dirs[i].empty()
            ? options.checkpoint_dirs[i]
            : run_job_dir(stem, JobDir::kCheckpoint);
    jobs[i].profile_dir = run_job_dir(stem, JobDir::kProfile);
    log_paths.push_back(attempt_log_path(stem, 1));
  }
  Result<std::vector<int64_t>> ids =
      session.writer().add_jobs(session.run_id(), file.jobs, log_paths, ctx.clock.now_ms(),
                                options.store_retry_ms, options.resumes_jobs);
  if (!ids.ok()) return ids.error();
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].id = (*ids)[i];

  const std::vector<DeviceInfo>& devices = session.devices();
  ctx.out << fmt::format("run {}: {} from {} on {} ({}{}), mechanism {}; logs in {}\n",
                         session.run_id(), count_of(static_cast<int64_t>(jobs.size()), "job"),
                         file.path, count_of(static_cast<int64_t>(devices.size()), "GPU"),
                         devices.front().name,
                         ctx.backend.simulated() ? ", SIMULATED: numbers are not measured" : "",
                         to_string(ctx.mechanism.kind()), logs_dir);
  if (options.slurm) {
    std::string uuids;
    for (const DeviceInfo& d : devices) uuids += fmt::format(" gpu{}={}", d.index, d.uuid);
    ctx.out << fmt::format("inside Slurm job {} (step {}, node {}, restart {}): its GPUs{}\n",
                           options.slurm->job_id, options.slurm->step, options.slurm->node,
                           options.slurm->restart_count, uuids);
  }
  return jobs;
}

// How often the jobs that ended are derived and kept (RunFactsKeeper).
constexpr int64_t kKeepFactsEveryMs = 10'000;

// Submits every job and ticks until all have ended; Ctrl-C cancels. Returns
// whether the run was cancelled.
bool run_jobs(RunEngine& engine, std::vector<EngineJob> jobs, SharedLoaders& loaders,
              StoreWriter& writer, const RunOptions& options, const EngineOptions& engine_options,
              RunContext& ctx) {
  engine.start();
  for (EngineJob& j : jobs) engine.submit(std::move(j));
  bool cancelled = false;
  int handled_stops = 0;
  // What the run teaches, kept as its jobs end (stored.h): a run killed after
  // 100,000 jobs leaves the next start only the last few to derive.
  RunFactsKeeper facts(ctx.store, engine.run_id());
  int64_t next_facts = ctx.clock.monotonic_ms() + kKeepFactsEveryMs;
  while (true) {
    const int stops = ctx.stop_requests.load();
    if (stops > handled_stops) {
      handled_stops = stops;
      cancelled = true;
      engine.stop_all(RunEngine::StopKind::kCancel, stops >= 2 ? 0 : options.stop_grace_ms,
                      "cancelled");
    }
    engine.tick();
    for (const std::string& e : loaders.poll()) engine.event("warning: " + e);
    if (const int64_t now = ctx.clock.monotonic_ms(); now >= next_facts && writer.queued() == 0) {
      // Jobs that ended a flush ago or more: their rows are all written.
      (void)facts.update(ctx.clock.now_ms() - 2 * engine_options.flush_ms - 1000);
      next_facts = now + kKeepFactsEveryMs;
    }
    if (engine.idle()) break;
    ctx.clock.sleep_for_ms(options.tick_ms);
  }
  engine.finish();
  return cancelled;
}

}  // namespace

Result<RunOutcome> run_job_file(const JobFile& file, const RunOptions& options, RunContext& ctx) {
  Result<std::vector<LoaderOptions>> loader_options = loaders_for(file);
  if (!loader_options.ok()) return loader_options.error();
  RunSession session(ctx, session_options(file, options));
  session.clean_up();
  if (Status s = session.take_devices(); !s.ok()) return s.error();
  if (Status s = session.record_run(); !s.ok()) return s.error();
  Result<std::vector<EngineJob>> jobs = record_jobs(file, options, session, ctx);
  if (!jobs.ok()) return jobs.error();

  // If the mechanism or a data loader cannot start, no job runs, and each is recorded failed.
  const std::string logs_dir = run_logs_dir(options.logs_root, ctx.store.path(), session.run_id());
  SharedLoaders loaders(
      ctx.clock,
      SharedLoadersOptions{self_executable(), logs_dir,
                           options.state_dir.empty() ? default_state_dir() : options.state_dir});
  Status started = session.start_mechanism();
  if (started.ok()) started = loaders.start(*loader_options, ctx.out);
  if (!started.ok()) {
    for (const EngineJob& j : *jobs) {
      session.writer().job_finished(
          j.id,
          JobExit{JobState::kFailed, std::nullopt, std::nullopt, started.error().message(), {}},
          ctx.clock.now_ms(), 0);
    }
    return started.error();
  }
  const std::map<std::string, int64_t> job_ids =
      attach_loaders(*jobs, loaders, *loader_options, ctx.out);

  RunOutcome outcome{session.run_id(), RunState::kOk, 0, 0};
  const EngineOptions engine_opts = engine_options(file, options);
  RunEngine engine(session.engine_context(ctx.out), engine_opts, session.run_id(), session.token(),
                   session.devices());
  const bool cancelled = run_jobs(engine, std::move(jobs).value(), loaders, session.writer(),
                                  options, engine_opts, ctx);
  outcome.jobs_ok = engine.count(true);
  outcome.jobs_not_ok = engine.count(false);
  record_loaders(loaders.stop(), job_ids, session.run_id(), session.writer(), ctx.out);
  outcome.state = cancelled                 ? RunState::kCancelled
                  : outcome.jobs_not_ok > 0 ? RunState::kFailed
                                            : RunState::kOk;
  if (Status s = session.close(outcome.state); !s.ok()) return s.error();
  // What the next start learns from this run, derived now, once (stored.h):
  // a start then reads it back instead of reading every row of every run.
  (void)run_facts(ctx.store, session.run_id());
  return outcome;
}

}  // namespace colo
