// What a run's rows add up to: per job (epochs, time per epoch, samples,
// steady rate, peak memory, SM activity, energy share) and per run
// (makespan, throughput, the window in which the jobs ran together and their
// rate in it, energy, MIG instance usage), and the comparisons with the same
// jobs alone (speed-ups, slowdowns). The numbers `colo show` prints.
//
// Pure: computed from a RunRecord (store/rows.h) and, for the comparisons,
// from solo rates the caller looked up (stored.h does that through a
// RunReader).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/epochs.h"
#include "analysis/floor_history.h"
#include "analysis/lineage.h"
#include "analysis/together.h"
#include "analysis/training_metrics.h"
#include "sched/profile.h"
#include "store/rows.h"

namespace colo {

struct JobSummary {
  int64_t id = 0;
  std::string name;
  JobState state = JobState::kQueued;
  std::string reason;
  std::optional<int> device;
  std::string gpus;  // a gang's GPUs ("0,1"; its first is `device`); "" for one GPU
  std::optional<UnixMillis> started_ms;
  std::optional<UnixMillis> ended_ms;
  std::optional<int64_t> duration_ms;
  int64_t epochs = 0;                      // epoch_end events of the last attempt
  std::vector<EpochEnd> epoch_ends;        // those events, oldest first
  std::optional<double> mean_epoch_ms;     // over epochs 2..n (the first alone: from start)
  std::optional<int64_t> samples;          // summed over epoch_end events (saturating)
  std::optional<double> throughput_per_s;  // samples / duration
  // Steady state: epochs 2..n (the first is warm-up), as the paper times it.
  std::optional<UnixMillis> steady_start_ms;  // end of the first epoch
  std::optional<UnixMillis> steady_end_ms;    // end of the last epoch
  std::optional<int64_t> steady_samples;      // samples of epochs 2..n
  std::optional<double> steady_throughput_per_s;
  std::optional<uint64_t> peak_memory_bytes;  // max over samples of the job's processes' sum
  std::optional<double> mean_sm_active_pct;   // device SM activity while the job ran
  std::optional<double> mean_gpu_util_pct;    // device utilization while the job ran
  // The same over its steady epochs (2..n) only: without start-up, when the
  // GPU is idle, so a profile's SM activity is the job's working load.
  std::optional<double> steady_sm_active_pct;
  std::optional<double> steady_gpu_util_pct;
  std::string signature;  // job_signature() of its spec
  std::string group;      // its [[job]] block's name
  std::string family;     // its spec's family ("" in runs recorded before families)
  std::map<std::string, std::string> params;  // its grid values
  // What it learned (training_metrics.h), its last attempt's: from its epoch
  // ends, metric events and end, and the steps RunRecord::metric_steps holds.
  std::vector<MetricSeries> metrics;
  // Some training metric of it was not finite (NaN, inf): its training
  // diverged, whatever its exit. Ranks last with the failed ones.
  bool diverged = false;
  std::string objective;             // its job file's [objective] metric ("": none)
  QosClass qos = QosClass::kNormal;  // its class; a protected job's floor (JobSpec)
  double min_speed = kDefaultMinSpeed;
  std::vector<std::string> command;  // its spec's command
  // The profile the auto policy placed it by when that was estimated from
  // its family, and what it measured as the auto policy's probe (the
  // latest "estimate" and "probe" events; profile_event.h), else absent.
  std::optional<JobProfile> estimate;
  std::optional<JobProfile> probe;
  std::optional<JobProfile> prior;  // a job colo had never seen: the prior it started by
  std::optional<double> energy_j;   // device energy while it ran, shared among running jobs
  std::string log_path;             // the last attempt's
  int attempts = 1;                 // 1 + its out-of-memory retries ('requeued' events)
  int64_t malformed_progress_lines = 0;
  // What colo held back of its progress (its last "throttled" event); absent when nothing.
  std::optional<ThrottleCounts> progress_throttled;
  std::string instance;  // the MIG instance it ran on; "" under other mechanisms
  JobUsage usage;        // host CPU time and peak memory of everything it ran (its cgroup)
  // In the window the jobs ran together (together.h), when it was long enough.
  std::optional<double> together_samples_per_s;
  std::optional<double> together_epochs_per_s;
  // Against its solo rate (after apply_solo_rates).
  std::optional<SoloRate> solo;
  std::optional<double> normalized_rate;  // rate together / rate alone
  std::optional<double> slowdown;         // epoch time together / epoch time alone
  // A protected job: its rated epochs, every attempt's (floor_history.h), and
  // after apply_solo_rates, when its solo rate is known, its steady epochs
  // against its floor. Empty and absent for other jobs.
  std::vector<EpochRate> epoch_rates;
  std::optional<FloorHistory> floor;
  // A job that resumes an earlier one (`colo run --resume`): its history
  // across the attempts (lineage.h; stored.h joins it), and then `metrics`
  // are the joined history's. The other figures (epochs, rates, time) stay
  // this attempt's.
  std::optional<JobHistory> history;
};

// One MIG instance of a run: how long jobs ran on it and how long it sat idle
// between the run's first job start and last job end (the cost of a static
// layout when jobs finish at different times).
struct InstanceUsage {
  std::string instance;  // as JobSummary::instance
  int jobs = 0;
  int64_t busy_ms = 0;  // union of its jobs' run intervals
  int64_t idle_ms = 0;  // makespan - busy_ms
};

// The job failed (failed, oom, killed, cancelled, interrupted) or diverged:
// `colo show` and the report rank it after the others by any metric.
bool failed_or_diverged(const JobSummary& job);
// The state as people read it: "ok", "failed", "ok, diverged", ...
std::string shown_state(const JobSummary& job);

struct RunSummary {
  RunRow run;
  std::vector<DeviceInfo> devices;
  std::vector<JobSummary> jobs;
  std::optional<int64_t> makespan_ms;  // first job start to last job end
  std::optional<int64_t> total_samples;
  std::optional<double> throughput_per_s;  // total samples / makespan
  // The window in which the jobs ran together (together.h), when the jobs
  // that started all ended at least two epochs and their steady epochs overlap.
  std::optional<TogetherWindow> together;
  int together_gpus = 0;
  // Steady throughput, free of start-up: the jobs' summed samples/s inside
  // W when it is long enough; for jobs that ran one after another (their
  // steady epochs never overlap, as in an exclusive run on one GPU), their
  // steady samples over the time spent in steady epochs. Otherwise absent.
  std::optional<double> steady_throughput_per_s;
  // Why there is no steady speed-up, when there is none ("the jobs did not
  // run together long enough: ...", "no solo rate for ...").
  std::string steady_note;
  std::optional<double> mean_sm_active_pct;        // device samples over the run
  std::optional<uint64_t> peak_memory_used_bytes;  // device-level
  std::optional<double> energy_j;                  // device energy over the run
  int64_t device_samples = 0;
  // MIG runs: per instance, in order of first use; and their idle time summed
  // (instance-milliseconds with no job running).
  std::vector<InstanceUsage> instances;
  std::optional<int64_t> idle_instance_ms;
  // The most recent completed exclusive run of the same jobs, when this run
  // is not itself exclusive (RunReader::exclusive_baseline), and this run's
  // throughput over that one's; without samples on both sides, the baseline's
  // makespan over this one's.
  std::optional<int64_t> baseline_run_id;
  std::optional<double> speedup_vs_exclusive;  // end to end (makespan)
  // The collocated speed-up (together.h) against the jobs' solo rates.
  std::optional<double> steady_speedup_vs_exclusive;
  // Whenever two or more jobs ran in their steady epochs on one GPU, their
  // summed rate over solo rate (together.h), against the same solo rates.
  NormalizedThroughput normalized_throughput;
  std::string solo_source;  // where the solo rates came from, in words
  // Set when this is one submission's part of a service's run
  // (restrict_to_submission).
  std::optional<SubmissionRow> submission;
};

// What summarize() derives from a run's GPU samples: per job its processes'
// peak memory, the device's SM activity and utilization while it ran and in
// its steady epochs, its share of the energy; per run the number of device
// samples, their mean SM activity, the peak memory and the energy. Of a long
// run, the costly part (two samples a second per GPU, for days); an ended
// run's figures are kept in the store and read instead (stored.h).
struct SampleFigures {
  struct Job {
    int64_t id = 0;
    std::optional<uint64_t> peak_memory_bytes;
    std::optional<double> mean_sm_active_pct;
    std::optional<double> mean_gpu_util_pct;
    std::optional<double> steady_sm_active_pct;
    std::optional<double> steady_gpu_util_pct;
    std::optional<double> energy_j;
    bool operator==(const Job&) const = default;
  };
  std::vector<Job> jobs;
  int64_t device_samples = 0;
  std::optional<double> mean_sm_active_pct;
  std::optional<uint64_t> peak_memory_used_bytes;
  std::optional<double> energy_j;
  bool operator==(const SampleFigures&) const = default;
};

// Derives a run's SampleFigures from its samples in one pass, holding only
// what is open at each instant (the jobs running on each device, the
// processes' memory at the latest instant), so that a run's millions of
// samples need not be held at once (RunReader::for_each_sample). Samples
// come in SampleSink's order: each device's oldest first, process samples
// oldest first. The definitions:
// - a job's means: of the device's readings at instants inside its lifetime
//   (ends included), and inside its steady window; absent readings skipped;
// - a job's energy: each interval between two consecutive readings of its
//   device is split evenly among the jobs running there at its midpoint, and
//   a job gets its part of the intervals wholly inside its lifetime;
// - a job's peak memory: the most its processes held together at one instant;
// - the run's peak memory: the most any device's readings said, or that the
//   jobs' processes on one device held together at one instant.
// A job still running counts until the run's end (or forever).
class SampleFigureBuilder : public SampleSink {
 public:
  // `summary`: the run summarized without samples (its jobs' devices,
  // lifetimes and steady windows).
  explicit SampleFigureBuilder(const RunSummary& summary);
  void add(const DeviceSample& sample) override;
  void add(const ProcessSampleRow& row) override;
  // After the last sample.
  SampleFigures figures();

 private:
  struct Mean {
    double sum = 0;
    int count = 0;
    void add(const std::optional<double>& value);
    std::optional<double> value() const;
  };
  struct Job {
    int64_t id = 0;
    Mean sm, util, steady_sm, steady_util;
    std::optional<double> energy_j;
    std::optional<uint64_t> peak_bytes;
  };
  struct Window {  // a job's lifetime, or its steady epochs: [from, to]
    UnixMillis from = 0;
    UnixMillis to = 0;
    size_t job = 0;
    bool steady = false;
  };
  struct Device {
    std::vector<Window> windows;  // by `from`
    size_t next = 0;              // the first window not yet opened
    std::vector<size_t> open;     // the windows holding the latest instant
    std::optional<DeviceSample> previous;
    Mean sm;  // of all its readings
    std::optional<double> energy_j;
    // Opens and closes windows so that `open` holds those with from <= t <= to
    // (t never decreases).
    void advance_to(UnixMillis t);
  };
  void close_instant();

  std::vector<Job> jobs_;  // as the summary's
  std::map<int64_t, size_t> index_of_;
  std::map<int, Device> devices_;
  int64_t device_samples_ = 0;
  std::optional<uint64_t> peak_used_;
  std::optional<UnixMillis> instant_;  // of the process rows being summed
  std::map<int64_t, uint64_t> job_bytes_;
  std::map<int, uint64_t> device_bytes_;
  std::optional<uint64_t> peak_processes_;
};

// Sets a summary's sample figures (its jobs matched by id).
void apply_sample_figures(RunSummary& summary, const SampleFigures& figures);

// Everything but the comparisons with other runs; the samples' part from
// `figures` when given (the record's samples are then not read), else from
// the record's samples.
RunSummary summarize(const RunRecord& record, const SampleFigures* figures = nullptr);

// The run's totals that come from its jobs alone: makespan (first start to
// last end), samples, throughput, MIG instances' use.
void set_job_totals(RunSummary& summary);

// One submission's part of a service's run: only the jobs in `job_ids`,
// their totals (set_job_totals), and none of the GPUs' figures (energy, SM
// activity, memory, the speed-ups), which other submissions' jobs shared:
// steady_note says so.
void restrict_to_submission(RunSummary& summary, const SubmissionRow& submission,
                            const std::set<int64_t>& job_ids);

// "#3/2" or "#3/2 lr-b": submission `sub` of service run `run_id`, as
// `colo show RUN/SUB` takes it and reports title it.
std::string submission_title(int64_t run_id, const SubmissionRow& sub);
// The same of submission `submission_id` named `name` ("" when it has none).
std::string submission_title(int64_t run_id, int64_t submission_id, const std::string& name);

// A service's run whose jobs came from two or more submissions: each job's
// name prefixed with its submission's title (submission_title, of the run
// the submission was made to: "#3/2 lr-b: sw[lr=0.2]"), so that two
// submissions' jobs of one name are told apart in its report; done to the
// record before it is summarized, so that every text about a job names it
// so. `submission_of`: a job's submission by the job's id; jobs absent from
// it keep their names. Fewer than two submissions among the jobs: unchanged.
void name_jobs_by_submission(RunRecord& record,
                             const std::map<int64_t, SubmissionRow>& submission_of);

// The sample figures of a summary (as summarize() derived them).
SampleFigures sample_figures(const RunSummary& summary);

// Solo rates per job signature from a run whose jobs ran alone on their
// GPUs (an exclusive run): the mean of the steady rates of its jobs of each
// signature. Jobs with fewer than two epochs give none.
std::map<std::string, SoloRate> solo_rates_of(const RunSummary& alone, const std::string& source);

// Fills in the steady speed-up and each job's normalized rate and slowdown
// from `solo` (one entry per job of `summary`, same order; nullopt: not
// known), each protected job's floor history, and solo_source from their sources. Runs whose jobs
// never ran together keep steady_speedup_vs_exclusive absent, with the reason.
void apply_solo_rates(RunSummary& summary, const std::vector<std::optional<SoloRate>>& solo);

// Sets baseline_run_id and the end-to-end speed-up over `baseline`.
void compare_end_to_end(RunSummary& summary, const RunSummary& baseline);

}  // namespace colo
