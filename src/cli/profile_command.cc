// `colo profile JOB`: a torch profiling window of a running job, asked from
// any terminal (docs/profiling.md), and its summary once it is written.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <iostream>
#include <memory>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/paths.h"
#include "profiling/windows.h"
#include "run/log_layout.h"
#include "store/run_store.h"

namespace colo {
namespace {

struct ProfileFlags {
  std::string job;
  std::optional<int64_t> run;
  std::string db;
  std::string tool = "torch";
  std::string duration = "10s";
  std::optional<int64_t> steps;
  std::string wait = "60s";
};

// The running job's name and log: by name or id in `run`, else a service job's id.
Result<std::pair<std::string, std::string>> running_job(RunStore& store, const ProfileFlags& f) {
  std::optional<JobRow> found;
  if (f.run) {
    Result<std::vector<JobRow>> rows = store.job_rows(*f.run);
    if (!rows.ok()) return rows.error();
    for (const JobRow& r : *rows) {
      if (r.name == f.job || std::to_string(r.id) == f.job) found = r;
    }
    if (!found) {
      return Error(
          fmt::format("run {} has no job named or numbered '{}'; `colo show {}` lists "
                      "them",
                      *f.run, f.job, *f.run));
    }
  } else {
    int64_t id = 0;
    auto [end, ec] = std::from_chars(f.job.data(), f.job.data() + f.job.size(), id);
    if (ec != std::errc() || end != f.job.data() + f.job.size()) {
      return Error(
          fmt::format("'{}' is not a job id of colo serve; for a job of `colo run`, name "
                      "its run: colo profile {} --run RUN",
                      f.job, f.job));
    }
    Result<std::vector<ServiceJobRow>> rows = store.service_jobs_by_id({id});
    if (!rows.ok()) return rows.error();
    if (rows->empty()) {
      return Error(
          fmt::format("colo serve has no job {}; for a job of `colo run`, name its run: "
                      "colo profile {} --run RUN",
                      id, f.job));
    }
    found.emplace();
    found->name = rows->front().name;
    found->state = rows->front().state;
    found->log_path = rows->front().log_path;
  }
  if (found->state != JobState::kRunning) {
    return Error(
        fmt::format("job '{}' is {}, not running: a profiling window is taken of a "
                    "running job (a window from its start: profile = {{ tool = "
                    "\"torch\" }} in its job file)",
                    found->name, to_string(found->state)));
  }
  return std::make_pair(found->name, found->log_path);
}

int profile_command(const ProfileFlags& flags) {
  if (flags.tool != "torch") {
    std::cerr << fmt::format(
        "colo: --tool {}: a running job can be profiled with torch only (through the Python "
        "client); nsys and ncu wrap a job from its start: profile = {{ tool = \"{}\", ... }} in "
        "its job file (docs/profiling.md)\n",
        flags.tool, flags.tool);
    return kExitBadInput;
  }
  std::optional<int64_t> duration_ms;
  if (!flags.steps) {
    duration_ms = duration_flag("--for", flags.duration, 100);
    if (!duration_ms) return kExitBadInput;
  }
  std::optional<int64_t> wait_ms = duration_flag("--wait", flags.wait, 0);
  if (!wait_ms) return kExitBadInput;
  Result<std::unique_ptr<RunStore>> store = open_store_for_reading(flags.db);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  Result<std::pair<std::string, std::string>> job = running_job(**store, flags);
  if (!job.ok()) {
    std::cerr << "colo: " << job.error().message() << "\n";
    return kExitBadInput;
  }
  const auto& [name, log] = *job;
  const std::string dir = job_dir_of_log(log, JobDir::kProfile);
  if (dir.empty()) {
    std::cerr << fmt::format(
        "colo: job '{}' logs to {}, outside colo's layout: its profile "
        "directory is unknown\n",
        name, log);
    return kExitEnvironment;
  }
  const size_t before = read_profile_windows(dir, nullptr).size();
  std::optional<double> seconds;
  if (duration_ms) seconds = static_cast<double>(*duration_ms) / 1000;
  if (Status s = request_profile_window(dir, seconds, flags.steps); !s.ok()) {
    std::cerr << "colo: " << s.error().message() << "\n";
    return kExitEnvironment;
  }
  std::cout << fmt::format(
      "asked {} for a torch window of {} (taken at its next step or epoch end, through the "
      "Python client); its trace and summary go to {}\n",
      name, flags.steps ? fmt::format("{} steps", *flags.steps) : flags.duration, dir);
  if (*wait_ms == 0) return kExitOk;
  SystemClock clock;
  const int64_t deadline = clock.monotonic_ms() + duration_ms.value_or(0) + *wait_ms;
  while (clock.monotonic_ms() < deadline) {
    std::vector<ProfileWindow> windows = read_profile_windows(dir, nullptr);
    if (windows.size() > before) {
      windows.erase(windows.begin(), windows.begin() + static_cast<std::ptrdiff_t>(before));
      std::cout << format_profile_windows({{name, std::move(windows)}}, 10);
      return kExitOk;
    }
    clock.sleep_for_ms(250);
  }
  std::cerr << fmt::format(
      "colo: {} wrote no window within {} (it may still: look in {}): a job profiles through "
      "colo's Python client, so its script must import colo_progress and report steps or epochs "
      "(colo.step, colo.epoch_end), and PyTorch must be importable by it\n",
      name, flags.wait, dir);
  return kExitEnvironment;
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  static ProfileFlags flags;
  CLI::App* cmd = app.add_subcommand(
      "profile", "Take a torch profiling window of a running job and show its top operators");
  cmd->add_option("job", flags.job,
                  "the job: a colo serve job id, or with --run a job of that run (name or id)")
      ->required();
  cmd->add_option("--run", flags.run, "the run of a `colo run` job");
  cmd->add_option("--db", flags.db, "run store; default " + default_db_path());
  cmd->add_option("--tool", flags.tool, "torch (nsys and ncu: in the job file)")
      ->capture_default_str();
  cmd->add_option("--for", flags.duration, "how long the window stays open")->capture_default_str();
  cmd->add_option("--steps", flags.steps, "the window's length in steps, instead of --for")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--wait", flags.wait,
                  "how long after the window to wait for its summary (0: ask and return)")
      ->capture_default_str();
  set_example(*cmd, "colo profile tiny --run 3 --for 5s");
  cmd->callback([&exit_code] { exit_code = profile_command(flags); });
}

}  // namespace colo
