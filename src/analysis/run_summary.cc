#include "analysis/run_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "analysis/energy.h"
#include "analysis/intervals.h"
#include "analysis/profile_event.h"
#include "common/saturating.h"

namespace colo {
namespace {

constexpr UnixMillis kEndOfTime = std::numeric_limits<UnixMillis>::max();

// Busy and idle time of each instance over [first_start, last_end]. A job
// that never ended counts until last_end.
std::vector<InstanceUsage> instance_usage(const std::vector<JobSummary>& jobs,
                                          UnixMillis first_start, UnixMillis last_end) {
  std::vector<InstanceUsage> usage;
  std::map<std::string, std::vector<Interval>> intervals;
  for (const JobSummary& job : jobs) {
    if (job.instance.empty() || !job.started_ms) continue;
    auto& list = intervals[job.instance];
    if (list.empty()) usage.push_back({job.instance, 0, 0, 0});
    list.emplace_back(std::max(*job.started_ms, first_start),
                      std::min(job.ended_ms.value_or(last_end), last_end));
  }
  for (InstanceUsage& u : usage) {
    const auto& list = intervals[u.instance];
    u.jobs = static_cast<int>(list.size());
    u.busy_ms = covered_ms(union_of(list));
    u.idle_ms = std::max<int64_t>(0, (last_end - first_start) - u.busy_ms);
  }
  return usage;
}

// The window, the steady throughput and, with solo rates, the speed-up.
void fill_together(RunSummary& summary, const std::vector<std::optional<SoloRate>>& solo) {
  std::vector<size_t> started;
  std::vector<TogetherJob> input;
  for (size_t i = 0; i < summary.jobs.size(); ++i) {
    JobSummary& job = summary.jobs[i];
    job.together_samples_per_s.reset();
    job.together_epochs_per_s.reset();
    job.normalized_rate.reset();
    job.slowdown.reset();
    job.solo = i < solo.size() ? solo[i] : std::nullopt;
    if (!job.started_ms) continue;
    started.push_back(i);
    input.push_back({job.name, &job.epoch_ends, job.device, job.solo});
  }
  summary.normalized_throughput = normalized_throughput(input);
  // Each job's rate against alone over the stretches it shared its GPU in
  // its steady epochs; where a window holds every job (below), the window's.
  for (size_t k = 0; k < started.size(); ++k) {
    const std::optional<double>& shared = summary.normalized_throughput.job_normalized[k];
    if (!shared || *shared <= 0) continue;
    summary.jobs[started[k]].normalized_rate = shared;
    summary.jobs[started[k]].slowdown = 1.0 / *shared;
  }
  summary.together.reset();
  summary.together_gpus = 0;
  summary.steady_throughput_per_s.reset();
  summary.steady_speedup_vs_exclusive.reset();
  summary.steady_note.clear();

  // Jobs that ran one after another: their steady epochs never overlap.
  if (started.size() >= 2) {
    std::vector<Interval> steady;
    int64_t summed_ms = 0;
    int64_t samples = 0;
    bool every_samples = true;
    for (size_t i : started) {
      const JobSummary& job = summary.jobs[i];
      if (!job.steady_start_ms) continue;
      steady.emplace_back(*job.steady_start_ms, *job.steady_end_ms);
      summed_ms += *job.steady_end_ms - *job.steady_start_ms;
      if (job.steady_samples) {
        samples = saturating_add(samples, *job.steady_samples);
      } else {
        every_samples = false;
      }
    }
    const int64_t covered = covered_ms(union_of(steady));
    if (steady.size() == started.size() && covered == summed_ms && covered > 0) {
      if (every_samples) {
        summary.steady_throughput_per_s =
            static_cast<double>(samples) * 1000.0 / static_cast<double>(covered);
      }
      summary.steady_note = "the jobs ran one after another: none ran together with another";
      return;
    }
  }

  Together together = measure_together(input);
  summary.together = together.window;
  summary.together_gpus = together.gpus;
  summary.steady_note = together.why_not;
  if (together.jobs.size() != started.size()) return;  // not long enough, or no window
  summary.steady_throughput_per_s = together.samples_per_s;
  summary.steady_speedup_vs_exclusive = together.speedup;
  for (size_t k = 0; k < started.size(); ++k) {
    JobSummary& job = summary.jobs[started[k]];
    const JobInWindow& in = together.jobs[k];
    job.together_samples_per_s = in.samples_per_s;
    job.together_epochs_per_s = in.epochs_per_s;
    job.normalized_rate = in.normalized_rate;
    job.slowdown = in.slowdown;
  }
}

}  // namespace

SampleFigureBuilder::SampleFigureBuilder(const RunSummary& summary) {
  // A job still running is taken to run until the run ended (or forever).
  const UnixMillis open_end = summary.run.ended_ms.value_or(kEndOfTime);
  jobs_.resize(summary.jobs.size());
  for (size_t j = 0; j < summary.jobs.size(); ++j) {
    const JobSummary& job = summary.jobs[j];
    jobs_[j].id = job.id;
    index_of_[job.id] = j;
    if (!job.device || !job.started_ms) continue;
    Device& d = devices_[*job.device];
    d.windows.push_back({*job.started_ms, job.ended_ms.value_or(open_end), j, false});
    if (job.steady_start_ms && job.steady_end_ms)
      d.windows.push_back({*job.steady_start_ms, *job.steady_end_ms, j, true});
  }
  for (auto& [device, d] : devices_) {
    std::stable_sort(d.windows.begin(), d.windows.end(),
                     [](const Window& a, const Window& b) { return a.from < b.from; });
  }
}

void SampleFigureBuilder::Mean::add(const std::optional<double>& value) {
  if (!value) return;
  sum += *value;
  ++count;
}

std::optional<double> SampleFigureBuilder::Mean::value() const {
  if (count == 0) return std::nullopt;
  return sum / count;
}

void SampleFigureBuilder::Device::advance_to(UnixMillis t) {
  for (; next < windows.size() && windows[next].from <= t; ++next) open.push_back(next);
  std::erase_if(open, [&](size_t w) { return windows[w].to < t; });
}

void SampleFigureBuilder::add(const DeviceSample& sample) {
  ++device_samples_;
  if (sample.memory_used_bytes)
    peak_used_ = std::max(peak_used_.value_or(0), *sample.memory_used_bytes);

  Device& d = devices_.try_emplace(sample.device).first->second;
  d.sm.add(sample.sm_active_pct);
  if (d.previous) {
    // The energy between the two readings is split evenly among the jobs
    // running at its midpoint; a job gets its part only when it ran over
    // the whole interval.
    const DeviceSample& a = *d.previous;
    if (std::optional<double> pair_j = pair_energy_j(a, sample)) {
      d.energy_j = d.energy_j.value_or(0) + *pair_j;
      d.advance_to(a.time_ms + (sample.time_ms - a.time_ms) / 2);
      const auto running = std::count_if(d.open.begin(), d.open.end(),
                                         [&](size_t w) { return !d.windows[w].steady; });
      const double share = 1.0 / static_cast<double>(std::max<std::ptrdiff_t>(running, 1));
      for (size_t w : d.open) {
        const Window& window = d.windows[w];
        if (window.steady || a.time_ms < window.from || sample.time_ms > window.to) continue;
        Job& job = jobs_[window.job];
        job.energy_j = job.energy_j.value_or(0) + *pair_j * share;
      }
    }
  }
  d.advance_to(sample.time_ms);
  for (size_t w : d.open) {
    const Window& window = d.windows[w];
    Job& job = jobs_[window.job];
    (window.steady ? job.steady_sm : job.sm).add(sample.sm_active_pct);
    (window.steady ? job.steady_util : job.util).add(sample.gpu_util_pct);
  }
  d.previous = sample;
}

void SampleFigureBuilder::add(const ProcessSampleRow& row) {
  if (!row.job_id || !row.sample.used_memory_bytes) return;
  if (instant_ != row.sample.time_ms) close_instant();
  instant_ = row.sample.time_ms;
  job_bytes_[*row.job_id] += *row.sample.used_memory_bytes;
  device_bytes_[row.sample.device] += *row.sample.used_memory_bytes;
}

void SampleFigureBuilder::close_instant() {
  for (const auto& [id, bytes] : job_bytes_) {
    auto it = index_of_.find(id);
    if (it == index_of_.end()) continue;
    Job& job = jobs_[it->second];
    job.peak_bytes = std::max(job.peak_bytes.value_or(0), bytes);
  }
  for (const auto& [device, bytes] : device_bytes_)
    peak_processes_ = std::max(peak_processes_.value_or(0), bytes);
  job_bytes_.clear();
  device_bytes_.clear();
}

SampleFigures SampleFigureBuilder::figures() {
  close_instant();
  SampleFigures out;
  for (const Job& job : jobs_) {
    out.jobs.push_back({job.id, job.peak_bytes, job.sm.value(), job.util.value(),
                        job.steady_sm.value(), job.steady_util.value(), job.energy_j});
  }
  out.device_samples = device_samples_;
  Mean all_sm;  // summed device by device, whatever order the devices came in
  for (const auto& [device, d] : devices_) {
    all_sm.sum += d.sm.sum;
    all_sm.count += d.sm.count;
  }
  out.mean_sm_active_pct = all_sm.value();
  out.peak_memory_used_bytes = peak_used_;
  // A device reading taken between jobs (or none) must not hide what the
  // jobs' processes held: the device held at least their sum at each instant.
  if (peak_processes_)
    out.peak_memory_used_bytes = std::max(out.peak_memory_used_bytes.value_or(0), *peak_processes_);
  for (const auto& [device, d] : devices_) {
    if (d.energy_j) out.energy_j = out.energy_j.value_or(0) + *d.energy_j;
  }
  return out;
}

void apply_sample_figures(RunSummary& summary, const SampleFigures& figures) {
  std::map<int64_t, const SampleFigures::Job*> by_id;
  for (const SampleFigures::Job& f : figures.jobs) by_id[f.id] = &f;
  for (JobSummary& job : summary.jobs) {
    auto it = by_id.find(job.id);
    if (it == by_id.end()) continue;
    const SampleFigures::Job& f = *it->second;
    job.peak_memory_bytes = f.peak_memory_bytes;
    job.mean_sm_active_pct = f.mean_sm_active_pct;
    job.mean_gpu_util_pct = f.mean_gpu_util_pct;
    job.steady_sm_active_pct = f.steady_sm_active_pct;
    job.steady_gpu_util_pct = f.steady_gpu_util_pct;
    job.energy_j = f.energy_j;
  }
  summary.device_samples = figures.device_samples;
  summary.mean_sm_active_pct = figures.mean_sm_active_pct;
  summary.peak_memory_used_bytes = figures.peak_memory_used_bytes;
  summary.energy_j = figures.energy_j;
}

SampleFigures sample_figures(const RunSummary& summary) {
  SampleFigures out;
  for (const JobSummary& job : summary.jobs) {
    out.jobs.push_back({job.id, job.peak_memory_bytes, job.mean_sm_active_pct,
                        job.mean_gpu_util_pct, job.steady_sm_active_pct, job.steady_gpu_util_pct,
                        job.energy_j});
  }
  out.device_samples = summary.device_samples;
  out.mean_sm_active_pct = summary.mean_sm_active_pct;
  out.peak_memory_used_bytes = summary.peak_memory_used_bytes;
  out.energy_j = summary.energy_j;
  return out;
}

namespace {

// The figures of a record's samples, for `summary` (its jobs), fed oldest
// first.
SampleFigures sample_figures_of(const RunSummary& summary, const RunRecord& record) {
  SampleFigureBuilder builder(summary);
  auto by_time = [](const auto& list, auto time_of) {
    std::vector<size_t> order(list.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return time_of(list[a]) < time_of(list[b]); });
    return order;
  };
  for (size_t i : by_time(record.device_samples, [](const DeviceSample& s) { return s.time_ms; }))
    builder.add(record.device_samples[i]);  // any order of devices will do
  for (size_t i :
       by_time(record.process_samples, [](const ProcessSampleRow& r) { return r.sample.time_ms; }))
    builder.add(record.process_samples[i]);
  return builder.figures();
}

}  // namespace

void set_job_totals(RunSummary& summary) {
  summary.makespan_ms.reset();
  summary.total_samples.reset();
  summary.throughput_per_s.reset();
  summary.instances.clear();
  summary.idle_instance_ms.reset();
  std::optional<UnixMillis> first_start;
  std::optional<UnixMillis> last_end;
  for (const JobSummary& job : summary.jobs) {
    if (job.started_ms) first_start = std::min(first_start.value_or(kEndOfTime), *job.started_ms);
    if (job.ended_ms) last_end = std::max(last_end.value_or(0), *job.ended_ms);
    if (job.samples)
      summary.total_samples = saturating_add(summary.total_samples.value_or(0), *job.samples);
  }
  if (first_start && last_end && *last_end >= *first_start) {
    summary.makespan_ms = *last_end - *first_start;
    summary.instances = instance_usage(summary.jobs, *first_start, *last_end);
    for (const InstanceUsage& u : summary.instances) {
      summary.idle_instance_ms = summary.idle_instance_ms.value_or(0) + u.idle_ms;
    }
  }
  if (summary.total_samples && summary.makespan_ms && *summary.makespan_ms > 0) {
    summary.throughput_per_s = static_cast<double>(*summary.total_samples) /
                               (static_cast<double>(*summary.makespan_ms) / 1000.0);
  }
}

void restrict_to_submission(RunSummary& summary, const SubmissionRow& submission,
                            const std::set<int64_t>& job_ids) {
  std::erase_if(summary.jobs, [&](const JobSummary& job) { return !job_ids.contains(job.id); });
  set_job_totals(summary);
  // What the GPUs did, other submissions' jobs beside these: the run's.
  summary.together.reset();
  summary.together_gpus = 0;
  summary.steady_throughput_per_s.reset();
  summary.steady_note =
      "a submission's jobs shared the GPUs with other submissions' jobs: the GPU figures are "
      "those of its run";
  summary.mean_sm_active_pct.reset();
  summary.peak_memory_used_bytes.reset();
  summary.energy_j.reset();
  summary.device_samples = 0;
  summary.baseline_run_id.reset();
  summary.speedup_vs_exclusive.reset();
  summary.steady_speedup_vs_exclusive.reset();
  summary.normalized_throughput = {};
  summary.normalized_throughput.why_not = summary.steady_note;
  summary.submission = submission;
}

std::string submission_title(int64_t run_id, const SubmissionRow& sub) {
  return submission_title(run_id, sub.id, sub.label.name);
}

std::string submission_title(int64_t run_id, int64_t submission_id, const std::string& name) {
  const std::string id = fmt::format("#{}/{}", run_id, submission_id);
  return name.empty() ? id : id + " " + name;
}

void name_jobs_by_submission(RunRecord& record,
                             const std::map<int64_t, SubmissionRow>& submission_of) {
  std::set<int64_t> submissions;
  for (const JobRow& job : record.jobs) {
    if (auto it = submission_of.find(job.id); it != submission_of.end())
      submissions.insert(it->second.id);
  }
  if (submissions.size() < 2) return;
  for (JobRow& job : record.jobs) {
    auto it = submission_of.find(job.id);
    if (it == submission_of.end()) continue;
    const SubmissionRow& sub = it->second;
    job.name = submission_title(sub.run_id.value_or(record.run.id), sub) + ": " + job.name;
  }
}

RunSummary summarize(const RunRecord& record, const SampleFigures* figures) {
  RunSummary summary;
  summary.run = record.run;
  summary.devices = record.devices;

  for (size_t i = 0; i < record.jobs.size(); ++i) {
    const JobRow& row = record.jobs[i];
    static const std::vector<ProgressEvent> kNone;
    const std::vector<ProgressEvent>& events = i < record.events.size() ? record.events[i] : kNone;
    JobSummary job;
    job.id = row.id;
    job.name = row.name;
    job.group = row.group;
    job.signature = row.signature;
    job.family = row.family;
    job.params = row.params;
    job.command = row.command;
    for (const ProgressEvent& e : events) {
      if (std::optional<JobProfile> p = profile_in(e, kEstimateEvent)) job.estimate = std::move(p);
      if (std::optional<JobProfile> p = profile_in(e, kProbeEvent)) job.probe = std::move(p);
      if (std::optional<JobProfile> p = profile_in(e, kPriorEvent)) job.prior = std::move(p);
    }
    job.state = row.state;
    job.reason = row.reason;
    job.device = row.device;
    job.gpus = row.gpus;
    job.started_ms = row.started_ms;
    job.ended_ms = row.ended_ms;
    job.log_path = row.log_path;
    job.malformed_progress_lines = row.malformed_progress_lines;
    job.instance = row.instance;
    job.usage = row.usage;
    if (job.started_ms && job.ended_ms) job.duration_ms = *job.ended_ms - *job.started_ms;
    job.attempts = 1 + static_cast<int>(std::count_if(
                           events.begin(), events.end(),
                           [](const ProgressEvent& e) { return e.kind == "requeued"; }));
    for (auto e = events.rbegin(); e != events.rend(); ++e) {
      if (e->kind == "throttled") {
        job.progress_throttled = ThrottleCounts::from_event(*e);
        break;
      }
    }

    // The last attempt's epochs: after its start and after the last requeue
    // (events come in time order, an attempt's last lines before its requeue).
    const auto last_requeue = std::find_if(events.rbegin(), events.rend(),
                                           [](const auto& e) { return e.kind == "requeued"; });
    job.epoch_ends = last_requeue == events.rend()
                         ? epoch_ends(events, job.started_ms)
                         : epoch_ends({last_requeue.base(), events.end()}, job.started_ms);
    if (i < record.metric_steps.size() && !record.metric_steps[i].empty()) {
      std::vector<ProgressEvent> all = events;
      all.insert(all.end(), record.metric_steps[i].begin(), record.metric_steps[i].end());
      job.metrics = training_metrics(all, job.started_ms, row.lower_is_better);
    } else {
      job.metrics = training_metrics(events, job.started_ms, row.lower_is_better);
    }
    job.objective = row.objective;
    job.qos = row.qos;
    job.min_speed = row.min_speed;
    if (job.qos == QosClass::kProtected) job.epoch_rates = epoch_rates(events);
    job.diverged = std::any_of(job.metrics.begin(), job.metrics.end(),
                               [](const MetricSeries& m) { return m.diverged; });
    const std::vector<EpochEnd>& ends = job.epoch_ends;
    job.epochs = static_cast<int64_t>(ends.size());
    for (const EpochEnd& e : ends) {
      if (e.samples) job.samples = saturating_add(job.samples.value_or(0), *e.samples);
    }
    if (ends.size() >= 2) {
      // The gaps between consecutive epoch ends, which sum to last - first.
      job.mean_epoch_ms = static_cast<double>(ends.back().time_ms - ends.front().time_ms) /
                          static_cast<double>(ends.size() - 1);
    } else if (ends.size() == 1 && job.started_ms) {
      job.mean_epoch_ms = static_cast<double>(ends.front().time_ms - *job.started_ms);
    }
    if (std::optional<SteadyEpochs> steady = steady_epochs(ends)) {
      job.steady_start_ms = steady->start_ms;
      job.steady_end_ms = steady->end_ms;
      job.steady_samples = steady->samples;
      job.steady_throughput_per_s = steady->samples_per_s;
    }
    if (job.samples && job.duration_ms && *job.duration_ms > 0) {
      job.throughput_per_s =
          static_cast<double>(*job.samples) / (static_cast<double>(*job.duration_ms) / 1000.0);
    }
    summary.jobs.push_back(std::move(job));
  }

  if (figures != nullptr) {
    apply_sample_figures(summary, *figures);
  } else {
    apply_sample_figures(summary, sample_figures_of(summary, record));
  }

  set_job_totals(summary);
  fill_together(summary, {});
  return summary;
}

std::map<std::string, SoloRate> solo_rates_of(const RunSummary& alone, const std::string& source) {
  struct Sums {
    double epoch_ms = 0;
    int epochs_count = 0;
    double samples_per_s = 0;
    int samples_count = 0;
  };
  std::map<std::string, Sums> sums;
  for (const JobSummary& job : alone.jobs) {
    std::optional<SteadyEpochs> steady = steady_epochs(job.epoch_ends);
    if (job.signature.empty() || !steady) continue;
    Sums& s = sums[job.signature];
    s.epoch_ms += steady->epoch_ms;
    ++s.epochs_count;
    if (steady->samples_per_s) {
      s.samples_per_s += *steady->samples_per_s;
      ++s.samples_count;
    }
  }
  std::map<std::string, SoloRate> out;
  for (const auto& [signature, s] : sums) {
    SoloRate rate;
    rate.epoch_ms = s.epoch_ms / s.epochs_count;
    if (s.samples_count > 0) rate.samples_per_s = s.samples_per_s / s.samples_count;
    rate.source = source;
    out[signature] = rate;
  }
  return out;
}

void apply_solo_rates(RunSummary& summary, const std::vector<std::optional<SoloRate>>& solo) {
  fill_together(summary, solo);
  for (JobSummary& job : summary.jobs) {
    job.floor.reset();
    if (job.qos == QosClass::kProtected && job.solo && job.solo->samples_per_s)
      job.floor = floor_history(job.epoch_rates, job.min_speed, *job.solo->samples_per_s);
  }
  std::vector<std::string> sources;
  for (const JobSummary& job : summary.jobs) {
    if (job.solo && std::find(sources.begin(), sources.end(), job.solo->source) == sources.end())
      sources.push_back(job.solo->source);
  }
  summary.solo_source.clear();
  for (const std::string& s : sources) {
    summary.solo_source += (summary.solo_source.empty() ? "" : "; ") + s;
  }
}

void compare_end_to_end(RunSummary& summary, const RunSummary& baseline) {
  summary.baseline_run_id = baseline.run.id;
  summary.speedup_vs_exclusive.reset();
  if (summary.throughput_per_s && baseline.throughput_per_s && *baseline.throughput_per_s > 0) {
    summary.speedup_vs_exclusive = *summary.throughput_per_s / *baseline.throughput_per_s;
  } else if (summary.makespan_ms && baseline.makespan_ms && *summary.makespan_ms > 0) {
    summary.speedup_vs_exclusive =
        static_cast<double>(*baseline.makespan_ms) / static_cast<double>(*summary.makespan_ms);
  }
}

bool failed_or_diverged(const JobSummary& job) {
  switch (job.state) {
    case JobState::kFailed:
    case JobState::kOutOfMemory:
    case JobState::kKilled:
    case JobState::kCancelled:
    case JobState::kInterrupted:
      return true;
    default:
      return job.diverged;
  }
}

std::string shown_state(const JobSummary& job) {
  return to_string(job.state) + (job.diverged ? ", diverged" : "");
}

}  // namespace colo
