// The rows the run store holds, as plain values: what colo recorded about a
// run, its jobs, their progress events and the GPU samples, with nothing
// derived from them. analysis/ computes every figure from these.
//
// RunReader is what a reader of runs needs from storage; RunStore implements
// it over SQLite, tests over vectors.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "jobs/job_outcome.h"
#include "jobs/job_qos.h"
#include "jobs/job_state.h"
#include "jobs/progress_event.h"

namespace colo {

enum class RunState { kRunning, kOk, kFailed, kCancelled, kInterrupted };
std::string to_string(RunState state);  // "running", "ok", "failed", "cancelled", "interrupted"
Result<RunState> parse_run_state(std::string_view text);

// Where a run ran inside Slurm; empty (and 0) outside.
struct SlurmRecord {
  std::string job_id;     // "1234", "1234_5" (array element); merged stores: "1234"
  std::string step;       // "batch", "0"
  std::string node;       // merged stores: the nodes, comma-separated
  int restart_count = 0;  // SLURM_RESTART_COUNT
};

// What a person called a run (`colo run --name --tag --note`); all empty
// by default.
struct RunLabel {
  std::string name;  // need not be unique: `colo show NAME` takes the newest
  std::map<std::string, std::string> tags;
  std::string note;
};

// Tags as given (`--tag KEY=VALUE`, repeatable) over the tags a run or
// submission has or carries (`colo label`, `colo run --resume`, `colo
// submit --resume`; none for a new one): each given key takes its value,
// and a key given with an empty value (`--tag KEY=`) is removed; the
// others are kept.
std::map<std::string, std::string> changed_tags(std::map<std::string, std::string> tags,
                                                const std::map<std::string, std::string>& given);

struct RunRow {
  int64_t id = 0;
  UnixMillis started_ms = 0;
  std::optional<UnixMillis> ended_ms;
  RunState state = RunState::kRunning;
  std::string mechanism;
  std::string backend;
  bool simulated = false;
  std::string job_file;
  std::string jobs_signature;  // identifies "the same jobs" across runs
  // Its jobs by outcome (jobs/job_outcome.h): its `jobs` rows, and for a
  // service's run the jobs submitted to it that were cancelled before they
  // started (they have no `jobs` row). job_count and jobs_not_ok are its
  // total() and not_ok().
  JobCounts jobs;
  int job_count = 0;
  int jobs_not_ok = 0;
  std::string host;
  pid_t colo_pid = 0;
  SlurmRecord slurm;
  RunLabel label;
  // Who recorded it (the real uid of its colo); nullopt in runs recorded
  // before colo kept it.
  std::optional<uid_t> owner_uid;
  std::string owner_name;
  // Lineage (`colo run --resume`): the run it resumes, and the newest run
  // that resumes it; nullopt when none.
  std::optional<int64_t> resumes_run;
  std::optional<int64_t> resumed_by;
};

// A submission as `colo show RUN/SUB` names it: its id and the service run
// it was submitted to (nullopt: none recorded).
struct SubmissionRef {
  std::optional<int64_t> run_id;
  int64_t id = 0;
  bool operator==(const SubmissionRef&) const = default;
};

// One submission to a service: the jobs of one `colo submit` (service_submissions).
struct SubmissionRow {
  int64_t id = 0;
  std::optional<int64_t> run_id;  // the service's run when it was submitted
  UnixMillis submitted_ms = 0;
  uid_t owner_uid = 0;
  std::string owner_name;
  std::string job_file;
  RunLabel label;
  int64_t jobs = 0;  // its service jobs
  // Lineage (`colo submit --resume`): the submission it resumes, and the
  // newest submission that resumes it; nullopt when none.
  std::optional<SubmissionRef> resumes_submission;
  std::optional<SubmissionRef> resumed_by;
  JobCounts outcomes;  // its service jobs by outcome (jobs/job_outcome.h)
};

// A job as a run recorded it: its `jobs` row and that row's run.
struct JobRef {
  int64_t run_id = 0;
  int64_t job_id = 0;
  bool operator==(const JobRef&) const = default;
};

// A submission's job as a run recorded it: its `jobs` row and that row's run.
struct SubmissionJob {
  int64_t job_id = 0;
  int64_t run_id = 0;
};

// One job of a run as recorded: its last attempt's start, its end and how.
struct JobRow {
  int64_t id = 0;
  std::string name;
  std::string group;      // its [[job]] block's name
  std::string signature;  // job_signature() of its spec
  std::string family;  // its spec's family (JobSpec::family); "" in runs recorded before families
  std::map<std::string, std::string> params;  // its grid values
  std::vector<std::string> command;           // its spec's command
  // Its job file's [objective] (JobSpec::objective, lower_is_better).
  std::string objective;
  std::map<std::string, bool, std::less<>> lower_is_better;
  // Its class and a protected job's floor (JobSpec::qos, min_speed).
  QosClass qos = QosClass::kNormal;
  double min_speed = kDefaultMinSpeed;
  JobState state = JobState::kQueued;
  std::string reason;
  std::optional<int> device;
  std::optional<UnixMillis> started_ms;  // of its last attempt
  std::optional<UnixMillis> ended_ms;
  std::string log_path;  // the last attempt's
  int64_t malformed_progress_lines = 0;
  std::string instance;  // the MIG instance it ran on; "" under other mechanisms
  std::string gpus;      // a gang's GPUs ("0,1"); "" for a job on one GPU (`device`)
  JobUsage usage;        // host CPU time and peak memory of everything it ran (its cgroup)
  // The earlier job this one continues (`colo run --resume`: jobs.resumes_job;
  // `colo submit --resume`: the latest row of the service job it resumes);
  // nullopt when it resumes none. Its history starts there (analysis/lineage.h).
  std::optional<JobRef> resumes;
};

struct ProcessSampleRow {
  ProcessSample sample;
  std::optional<int64_t> job_id;  // the job the process belongs to, when known
};

// Everything recorded about one run.
struct RunRecord {
  RunRow run;
  std::vector<DeviceInfo> devices;  // as the run found them (index, name, ...)
  std::vector<JobRow> jobs;         // by id
  // events[i]: the progress events of jobs[i] other than steps (epoch ends,
  // retries, ...), oldest first, every attempt. Steps, which a job may write
  // by the million, are read with RunStore::job_events.
  std::vector<std::vector<ProgressEvent>> events;
  // metric_steps[i]: the step events of jobs[i] that carry metrics (a loss
  // per step), oldest first: at most kMaxMetricSteps of them, evenly spaced
  // over its steps, the last always among them.
  std::vector<std::vector<ProgressEvent>> metric_steps;
  static constexpr int64_t kMaxMetricSteps = 2'000;
  std::vector<DeviceSample> device_samples;       // oldest first
  std::vector<ProcessSampleRow> process_samples;  // oldest first
};

// Whether a RunRecord holds its jobs' metric steps: what shows, reports and
// exports draw, and what learning profiles and collocations (rates and
// memory) never reads; a long job may hold thousands.
enum class MetricSteps { kRead, kSkip };

// Whether a RunRecord holds the run's device and process samples: what
// charts and exports draw; analyses of an ended run read the figures kept
// from them instead (analysis/stored.h).
enum class Samples { kRead, kSkip };

// Reading runs back. Implementations: RunStore (SQLite).
// Receives a run's samples as RunReader::for_each_sample reads them, one at
// a time, so that a run's millions of samples are never all held at once:
// device samples device by device, each device's oldest first, with the
// fields a run's figures read (time, device, SM activity, utilization,
// memory used, power, energy; the others unset: a third of the reading);
// process samples oldest first.
class SampleSink {
 public:
  virtual ~SampleSink() = default;
  virtual void add(const DeviceSample& sample) = 0;
  virtual void add(const ProcessSampleRow& row) = 0;
};

class RunReader {
 public:
  virtual ~RunReader() = default;
  // Newest first; at most `limit` (0 or less: all).
  virtual Result<std::vector<RunRow>> list_runs(int limit) = 0;
  // list_runs without the job counts (RunRow::jobs, job_count and
  // jobs_not_ok left zero): what learning reads of each run (its id, state
  // and kind) without a pass over every job of each (a service's run holds
  // 100,000). This default counts them all the same.
  virtual Result<std::vector<RunRow>> list_run_rows(int limit) { return list_runs(limit); }
  // `run_id` 0 means the most recent run.
  virtual Result<RunRecord> run_record(int64_t run_id, MetricSteps steps, Samples samples) = 0;
  Result<RunRecord> run_record(int64_t run_id, MetricSteps steps) {
    return run_record(run_id, steps, Samples::kRead);
  }
  Result<RunRecord> run_record(int64_t run_id) { return run_record(run_id, MetricSteps::kRead); }
  // Hands run `run_id`'s device samples, then its process samples, to
  // `sink`, in SampleSink's order.
  virtual Status for_each_sample(int64_t run_id, SampleSink& sink) = 0;
  // The most recent run in state ok under mechanism exclusive with the same
  // jobs_signature and simulated flag as `run`, other than `run` itself.
  virtual Result<std::optional<int64_t>> exclusive_baseline(const RunRow& run) = 0;
  // What an analysis derived from an ended run (which no longer changes),
  // kept so as not to derive it again: the body kept for `run_id` under
  // `kind` by code of `version`, nullopt when none of that version is kept.
  // keep_derived may fail (a read-only store, a lock held too long): the
  // caller then derives it again next time.
  virtual Result<std::optional<std::string>> derived(int64_t run_id, std::string_view kind,
                                                     int version) = 0;
  virtual Status keep_derived(int64_t run_id, std::string_view kind, int version,
                              const std::string& body) = 0;

  // What a running run's derivations read as its jobs end (analysis/stored.h,
  // RunFactsKeeper), so that none of them reads the whole run. These defaults
  // read the whole run and keep the part asked for; RunStore reads only it.
  //
  // Run `run_id`'s row alone (0: the most recent run); its job counts may be
  // left zero (RunStore leaves them).
  virtual Result<RunRow> run_row(int64_t run_id);
  // Run `run_id`'s jobs with an id above `after_id`, by id, with their id,
  // state, device, start and end only.
  virtual Result<std::vector<JobRow>> job_ends(int64_t run_id, int64_t after_id);
  // Run `run_id` with only the jobs whose lifetime meets [from_ms, to_ms]
  // (started by `to_ms`, not ended before `from_ms`), their events, no metric
  // steps and no samples; its row's job counts may be left zero.
  virtual Result<RunRecord> run_window(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms);
  // for_each_sample of only the samples taken in [from_ms, to_ms].
  virtual Status for_each_sample_between(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms,
                                         SampleSink& sink);
};

}  // namespace colo
