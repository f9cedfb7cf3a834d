// What the subcommands share, so that it is the same everywhere: the command
// line's own lines (version, footer, mistyped commands and options), the
// backend and GPU flags, opening the backend and the store, the mechanism's
// options, and what `simulate` and `slurm submit` plan from.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/profiles.h"
#include "common/clock.h"
#include "common/result.h"
#include "common/target_syntax.h"
#include "gpu/gpu_backend.h"
#include "gpu/sim_backend.h"
#include "jobs/job_file.h"
#include "run/stall_watch.h"
#include "sched/interference.h"
#include "sharing/mechanism.h"
#include "simulate/sim_jobs.h"
#include "simulate/simulator.h"
#include "slurm/allocation.h"
#include "store/run_store.h"

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace colo {

// "colo 0.1.0": what `colo --version` prints.
std::string version_line();
// What `colo --help` ends with: the exit codes, where the docs are.
std::string top_level_footer();

// "unknown command 'sho' (did you mean 'show'?)...", when the first word of
// `args` that is not a command's name stands where `app` (or the command
// named before it) needs one; nullopt otherwise (CLI11 then parses).
std::optional<std::string> unknown_command(const CLI::App& app,
                                           const std::vector<std::string>& args);

// After CLI11 refused options nobody takes (CLI::ExtrasError): "colo run:
// unknown option '--polcy' (did you mean '--policy'?)...", one line for
// each, from the command that was given them; nullopt when none is an
// option (CLI11's message stands).
std::optional<std::string> unknown_options(const CLI::App& app);

// CLI11's `message` for the command that was given it: "colo rm: RUN is
// required; `colo rm --help` shows how".
std::string parse_error_line(const CLI::App& app, const std::string& message);

// How colo's flags name GPUs, the same in every subcommand:
//   --gpu N          one GPU, by index (as `colo devices` lists them)
//   --gpus 0,2       several GPUs, by index
//   --gpu-count N    how many GPUs (simulated and planned machines)
//   --gpu-model M    a GPU model: H200, H100, A100-40GB (H200-141GB, H100-80GB
//                    name the same models)

// --backend, --gpu-model (the simulated GPU; --sim-gpu is its old spelling),
// --sim-devices.
struct BackendFlags {
  std::string backend = "nvml";
  std::string sim_gpu = "H200";
  int sim_devices = 1;
};

// `model_flag`: false where the subcommand has a --gpu-model of its own
// (which then also sets the simulated GPU's model).
void add_backend_flags(CLI::App& cmd, BackendFlags& flags, bool model_flag = true);

// Adds a hidden option `old_name` that sets `target` like `new_name` does,
// saying on stderr that it is deprecated.
CLI::Option* add_deprecated_alias(CLI::App& cmd, const std::string& old_name,
                                  const std::string& new_name, std::string& target);
CLI::Option* add_deprecated_alias(CLI::App& cmd, const std::string& old_name,
                                  const std::string& new_name, int& target);

// A check for whole-number options: "--limit: must be a whole number of at
// least 1, not '0'", then `hint` when given.
inline constexpr int64_t kNoMax = std::numeric_limits<int32_t>::max();
CLI::Validator whole_number(int64_t min, int64_t max = kNoMax, const std::string& hint = "");

// The check of --gpu N: a GPU index, with an answer for those who pass a model.
CLI::Validator gpu_index();

// Sets the line `colo SUB --help` ends with: "Example:\n  <example>".
void set_example(CLI::App& cmd, const std::string& example);

// Whether what colo writes to `fd` may redraw itself (a live table, a
// progress line): a terminal whose TERM is set and not "dumb".
bool can_redraw(int fd);

// Opens the backend the flags name ($COLO_NVML_LIBRARY overrides the NVML
// library), and says on stderr when its numbers will be simulated.
Result<std::unique_ptr<GpuBackend>> open_backend(const BackendFlags& flags, Clock& clock);

// A backend and the devices it found.
struct OpenedGpu {
  std::unique_ptr<GpuBackend> backend;
  std::vector<DeviceInfo> devices;
};

// open_backend, then the device list; either step's error is returned.
Result<OpenedGpu> open_gpu(const BackendFlags& flags, Clock& clock);

// Where the mechanisms keep their state (<state dir>/mps, /mig) and which MPS
// control program they run ($COLO_MPS_CONTROL overrides it, for tests).
MechanismOptions default_mechanism_options();

// The mechanism `flag` names, else the job file's `from_file`, else the
// default for this backend (said on stderr); nullopt after saying what is
// wrong with the name.
std::optional<MechanismKind> choose_mechanism(const std::string& flag,
                                              const std::optional<std::string>& from_file,
                                              const std::string& file_path,
                                              const GpuBackend& backend,
                                              const MechanismOptions& options);

// A duration flag's value in milliseconds, at least `min_ms`; nullopt after
// saying on stderr what is wrong with it ("colo: --interval: must be at least
// 100ms", then " (`why`)" when given).
std::optional<int64_t> duration_flag(std::string_view flag, const std::string& text, int64_t min_ms,
                                     std::string_view why = "");

// --stall-timeout (colo run, colo serve): empty leaves `stall` adaptive, "off"
// turns it off, a duration is the bound of every job that sets none. False
// after saying on stderr what is wrong.
bool stall_timeout_flag(const std::string& text, StallOptions& stall);
// Its help text, the same for both commands.
inline constexpr const char* kStallTimeoutHelp =
    "how long a job that sets no stall_timeout may report no progress before colo stops it as "
    "stalled and runs it again (\"off\": never); default: 3x its longest epoch or gap between "
    "reports, plus 60s (docs/reliability.md)";

// What a job may leave on disk (colo run, colo serve; docs/serve.md, Disk):
// --max-log-size SIZE ("0": no cap) and --keep-checkpoints AGE (a job that
// ended ok keeps its checkpoint directory that long; "0": removed at once).
struct DiskFlags {
  std::string max_log_size = "64MiB";
  std::string keep_checkpoints = "0";
};
void add_disk_flags(CLI::App& command, DiskFlags& flags);
// Their values; false after saying on stderr what is wrong.
bool disk_flags(const DiskFlags& flags, uint64_t& max_log_bytes, int64_t& keep_checkpoints_ms);

// --name, --tag KEY=VALUE (repeatable), --note: what a person calls a run
// (colo run, colo label) or a submission (colo submit).
struct LabelFlags {
  std::optional<std::string> name;
  std::vector<std::string> tags;
  std::optional<std::string> note;
};
void add_label_flags(CLI::App& cmd, LabelFlags& flags);
// `base` with what the flags set: a name, tags (KEY= removes KEY:
// changed_tags()), a note. An error names the flag at fault.
Result<RunLabel> apply_label_flags(const LabelFlags& flags, RunLabel base);
// What the flags give, as they give it: the name ("" when none), each tag
// (KEY= with its empty value, which removes KEY from what it changes), the
// note ("" when none): what `colo submit` sends, for the service to apply
// over a resumed submission's label.
Result<RunLabel> given_label(const LabelFlags& flags);

// What a target names in the store (common/target_syntax.h): a run, or one
// submission's part of a run.
struct StoredTarget {
  int64_t run_id = 0;  // 0: the most recent run (or, for a submission, the run holding its jobs)
  std::optional<SubmissionRow> submission;
};
// Reads `text` as one of `forms` (a range is not taken here) and finds what
// it names: "" or "last" the most recent run, a number that run, RUN/SUB that
// submission, a name the caller's newest run of that name, else (where
// `forms` takes submissions) their newest submission of that name; another
// user's only by its id. An error names `text` and the forms taken.
Result<StoredTarget> resolve_stored_target(RunStore& store, const std::string& text,
                                           const TargetForms& forms);

// --qos CLASS and --min-speed X (colo run, colo submit): every job's class
// and floor over what the job file says (jobs/job_qos.h, docs/policy.md).
struct QosFlags {
  std::optional<std::string> qos;
  std::optional<double> min_speed;
  bool given() const { return qos || min_speed; }
};
void add_qos_flags(CLI::App& cmd, QosFlags& flags);
// Gives every job of `file` the class and floor the flags say (nothing when
// none is given). An error names the flag at fault and what to write.
Status apply_qos_flags(const QosFlags& flags, JobFile& file);

// Opens the existing store that `db_flag` names (default_db_path() when empty)
// for reading: colo runs, show and report. When it can only be read (a
// read-only or full file system), says so on stderr and reads it anyway.
// Stops what colos that died left running (run/leftovers.h), saying so on
// stderr.
Result<std::unique_ptr<RunStore>> open_store_for_reading(const std::string& db_flag);

// The profiles the store at `db` (default: the default store) learned, and
// its measured collocations (of measured, not simulated, profiles) into
// `collocations`; none, with a warning on stderr, when it cannot be read;
// none when `skip` or when there is no store yet.
std::vector<LearnedProfile> stored_profiles(const std::string& db, bool skip,
                                            std::vector<Collocation>& collocations);

// The Slurm allocation this process runs in, into `out` (nullopt outside
// one), its warning, if any, printed on stderr. False, with the reason
// printed, when the environment names an allocation that cannot be read.
bool read_slurm_allocation(const EnvLookup& env, std::optional<SlurmAllocation>& out);

// The profiles of the store at `path`, opened read-only (`colo run
// --profiles-from`); none, with a warning on stderr naming the store and what
// went wrong, when it cannot be read: the run goes on and measures instead.
std::vector<LearnedProfile> profiles_from(const std::string& path);

// A line on stderr that redraws itself while long work goes on ("colo:
// report: rendering PNG 3 of 12"), only where stderr can redraw
// (can_redraw); elsewhere, and when piped, it prints nothing. Cleared by
// clear() and on destruction. Not thread-safe.
class ProgressLine {
 public:
  explicit ProgressLine(std::string prefix);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  void show(const std::string& text);
  void clear();

 private:
  std::string prefix_;
  bool enabled_;
  bool shown_ = false;
};

// What `colo simulate` and `colo slurm submit` plan from: the job file, the
// GPU model, its jobs as the simulator sees them (profiles from the store
// unless `no_store`), and one node of `gpus` of those GPUs.
struct PlanningInput {
  JobFile file;
  SimGpuModel model;
  SimJobSet set;
  SimOptions node;
  std::optional<int64_t> deadline_ms;  // --deadline, when given
};

// Reads and checks the flags' inputs; nullopt after saying on stderr what is
// wrong (the caller exits with kExitBadInput).
std::optional<PlanningInput> planning_input(const std::string& job_file,
                                            const std::string& gpu_model, int gpus,
                                            const std::string& deadline, const std::string& db,
                                            bool no_store);

}  // namespace colo
