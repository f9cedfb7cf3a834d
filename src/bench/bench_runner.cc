#include "bench/bench_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>

#include "analysis/run_summary.h"
#include "common/units.h"
#include "run/mechanism_inputs.h"
#include "sharing/make_mechanism.h"

namespace colo {
namespace {

// What the runner learns from cases that ran, for later cases.
struct Learned {
  // Peak memory of one job per workload label, from degree-1 and serial cases.
  std::map<std::string, MemoryFigure> peaks;
  // Solo rate of each workload label per repetition, from cases whose jobs
  // ran alone (degree 1, serial, exclusive); exclusive wins over others.
  std::map<std::pair<std::string, int>, std::pair<SoloRate, bool>> solo;
  // Makespan of the serial reference per (models, repetition): the serial
  // case of a mix; for recsys the sum of the cases run alone.
  std::map<std::pair<std::string, int>, int64_t> serial_makespan_ms;
};

bool runs_jobs_alone(const BenchCase& c) {
  return c.serial || c.mechanism == "exclusive" || c.jobs.size() == 1;
}

// The workload of each job of a case's summary (jobs are recorded in file order).
std::vector<const Workload*> workloads_of(const BenchCase& c, const RunSummary& s,
                                          const std::vector<JobSpec>& specs) {
  std::vector<const Workload*> out;
  for (const JobSummary& j : s.jobs) {
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const JobSpec& js) { return js.name == j.name; });
    const auto index = static_cast<size_t>(spec - specs.begin());
    out.push_back(spec == specs.end() || index >= c.jobs.size() ? nullptr : &c.jobs[index]);
  }
  return out;
}

// Learns from a case that ended ok.
void learn(const BenchCase& c, const RunSummary& s, const std::vector<JobSpec>& specs,
           Learned& learned) {
  const std::vector<const Workload*> workloads = workloads_of(c, s, specs);
  if (runs_jobs_alone(c)) {
    const bool exclusive = c.mechanism == "exclusive";
    for (size_t i = 0; i < s.jobs.size(); ++i) {
      const JobSummary& j = s.jobs[i];
      if (workloads[i] == nullptr) continue;
      const std::string label = workloads[i]->label();
      if (j.peak_memory_bytes) {
        MemoryFigure& f = learned.peaks[label];
        if (*j.peak_memory_bytes > f.bytes) f = {*j.peak_memory_bytes, "measured in " + c.name};
      }
      std::optional<SteadyEpochs> steady = steady_epochs(j.epoch_ends);
      if (!steady) continue;
      auto key = std::make_pair(label, c.repetition);
      auto it = learned.solo.find(key);
      if (it == learned.solo.end() || (exclusive && !it->second.second)) {
        learned.solo[key] = {SoloRate{steady->samples_per_s, steady->epoch_ms, c.name}, exclusive};
      }
    }
  }
  if (s.makespan_ms) {
    if (c.serial) learned.serial_makespan_ms[{c.models, c.repetition}] = *s.makespan_ms;
    if (c.workload == "recsys" && c.jobs.size() == 1) {
      learned.serial_makespan_ms[{"dlrm+resnet152", c.repetition}] += *s.makespan_ms;
    }
  }
}

// ", 2.59x steady speed-up (solo rates from small/resnet26/exclusive/x1/r1)",
// and for mixes ", 1.31x faster than serial (...)", when the references ran.
std::string comparison(const BenchCase& c, RunSummary& s, const std::vector<JobSpec>& specs,
                       const Learned& learned) {
  if (runs_jobs_alone(c)) return "";
  std::string out;
  const std::vector<const Workload*> workloads = workloads_of(c, s, specs);
  std::vector<std::optional<SoloRate>> solo;
  for (const Workload* w : workloads) {
    auto it = w == nullptr ? learned.solo.end() : learned.solo.find({w->label(), c.repetition});
    solo.push_back(it == learned.solo.end() ? std::nullopt
                                            : std::optional<SoloRate>(it->second.first));
  }
  apply_solo_rates(s, solo);
  if (s.steady_speedup_vs_exclusive) {
    out += fmt::format(", {:.2f}x steady speed-up (solo rates from {})",
                       *s.steady_speedup_vs_exclusive, s.solo_source);
  } else if (!s.steady_note.empty()) {
    out += ", no steady speed-up: " + s.steady_note;
  }
  if ((c.workload == "mixed" || c.workload == "recsys") && s.makespan_ms && *s.makespan_ms > 0) {
    auto it = learned.serial_makespan_ms.find({c.models, c.repetition});
    if (it != learned.serial_makespan_ms.end()) {
      out += fmt::format(", {:.2f}x faster than serial ({} vs {})",
                         static_cast<double>(it->second) / static_cast<double>(*s.makespan_ms),
                         format_duration_ms(*s.makespan_ms), format_duration_ms(it->second));
    }
  }
  return out;
}

// Why a run that ended failed: the first job that did not end ok.
std::string failure_reason(const RunSummary& s) {
  for (const JobSummary& j : s.jobs) {
    if (j.state != JobState::kOk) {
      return fmt::format("job {} {}{}{}; log {}", j.name, to_string(j.state),
                         j.reason.empty() ? "" : ": ", j.reason, j.log_path);
    }
  }
  return "the run failed";
}

std::string case_status_for(RunState state) {
  switch (state) {
    case RunState::kOk:
      return "ok";
    case RunState::kCancelled:
      return "cancelled";
    default:
      return "failed";
  }
}

}  // namespace

Result<std::vector<DeviceInfo>> OneDeviceBackend::devices() {
  Result<std::vector<DeviceInfo>> all = inner_.devices();
  if (!all.ok()) return all.error();
  for (DeviceInfo& d : *all) {
    if (d.index == index_) return std::vector<DeviceInfo>{std::move(d)};
  }
  return Error(fmt::format("there is no gpu{}: the {} backend found {} GPU{}", index_,
                           inner_.name(), all->size(), all->size() == 1 ? "" : "s"));
}

JobFile job_file_for(const BenchCase& c, const Plan& plan, const TrainerConfig& trainer,
                     const std::string& suite) {
  JobFile file;
  file.path = fmt::format("bench:{}/{}", suite, c.name);
  file.mechanism = c.mechanism;
  file.max_jobs_per_gpu = runs_jobs_alone(c) ? 1 : std::max(1, c.degree);
  const int sharing = runs_jobs_alone(c) ? 1 : static_cast<int>(c.jobs.size());
  std::map<std::string, int> per_model;
  for (const Workload& w : c.jobs) {
    JobSpec job;
    job.group = w.model;
    job.name = fmt::format("{}#{}", w.model, ++per_model[w.model]);
    job.repeat_index = per_model[w.model];
    job.working_dir = trainer.working_dir;
    job.source = file.path;
    auto wp = plan.workloads.find(w.label());
    const int64_t epoch_samples = wp != plan.workloads.end() ? wp->second.epoch_samples : 0;
    const std::string dlrm_gib = fmt::format("{:g}", trainer.dlrm_memory_gib);
    if (w.model == "dlrm" && !trainer.sim_trainer) {
      job.command = {trainer.python,    trainer.dlrm,
                     "--batch-size",    std::to_string(w.batch_size),
                     "--epochs",        std::to_string(plan.epochs),
                     "--epoch-samples", std::to_string(epoch_samples),
                     "--memory-gib",    dlrm_gib};
    } else {
      job.command = {trainer.python,    trainer.trainer,
                     "--model",         w.model,
                     "--dataset",       w.dataset,
                     "--batch-size",    std::to_string(w.batch_size),
                     "--epochs",        std::to_string(plan.epochs),
                     "--epoch-samples", std::to_string(epoch_samples)};
      if (w.model == "dlrm") {
        job.command.emplace_back("--memory-gib");
        job.command.push_back(dlrm_gib);
      }
    }
    job.env["PYTHONUNBUFFERED"] = "1";
    if (trainer.sim_trainer) job.env["COLO_SIM_SHARING"] = std::to_string(sharing);
    job.gpu_memory_bytes = default_memory_bytes(w, trainer.dlrm_memory_gib);
    job.params = {
        {"model", w.model}, {"dataset", w.dataset}, {"batch_size", std::to_string(w.batch_size)}};
    file.jobs.push_back(std::move(job));
  }
  return file;
}

Result<BenchOutcome> run_bench(const std::vector<BenchCase>& cases, const Plan& plan,
                               const BenchRunOptions& options, BenchContext& ctx) {
  OneDeviceBackend backend(ctx.backend, options.gpu);
  Result<std::vector<DeviceInfo>> devices = backend.devices();
  if (!devices.ok()) return devices.error();
  const DeviceInfo device = devices->front();

  // Step 1: the experiment and its cases.
  NewExperiment experiment{options.suite,           ctx.clock.now_ms(), options.options_json,
                           backend.simulated(),     backend.name(),     device.name,
                           options.run.command_line};
  Result<int64_t> experiment_id = ctx.store.begin_experiment(experiment);
  if (!experiment_id.ok()) return experiment_id.error();
  std::vector<int64_t> case_ids;
  for (const BenchCase& c : cases) {
    CaseRow row;
    row.name = c.name;
    row.workload = c.workload;
    row.models = c.models;
    row.mechanism = c.mechanism;
    row.degree = c.degree;
    row.repetition = c.repetition;
    row.status = c.status;
    row.reason = c.reason;
    Result<int64_t> id = ctx.store.add_case(*experiment_id, row);
    if (!id.ok()) {
      (void)ctx.store.end_experiment(*experiment_id, "failed", ctx.clock.now_ms());
      return id.error();
    }
    case_ids.push_back(*id);
  }
  ctx.out << fmt::format("experiment {}: {} with {} cases on gpu{} ({}{}); estimated {}\n",
                         *experiment_id, options.suite, cases.size(), device.index, device.name,
                         backend.simulated() ? ", SIMULATED" : "",
                         format_duration_s(plan.total_seconds));

  BenchOutcome outcome;
  outcome.experiment_id = *experiment_id;
  Learned learned;
  bool stopped = false;
  auto record = [&](size_t i, std::optional<int64_t> run_id, const std::string& status,
                    const std::string& reason) {
    if (Status s = ctx.store.update_case(case_ids[i], run_id, status, reason); !s.ok())
      ctx.out << "warning: could not record case " << cases[i].name << ": " << s.error().message()
              << "\n";
  };

  // Step 2: the cases, in order.
  for (size_t i = 0; i < cases.size(); ++i) {
    const BenchCase& c = cases[i];
    const std::string head = fmt::format("case {}/{} {}", i + 1, cases.size(), c.name);
    if (c.status == "not_run") {
      ++outcome.not_run;
      ctx.out << fmt::format("{}: not run: {}\n", head, c.reason);
      continue;
    }
    if (stopped || ctx.stop_requests.load() > 0) {
      stopped = true;
      ++outcome.cancelled;
      record(i, std::nullopt, "cancelled", "cancelled before it started (Ctrl-C)");
      continue;
    }
    FitDecision fit =
        check_fit(c, device.memory_total_bytes, learned.peaks, options.trainer.dlrm_memory_gib);
    if (!fit.fits) {
      ++outcome.does_not_fit;
      record(i, std::nullopt, "does_not_fit", fit.reason);
      ctx.out << fmt::format("{}: does not fit: {}\n", head, fit.reason);
      continue;
    }

    const JobFile file = job_file_for(c, plan, options.trainer, options.suite);
    Result<MechanismKind> kind = parse_mechanism(c.mechanism);
    Result<std::unique_ptr<Mechanism>> mechanism =
        kind.ok() ? make_mechanism(*kind, ctx.mechanism_options, mechanism_inputs(file, backend))
                  : Result<std::unique_ptr<Mechanism>>(kind.error());
    if (!mechanism.ok()) {
      ++outcome.failed;
      record(i, std::nullopt, "failed", mechanism.error().message());
      ctx.out << fmt::format("{}: failed: {}\n", head, mechanism.error().message());
      continue;
    }
    ctx.out << fmt::format("{}: running (estimated {})\n", head,
                           format_duration_s(plan.case_seconds[i]));
    RunOptions run_options = options.run;
    run_options.max_jobs_per_gpu = file.max_jobs_per_gpu;
    run_options.policy = "fixed";  // the paper's cases fix the degree
    RunContext run_ctx{ctx.clock, backend,          ctx.store, **mechanism, ctx.mechanism_options,
                       ctx.out,   ctx.stop_requests};
    const int64_t started = ctx.clock.monotonic_ms();
    Result<RunOutcome> run = run_job_file(file, run_options, run_ctx);
    const double took_s = static_cast<double>(ctx.clock.monotonic_ms() - started) / 1000.0;
    if (!run.ok()) {
      ++outcome.failed;
      record(i, std::nullopt, "failed", run.error().message());
      ctx.out << fmt::format("{}: failed after {}: {}\n", head, format_duration_s(took_s),
                             run.error().message());
      continue;
    }
    std::string status = case_status_for(run->state);
    Result<RunRecord> rows = ctx.store.run_record(run->run_id);
    std::string reason;
    std::string detail;
    if (rows.ok()) {
      RunSummary summary = summarize(*rows);
      if (status == "failed") reason = failure_reason(summary);
      if (status == "ok") {
        learn(c, summary, file.jobs, learned);
        if (summary.steady_throughput_per_s) {
          detail += fmt::format(", steady {:.0f} samples/s", *summary.steady_throughput_per_s);
        }
        detail += comparison(c, summary, file.jobs, learned);
      }
    } else {
      reason = status == "failed" ? "the run failed" : "";
      detail = ", summary unavailable: " + rows.error().message();
    }
    if (status == "cancelled") reason = "cancelled while running (Ctrl-C)";
    record(i, run->run_id, status, reason);
    outcome.ok += status == "ok";
    outcome.failed += status == "failed";
    outcome.cancelled += status == "cancelled";
    if (status == "cancelled") stopped = true;
    ctx.out << fmt::format("{}: {} in {} (run {}){}{}\n", head, status, format_duration_s(took_s),
                           run->run_id, detail, reason.empty() ? "" : ": " + reason);
  }

  // Step 3.
  outcome.state = stopped ? "cancelled" : outcome.failed > 0 ? "failed" : "ok";
  if (Status s = ctx.store.end_experiment(*experiment_id, outcome.state, ctx.clock.now_ms());
      !s.ok()) {
    return s.error();
  }
  ctx.out << fmt::format(
      "experiment {} {}: {} ok, {} failed, {} do not fit, {} not run, {} cancelled\n",
      *experiment_id, outcome.state, outcome.ok, outcome.failed, outcome.does_not_fit,
      outcome.not_run, outcome.cancelled);
  return outcome;
}

}  // namespace colo
