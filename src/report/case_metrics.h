// The measurements behind `colo report`, taken as the paper takes them
// (Robroek et al., EuroMLSys '24, section 3): the time of each job's second
// epoch (the first is warm-up), aggregate steady throughput and the
// collocated speed-up over the jobs alone, mean SM activity and GPU
// utilization, memory, PCIe receive traffic, power and energy per epoch; for
// one or several experiments, per case and, across repetitions, median and
// spread (min, max).
//
// "Steady" is the window in which the jobs ran together (W, see
// analysis/together.h); for jobs that ran one after another, the union over
// jobs of [end of epoch 1, end of last epoch]. Device means are over the
// samples inside it; energy is integrated over it (analysis/energy.h).
//
// Device metrics describe one GPU: the one the run's first placed job used
// (device 0 when no job was placed). Every figure comes from analysis/;
// computing reads the store and nothing else.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/run_summary.h"
#include "common/result.h"
#include "store/run_store.h"

namespace colo {

// Median and range of a set of values (repetitions of one case, say).
struct Spread {
  double median = 0;
  double min = 0;
  double max = 0;
  int count = 0;
};

// nullopt for an empty set; the median of an even count is the mean of the
// middle two.
std::optional<Spread> spread_of(std::vector<double> values);

// One device sample, its time in seconds since the run started.
struct SeriesPoint {
  double t_s = 0;
  std::optional<double> sm_active_pct;
  std::optional<double> gpu_util_pct;
  std::optional<uint64_t> memory_used_bytes;
  std::optional<double> power_w;
  std::optional<double> pcie_rx_mib_per_s;
};

struct JobMetrics {
  int64_t job_id = 0;
  std::string name;               // "resnet26#3"
  std::string model;              // the name without a trailing "#N": "resnet26"
  std::string state;              // JobState as text
  std::optional<double> start_s;  // since the run started
  std::optional<double> end_s;
  std::optional<double> duration_s;
  int64_t epochs = 0;
  // End of epoch 2 minus end of epoch 1 (by epoch number when the events
  // carry one, else the first two epoch_end events in order).
  std::optional<double> second_epoch_s;
  std::optional<double> steady_throughput_per_s;  // samples/s over epochs 2..n
  std::optional<uint64_t> peak_memory_bytes;      // the job's processes, summed, at peak
  std::optional<int> device;
  std::vector<EpochEnd> epoch_ends;           // its last attempt's, oldest first
  std::map<std::string, std::string> params;  // its grid values
  std::vector<MetricSeries> metrics;          // what it learned (training_metrics.h)
  std::optional<UnixMillis> started_ms;       // its last attempt's start
};

struct RunMetrics {
  RunRow run;
  int device = 0;  // the GPU the device metrics describe
  std::vector<JobMetrics> jobs;
  std::optional<double> makespan_s;               // first job start to last job end
  std::optional<double> throughput_per_s;         // all samples / makespan
  std::optional<double> steady_throughput_per_s;  // RunSummary's: the jobs' rate in W
  std::optional<int64_t> baseline_run_id;         // exclusive run of the same jobs
  std::optional<double> steady_speedup_vs_exclusive;
  std::string steady_note;                    // why there is no steady speed-up, when there is none
  std::optional<double> mean_second_epoch_s;  // mean over jobs that have one
  std::optional<double> max_second_epoch_s;
  // Steady interval, seconds since the run started: W, else the earliest
  // end of a first epoch to the latest end of a last epoch.
  std::optional<double> steady_start_s;
  std::optional<double> steady_end_s;
  bool together = false;                     // the steady interval is W
  std::optional<double> mean_sm_active_pct;  // samples inside the steady intervals
  std::optional<double> mean_gpu_util_pct;
  std::optional<double> mean_power_w;
  std::optional<double> mean_pcie_rx_mib_per_s;
  std::optional<uint64_t> peak_memory_bytes;             // device, whole run
  std::optional<uint64_t> summed_job_peak_memory_bytes;  // sum of the jobs' own peaks
  std::optional<uint64_t> memory_total_bytes;            // the GPU's memory
  // Energy over the steady intervals: the driver's energy counter where every
  // sample has it, else power integrated over time (trapezoids).
  std::optional<double> steady_energy_j;
  double steady_epochs = 0;                  // job-epochs trained inside the steady interval
  std::optional<double> energy_per_epoch_j;  // steady energy / steady epochs
  std::vector<SeriesPoint> series;           // every sample of `device`, oldest first
};

// Reads the run and analyses it (analysis/stored.h: with its comparisons).
Result<RunMetrics> compute_run_metrics(RunStore& store, int64_t run_id);

// The same from data already read (for tests and for callers holding it).
RunMetrics run_metrics_from(const RunSummary& summary, const std::vector<DeviceSample>& samples);

struct CaseMetrics {
  CaseRow row;
  std::optional<RunMetrics> run;  // present when the case ran and its run exists
  // The collocated speed-up (analysis/together.h) against the solo rates of
  // its experiment's cases that ran the same models alone, else the other
  // experiments' (solo_rates_by_model).
  std::optional<double> speedup;
  std::string speedup_note;  // why there is none, when there is none
};

// The repetitions of one configuration and their median and spread.
struct CaseGroup {
  std::string workload;
  std::string models;
  std::string mechanism;
  int degree = 1;
  std::vector<size_t> cases;  // indices into ExperimentMetrics::cases, by repetition
  // "ok" when at least one repetition ran ok; otherwise the status of the
  // first repetition ("does_not_fit", "not_run", "failed", ...) and its reason.
  std::string status;
  std::string reason;
  int ok_repetitions = 0;
  std::optional<size_t> representative;  // first ok repetition: its time series are shown
  // The degree-1 group speed-ups are measured against: same workload and
  // models, preferring mechanism exclusive, then naive, then this group's own.
  std::optional<size_t> baseline;        // index into ExperimentMetrics::groups
  std::optional<Spread> second_epoch_s;  // per repetition: mean over its jobs
  std::optional<Spread> steady_throughput_per_s;
  std::optional<Spread> speedup;
  std::optional<Spread> makespan_s;
  std::optional<Spread> sm_active_pct;
  std::optional<Spread> gpu_util_pct;
  std::optional<Spread> peak_memory_bytes;
  std::optional<Spread> summed_job_peak_memory_bytes;
  std::optional<Spread> mean_power_w;
  std::optional<Spread> pcie_rx_mib_per_s;
  std::optional<Spread> energy_per_epoch_j;
};

struct ExperimentMetrics {
  // The experiment; for a report over several, a row standing for all of
  // them (first id, suites joined with " + ", the GPU name when they share one).
  ExperimentRow experiment;
  std::vector<ExperimentRow> experiments;  // every experiment reported, in the order given
  std::vector<CaseMetrics> cases;          // as the store lists them
  // Ordered by workload (small, medium, large, mixed, recsys, then others in
  // order of appearance), models, mechanism (exclusive, naive, mps, mig,
  // others), degree.
  std::vector<CaseGroup> groups;
  std::optional<uint64_t> memory_total_bytes;  // from any run's samples
};

// Reads the experiment, its cases and the runs of the cases that ran.
Result<ExperimentMetrics> compute_experiment_metrics(RunStore& store, int64_t experiment_id);

// The same over several experiments as one (`colo report exp:A exp:B`):
// their cases together, grouped across experiments.
Result<ExperimentMetrics> compute_experiments_metrics(RunStore& store,
                                                      const std::vector<int64_t>& experiment_ids);

// Groups cases (with their runs' metrics already filled in) into repetitions,
// sets baselines, speed-ups and spreads.
ExperimentMetrics experiment_metrics_from(ExperimentRow experiment, std::vector<CaseMetrics> cases);
ExperimentMetrics experiment_metrics_from(std::vector<ExperimentRow> experiments,
                                          std::vector<CaseMetrics> cases);

// Each model's solo rate in these cases (those of `experiment_id` only, when
// given): the median over the jobs of that model in ok cases whose jobs ran
// alone (mechanism exclusive, serial included, or degree 1), exclusive ones
// preferred when there are any.
std::map<std::string, SoloRate> solo_rates_by_model(
    const std::vector<CaseMetrics>& cases, std::optional<int64_t> experiment_id = std::nullopt);

// Display order helpers shared by the figures: lower first.
int workload_rank(const std::string& workload);
int mechanism_rank(const std::string& mechanism);

}  // namespace colo
