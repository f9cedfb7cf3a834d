// RunStore: the SQLite file where colo records runs, jobs, job events and
// GPU samples. Schema versioned with migrations (schema.cc), WAL journal,
// writes batched into transactions by the caller (one call = one transaction).
// It reads and writes rows (store/rows.h) and computes nothing from them:
// every figure comes from analysis/.
//
// A colo killed with SIGKILL leaves a readable database: every write is a
// committed transaction, and the next open() marks runs whose colo process is
// gone as interrupted (and their unfinished jobs likewise).
//
// Threading: not thread-safe; one thread (the run engine's) owns it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "gpu/gpu_backend.h"
#include "jobs/job_spec.h"
#include "jobs/job_state.h"
#include "jobs/progress_event.h"
#include "store/rows.h"
#include "store/sqlite_util.h"
#include "store/store_backup.h"
#include "store/store_file.h"

namespace colo {

struct NewRun {
  UnixMillis started_ms = 0;
  std::string mechanism;  // "exclusive" | "naive" | "mps"
  std::string backend;    // "nvml" | "sim"
  bool simulated = false;
  std::string job_file;      // path as given
  std::string command_line;  // how colo was invoked
  std::string host;
  pid_t colo_pid = 0;
  std::string devices_json;  // devices_to_json() of the GPUs it found
  SlurmRecord slurm;
  RunLabel label;
  std::optional<uid_t> owner_uid;  // who records it (RunRow::owner_uid)
  std::string owner_name;
  std::optional<int64_t> resumes_run;  // the run it resumes (`colo run --resume`)
};

// What a name (`colo run --name`, `colo submit --name`) names: a run or a
// submission, and whose it is.
struct NamedTarget {
  enum class Kind { kRun, kSubmission };
  Kind kind = Kind::kRun;
  int64_t id = 0;                  // the run's or the submission's
  std::optional<int64_t> run_id;   // a submission's service run
  std::optional<uid_t> owner_uid;  // nullopt: a run recorded before colo kept owners
  std::string owner_name;
};
enum class NameKinds { kRuns, kSubmissions, kBoth };

// An experiment: one `colo bench --suite NAME`, made of cases. Each case is
// one configuration (workload, mechanism, degree, repetition); a case that ran
// points at its run. (Implemented in experiment_store.cc.)
struct NewExperiment {
  std::string suite;  // "paper-uniform", ...
  UnixMillis started_ms = 0;
  std::string options_json;  // the bench options, for the record
  bool simulated = false;
  std::string backend;   // "nvml" | "sim"
  std::string gpu_name;  // "NVIDIA H200"
  std::string command_line;
};

struct ExperimentRow {
  int64_t id = 0;
  std::string suite;
  UnixMillis started_ms = 0;
  std::optional<UnixMillis> ended_ms;
  std::string state;  // "running", "ok", "failed", "cancelled", "interrupted"
  std::string options_json;
  bool simulated = false;
  std::string backend;
  std::string gpu_name;
  std::string command_line;
};

// Case status: "planned" (not yet run), "ok", "failed" (its run failed),
// "does_not_fit" (summed memory cannot fit: recorded, not run, as the paper
// shows it), "not_run" (e.g. MIG with MIG mode off; reason says why),
// "cancelled".
struct CaseRow {
  int64_t id = 0;
  int64_t experiment_id = 0;
  std::string name;       // unique in the experiment: "small/resnet26/mps/x7/r1"
  std::string workload;   // "small", "medium", "large", "mixed", "recsys"
  std::string models;     // "resnet26", "S+M+M", "dlrm+resnet152"
  std::string mechanism;  // "exclusive", "naive", "mps", "mig"
  int degree = 1;         // jobs collocated
  int repetition = 1;     // 1-based
  std::optional<int64_t> run_id;
  std::string status = "planned";
  std::string reason;
};

// A job submitted to the service (`colo serve`): the queue entry users see,
// which outlives the service's restarts (implemented in service_store.cc).
struct NewServiceJob {
  UnixMillis submitted_ms = 0;
  uid_t owner_uid = 0;
  std::string owner_name;
  std::string job_file;    // as the submitter named it
  std::string name;        // JobSpec::name
  std::string group;       // JobSpec::group
  std::string spec_json;   // the JobSpec, as job_spec_to_json writes it
  std::string env_json;    // the submitter's environment, the job's base environment
  std::string submit_key;  // the submission's key (see service_jobs_submitted_as); may be empty
};

// A label's tags as the store keeps them (a JSON object of strings), and
// back (anything else in the text is ignored).
std::string tags_json(const std::map<std::string, std::string>& tags);
std::map<std::string, std::string> parse_tags_json(const std::string& text);

// Who submitted a service job, as the service recorded it (service_jobs),
// and the submission it came in.
struct JobSubmitter {
  uid_t owner_uid = 0;
  std::string owner_name;
  std::optional<int64_t> submission_id;  // stores before version 17: none
  std::string submission_name;           // "" when it has none
  bool operator==(const JobSubmitter&) const = default;
};

// One owner's jobs not yet ended.
struct ServiceJobCounts {
  int64_t queued = 0;
  int64_t running = 0;
};

// One user's fair-share usage in a service, in milliseconds of charged GPU
// time (serve/fair_share.h): decayed with the service's half-life, and in all,
// both as of at_ms (wall clock).
struct ServiceUsageRow {
  uid_t owner_uid = 0;
  std::string owner_name;
  double usage_ms = 0;
  double total_ms = 0;
  UnixMillis at_ms = 0;
  bool operator==(const ServiceUsageRow&) const = default;
};

// The usage of one owner's service jobs that ended in a span of time
// (RunStore::service_usage_since). Jobs are counted by the rule of
// jobs/job_outcome.h: `jobs` are those that ended their work (ok, stopped
// early, failed), `failed` those of them that failed, `cancelled` those
// cancelled after they started; a job cancelled before it started is in none.
// The times are every such job's, cancelled ones included (they held GPUs).
struct ServiceUsageReport {
  std::string owner_name;
  int64_t jobs = 0;
  int64_t failed = 0;
  double gpu_ms = 0;  // time on GPUs: each attempt's time times its GPUs
  // Solo-equivalent GPU time, of the spans whose solo rate was known only:
  // rated_gpu_ms and rated_share_ms are those spans' GPU time and charged time
  // (0: no solo rate was known, and there is no solo-equivalent figure).
  double solo_ms = 0;
  // GPU time charged (fair share): each span times its charged share of
  // each GPU (serve/fair_share.h)
  double share_ms = 0;
  double energy_j = 0;  // its share of its GPUs' energy
  int64_t cancelled = 0;
  double rated_gpu_ms = 0;
  double rated_share_ms = 0;
  bool operator==(const ServiceUsageReport&) const = default;
};

// What one attempt of a service job used, added to its row as it ends
// (RunStore::add_service_job_usage); the fields as ServiceUsageReport's.
struct ServiceJobUsage {
  double gpu_ms = 0;
  double solo_ms = 0;
  double share_ms = 0;
  double energy_j = 0;
  double rated_gpu_ms = 0;
  double rated_share_ms = 0;
  ServiceJobUsage& operator+=(const ServiceJobUsage& o) {
    gpu_ms += o.gpu_ms;
    solo_ms += o.solo_ms;
    share_ms += o.share_ms;
    energy_j += o.energy_j;
    rated_gpu_ms += o.rated_gpu_ms;
    rated_share_ms += o.rated_share_ms;
    return *this;
  }
};

struct ServiceJobRow {
  int64_t id = 0;
  UnixMillis submitted_ms = 0;
  uid_t owner_uid = 0;
  std::string owner_name;
  std::string job_file;
  std::string name;
  std::string group;
  std::string spec_json;
  std::string env_json;
  // queued, running, then a final state (ok, failed, oom, killed, cancelled, interrupted).
  JobState state = JobState::kQueued;
  std::string reason;
  int attempts = 0;               // attempts started so far
  int uncounted = 0;              // of those, ended through no fault of its own
  std::optional<int64_t> job_id;  // the jobs row of its latest attempt
  std::optional<int> device;
  std::optional<UnixMillis> started_ms;  // of its latest attempt
  std::optional<UnixMillis> ended_ms;
  std::string log_path;                  // of its latest attempt
  std::optional<int64_t> submission_id;  // service_submissions (stores before version 17: none)
  std::optional<int64_t> resumed_by;     // the service job that resumed it (colo submit --resume)
  // Its submission's service run (RUN of RUN/SUB; nullopt when none is
  // recorded) and name ("" when it has none), read with the row.
  std::optional<int64_t> submission_run_id;
  std::string submission_name;
};

// One start of a job (job_attempts). A requeued job (an out-of-memory retry,
// a mechanism failure) starts again in the same `jobs` row; a service job
// restarted by a later service process continues in a new one.
struct AttemptRow {
  int64_t job_id = 0;  // its `jobs` row
  int64_t run_id = 0;  // that row's run
  int attempt = 1;     // 1-based; a service job's count continues across its rows
  std::optional<int> device;
  std::optional<int64_t> pid;
  UnixMillis started_ms = 0;
  std::optional<UnixMillis> ended_ms;  // absent while it runs
  std::string state;                   // "running", "requeued", or the job's final state
  std::string reason;
  std::string log_path;
};

// A shared data loader of a run and the consumers it served (data_store.cc).
struct DataConsumerRow {
  std::optional<int64_t> job_id;  // the job it belonged to, when known
  std::string job_name;
  int64_t pid = 0;
  int64_t batch_size = 0;
  int64_t duration_ms = 0;  // from joining to leaving (or the loader's end)
  int64_t samples = 0;
  int64_t batches = 0;
  int64_t epochs = 0;
  int64_t wait_ms = 0;       // the consumer's own time blocked waiting for batches
  int64_t pending_ms = 0;    // its requests' time at the loader before data was there
  int64_t held_back_ms = 0;  // time it held the other consumers back
  std::string detached;      // why it was detached; empty if it was not
};

struct DataLoaderRow {
  int64_t id = 0;
  std::string name;  // [data.NAME]
  std::string path;
  std::string format;
  std::optional<int64_t> pid;
  std::optional<int64_t> threads;
  std::optional<int64_t> ring_bytes;
  std::optional<int64_t> dataset_size;
  std::optional<int64_t> wall_ms;
  std::optional<int64_t> cpu_ms;
  std::optional<int64_t> peak_rss_bytes;
  std::optional<int64_t> samples_decoded;
  std::optional<int64_t> decode_errors;
  std::string note;  // e.g. why no statistics were recorded
  std::vector<DataConsumerRow> consumers;
};

// How a command uses the store.
enum class StoreAccess {
  kReadWrite,  // create if needed, migrate, write (colo run, colo bench)
  // An existing store, for reading (colo runs, show, report): writable when
  // it can be, else opened read-only (a read-only file or file system, a full
  // disk, a lock held for long) and read_only_reason() says why.
  kRead,
};

// One run of another colo store file, for RunStore::merge_runs.
struct RunSource {
  std::string path;    // the other store; opened read-only
  int64_t run_id = 0;  // 0: its latest run
  std::string label;   // recorded with its devices in the merged run ("shard 0 attempt 1")
};

class RunStore;

// Sets a store's busy timeout for a scope and puts back the default
// afterwards (other users of the store wait the usual time).
class ScopedBusyTimeout {
 public:
  ScopedBusyTimeout(RunStore& store, int timeout_ms);
  ~ScopedBusyTimeout();
  ScopedBusyTimeout(const ScopedBusyTimeout&) = delete;
  ScopedBusyTimeout& operator=(const ScopedBusyTimeout&) = delete;

 private:
  RunStore& store_;
};

class RunStore : public RunReader {
 public:
  // Opens the database at `path` (":memory:" for tests), applies migrations,
  // enables WAL. kReadWrite creates the file and its parent directory when
  // needed. Then marks runs of this host whose colo process is gone as
  // interrupted (mark_stale_runs_interrupted with process_is_alive), so every
  // reader sees the runs of a killed colo as interrupted.
  static Result<std::unique_ptr<RunStore>> open(const std::string& path,
                                                StoreAccess access = StoreAccess::kReadWrite);
  // Opens an existing store for reading only (its writers go on meanwhile:
  // WAL): no migration, no marking; every write fails. The store must have
  // this colo's schema version.
  static Result<std::unique_ptr<RunStore>> open_read_only(const std::string& path);
  ~RunStore() override;
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::string& path() const { return path_; }

  // Why the store's file is no longer sound, "" while it is: deleted, moved
  // away or replaced under the process, truncated, or overwritten (SQLite's
  // header, its page count, the schema page). Reads through the descriptor
  // held since open(), never opening the file again: closing any descriptor
  // of a file drops the POSIX locks SQLite holds on it, and the next process
  // to open the store would then delete its WAL under this one. "" for
  // stores opened read-only or in memory.
  std::string file_damage() const;
  // SQLite's PRAGMA quick_check: reads every page (seconds for a large
  // store); an error naming the first problem.
  Status quick_check();
  int schema_version() const;
  // Empty when the store can be written; else why it was opened read-only
  // (writes then fail; runs of a dead colo are shown as it left them).
  const std::string& read_only_reason() const { return read_only_reason_; }
  // How long a write waits for another process's lock before failing with a
  // transient error (kStoreBusyTimeoutMs after open).
  void set_busy_timeout_ms(int timeout_ms);
  // Caps the database at `pages` pages (SQLite's max_page_count, never below
  // the file's current size): writes that need more fail as on a full disk.
  // A seam for tests of a full disk.
  Status set_max_pages(int64_t pages);

  // The runs open() found orphaned (their colo gone) and marked interrupted.
  const std::vector<int64_t>& runs_interrupted_at_open() const { return interrupted_at_open_; }

  // Marks runs still 'running' whose colo process is gone (per `is_alive`)
  // as interrupted, and their queued/running jobs likewise. Returns the ids.
  Result<std::vector<int64_t>> mark_stale_runs_interrupted(
      const std::function<bool(pid_t)>& is_alive, UnixMillis now_ms);

  Result<int64_t> begin_run(const NewRun& run);
  // Adds the run's jobs (state queued) in one transaction and sets the run's
  // jobs_signature. Returns job ids in the same order. `resumes_jobs`, by job
  // (or empty): the earlier job each continues (`colo run --resume`; 0: none).
  Result<std::vector<int64_t>> add_jobs(int64_t run_id, const std::vector<JobSpec>& jobs,
                                        const std::vector<std::string>& log_paths,
                                        UnixMillis queued_ms,
                                        const std::vector<int64_t>& resumes_jobs = {});
  // Attempt number `attempt` of the job started; it logs to the job's
  // log_path (job_attempts gets the row).
  Status job_started(int64_t job_id, pid_t pid, int device, UnixMillis started_ms, int attempt = 1);
  // The job's attempt ended at `ended_ms` and the job was queued again (an
  // out-of-memory retry, a mechanism failure), `reason` says why; its next
  // attempt logs to `log_path`.
  Status job_requeued(int64_t job_id, const std::string& log_path, const std::string& reason,
                      UnixMillis ended_ms);
  // The MIG instance the job runs on (see InstanceUsage).
  Status job_instance(int64_t job_id, const std::string& instance);
  // A gang's GPUs, by index ("0,1"), recorded when it starts.
  Status job_gpus(int64_t job_id, const std::string& gpus);
  Status job_finished(int64_t job_id, const JobExit& exit, UnixMillis ended_ms,
                      int64_t malformed_progress_lines);
  Status end_run(int64_t run_id, RunState state, UnixMillis ended_ms);

  // Batched writes: each call is one transaction.
  Status add_job_events(const std::vector<std::pair<int64_t, ProgressEvent>>& events);
  Status add_samples(int64_t run_id, const std::vector<DeviceSample>& devices,
                     const std::vector<ProcessSampleRow>& processes);

  // Copies the runs of `sources` into ONE new run of this store
  // (run_merge.cc): their jobs with their events, device and process samples.
  // The devices of each source are numbered after those of the sources
  // before it; the new run's devices_json lists them with their source's
  // label and index there. The new run is `run` (devices_json ignored;
  // started_ms 0: the earliest source start), ended at the latest source end,
  // ok when it holds jobs and every one ended ok, failed otherwise. Each
  // source is one transaction: merge into a fresh store and replace the
  // real one when done. Tables other than these five are not copied.
  Result<int64_t> merge_runs(const NewRun& run, const std::vector<RunSource>& sources);
  // Writes a consistent copy of the whole store to `path` (mode 0600,
  // never through a link; store_backup.h); `existing` says what happens to
  // a file there.
  Result<StoreCopy> copy_to(const std::string& path, ExistingFile existing = ExistingFile::kRefuse);

  // Replaces run `run_id`'s name, tags and note; an error when there is no
  // such run.
  Status set_label(int64_t run_id, const RunLabel& label);
  // What `name` names for user `caller` (name_lookup.cc): among the
  // caller's own runs and submissions of that name (`kinds`), the newest run,
  // else the newest submission; a run recorded before colo kept owners counts
  // as anyone's. nullopt when nothing has that name (nor does ""). Another
  // user's is never taken: when only others' have it, an error lists them
  // and says to name one by its id.
  Result<std::optional<NamedTarget>> find_named(const std::string& name, uid_t caller,
                                                NameKinds kinds = NameKinds::kBoth);

  // RunReader: newest first; every row of one run; its exclusive baseline.
  Result<std::vector<RunRow>> list_runs(int limit) override;
  Result<std::vector<RunRow>> list_run_rows(int limit) override;
  using RunReader::run_record;
  Result<RunRecord> run_record(int64_t run_id, MetricSteps steps, Samples samples) override;
  Status for_each_sample(int64_t run_id, SampleSink& sink) override;
  Result<std::optional<int64_t>> exclusive_baseline(const RunRow& run) override;
  // RunReader: only the rows asked for (indexed reads).
  Result<RunRow> run_row(int64_t run_id) override { return read_run(run_id, false); }
  Result<std::vector<JobRow>> job_ends(int64_t run_id, int64_t after_id) override;
  Result<RunRecord> run_window(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms) override;
  Status for_each_sample_between(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms,
                                 SampleSink& sink) override;
  // Kept in run_derived; keep_derived waits at most kDerivedBusyTimeoutMs
  // for another process's lock (it is a cache: a reader must not wait on it).
  Result<std::optional<std::string>> derived(int64_t run_id, std::string_view kind,
                                             int version) override;
  Status keep_derived(int64_t run_id, std::string_view kind, int version,
                      const std::string& body) override;
  static constexpr int kDerivedBusyTimeoutMs = 100;
  // The run row alone; `run_id` 0 means the most recent run.
  Result<RunRow> run(int64_t run_id);
  // A number that changes whenever another connection commits to the store
  // (SQLite's data_version): a reader's cache of what it built is current
  // while this stays the same.
  Result<int64_t> data_version();
  // Removes a run and everything it recorded (run_removal.cc); refuses one
  // still running. Returns the log paths its jobs had, for the caller to
  // remove with their directory.
  Result<std::vector<std::string>> remove_run(int64_t run_id);
  // Removes an experiment and its cases, not their runs; refuses one still running.
  Status remove_experiment(int64_t experiment_id);
  // Thins run `run_id`'s samples taken in [from_ms, to_ms) to one every
  // `every_ms` (spans counted from time 0; every_ms > 0): of each GPU's
  // device samples in a span, the first stays; of each process's samples, the
  // one with the most memory (peaks stay, though a job's processes' peaks may
  // then come from different instants). One transaction (run_removal.cc).
  // Returns how many rows it removed. What an analysis derives from the
  // samples changes with them: keep it first (analysis/stored.h).
  Result<int64_t> thin_samples(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms,
                               int64_t every_ms);
  // Experiments (experiment_store.cc).
  Result<int64_t> begin_experiment(const NewExperiment& experiment);
  // Adds a case (its id and experiment_id fields are ignored); returns its id.
  Result<int64_t> add_case(int64_t experiment_id, const CaseRow& c);
  Status update_case(int64_t case_id, std::optional<int64_t> run_id, const std::string& status,
                     const std::string& reason);
  Status end_experiment(int64_t experiment_id, const std::string& state, UnixMillis ended_ms);
  Result<std::vector<ExperimentRow>> list_experiments(int limit = 50);
  // `experiment_id` 0 means the most recent experiment.
  Result<ExperimentRow> experiment(int64_t experiment_id);
  Result<std::vector<CaseRow>> experiment_cases(int64_t experiment_id);

  // Shared data loaders (data_store.cc): one call records a loader and its
  // consumers in one transaction.
  Status add_data_loader(int64_t run_id, const DataLoaderRow& loader);
  Result<std::vector<DataLoaderRow>> data_loaders(int64_t run_id);

  // The service's queue (service_store.cc). Adding is one transaction;
  // returns the new ids in order.
  // The jobs are one submission (service_submissions: `run_id` the
  // service's run, `label` what its submitter called it); each job's row
  // points at it.
  // `resumes_submission`: the submission it resumes (`colo submit --resume`).
  Result<std::vector<int64_t>> add_service_jobs(
      const std::vector<NewServiceJob>& jobs, std::optional<int64_t> run_id = std::nullopt,
      const RunLabel& label = {}, std::optional<int64_t> resumes_submission = std::nullopt);
  // A submission, by id (by name: find_named()); those of a run that have a
  // name (newest first, at most `limit`).
  Result<std::optional<SubmissionRow>> submission(int64_t id);
  Result<std::vector<SubmissionRow>> named_submissions_of(int64_t run_id, int limit);
  // Who submitted each service job of run `run_id`, by `jobs` row; the
  // jobs of a `colo run` (no service job) are absent.
  Result<std::map<int64_t, JobSubmitter>> job_submitters(int64_t run_id);
  // Where a submission's jobs were recorded: a `jobs` row per service job
  // that started (a job continued by a later service process: its latest).
  Result<std::vector<SubmissionJob>> submission_jobs(int64_t submission_id);
  // The submission of each `jobs` row of run `run_id` that a service job
  // started (jobs.service_job_id), by that row's id: how a service run's
  // report tells its submissions' jobs apart. Rows of no submission (colo
  // run's, a store before version 17) are absent.
  Result<std::map<int64_t, SubmissionRow>> submissions_of_run_jobs(int64_t run_id);
  // The ids of the jobs `owner` submitted with `submit_key`, in order; empty
  // when none (or the key is empty).
  Result<std::vector<int64_t>> service_jobs_submitted_as(uid_t owner,
                                                         const std::string& submit_key);
  // Jobs not yet ended (queued or running), oldest first.
  Result<std::vector<ServiceJobRow>> unfinished_service_jobs();
  // For listings (the queue's snapshot), these three leave spec_json and
  // env_json empty: a submitter's environment is kilobytes, and the service
  // lists hundreds of jobs every second.
  // The running jobs, oldest first.
  Result<std::vector<ServiceJobRow>> running_service_jobs();
  // Queued jobs in queue order, from the `offset`-th, at most `limit`.
  Result<std::vector<ServiceJobRow>> queued_service_jobs(int64_t offset, int64_t limit);
  // How many jobs each owner has queued and running (owners with none are absent).
  Result<std::map<std::string, ServiceJobCounts>> unfinished_service_job_counts();
  // The usage the service kept, by owner uid; keep_service_usage replaces
  // each given owner's row (others stay).
  Result<std::vector<ServiceUsageRow>> service_usage();
  Status keep_service_usage(const std::vector<ServiceUsageRow>& rows);
  // Adds an attempt's usage to a service job's (gpu_ms, solo_ms, share_ms,
  // energy_j, rated_gpu_ms, rated_share_ms).
  Status add_service_job_usage(int64_t id, const ServiceJobUsage& usage);
  // Per owner, the service jobs that ended at or after `since_ms` (by name).
  Result<std::vector<ServiceUsageReport>> service_usage_since(UnixMillis since_ms);
  // The jobs with these ids (those that exist), in id order.
  Result<std::vector<ServiceJobRow>> service_jobs_by_id(const std::vector<int64_t>& ids);
  // Records that service job `id` was resumed by service job `by`.
  Status set_service_job_resumed_by(int64_t id, int64_t by);
  // The service jobs of a submission (service_submissions), by id.
  Result<std::vector<ServiceJobRow>> service_jobs_of_submission(int64_t submission_id);
  // The `limit` most recently submitted jobs that have ended, newest first.
  Result<std::vector<ServiceJobRow>> ended_service_jobs(int limit);
  // Jobs that ended in [from_ms, before_ms) whose files `colo gc` has not
  // removed (service_jobs_files_removed), oldest end first, at most `limit`;
  // the listing's columns (no spec or environment).
  Result<std::vector<ServiceJobRow>> ended_service_jobs_with_files(UnixMillis from_ms,
                                                                   UnixMillis before_ms, int limit);
  Status service_jobs_files_removed(const std::vector<int64_t>& ids, UnixMillis at_ms);
  // An attempt started: state running, attempts + 1, and the attempt's jobs
  // row (linked back to the service job).
  Status service_job_started(int64_t id, int64_t job_id, int device, UnixMillis started_ms,
                             const std::string& log_path);
  // Back in the queue (its attempt was interrupted or requeued); `reason` says
  // why; `counted`: that attempt counts against the job's attempts (false:
  // it ended through no fault of its own; `uncounted` grows).
  Status service_job_requeued(int64_t id, const std::string& reason, bool counted = true);
  Status service_job_ended(int64_t id, JobState state, const std::string& reason,
                           UnixMillis ended_ms);
  // Every attempt at a service job, over all the `jobs` rows linked to it,
  // in attempt order.
  Result<std::vector<AttemptRow>> service_job_attempts(int64_t id);

  // Device samples of a run, oldest first (for reports and tests).
  Result<std::vector<DeviceSample>> device_samples(int64_t run_id);
  // Process samples of a run, oldest first.
  Result<std::vector<ProcessSampleRow>> process_samples(int64_t run_id);
  // Progress events of a job, oldest first; without its "step" events when
  // `with_steps` is false (a flood of them costs memory, and no summary reads them).
  Result<std::vector<ProgressEvent>> job_events(int64_t job_id, bool with_steps = true);
  // The job's step events that carry metrics, oldest first: every one when
  // there are at most `limit`, else `limit` or so of them evenly spaced, the
  // last always among them (RunRecord::metric_steps).
  Result<std::vector<ProgressEvent>> metric_steps(int64_t job_id, int64_t limit);
  // The attempts of a job, in order.
  Result<std::vector<AttemptRow>> job_attempts(int64_t job_id);
  // A run's jobs, by id (no events).
  Result<std::vector<JobRow>> job_rows(int64_t run_id);
  // One job's row; nullopt when there is none.
  Result<std::optional<JobRow>> job_row(int64_t job_id);
  // The newest `limit` jobs of any run whose signature is `signature`, as
  // (job id, run id), newest first (a scan of the jobs: for a question asked
  // now and then, as `colo show`'s alone window for a profiled job).
  Result<std::vector<std::pair<int64_t, int64_t>>> jobs_of_signature(const std::string& signature,
                                                                     int limit);
  // A run's jobs as they were submitted, by id: what `colo run --resume`
  // runs again.
  struct StoredJobSpec {
    int64_t id = 0;
    std::string name;
    JobState state = JobState::kQueued;
    std::string log_path;   // the last attempt's
    std::string spec_json;  // job_spec_to_json's
  };
  Result<std::vector<StoredJobSpec>> job_specs(int64_t run_id);

 private:
  // metric_steps' statement, and one run of it (prepared once for many jobs).
  Result<Statement> prepare_metric_steps();
  static Result<std::vector<ProgressEvent>> metric_steps_of(Statement& select, int64_t job_id,
                                                            int64_t limit);
  // Lets open() use std::make_unique while no one else can construct.
  struct PrivateTag {
    explicit PrivateTag() = default;
  };

 public:
  RunStore(PrivateTag, SqliteDb db, std::string path)
      : db_(std::move(db)), path_(std::move(path)) {}

 private:
  Result<std::vector<int64_t>> mark_stale_runs(const std::function<bool(pid_t)>& is_alive,
                                               UnixMillis now_ms,
                                               const std::optional<std::string>& only_host);
  // `with_counts` false: its job counts left zero (RunReader::run_row).
  Result<RunRow> read_run(int64_t run_id, bool with_counts = true);
  // Sets run.jobs (and job_count, jobs_not_ok) by the rule of jobs/job_outcome.h.
  Status count_jobs(RunRow& run);
  // Sets sub.outcomes from its service jobs, by the same rule.
  Status count_submission_jobs(SubmissionRow& sub);
  // Sets the run's jobs_signature from every job it holds.
  Status refresh_jobs_signature(int64_t run_id);
  // The jobs whose `column` ("run_id" or "id") is `value`, by id; with a
  // window, only those whose lifetime meets it (RunReader::run_window).
  struct Window {
    UnixMillis from_ms = 0;
    UnixMillis to_ms = 0;
  };
  Result<std::vector<JobRow>> read_job_rows(std::string_view column, int64_t value,
                                            std::optional<Window> window = std::nullopt);
  Result<std::vector<DeviceInfo>> run_devices(int64_t run_id);

  // Declared before db_, so closed after it (see file_damage()).
  UniqueFd file_;
  SqliteDb db_;
  std::vector<int64_t> interrupted_at_open_;
  std::string path_;
  std::string read_only_reason_;
};

// True when a process with this pid exists on this host (kill(pid, 0)) and
// is not a zombie.
bool process_is_alive(pid_t pid);

}  // namespace colo
