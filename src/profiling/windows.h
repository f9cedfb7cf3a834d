// A job's profiling windows (docs/profiling.md), as the Python client wrote
// them into its COLO_PROFILE_DIR: torch-summary-N.json beside
// torch-trace-N.json. Read back for `colo show`, and a request for one more
// window (`colo profile`).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/user_file.h"

namespace colo {

struct ProfileOp {
  std::string name;
  int64_t calls = 0;
  double self_us = 0;  // by the window's `sorted_by`: device time when the GPU ran it, else CPU
};

struct ProfileWindow {
  int window = 0;       // N, from 1 per job
  std::string trigger;  // "job file" or "colo profile"
  // What closed it: "steps", "duration", "epoch end", "forwards" (a window
  // of steps in a job that reports none, after as many forward passes of its
  // model), "no step" (a window of steps that saw none, after
  // no_step_bound_s) or "job end" (the job ended with it open); "" from a
  // client before it said.
  std::string closed_by;
  int64_t forwards = 0;                   // the model's forward passes it counted ("forwards")
  std::optional<double> no_step_bound_s;  // a window of steps: how long it waits for one
  double seconds = 0;                     // how long it was open
  int64_t steps = 0;                      // steps the job reported in it
  std::optional<double> rate_in;          // samples/s inside the window
  std::optional<double> rate_before;      // samples/s over the 30 s before it
  std::optional<double> rate_after;       // samples/s from its files written to the next report
  std::optional<double> written_s;        // how long writing its trace and summary took the job
  std::optional<double> gpu_busy_pct;     // the union of its kernels over the window
  std::optional<double> memcpy_us;
  std::string sorted_by;     // "self_device_us" or "self_cpu_us"
  std::string dir;           // the job's profile directory, which its summary was read from
  std::string trace_path;    // the Chrome trace (absolute)
  std::string kernels_path;  // its device spans on the wall clock (absolute; "" on a CPU)
  double started_s = 0;      // the window, in seconds since the Unix epoch
  double ended_s = 0;
  std::vector<ProfileOp> top;  // by self time, most first
};

// One summary file's text; `dir` makes its trace's path absolute. An error
// says what is missing.
Result<ProfileWindow> parse_profile_window(const std::string& text, const std::string& dir);

// A file that a summary names (a window's trace or kernel spans), opened
// under common/user_file.h's rule when it lies directly in the job's profile
// directory `dir` (the directory itself not reached through a link): the job
// wrote its summary, and a path leading elsewhere must not make colo read
// whatever colo may read. An error names the file: outside `dir`, missing, a
// link, not a regular file.
Result<UserFile> open_window_file(const std::string& dir, const std::string& path);

// What colo reads of a job's summaries, which the job writes (and colo, maybe
// as root, reads: common/user_file.h): one summary at most, and all of one
// job's (docs/profiling.md).
constexpr uint64_t kMaxProfileSummaryBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxProfileSummariesBytes = uint64_t{16} << 20;

// Every torch-summary-N.json in `dir`, by N (none when `dir` does not exist),
// read under common/user_file.h's rule within the bounds above; a summary
// that is a link, not a regular file, over a bound or does not parse is left
// out and named in `problems`.
std::vector<ProfileWindow> read_profile_windows(const std::string& dir,
                                                std::vector<std::string>* problems);

// `colo show`'s section: for each job with windows, each window's figures,
// the rate inside against outside (inside/outside: below 1 is what
// profiling cost), and its top `ops`.
struct JobWindows {
  std::string job;
  std::vector<ProfileWindow> windows;
};
std::string format_profile_windows(const std::vector<JobWindows>& jobs, size_t ops = 5);

// The same as JSON for `colo show --json`: {job: [{window, trigger,
// seconds, steps, rate_in, rate_before, gpu_busy_pct, memcpy_us, sorted_by,
// trace, top: [{name, calls, self_us}]}]}.
nlohmann::json profile_windows_json(const std::vector<JobWindows>& jobs);

// Asks the running job whose profile directory is `dir` for a torch window
// of `duration_s` seconds or `steps` steps (request.json, which the client
// takes within a second of its next report). An error names the directory.
Status request_profile_window(const std::string& dir, std::optional<double> duration_s,
                              std::optional<int64_t> steps);

}  // namespace colo
