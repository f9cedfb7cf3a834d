#include "cli/cli_common.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string_view>

#include "analysis/stored.h"
#include "common/paths.h"
#include "common/text.h"
#include "common/units.h"
#include "gpu/open_backend.h"
#include "jobs/job_qos.h"
#include "jobs/job_signature.h"
#include "run/leftovers.h"
#include "run/run_controller.h"

namespace colo {

void add_backend_flags(CLI::App& cmd, BackendFlags& flags, bool model_flag) {
  // $COLO_BACKEND is the default; open_backend() says when it names none.
  if (const char* env = std::getenv("COLO_BACKEND"); env != nullptr && *env != '\0')
    flags.backend = env;
  cmd.add_option(
         "--backend", flags.backend,
         "nvml: the real GPU through the driver; sim: a simulated GPU (numbers are not measured); "
         "auto: nvml, or sim when no driver is found; default: $COLO_BACKEND, else nvml")
      ->check(CLI::IsMember({"nvml", "sim", "auto"}))
      ->capture_default_str();
  if (model_flag) {
    cmd.add_option("--gpu-model", flags.sim_gpu,
                   "GPU model the simulated backend imitates (H200, H100, A100-40GB)")
        ->capture_default_str();
  }
  add_deprecated_alias(cmd, "--sim-gpu", "--gpu-model", flags.sim_gpu);
  cmd.add_option("--sim-devices", flags.sim_devices,
                 fmt::format("number of simulated GPUs (up to {})", kMaxSimDevices))
      ->check(whole_number(1, kMaxSimDevices))
      ->capture_default_str();
}

namespace {

template <typename T>
CLI::Option* deprecated_alias(CLI::App& cmd, const std::string& old_name,
                              const std::string& new_name, T& target) {
  return cmd.add_option(old_name, target, "deprecated: " + new_name)
      ->group("")
      ->each([old_name, new_name](const std::string& value) {
        std::cerr << fmt::format("colo: note: {} is deprecated; write {} {}\n", old_name, new_name,
                                 value);
      });
}

}  // namespace

CLI::Option* add_deprecated_alias(CLI::App& cmd, const std::string& old_name,
                                  const std::string& new_name, std::string& target) {
  return deprecated_alias(cmd, old_name, new_name, target);
}

CLI::Option* add_deprecated_alias(CLI::App& cmd, const std::string& old_name,
                                  const std::string& new_name, int& target) {
  return deprecated_alias(cmd, old_name, new_name, target);
}

CLI::Validator whole_number(int64_t min, int64_t max, const std::string& hint) {
  return CLI::Validator(
      [min, max, hint](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc() && ptr == end && value >= min && value <= max) return "";
        std::string range = max == kNoMax ? fmt::format("of at least {}", min)
                                          : fmt::format("from {} to {}", min, max);
        return fmt::format("must be a whole number {}, not '{}'{}", range, text,
                           hint.empty() ? "" : " (" + hint + ")");
      },
      max == kNoMax ? fmt::format(">={}", min) : fmt::format("{}..{}", min, max));
}

CLI::Validator gpu_index() {
  return whole_number(0, 1023,
                      "a GPU index as `colo devices` lists them; a GPU model is --gpu-model");
}

void set_example(CLI::App& cmd, const std::string& example) {
  cmd.footer("Example:\n  " + example);
}

std::optional<std::string> unknown_command(const CLI::App& app,
                                           const std::vector<std::string>& args) {
  const CLI::App* at = &app;
  std::string path = "colo";
  for (const std::string& word : args) {
    // An option (and whatever value it takes) ends what can be told here.
    if (word.empty() || word[0] == '-') return std::nullopt;
    const std::vector<const CLI::App*> subs =
        at->get_subcommands([](const CLI::App*) { return true; });
    auto named = std::find_if(subs.begin(), subs.end(),
                              [&](const CLI::App* s) { return s->check_name(word); });
    if (named != subs.end()) {
      at = *named;
      path += " " + at->get_name();
      continue;
    }
    if (at->get_require_subcommand_min() == 0) return std::nullopt;  // an argument
    std::vector<std::string> names;
    for (const CLI::App* s : subs) names.push_back(s->get_name());
    return fmt::format("{}: unknown command '{}'{}; `{} --help` lists them", path, word,
                       did_you_mean(word, names), path);
  }
  return std::nullopt;
}

namespace {

// The words that name the deepest command given (`colo mig plan`).
std::string command_path(const CLI::App& app) {
  std::string path = "colo";
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path += " " + at->get_name();
  }
  return path;
}

}  // namespace

std::string parse_error_line(const CLI::App& app, const std::string& message) {
  const std::string path = command_path(app);
  return fmt::format("{}: {}; `{} --help` shows how", path, message, path);
}

std::optional<std::string> unknown_options(const CLI::App& app) {
  const CLI::App* at = &app;
  std::string path = "colo";
  while (at->remaining(false).empty()) {
    const std::vector<CLI::App*> chosen = at->get_subcommands();
    if (chosen.empty()) return std::nullopt;
    at = chosen.front();
    path += " " + at->get_name();
  }
  std::vector<std::string> names;
  for (const CLI::Option* o : at->get_options()) {
    for (const std::string& name : o->get_lnames()) names.push_back("--" + name);
  }
  std::string lines;
  for (const std::string& word : at->remaining(false)) {
    if (!word.starts_with("--")) continue;
    const std::string flag = word.substr(0, word.find('='));
    lines += fmt::format("{}{}: unknown option '{}'{}; `{} --help` lists them",
                         lines.empty() ? "" : "\n", path, flag, did_you_mean(flag, names), path);
  }
  if (lines.empty()) return std::nullopt;
  return lines;
}

std::string version_line() { return std::string("colo ") + COLO_VERSION; }

std::string top_level_footer() {
  return "Exit codes:\n"
         "  0    ok\n"
         "  1    a job failed (or: no MIG layout exists, a merged sweep is incomplete)\n"
         "  2    bad input: the command line or a job file\n"
         "  3    environment: no driver, the store is unusable, a mechanism cannot start\n"
         "  4    not yet: Slurm still has shards queued or running (colo slurm collect, "
         "resubmit)\n"
         "  5    not permitted: colo serve refused you (another user's job, an admin's command)\n"
         "  130  cancelled (Ctrl-C)\n"
         "Listings take --json (shapes in docs/cli.md). `colo COMMAND --help` shows an example.\n"
         "Examples:\n"
         "  colo run examples/quickstart.toml --backend sim\n"
         "  colo runs\n"
         "  colo show last";
}

bool can_redraw(int fd) {
  const char* term = std::getenv("TERM");
  return isatty(fd) == 1 && term != nullptr && *term != '\0' && std::string_view(term) != "dumb";
}

Result<std::unique_ptr<GpuBackend>> open_backend(const BackendFlags& flags, Clock& clock) {
  if (flags.backend != "nvml" && flags.backend != "sim" && flags.backend != "auto") {
    // --backend is checked as it is parsed: this came from the environment.
    return Error(
        fmt::format("COLO_BACKEND='{}' is not a backend: set it to nvml, sim or auto, or unset it",
                    flags.backend));
  }
  BackendOptions options;
  options.kind = flags.backend == "sim"    ? BackendKind::kSim
                 : flags.backend == "auto" ? BackendKind::kAuto
                                           : BackendKind::kNvml;
  options.sim_model = flags.sim_gpu;
  options.sim_device_count = flags.sim_devices;
  options.sim_uuid_scope = absolute_path(default_state_dir());
  if (const char* lib = std::getenv("COLO_NVML_LIBRARY"); lib && *lib) options.nvml_library = lib;
  Result<std::unique_ptr<GpuBackend>> backend = open_gpu_backend(options, clock);
  if (backend.ok() && (*backend)->simulated()) {
    std::cerr << fmt::format(
        "colo: using the SIMULATED GPU backend ({}): GPU numbers are modelled, not measured\n",
        (*backend)->version());
  }
  return backend;
}

Result<OpenedGpu> open_gpu(const BackendFlags& flags, Clock& clock) {
  Result<std::unique_ptr<GpuBackend>> backend = open_backend(flags, clock);
  if (!backend.ok()) return backend.error();
  Result<std::vector<DeviceInfo>> devices = (*backend)->devices();
  if (!devices.ok()) return devices.error();
  return OpenedGpu{std::move(backend).value(), std::move(devices).value()};
}

MechanismOptions default_mechanism_options() {
  MechanismOptions options;
  options.state_dir = default_state_dir() + "/mps";
  if (const char* p = std::getenv("COLO_MPS_CONTROL"); p && *p) options.mps_control_program = p;
  return options;
}

std::optional<MechanismKind> choose_mechanism(const std::string& flag,
                                              const std::optional<std::string>& from_file,
                                              const std::string& file_path,
                                              const GpuBackend& backend,
                                              const MechanismOptions& options) {
  std::string name = !flag.empty() ? flag : from_file.value_or("");
  if (name.empty()) {
    MechanismKind kind = default_mechanism(backend, options.mps_control_program);
    std::cerr << fmt::format(
        "colo: mechanism {} (the default here; choose with --mechanism exclusive|naive|mps|mig)\n",
        to_string(kind));
    return kind;
  }
  Result<MechanismKind> parsed = parse_mechanism(name);
  if (!parsed.ok()) {
    std::cerr << "colo: " << (flag.empty() ? file_path + ": [run] mechanism: " : "--mechanism: ")
              << parsed.error().message() << "\n";
    return std::nullopt;
  }
  return *parsed;
}

std::optional<int64_t> duration_flag(std::string_view flag, const std::string& text, int64_t min_ms,
                                     std::string_view why) {
  Result<int64_t> ms = parse_duration_ms(text);
  if (ms.ok() && *ms >= min_ms) return *ms;
  std::string problem = !ms.ok()      ? ms.error().message()
                        : min_ms <= 1 ? std::string("must be longer than zero")
                                      : "must be at least " + format_duration_ms(min_ms);
  if (!why.empty()) problem += fmt::format(" ({})", why);
  std::cerr << "colo: " << flag << ": " << problem << "\n";
  return std::nullopt;
}

void add_disk_flags(CLI::App& command, DiskFlags& flags) {
  command
      .add_option("--max-log-size", flags.max_log_size,
                  "a job's log (each attempt's) past this size keeps its first and last quarter "
                  "and says what was cut (0: no cap)")
      ->capture_default_str();
  command
      .add_option("--keep-checkpoints", flags.keep_checkpoints,
                  "how long a job that ended ok keeps its checkpoint directory (0: removed as it "
                  "ends; colo gc removes it later)")
      ->capture_default_str();
}

bool disk_flags(const DiskFlags& flags, uint64_t& max_log_bytes, int64_t& keep_checkpoints_ms) {
  Result<uint64_t> bytes =
      flags.max_log_size == "0" ? Result<uint64_t>(0) : parse_bytes(flags.max_log_size);
  if (!bytes.ok() || (*bytes != 0 && *bytes < 4096)) {
    std::cerr << "colo: --max-log-size: "
              << (bytes.ok() ? "must be 0 (no cap) or at least 4KiB" : bytes.error().message())
              << " (write a size such as 64MiB)\n";
    return false;
  }
  std::optional<int64_t> keep =
      flags.keep_checkpoints == "0"
          ? std::optional<int64_t>(0)
          : duration_flag("--keep-checkpoints", flags.keep_checkpoints, 1);
  if (!keep) return false;
  max_log_bytes = *bytes;
  keep_checkpoints_ms = *keep;
  return true;
}

bool stall_timeout_flag(const std::string& text, StallOptions& stall) {
  if (text.empty()) return true;
  if (text == "off") {
    stall.timeout_ms = 0;
    return true;
  }
  std::optional<int64_t> ms = duration_flag("--stall-timeout", text, 1, "or \"off\"");
  if (!ms) return false;
  stall.timeout_ms = *ms;
  return true;
}

Result<std::unique_ptr<RunStore>> open_store_for_reading(const std::string& db_flag) {
  std::string path = db_flag.empty() ? default_db_path() : db_flag;
  if (access(path.c_str(), F_OK) != 0) {
    return Error(fmt::format(
        "no run store at {} yet: `colo run FILE` or `colo bench` creates it (or pass --db PATH)",
        path));
  }
  Result<std::unique_ptr<RunStore>> store = RunStore::open(path, StoreAccess::kRead);
  if (store.ok() && !(*store)->read_only_reason().empty()) {
    std::cerr << fmt::format(
        "colo: note: {} opened read-only ({}); runs of a colo that died show as it left them\n",
        path, (*store)->read_only_reason());
  }
  // What a colo that died left running is stopped by whichever command comes
  // next, not only by the next `colo run`.
  if (store.ok()) {
    for (const std::string& line : stop_leftovers_of_dead_colos(**store)) {
      std::cerr << "colo: " << line << "\n";
    }
  }
  return store;
}

std::vector<LearnedProfile> stored_profiles(const std::string& db, bool skip,
                                            std::vector<Collocation>& collocations) {
  if (skip) return {};
  std::string path = db.empty() ? default_db_path() : db;
  if (access(path.c_str(), F_OK) != 0) return {};
  Result<std::unique_ptr<RunStore>> store = RunStore::open(path);
  if (!store.ok()) {
    std::cerr << "colo: warning: ignoring the store: " << store.error().message() << "\n";
    return {};
  }
  Result<std::vector<LearnedProfile>> profiles = learn_profiles(**store);
  if (!profiles.ok()) {
    std::cerr << "colo: warning: ignoring the store: " << profiles.error().message() << "\n";
    return {};
  }
  std::vector<LearnedProfile> measured;
  std::copy_if(profiles->begin(), profiles->end(), std::back_inserter(measured),
               [](const LearnedProfile& p) { return !p.simulated; });
  if (Result<std::vector<Collocation>> c = measured_collocations(**store, measured); c.ok())
    collocations = std::move(*c);
  return *profiles;
}

bool read_slurm_allocation(const EnvLookup& env, std::optional<SlurmAllocation>& out) {
  std::string note;
  Result<std::optional<SlurmAllocation>> slurm = slurm_allocation(env, &note);
  if (!slurm.ok()) {
    std::cerr << "colo: " << slurm.error().message() << "\n";
    return false;
  }
  if (!note.empty()) std::cerr << "colo: warning: " << note << "\n";
  out = std::move(slurm).value();
  return true;
}

std::vector<LearnedProfile> profiles_from(const std::string& path) {
  Result<std::unique_ptr<RunStore>> store = RunStore::open_read_only(path);
  Result<std::vector<LearnedProfile>> profiles =
      store.ok() ? learn_profiles(**store) : Result<std::vector<LearnedProfile>>(store.error());
  if (!profiles.ok()) {
    std::cerr << fmt::format(
        "colo: warning: --profiles-from {}: {}; jobs it knows are measured again\n", path,
        profiles.error().message());
    return {};
  }
  // "store: run 1 job 7 (...)" names a run of that store, not of this run's.
  for (LearnedProfile& p : *profiles) p.profile.source += " of " + path;
  return std::move(profiles).value();
}

ProgressLine::ProgressLine(std::string prefix)
    : prefix_(std::move(prefix)), enabled_(can_redraw(STDERR_FILENO)) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::show(const std::string& text) {
  if (!enabled_) return;
  // Carriage return, the line, then erase what a longer line left.
  std::cerr << "\r" << prefix_ << text << "\x1b[K" << std::flush;
  shown_ = true;
}

void ProgressLine::clear() {
  if (!shown_) return;
  std::cerr << "\r\x1b[K" << std::flush;
  shown_ = false;
}

std::optional<PlanningInput> planning_input(const std::string& job_file,
                                            const std::string& gpu_model, int gpus,
                                            const std::string& deadline, const std::string& db,
                                            bool no_store) {
  std::optional<int64_t> deadline_ms;
  if (!deadline.empty()) {
    deadline_ms = duration_flag("--deadline", deadline, 1);
    if (!deadline_ms) return std::nullopt;
  }
  Result<JobFile> file = load_job_file(job_file);
  if (!file.ok()) {
    std::cerr << "colo: " << file.error().message() << "\n";
    return std::nullopt;
  }
  Result<SimGpuModel> model = sim_gpu_model(gpu_model);
  if (!model.ok()) {
    std::cerr << "colo: --gpu-model: " << model.error().message() << "\n";
    return std::nullopt;
  }
  std::vector<Collocation> collocations;
  std::vector<LearnedProfile> stored = stored_profiles(db, no_store, collocations);
  // Each job's signature once: the three steps below look every job up by it.
  const std::vector<std::string> signatures = job_signatures(file->jobs);
  const ProfilesBySignature known =
      known_profiles(stored, file->jobs, signatures, model->model, true);
  std::map<std::string, std::vector<FamilyInstance>> families =
      family_instances(stored, file->jobs, model->model, true);
  const PriorModel priors(prior_samples(stored, model->model, true), model->memory_total_bytes);
  SimJobSet set = make_sim_jobs(*file, signatures, known,
                                usable_profiles(known, families, file->jobs, signatures), &priors);
  SimOptions node;
  node.family_instances = std::move(families);
  node.gpus = gpus;
  node.gpu_memory_bytes = model->memory_total_bytes;
  node.model = calibrate(InterferenceModel{}, collocations);
  return PlanningInput{std::move(file).value(), std::move(model).value(), std::move(set),
                       std::move(node), deadline_ms};
}

void add_label_flags(CLI::App& cmd, LabelFlags& flags) {
  cmd.add_option("--name", flags.name,
                 "a name for the run (of colo submit: for the submission): `colo show NAME` and "
                 "`colo show NAME OTHER` find it (the newest of that name); not a number, not "
                 "'last'");
  cmd.add_option("--tag", flags.tags,
                 "KEY=VALUE kept with it, shown by `colo runs` and `colo show`; repeat for "
                 "several (KEY= removes one that `colo label` changes or --resume carries)")
      ->allow_extra_args(false);
  cmd.add_option("--note", flags.note, "a line of text kept with it");
}

void add_qos_flags(CLI::App& cmd, QosFlags& flags) {
  cmd.add_option("--qos", flags.qos,
                 "every job's class, over the job file's: protected (keeps --min-speed of its "
                 "solo speed), normal (the default: packed for the machine's total) or "
                 "opportunistic (fills what is left, at the lowest priority, capped); see "
                 "docs/policy.md");
  cmd.add_option("--min-speed", flags.min_speed,
                 "with --qos protected: the floor, a fraction of the job's solo speed above 0 and "
                 "at most 1 (default: the file's min_speed for jobs it protects, else 0.9)");
}

Status apply_qos_flags(const QosFlags& flags, JobFile& file) {
  Result<std::optional<QosOverride>> over = qos_override(flags.qos, flags.min_speed);
  if (!over.ok()) return over.error();
  if (!*over) return OkStatus();
  for (JobSpec& job : file.jobs) apply_qos_override(**over, job.qos, job.min_speed);
  return OkStatus();
}

Result<RunLabel> given_label(const LabelFlags& flags) {
  RunLabel given;
  if (flags.name) {
    const std::string& n = *flags.name;
    if (Status ok = check_target_name(n); !ok.ok()) {
      return Error(fmt::format("--name {}", ok.error().message()));
    }
    given.name = n;
  }
  for (const std::string& tag : flags.tags) {
    const size_t eq = tag.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error(fmt::format("--tag '{}': expected KEY=VALUE, e.g. --tag model=resnet50", tag));
    }
    given.tags[tag.substr(0, eq)] = tag.substr(eq + 1);
  }
  if (flags.note) given.note = *flags.note;
  return given;
}

Result<RunLabel> apply_label_flags(const LabelFlags& flags, RunLabel base) {
  Result<RunLabel> given = given_label(flags);
  if (!given.ok()) return given.error();
  if (flags.name) base.name = given->name;
  base.tags = changed_tags(std::move(base.tags), given->tags);
  if (flags.note) base.note = given->note;
  return base;
}

Result<StoredTarget> resolve_stored_target(RunStore& store, const std::string& text,
                                           const TargetForms& forms) {
  Result<Target> read = parse_target(text, forms);
  if (!read.ok()) return read.error();
  switch (read->kind) {
    case Target::Kind::kLast:
    case Target::Kind::kRange:  // parse_target() refuses it unless forms take it
      return StoredTarget{};
    case Target::Kind::kId:
      return StoredTarget{read->first, std::nullopt};
    case Target::Kind::kSubmission: {
      Result<std::optional<SubmissionRow>> sub = store.submission(read->last);
      if (!sub.ok()) return sub.error();
      if (!*sub) {
        return Error(
            fmt::format("'{}': the store has no submission {}; `colo runs` lists the named "
                        "ones under their runs",
                        text, read->last));
      }
      return StoredTarget{read->first, std::move(*sub)};
    }
    case Target::Kind::kName:
      break;
  }
  // A name: the caller's own run or submission of that name, never another user's.
  Result<std::optional<NamedTarget>> named =
      store.find_named(text, getuid(), forms.submission ? NameKinds::kBoth : NameKinds::kRuns);
  if (!named.ok()) return named.error();
  if (*named && (*named)->kind == NamedTarget::Kind::kRun) return StoredTarget{(*named)->id, {}};
  if (*named) {
    Result<std::optional<SubmissionRow>> sub = store.submission((*named)->id);
    if (!sub.ok()) return sub.error();
    if (*sub) return StoredTarget{0, std::move(*sub)};
  }
  return Error(fmt::format(
      "'{}' is neither a run id nor the name of a run{} of yours; {} takes {}; `colo runs` lists "
      "them (a run gets a name with `colo run --name` or `colo label`{})",
      text, forms.submission ? " or a submission" : "", forms.command, describe_forms(forms),
      forms.submission ? ", a submission with `colo submit --name`" : ""));
}

}  // namespace colo
