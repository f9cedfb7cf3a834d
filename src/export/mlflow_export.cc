#include "export/mlflow_export.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "analysis/lineage.h"
#include "analysis/profile_event.h"
#include "analysis/stored.h"
#include "analysis/training_metrics.h"
#include "common/paths.h"
#include "common/unique_fd.h"
#include "common/units.h"
#include "export/mlflow_format.h"

namespace colo {
namespace {

namespace fs = std::filesystem;

// The file whose content names what an exported experiment stands for.
constexpr const char* kSourceTag = "colo.source";

// Events colo adds to a job's own (jobs/progress.h, analysis/profile_event.h):
// their metrics are colo's bookkeeping, not what the job reported.
bool is_colos_event(std::string_view kind) {
  return kind == "requeued" || kind == "throttled" || kind == kEarlyStoppedEvent ||
         kind == kProbeEvent || kind == kEstimateEvent || kind == kPriorEvent;
}

Status make_dir(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Error(fmt::format("cannot create {}: {}", path.string(), ec.message()));
  return OkStatus();
}

// Writes `content` to `path` (its folder made when missing), replacing it.
Status write_file(const fs::path& path, std::string_view content) {
  if (Status made = make_dir(path.parent_path()); !made.ok()) return made;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) return Error(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  return OkStatus();
}

// The whole file, or nullopt when it cannot be read.
std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The name an experiment's meta.yaml gives, as written there (for messages).
std::string experiment_name_in(const fs::path& folder) {
  std::optional<std::string> meta = read_file(folder / "meta.yaml");
  if (!meta) return "no meta.yaml";
  std::istringstream lines(*meta);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("name: ")) return "named " + line.substr(6);
  }
  return "without a name";
}

// Who named a metric: colo, or the job (which may use one of colo's names);
// kJobEpochEnds: the job's values at epoch ends of a metric it also reported
// at steps, kept apart as "NAME_epoch" (two step axes must not mix; the name
// PyTorch Lightning gives them).
enum class MetricSource { kColo, kJob, kJobEpochEnds };

// The metric files of one MLflow run: lines by key, in the order given.
class MetricFiles {
 public:
  void add(MetricSource source, std::string_view name, UnixMillis time_ms, double value,
           int64_t step) {
    auto [it, added] = key_of_.try_emplace({source, std::string(name)});
    if (added) it->second = keys_.unique_key(name);
    lines_[it->second] += mlflow_metric_line(time_ms, value, step);
    ++points_;
  }
  Status write(const fs::path& metrics_dir) const {
    for (const auto& [key, lines] : lines_) {
      if (Status s = write_file(metrics_dir / key, lines); !s.ok()) return s;
    }
    return OkStatus();
  }
  int64_t points() const { return points_; }

 private:
  MlflowKeys keys_;
  std::map<std::pair<MetricSource, std::string>, std::string> key_of_;
  std::map<std::string, std::string> lines_;
  int64_t points_ = 0;
};

double round_to_tenth(double value) { return std::round(value * 10) / 10; }

struct Interval {
  UnixMillis from_ms = 0;
  UnixMillis to_ms = 0;
};

bool within(const std::vector<Interval>& intervals, UnixMillis t) {
  return std::any_of(intervals.begin(), intervals.end(),
                     [t](const Interval& i) { return t >= i.from_ms && t <= i.to_ms; });
}

// When the job ran: each attempt, from its start to its end (`open_end_ms`
// while it runs); its recorded start and end when no attempt was recorded.
std::vector<Interval> job_intervals(const JobRow& job, const std::vector<AttemptRow>& attempts,
                                    UnixMillis open_end_ms) {
  std::vector<Interval> intervals;
  for (const AttemptRow& a : attempts) {
    intervals.push_back({a.started_ms, a.ended_ms.value_or(open_end_ms)});
  }
  if (intervals.empty() && job.started_ms) {
    intervals.push_back({*job.started_ms, job.ended_ms.value_or(open_end_ms)});
  }
  return intervals;
}

// The GPUs the job ran on: a gang's list, else its device.
std::vector<int> job_devices(const JobRow& job) {
  std::vector<int> devices;
  std::string_view list = job.gpus;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    int index = 0;
    if (std::from_chars(item.data(), item.data() + item.size(), index).ec == std::errc()) {
      devices.push_back(index);
    }
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  if (devices.empty() && job.device) devices.push_back(*job.device);
  return devices;
}

using Readings = std::vector<std::pair<UnixMillis, double>>;  // oldest first

// Adds readings as points: per window of `interval_ms` from `start_ms` (the
// mean, at its last reading, step = the window's number), or each reading
// (step = its number) when `interval_ms` is 0.
void add_readings(MetricFiles& files, const std::string& name, const Readings& readings,
                  UnixMillis start_ms, int64_t interval_ms) {
  if (interval_ms <= 0) {
    int64_t step = 0;
    for (const auto& [t, value] : readings) {
      files.add(MetricSource::kColo, name, t, round_to_tenth(value), step++);
    }
    return;
  }
  const auto window_of = [&](UnixMillis t) {
    return std::max<int64_t>(0, t - start_ms) / interval_ms;
  };
  for (size_t i = 0; i < readings.size();) {
    const int64_t window = window_of(readings[i].first);
    double sum = 0;
    int count = 0;
    UnixMillis last_ms = readings[i].first;
    for (; i < readings.size() && window_of(readings[i].first) == window; ++i) {
      sum += readings[i].second;
      ++count;
      last_ms = readings[i].first;
    }
    files.add(MetricSource::kColo, name, last_ms, round_to_tenth(sum / count), window);
  }
}

// The GPU readings of `device` while the job ran, under MLflow's system
// metric names and colo's. (MLflow's power_usage_percentage needs the power
// limit, which the store does not keep.)
void add_system_metrics(MetricFiles& files, const RunRecord& record, const JobRow& job, int device,
                        const std::vector<Interval>& intervals, int64_t interval_ms) {
  if (intervals.empty()) return;
  const UnixMillis start_ms = intervals.front().from_ms;
  const DeviceInfo* info = nullptr;
  for (const DeviceInfo& d : record.devices) {
    if (d.index == device) info = &d;
  }
  Readings utilization, memory_mb, memory_pct, power_w, sm_active;
  for (const DeviceSample& s : record.device_samples) {
    if (s.device != device || !within(intervals, s.time_ms)) continue;
    const UnixMillis t = s.time_ms;
    if (s.gpu_util_pct) utilization.emplace_back(t, *s.gpu_util_pct);
    if (s.sm_active_pct) sm_active.emplace_back(t, *s.sm_active_pct);
    if (s.memory_used_bytes) {
      memory_mb.emplace_back(t, static_cast<double>(*s.memory_used_bytes) / 1e6);
      const uint64_t total =
          s.memory_total_bytes.value_or(info != nullptr ? info->memory_total_bytes : 0);
      if (total > 0) {
        memory_pct.emplace_back(
            t, 100.0 * static_cast<double>(*s.memory_used_bytes) / static_cast<double>(total));
      }
    }
    if (s.power_w) power_w.emplace_back(t, *s.power_w);
  }
  // The job's own processes on the GPU, summed per reading.
  std::map<UnixMillis, uint64_t> job_bytes;
  for (const ProcessSampleRow& p : record.process_samples) {
    if (p.job_id != job.id || p.sample.device != device || !p.sample.used_memory_bytes ||
        !within(intervals, p.sample.time_ms)) {
      continue;
    }
    job_bytes[p.sample.time_ms] += *p.sample.used_memory_bytes;
  }
  Readings job_memory_mb;
  for (const auto& [t, bytes] : job_bytes) {
    job_memory_mb.emplace_back(t, static_cast<double>(bytes) / 1e6);
  }
  const std::string prefix = fmt::format("system/gpu_{}_", device);
  const std::pair<const char*, const Readings*> metrics[] = {
      {"utilization_percentage", &utilization}, {"memory_usage_megabytes", &memory_mb},
      {"memory_usage_percentage", &memory_pct}, {"power_usage_watts", &power_w},
      {"sm_active_percentage", &sm_active},     {"job_memory_usage_megabytes", &job_memory_mb},
  };
  for (const auto& [suffix, readings] : metrics) {
    add_readings(files, prefix + suffix, *readings, start_ms, interval_ms);
  }
}

// colo's summary of the job, one point each at step 0.
void add_summary_metrics(MetricFiles& files, const JobSummary& job, UnixMillis time_ms) {
  const auto add = [&](const char* name, std::optional<double> value) {
    if (value && std::isfinite(*value)) files.add(MetricSource::kColo, name, time_ms, *value, 0);
  };
  const auto divided = [](auto value, double divisor) -> std::optional<double> {
    if (!value) return std::nullopt;
    return static_cast<double>(*value) / divisor;
  };
  if (job.epochs > 0) add("colo/epochs", static_cast<double>(job.epochs));
  add("colo/duration_seconds", divided(job.duration_ms, 1000));
  add("colo/mean_epoch_seconds", divided(job.mean_epoch_ms, 1000));
  add("colo/samples_per_second", job.throughput_per_s);
  add("colo/steady_samples_per_second", job.steady_throughput_per_s);
  add("colo/peak_gpu_memory_megabytes", divided(job.peak_memory_bytes, 1e6));
  add("colo/mean_sm_active_percentage", job.mean_sm_active_pct);
  add("colo/mean_gpu_utilization_percentage", job.mean_gpu_util_pct);
  add("colo/energy_joules", job.energy_j);
  add("colo/normalized_rate", job.normalized_rate);
  add("colo/slowdown", job.slowdown);
}

// The job's history (analysis/lineage.h): the attempts it resumes, oldest
// first, each since its last start, then its own since `since_ms`, with
// every step. A job or run no longer in the store ends the chain there.
Result<std::vector<AttemptHistory>> history_of(RunStore& store, const JobRow& job,
                                               std::optional<UnixMillis> since_ms) {
  std::vector<AttemptHistory> attempts;
  std::set<int64_t> seen = {job.id};
  std::optional<JobRef> next = job.resumes;
  while (next && attempts.size() < kMaxAttempts && seen.insert(next->job_id).second) {
    Result<std::optional<JobRow>> row = store.job_row(next->job_id);
    if (!row.ok()) return row.error();
    if (!*row) break;
    Result<std::vector<AttemptRow>> tries = store.job_attempts((*row)->id);
    if (!tries.ok()) return tries.error();
    Result<std::vector<ProgressEvent>> events = store.job_events((*row)->id, /*with_steps=*/true);
    if (!events.ok()) return events.error();
    const std::optional<UnixMillis> started =
        tries->empty() ? (*row)->started_ms : std::optional(tries->back().started_ms);
    attempts.push_back({*next, started, std::move(events).value()});
    next = (*row)->resumes;
  }
  std::reverse(attempts.begin(), attempts.end());
  Result<std::vector<ProgressEvent>> events = store.job_events(job.id, /*with_steps=*/true);
  if (!events.ok()) return events.error();
  attempts.push_back({JobRef{0, job.id}, since_ms, std::move(events).value()});
  return attempts;
}

// What the job reported: the metrics of its progress events since
// `since_ms` (its last attempt: a requeued job starts its curves again),
// after those of the attempts it resumes (one history: history_of).
Status add_training_metrics(MetricFiles& files, RunStore& store, const JobRow& job,
                            std::optional<UnixMillis> since_ms) {
  Result<std::vector<AttemptHistory>> history = history_of(store, job, since_ms);
  if (!history.ok()) return history.error();
  const std::vector<ProgressEvent> joined = joined_events(*history);
  const std::vector<ProgressEvent>* events = &joined;
  // A stopped trial's results freeze at its stop (analysis/training_metrics.h).
  const std::optional<UnixMillis> frozen_ms = results_frozen_at(*events, std::nullopt);
  auto counts = [&](const ProgressEvent& e) {
    return !is_colos_event(e.kind) && (!frozen_ms || e.time_ms <= *frozen_ms);
  };
  // MLflow draws a metric over its step numbers: a metric reported at steps
  // keeps step numbers, and its values at epoch ends go to NAME_epoch over
  // epoch numbers; one reported only at epoch ends is NAME over epochs. A
  // value with neither (a plain metric) takes the latest step (or epoch).
  std::set<std::string, std::less<>> at_steps;
  for (const ProgressEvent& event : *events) {
    if (!counts(event) || !event.step) continue;
    for (const auto& [name, value] : event.metrics) at_steps.insert(name);
  }
  int64_t last_step = 0;
  int64_t last_epoch = 0;
  for (const ProgressEvent& event : *events) {
    if (!counts(event)) continue;
    if (event.step) last_step = *event.step;
    if (event.epoch) last_epoch = *event.epoch;
    const bool epoch_end = is_epoch_end_point({event.time_ms, event.step, event.epoch, 0});
    for (const auto& [name, value] : event.metrics) {
      const bool stepped = at_steps.contains(name);
      if (epoch_end && stepped) {
        files.add(MetricSource::kJobEpochEnds, name + "_epoch", event.time_ms, value, last_epoch);
      } else {
        files.add(MetricSource::kJob, name, event.time_ms, value, stepped ? last_step : last_epoch);
      }
    }
  }
  return OkStatus();
}

std::string join_command(const std::vector<std::string>& command) {
  std::string out;
  for (const std::string& arg : command) {
    if (!out.empty()) out += ' ';
    out += arg;
  }
  return out;
}

// Writes one folder of key files (params or tags): each value in its key's file.
Status write_key_files(const fs::path& folder,
                       const std::vector<std::pair<std::string, std::string>>& values,
                       size_t max_value_length) {
  if (Status made = make_dir(folder); !made.ok()) return made;
  MlflowKeys keys;
  for (const auto& [name, value] : values) {
    if (Status s = write_file(folder / keys.key(name), truncate_utf8(value, max_value_length));
        !s.ok()) {
      return s;
    }
  }
  return OkStatus();
}

// Writes one experiment into `folder` (its final place is experiment.path).
class ExperimentWriter {
 public:
  ExperimentWriter(RunStore& store, const MlflowExportOptions& options,
                   const MlflowExportedExperiment& experiment,
                   const std::vector<LearnedProfile>* profiles, fs::path folder)
      : store_(store),
        options_(options),
        experiment_(experiment),
        profiles_(profiles),
        folder_(std::move(folder)) {}

  Status write() {
    MlflowExperimentMeta meta;
    meta.experiment_id = experiment_.id;
    meta.name = experiment_.name;
    meta.artifact_location = file_uri(experiment_.path);
    meta.creation_time_ms = experiment_.created_ms;
    meta.last_update_time_ms = experiment_.updated_ms;
    if (Status s = write_file(folder_ / "meta.yaml", mlflow_experiment_meta(meta)); !s.ok()) {
      return s;
    }
    const std::string note = fmt::format(
        "{}{}, exported by `colo export mlflow` from {}: one MLflow run per job, with its grid "
        "parameters, what it reported, colo's GPU readings while it ran (system/) and colo's "
        "summary of it (colo/).",
        experiment_.note.empty() ? "" : experiment_.note + "\n\n", experiment_.name, store_.path());
    if (Status s = write_key_files(
            folder_ / "tags", {{kSourceTag, experiment_.source}, {"mlflow.note.content", note}},
            kMlflowMaxTagValueLength);
        !s.ok()) {
      return s;
    }
    for (size_t i = 0; i < experiment_.runs.size(); ++i) {
      const std::string case_name = i < experiment_.cases.size() ? experiment_.cases[i] : "";
      if (Status s = write_run(experiment_.runs[i], case_name); !s.ok()) return s;
    }
    return OkStatus();
  }

  int jobs() const { return jobs_; }
  int64_t metric_points() const { return points_; }

 private:
  Status write_run(int64_t run_id, const std::string& case_name) {
    Result<RunRecord> record = store_.run_record(run_id);
    if (!record.ok()) return record.error();
    Result<RunSummary> summary = analyse_record(store_, *record, profiles_);
    if (!summary.ok()) return summary.error();
    Result<std::map<int64_t, JobSubmitter>> submitters = store_.job_submitters(run_id);
    if (!submitters.ok()) return submitters.error();
    for (size_t k = 0; k < record->jobs.size(); ++k) {
      if (options_.progress) {
        options_.progress(fmt::format("run {}: job {} of {}", run_id, k + 1, record->jobs.size()));
      }
      const JobRow& job = record->jobs[k];
      if (!experiment_.jobs_only.empty() && !experiment_.jobs_only.contains(job.id)) continue;
      const JobSummary* job_summary = nullptr;
      for (const JobSummary& j : summary->jobs) {
        if (j.id == job.id) job_summary = &j;
      }
      const auto submitter = submitters->find(job.id);
      if (Status s =
              write_job(*record, job, job_summary,
                        submitter == submitters->end() ? nullptr : &submitter->second, case_name);
          !s.ok()) {
        return s.error().with_context(fmt::format("run {}, job {} ({})", run_id, job.id, job.name));
      }
    }
    return OkStatus();
  }

  // Who ran the job: --user when given, else its submitter as the service
  // recorded it, else the run's owner, else options.user.
  std::string user_of(const RunRow& run, const JobSubmitter* submitter) const {
    if (!options_.user_override.empty()) return options_.user_override;
    if (submitter != nullptr && !submitter->owner_name.empty()) return submitter->owner_name;
    if (!run.owner_name.empty()) return run.owner_name;
    return options_.user;
  }

  Status write_job(const RunRecord& record, const JobRow& job, const JobSummary* summary,
                   const JobSubmitter* submitter, const std::string& case_name) {
    const RunRow& run = record.run;
    Result<std::vector<AttemptRow>> attempts = store_.job_attempts(job.id);
    if (!attempts.ok()) return attempts.error();

    const std::string run_id = mlflow_run_id(fmt::format("{} job {}", experiment_.source, job.id));
    const fs::path dir = folder_ / run_id;
    MlflowRunMeta meta;
    meta.run_id = run_id;
    meta.experiment_id = experiment_.id;
    meta.run_name = job.name;
    meta.artifact_uri = file_uri((fs::path(experiment_.path) / run_id / "artifacts").string());
    const std::string user = user_of(run, submitter);
    meta.user_id = user;
    meta.status = mlflow_status(job.state);
    meta.start_time_ms =
        !attempts->empty() ? attempts->front().started_ms : job.started_ms.value_or(run.started_ms);
    meta.end_time_ms = job.ended_ms;
    if (!meta.end_time_ms && is_final(job.state)) meta.end_time_ms = run.ended_ms;
    if (Status s = write_file(dir / "meta.yaml", mlflow_run_meta(meta)); !s.ok()) return s;
    if (Status s = make_dir(dir / "artifacts"); !s.ok()) return s;
    if (Status s = add_profile_artifacts(job, dir / "artifacts"); !s.ok()) return s;
    if (Status s = add_log_artifacts(job, *attempts, dir / "artifacts"); !s.ok()) return s;

    std::vector<std::pair<std::string, std::string>> params(job.params.begin(), job.params.end());
    if (Status s = write_key_files(dir / "params", params, kMlflowMaxParamValueLength); !s.ok()) {
      return s;
    }
    if (Status s = write_key_files(dir / "tags",
                                   tags_of(record, job, *attempts, user, submitter, case_name),
                                   kMlflowMaxTagValueLength);
        !s.ok()) {
      return s;
    }

    // colo's names first, so that a job's metric of the same name is the one renamed.
    MetricFiles metrics;
    if (summary != nullptr) {
      add_summary_metrics(metrics, *summary, meta.end_time_ms.value_or(meta.start_time_ms));
    }
    const UnixMillis open_end_ms = run.ended_ms.value_or(std::numeric_limits<UnixMillis>::max());
    const std::vector<Interval> intervals = job_intervals(job, *attempts, open_end_ms);
    for (int device : job_devices(job)) {
      add_system_metrics(metrics, record, job, device, intervals, options_.system_interval_ms);
    }
    const std::optional<UnixMillis> last_attempt_ms =
        attempts->empty() ? job.started_ms : std::optional(attempts->back().started_ms);
    if (Status s = add_training_metrics(metrics, store_, job, last_attempt_ms); !s.ok()) return s;
    if (Status s = make_dir(dir / "metrics"); !s.ok()) return s;
    if (Status s = metrics.write(dir / "metrics"); !s.ok()) return s;
    ++jobs_;
    points_ += metrics.points();
    return OkStatus();
  }

  // The job's profiling windows' files, as artifacts under profile/: linked
  // where the file system allows (a trace may be hundreds of MB), else copied.
  Status add_profile_artifacts(const JobRow& job, const fs::path& artifacts) const {
    if (!options_.profile_dir_of || job.log_path.empty()) return OkStatus();
    const std::string from = options_.profile_dir_of(job.log_path);
    std::error_code error;
    if (from.empty() || !fs::is_directory(from, error)) return OkStatus();
    bool made = false;
    for (const fs::directory_entry& entry : fs::directory_iterator(from, error)) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_regular_file(error) || name.rfind("request", 0) == 0) continue;
      if (!made) {
        if (Status s = make_dir(artifacts / "profile"); !s.ok()) return s;
        made = true;
      }
      const fs::path to = artifacts / "profile" / name;
      fs::create_hard_link(entry.path(), to, error);
      if (error) {
        error.clear();
        fs::copy_file(entry.path(), to, fs::copy_options::overwrite_existing, error);
        if (error) {
          return Error(fmt::format("cannot copy {} into {}: {}", entry.path().string(), to.string(),
                                   error.message()));
        }
      }
    }
    return OkStatus();
  }

  // The logs of the job's attempts (each file once, in attempt order), as
  // artifacts under log/: each opened without following a link, regular
  // files only (a user's job wrote it, and colo may run as root), at most
  // options.max_log_bytes of each: its end, with a note beside it saying what
  // was left out. A log that is gone (`colo gc`) is skipped; one that cannot
  // be copied gets a note saying why, never an error.
  Status add_log_artifacts(const JobRow& job, const std::vector<AttemptRow>& attempts,
                           const fs::path& artifacts) const {
    std::vector<std::string> logs;
    for (const AttemptRow& a : attempts) {
      if (!a.log_path.empty() && std::find(logs.begin(), logs.end(), a.log_path) == logs.end())
        logs.push_back(a.log_path);
    }
    if (!job.log_path.empty() && std::find(logs.begin(), logs.end(), job.log_path) == logs.end())
      logs.push_back(job.log_path);
    for (const std::string& log : logs) {
      const fs::path to = artifacts / "log" / fs::path(log).filename();
      const std::string note_path = to.string() + ".note.txt";
      UniqueFd fd(open_regular_file(log, O_RDONLY | O_CLOEXEC));
      if (fd.get() < 0) {
        const int error = errno;
        if (error == ENOENT) continue;
        const std::string why = error == ELOOP    ? "it is a symbolic link"
                                : error == EINVAL ? "it is not a regular file"
                                                  : std::strerror(error);
        if (Status s = write_file(note_path, fmt::format("{} was not copied: {}\n", log, why));
            !s.ok())
          return s;
        continue;
      }
      struct stat info {};
      if (fstat(fd.get(), &info) != 0) {
        return Error(fmt::format("cannot read {}: {}", log, std::strerror(errno)));
      }
      const uint64_t size = static_cast<uint64_t>(info.st_size);
      const uint64_t skipped = size > options_.max_log_bytes ? size - options_.max_log_bytes : 0;
      if (Status s = copy_bytes(fd.get(), static_cast<off_t>(skipped),
                                std::min(size, options_.max_log_bytes), log, to);
          !s.ok())
        return s;
      if (skipped > 0) {
        if (Status s = write_file(
                note_path,
                fmt::format("{} holds {} bytes: its first {} were left out, its last {} are in {} "
                            "(colo export mlflow copies at most {} of a log)\n",
                            log, size, skipped, size - skipped, to.filename().string(),
                            format_bytes(options_.max_log_bytes)));
            !s.ok())
          return s;
      }
    }
    return OkStatus();
  }

  // Copies at most `count` bytes of `fd` from `offset` into the new file `to`,
  // in the export's staging tree (colo's own, made afresh and renamed into
  // place whole, as write_file's files are), a buffer at a time.
  static Status copy_bytes(int fd, off_t offset, uint64_t count, const std::string& from,
                           const fs::path& to) {
    if (Status made = make_dir(to.parent_path()); !made.ok()) return made;
    std::ofstream out(to, std::ios::binary | std::ios::trunc);
    if (!out) return Error(fmt::format("cannot write {}: {}", to.string(), std::strerror(errno)));
    std::vector<char> buffer(1 << 16);
    while (count > 0) {
      const ssize_t got =
          pread(fd, buffer.data(), std::min<uint64_t>(buffer.size(), count), offset);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Error(fmt::format("cannot read {}: {}", from, std::strerror(errno)));
      if (got == 0) break;  // it shrank meanwhile
      out.write(buffer.data(), got);
      offset += got;
      count -= static_cast<uint64_t>(got);
    }
    out.close();
    if (!out) return Error(fmt::format("cannot write {}: {}", to.string(), std::strerror(errno)));
    return OkStatus();
  }

  std::vector<std::pair<std::string, std::string>> tags_of(
      const RunRecord& record, const JobRow& job, const std::vector<AttemptRow>& attempts,
      const std::string& user, const JobSubmitter* submitter, const std::string& case_name) const {
    const RunRow& run = record.run;
    std::vector<std::pair<std::string, std::string>> tags = {{"mlflow.runName", job.name}};
    const auto add = [&](const char* key, const std::string& value) {
      if (!value.empty()) tags.emplace_back(key, value);
    };
    add("mlflow.user", user);
    add("mlflow.source.name", run.job_file);
    add("mlflow.source.type", "LOCAL");
    add("colo.run_id", std::to_string(run.id));
    add("colo.run_name", run.label.name);
    for (const auto& [key, value] : run.label.tags) tags.emplace_back(key, value);
    add("colo.job_id", std::to_string(job.id));
    add("colo.state", to_string(job.state));
    add("colo.reason", job.reason);
    add("colo.mechanism", run.mechanism);
    add("colo.backend", run.backend);
    add("colo.simulated", run.simulated ? "true" : "false");
    const std::vector<int> devices = job_devices(job);
    if (!devices.empty()) {
      add("colo.gpu", job.gpus.empty() ? std::to_string(devices.front()) : job.gpus);
      for (const DeviceInfo& d : record.devices) {
        if (d.index == devices.front()) add("colo.gpu_name", d.name);
      }
    }
    add("colo.mig_instance", job.instance);
    add("colo.group", job.group);
    if (!attempts.empty()) add("colo.attempts", std::to_string(attempts.size()));
    add("colo.host", run.host);
    add("colo.command", join_command(job.command));
    add("colo.log_path", job.log_path);
    if (submitter != nullptr && submitter->submission_id) {
      add("colo.submission", fmt::format("{}/{}", run.id, *submitter->submission_id));
      add("colo.submission_name", submitter->submission_name);
    }
    if (job.resumes) {
      add("colo.resumes", fmt::format("run {} job {}", job.resumes->run_id, job.resumes->job_id));
    }
    if (!job.objective.empty()) {
      add("colo.objective", job.objective);
      if (auto goal = job.lower_is_better.find(job.objective); goal != job.lower_is_better.end())
        add("colo.objective_goal", goal->second ? "min" : "max");
    }
    if (experiment_.target.kind == MlflowTarget::Kind::kExperiment) {
      add("colo.experiment_id", std::to_string(experiment_.target.id));
      add("colo.case", case_name);
    }
    return tags;
  }

  RunStore& store_;
  const MlflowExportOptions& options_;
  const MlflowExportedExperiment& experiment_;
  const std::vector<LearnedProfile>* profiles_;  // null: analysis/ learns them when needed
  const fs::path folder_;
  int jobs_ = 0;
  int64_t points_ = 0;
};

// Resolves one target into the experiment it becomes (its folder not yet checked).
Result<MlflowExportedExperiment> resolve(RunStore& store, const MlflowTarget& target,
                                         const std::string& dir) {
  MlflowExportedExperiment e;
  e.target = target;
  if (target.kind == MlflowTarget::Kind::kRun && target.submission) {
    Result<RunRow> run = store.run(target.id);
    if (!run.ok()) return run.error();
    Result<std::optional<SubmissionRow>> sub = store.submission(*target.submission);
    if (!sub.ok()) return sub.error();
    if (!*sub) return Error(fmt::format("the store has no submission {}", *target.submission));
    Result<std::vector<SubmissionJob>> jobs = store.submission_jobs((*sub)->id);
    if (!jobs.ok()) return jobs.error();
    for (const SubmissionJob& j : *jobs) {
      if (j.run_id == run->id) e.jobs_only.insert(j.job_id);
    }
    if (e.jobs_only.empty()) {
      return Error(fmt::format("submission {}/{} has no job in run {} (none started there)",
                               run->id, (*sub)->id, run->id));
    }
    e.target.id = run->id;
    e.source = fmt::format("colo run {} submission {} started {} on {}", run->id, (*sub)->id,
                           run->started_ms, run->host);
    const std::string& what = !(*sub)->label.name.empty() ? (*sub)->label.name : (*sub)->job_file;
    e.name = what.empty() ? fmt::format("colo submission {}/{}", run->id, (*sub)->id)
                          : fmt::format("colo submission {}/{}: {}", run->id, (*sub)->id, what);
    e.note = (*sub)->label.note;
    e.runs = {run->id};
    e.created_ms = (*sub)->submitted_ms;
    e.updated_ms = run->ended_ms.value_or(run->started_ms);
  } else if (target.kind == MlflowTarget::Kind::kRun) {
    Result<RunRow> run = store.run(target.id);
    if (!run.ok()) return run.error();
    e.target.id = run->id;
    e.source = fmt::format("colo run {} started {} on {}", run->id, run->started_ms, run->host);
    // Its name when it has one (`colo run --name`), else its job file.
    const std::string& what = !run->label.name.empty() ? run->label.name : run->job_file;
    e.name = what.empty() ? fmt::format("colo run {}", run->id)
                          : fmt::format("colo run {}: {}", run->id, what);
    e.note = run->label.note;
    e.runs = {run->id};
    e.created_ms = run->started_ms;
    e.updated_ms = run->ended_ms.value_or(run->started_ms);
  } else {
    Result<ExperimentRow> experiment = store.experiment(target.id);
    if (!experiment.ok()) return experiment.error();
    Result<std::vector<CaseRow>> cases = store.experiment_cases(experiment->id);
    if (!cases.ok()) return cases.error();
    e.target.id = experiment->id;
    e.source = fmt::format("colo experiment {} started {} ({})", experiment->id,
                           experiment->started_ms, experiment->suite);
    e.name = fmt::format("colo experiment {}: {}", experiment->id, experiment->suite);
    std::set<int64_t> seen;
    for (const CaseRow& c : *cases) {
      if (!c.run_id || !seen.insert(*c.run_id).second) continue;
      e.runs.push_back(*c.run_id);
      e.cases.push_back(c.name);
    }
    e.created_ms = experiment->started_ms;
    e.updated_ms = experiment->ended_ms.value_or(experiment->started_ms);
  }
  e.id = mlflow_experiment_id(e.source);
  e.path = (fs::path(dir) / e.id).string();
  return e;
}

std::string describe(const MlflowTarget& target) {
  if (target.submission) return fmt::format("submission {}/{}", target.id, *target.submission);
  return fmt::format("{} {}", target.kind == MlflowTarget::Kind::kRun ? "run" : "experiment",
                     target.id);
}

}  // namespace

Result<MlflowTarget> parse_mlflow_target(std::string_view text) {
  MlflowTarget target;
  if (text == "last" || text == "last-run") return target;
  if (text == "last-exp") {
    target.kind = MlflowTarget::Kind::kExperiment;
    return target;
  }
  std::string_view number = text;
  if (text.starts_with("run:")) {
    number = text.substr(4);
  } else if (text.starts_with("exp:")) {
    number = text.substr(4);
    target.kind = MlflowTarget::Kind::kExperiment;
  }
  int64_t id = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), id);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || id <= 0) {
    return Error(fmt::format(
        "'{}' is neither a run (ID, run:ID, last) nor an experiment (exp:ID, last-exp); `colo "
        "runs` and `colo experiments` list them",
        text));
  }
  target.id = id;
  return target;
}

Result<MlflowExportPlan> plan_mlflow_export(RunStore& store,
                                            const std::vector<MlflowTarget>& targets,
                                            const MlflowExportOptions& options) {
  if (options.dir.empty()) {
    return Error("no directory to export into: name one with --to DIR (created when absent)");
  }
  MlflowExportPlan plan;
  plan.dir = fs::path(absolute_path(options.dir)).lexically_normal().string();
  if (plan.dir.size() > 1 && plan.dir.back() == '/') plan.dir.pop_back();
  const fs::path dir(plan.dir);
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (fs::exists(status)) {
    if (!fs::is_directory(status)) {
      return Error(fmt::format(
          "{} is not a directory: name a directory for the MLflow store (created when absent)",
          plan.dir));
    }
    const bool empty = fs::is_empty(dir, ec);
    if (ec) return Error(fmt::format("cannot read {}: {}", plan.dir, ec.message()));
    const bool is_store =
        fs::exists(dir / "0" / "meta.yaml", ec) || fs::is_directory(dir / ".trash", ec);
    if (!empty && !is_store) {
      return Error(fmt::format(
          "{} is neither empty nor an MLflow file store (no 0/meta.yaml or .trash/ in it): name a "
          "new or empty directory, or an MLflow store such as ./mlruns",
          plan.dir));
    }
    plan.create_default_experiment = !fs::exists(dir / "0", ec);
  } else {
    plan.create_default_experiment = true;
  }

  std::set<std::string> sources;
  for (const MlflowTarget& target : targets) {
    Result<MlflowExportedExperiment> e = resolve(store, target, plan.dir);
    if (!e.ok()) return e.error();
    if (!sources.insert(e->source).second) continue;
    const fs::path folder(e->path);
    if (fs::exists(folder, ec)) {
      std::optional<std::string> source = read_file(folder / "tags" / kSourceTag);
      if (source != e->source) {
        return Error(fmt::format(
            "{} already holds another MLflow experiment ({}), not an earlier export of {}: nothing "
            "was written; export into another directory, or remove {}",
            e->path, experiment_name_in(folder), describe(e->target), e->path));
      }
      e->replaces = true;
    }
    plan.experiments.push_back(std::move(*e));
  }
  return plan;
}

Result<MlflowExportOutcome> write_mlflow_export(RunStore& store, const MlflowExportPlan& plan,
                                                const MlflowExportOptions& options) {
  const fs::path dir(plan.dir);
  if (Status made = make_dir(dir); !made.ok()) return made.error();
  if (access(plan.dir.c_str(), W_OK | X_OK) != 0) {
    return Error(fmt::format("{} is not writable ({}): export into a directory you may write",
                             plan.dir, std::strerror(errno)));
  }
  std::error_code ec;
  if (plan.create_default_experiment && !fs::exists(dir / "0", ec)) {
    MlflowExperimentMeta meta;
    meta.experiment_id = "0";
    meta.name = "Default";
    meta.artifact_location = file_uri((dir / "0").string());
    meta.creation_time_ms = options.now_ms;
    meta.last_update_time_ms = options.now_ms;
    if (Status s = write_file(dir / "0" / "meta.yaml", mlflow_experiment_meta(meta)); !s.ok()) {
      return s.error();
    }
  }
  if (Status made = make_dir(dir / ".trash"); !made.ok()) return made.error();

  // The solo rates of a run's jobs come from its exclusive baseline, else
  // from profiles learned from the store: learned once for several runs,
  // and for one run only when analysis/ needs them.
  size_t runs = 0;
  for (const MlflowExportedExperiment& e : plan.experiments) runs += e.runs.size();
  std::optional<std::vector<LearnedProfile>> profiles;
  if (runs > 1) {
    Result<std::vector<LearnedProfile>> learned = learn_profiles(store);
    if (!learned.ok()) return learned.error();
    profiles = std::move(*learned);
  }

  MlflowExportOutcome outcome;
  outcome.dir = plan.dir;
  for (const MlflowExportedExperiment& planned : plan.experiments) {
    // Written beside its place, then renamed into it: a reader never sees
    // half of it, and a failure leaves the earlier export as it was. A tree
    // of files, not one: common/replace_file.h puts single files in place.
    const fs::path final_path(planned.path);
    const fs::path staging = dir / fmt::format(".colo-export-{}.tmp", planned.id);
    const fs::path previous = dir / fmt::format(".colo-export-{}.old", planned.id);
    fs::remove_all(staging, ec);
    ExperimentWriter writer(store, options, planned, profiles ? &*profiles : nullptr, staging);
    Status written = writer.write();
    if (written.ok() && fs::exists(final_path, ec)) {
      fs::remove_all(previous, ec);
      fs::rename(final_path, previous, ec);
      if (ec) {
        written = Error(fmt::format("cannot replace {}: {}", planned.path, ec.message()));
      }
    }
    if (written.ok()) {
      fs::rename(staging, final_path, ec);
      if (ec) {
        written = Error(
            fmt::format("cannot move {} to {}: {}", staging.string(), planned.path, ec.message()));
        std::error_code restore;
        if (fs::exists(previous, restore)) fs::rename(previous, final_path, restore);
      }
    }
    fs::remove_all(previous, ec);
    if (!written.ok()) {
      fs::remove_all(staging, ec);
      return written.error().with_context(
          fmt::format("exporting {} to {}", describe(planned.target), planned.path));
    }
    MlflowExportedExperiment done = planned;
    done.jobs = writer.jobs();
    done.metric_points = writer.metric_points();
    outcome.runs += done.jobs;
    outcome.metric_points += done.metric_points;
    outcome.experiments.push_back(std::move(done));
  }
  return outcome;
}

Result<MlflowExportOutcome> export_mlflow(RunStore& store, const std::vector<MlflowTarget>& targets,
                                          const MlflowExportOptions& options) {
  Result<MlflowExportPlan> plan = plan_mlflow_export(store, targets, options);
  if (!plan.ok()) return plan.error();
  return write_mlflow_export(store, *plan, options);
}

}  // namespace colo
