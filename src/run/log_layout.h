// Where a run keeps its jobs' files, the one place that knows the layout:
//
//   colo run:    <logs root>/<store key>/<run id>/<NNN>-<job name>.log
//                (.progress.jsonl, .checkpoint/, later attempts .attempt<N>.log)
//   colo serve:  <logs root>/<store key>/jobs/<job id>-<job name>.log,
//                .../checkpoints/<job id>/, .../profiles/<job id>/,
//                .../data/<uid>/ (a submitter's shared loaders),
//                .../secrets/<job id>.json
//
// The store key keeps stores that share a state directory apart (run ids and
// service job ids are per store). `colo rm` removes a run's logs through remove_run_logs().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace colo {

// The directory of one `colo run`'s job files; `logs_root` empty: <state dir>/runs.
std::string run_logs_dir(const std::string& logs_root, const std::string& store_path,
                         int64_t run_id);
// A job's file stem in that directory (`index`: its place in the job file, from 0).
std::string run_job_stem(const std::string& logs_dir, size_t index, const std::string& name);
// The directory of one service's job files (`service_dir` below); `logs_root`
// empty: <state dir>/serve.
std::string service_logs_dir(const std::string& logs_root, const std::string& store_path);
// A service job's file stem and checkpoint directory, in `service_dir`.
std::string service_job_stem(const std::string& service_dir, int64_t job_id,
                             const std::string& name);
std::string service_checkpoint_dir(const std::string& service_dir, int64_t job_id);
// A service job's profile directory (COLO_PROFILE_DIR), in `service_dir`;
// a `colo run` job's is its stem + ".profile".
std::string service_profile_dir(const std::string& service_dir, int64_t job_id);
// The directory of a submitter's shared data loaders (their statistics and
// ring records), in `service_dir`.
std::string service_data_dir(const std::string& service_dir, int64_t uid);
// The directories of `service_dir` above each job's own files (jobs/,
// checkpoints/, profiles/, data/): a job run as its submitter passes through
// them (0711), and lists none.
std::vector<std::string> service_parent_dirs(const std::string& service_dir);
// The checkpoint or profile directory of the job whose log (of any attempt)
// is `log_path`, in either layout above; "" when the path is in neither.
enum class JobDir { kCheckpoint, kProfile };
std::string job_dir_of_log(const std::string& log_path, JobDir which);
// A `colo run` job's checkpoint or profile directory, beside its files
// (<stem>.checkpoint, <stem>.profile).
std::string run_job_dir(const std::string& stem, JobDir which);

// The log and progress file of attempt `attempt` of the job whose file stem
// is `stem` (the first attempt's: <stem>.log, later ones' <stem>.attempt<N>.log).
std::string attempt_log_path(const std::string& stem, int attempt);
std::string attempt_progress_path(const std::string& stem, int attempt);
// Where attempt `attempt`'s nsys or ncu (`tool`) writes its report, in the
// job's profile directory (the tool adds its own extension).
std::string profiler_output(const std::string& profile_dir, const std::string& tool, int attempt);
// Removes every file of the job whose log (of any attempt) is `log_path`,
// in either layout above: the log and progress file of each of its
// `attempts`, its checkpoint and profile directories, never following a
// link (they may be another user's: common/remove_tree.h). Returns how many
// were there; an error names the first that could not be removed.
Result<int64_t> remove_job_files(const std::string& log_path, int attempts);
// Removes the files of a removed run: its directory, when every log is in a
// directory named after the run (the layout above), else each job's files
// (remove_job_files; a log outside the layout alone).
void remove_run_logs(int64_t run_id, const std::vector<std::string>& log_paths);

}  // namespace colo
