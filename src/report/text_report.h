// Text and JSON renderings of what the run store holds, for `colo runs` and
// `colo show`. Pure functions: they format what they are given and do no
// I/O. Absent values are shown as "-" (text) or null (JSON). Wall-clock times
// are shown in the process's local time zone (TZ).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/run_summary.h"
#include "store/run_store.h"

namespace colo {

// One line per run, newest first as given: id, name and tags (when some
// run or submission has them), start (local date and time), state,
// mechanism, backend (with "(simulated)"), job count, job file; under a
// run, a line per submission of it in `submissions` (by run id: a
// service's named ones), "RUN/SUBMISSION".
std::string format_runs_table(
    const std::vector<RunRow>& runs,
    const std::map<int64_t, std::vector<SubmissionRow>>& submissions = {});

// A header line naming the run, a SIMULATED banner when the numbers come
// from the simulated GPU, one row per job (with its slowdown while the jobs
// ran together), then the run's totals, the window in which the jobs ran
// together, and the speed-ups: end to end over the exclusive run of the same
// jobs, steady over the jobs' solo rates (or why there is none, or how to
// get one).
std::string format_run_summary(const RunSummary& summary);

// A protected job's notes (format_run_summary() includes them): its floor,
// and against it, over its steady epochs (analysis/floor_history.h), the
// median, lowest and latest speed of solo, the share and time of its steady
// time below the floor, and the speeds of its last kFloorEpochsShown steady
// epochs; or why they cannot be judged. "" for other jobs.
inline constexpr size_t kFloorEpochsShown = 12;
std::string format_floor_note(const JobSummary& job);

// "What the jobs learned": one row per job with its grid parameters and the
// last and best value of each training metric (training_metrics.h); "" when
// the run's jobs have neither. format_run_summary() includes it.
std::string format_learning_table(const RunSummary& summary);

// `colo show --csv`: one RFC 4180 row per job: its fields, its grid
// parameters (one column each) and each metric's last and best value
// (<metric>_last, <metric>_best); empty cells where absent.
std::string format_jobs_csv(const RunSummary& summary);

// `colo show --json`: every field of the summary, units in the key names,
// absent values as null.
nlohmann::json to_json(const RunSummary& summary);
// A run's row; "outcomes" its jobs by outcome (to_json(JobCounts)).
nlohmann::json to_json(const RunRow& run);
// A submission to a service: id, name, tags, note, owner, submitted_ms, jobs, job_file, outcomes.
nlohmann::json to_json(const SubmissionRow& sub);
// Jobs by outcome (jobs/job_outcome.h): ok, stopped_early, failed, cancelled,
// cancelled_before_start, unfinished.
nlohmann::json to_json(const JobCounts& counts);

}  // namespace colo
