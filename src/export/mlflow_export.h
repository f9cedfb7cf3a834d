// `colo export mlflow`: runs and experiments of the run store written as an
// MLflow file store (the layout of mlflow_format.h), which
// `mlflow ui --backend-store-uri DIR` shows; MLflow need not be installed
// where colo runs.
//
// Each target (a colo run, or a colo experiment with the runs of its cases)
// becomes one MLflow experiment, and each of its jobs one MLflow run:
//   params   the job's grid values;
//   tags     mlflow.runName (the job's name), mlflow.user (who ran it: a
//            service job's submitter, else the run's owner), mlflow.source.name
//            (the job file), colo.submission (RUN/SUB, a service job's) and
//            colo.submission_name, colo.resumes (the attempt it resumes), and
//            colo.run_id, colo.job_id, colo.state,
//            colo.reason, colo.mechanism, colo.backend, colo.simulated,
//            colo.gpu (the index, a gang's "0,1"), colo.gpu_name,
//            colo.mig_instance, colo.group, colo.attempts, colo.host,
//            colo.command, colo.log_path; for an experiment also
//            colo.experiment_id and colo.case;
//   artifacts the logs of its attempts (log/, at most max_log_bytes of each,
//            never through a link) and its profiling windows' files (profile/);
//   metrics  what the job reported (the metrics of its last attempt's
//            progress events, after those of the attempts it resumes as one
//            history, analysis/lineage.h: at its step, else its epoch, else
//            step 0); the
//            GPU readings colo took while it ran (every attempt), under the
//            names MLflow's own system-metrics
//            logger gives them (system/gpu_<index>_utilization_percentage,
//            _memory_usage_megabytes, _memory_usage_percentage,
//            _power_usage_watts; not _power_usage_percentage: the store
//            does not keep the GPU's power limit) and colo's own
//            (system/gpu_<index>_sm_active_percentage, and
//            system/gpu_<index>_job_memory_usage_megabytes: this job's
//            processes alone, where memory_usage is every job's on the GPU);
//            and colo's summary of it (colo/epochs, colo/duration_seconds,
//            colo/mean_epoch_seconds, colo/samples_per_second,
//            colo/steady_samples_per_second, colo/peak_gpu_memory_megabytes,
//            colo/mean_sm_active_percentage, colo/mean_gpu_utilization_percentage,
//            colo/energy_joules, colo/normalized_rate, colo/slowdown: one point
//            each, at step 0, where analysis/ has the figure).
//
// Ids are derived from what they stand for (the colo run's or experiment's
// id, start and host; the job's id), so exporting the same target again
// gives the same ids and the same bytes. The contract on DIR:
//   - DIR must be absent, empty, or an MLflow file store (0/meta.yaml or
//     .trash/ in it); colo adds the Default experiment (0) and .trash/ when
//     missing, as MLflow would.
//   - An experiment's folder that an earlier export of the same target wrote
//     (its colo.source tag says so) is replaced whole: the new one is written
//     beside it, then swapped in by renaming, so a reader sees the old one or
//     the new one. A folder of that id that holds anything else is refused.
//   - Every check is made before anything is written (plan_mlflow_export), so
//     a refused export writes nothing.
// Names MLflow would refuse are made valid (mlflow_key: other characters
// become '_'), values that are not UTF-8 get U+FFFD, param and tag values are
// cut to MLflow's limits.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "store/run_store.h"

namespace colo {

// A run or an experiment to export.
struct MlflowTarget {
  enum class Kind {
    kRun,         // one `colo run` (or a service's run)
    kExperiment,  // one `colo bench`, with the runs of its cases
  };
  Kind kind = Kind::kRun;
  int64_t id = 0;  // 0: the most recent of its kind
  // A run's: only the jobs of this submission (RUN/SUB, or a submission's
  // name), as an experiment of its own. `id` is then the run holding them.
  std::optional<int64_t> submission;
};

// "ID" or "run:ID" (a run), "exp:ID" (an experiment), "last" or "last-run"
// (the most recent run), "last-exp" (the most recent experiment). Errors say
// which forms are accepted.
Result<MlflowTarget> parse_mlflow_target(std::string_view text);

struct MlflowExportOptions {
  // The MLflow file store's root (what --backend-store-uri names). Required;
  // made absolute against the current directory.
  std::string dir;
  // user_id and the mlflow.user tag of a job whose submitter the store did
  // not record (a run recorded before colo kept its owner); "": none. A
  // service job's is its submitter, a `colo run` job's the run's owner.
  std::string user;
  // When not empty, every job's user, whatever the store recorded (--user).
  std::string user_override;
  // At most this much of each log is copied into a run's artifacts/log/ (its
  // end; a note beside it says what was left out).
  uint64_t max_log_bytes = uint64_t{64} << 20;
  // GPU readings are averaged over windows this long, as MLflow's own logger
  // does (10 s is its default), each window one point: its last reading's
  // time, step = windows since the job started. 0: every reading is a point,
  // step = its number. Values are rounded to 0.1, as MLflow's are.
  int64_t system_interval_ms = 10'000;
  // The creation time of the Default experiment (0) when colo creates it.
  UnixMillis now_ms = 0;
  // Told each step as it starts ("run 12: job 3 of 40"), for a progress
  // line; may be empty.
  std::function<void(const std::string&)> progress;
  // The profile directory of the job whose log is at a path (the layout is
  // run/log_layout.h's); its files (traces, summaries, nsys and ncu reports)
  // become the run's artifacts under profile/. Empty: none exported.
  std::function<std::string(const std::string& log_path)> profile_dir_of;
};

// One MLflow experiment the export will write or wrote.
struct MlflowExportedExperiment {
  std::string id;
  std::string name;    // "colo run 12: jobs.toml" (or its name), "colo experiment 3: paper-uniform"
  std::string note;    // the run's note (`colo run --note`), first in the experiment's note
  std::string path;    // DIR/<id>
  std::string source;  // what it stands for (its colo.source tag)
  bool replaces = false;           // an earlier export of it is there and will be replaced
  MlflowTarget target;             // resolved: id never 0
  std::vector<int64_t> runs;       // the colo runs whose jobs it holds
  std::vector<std::string> cases;  // for an experiment, the case of each of `runs`
  std::set<int64_t> jobs_only;     // a submission's: its jobs rows there (else every job)
  UnixMillis created_ms = 0;
  UnixMillis updated_ms = 0;
  int jobs = 0;               // MLflow runs written (after writing)
  int64_t metric_points = 0;  // metric lines written (after writing)
};

// What would be written: targets resolved, DIR and every experiment folder
// checked. Nothing is written.
struct MlflowExportPlan {
  std::string dir;  // absolute
  bool create_default_experiment = false;
  std::vector<MlflowExportedExperiment> experiments;
};

// Resolves the targets in the store and checks DIR against the contract
// above. Errors name the run, experiment or folder and what to do: no such
// run, DIR a file or a directory that is not an MLflow store, a folder of the
// same id holding another experiment.
Result<MlflowExportPlan> plan_mlflow_export(RunStore& store,
                                            const std::vector<MlflowTarget>& targets,
                                            const MlflowExportOptions& options);

struct MlflowExportOutcome {
  std::string dir;  // absolute
  std::vector<MlflowExportedExperiment> experiments;
  int runs = 0;               // MLflow runs (colo jobs) written
  int64_t metric_points = 0;  // metric lines written
};

// Writes what `plan` says. Errors (DIR not writable, a full disk) name the
// file; the experiment being written is then left as it was.
Result<MlflowExportOutcome> write_mlflow_export(RunStore& store, const MlflowExportPlan& plan,
                                                const MlflowExportOptions& options);

// plan_mlflow_export, then write_mlflow_export.
Result<MlflowExportOutcome> export_mlflow(RunStore& store, const std::vector<MlflowTarget>& targets,
                                          const MlflowExportOptions& options);

}  // namespace colo
