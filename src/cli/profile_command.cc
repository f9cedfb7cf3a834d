// `colo profile JOB`: a torch profiling window of a running job, asked from
// any terminal (docs/profiling.md), and its summary once it is written.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/paths.h"
#include "common/replace_file.h"
#include "profiling/ncu_launch.h"
#include "profiling/timeline.h"
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
  std::optional<int> gpu;  // every job running on this GPU, on one timeline
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

// A job asked for a window: its name and profile directory, and how many
// windows that held before.
struct Asked {
  std::string name;
  std::string dir;
  size_t before = 0;
};

// The running jobs on GPU `gpu` of run `flags.run`, else of the newest run
// still running (a service's, or a `colo run` in another terminal).
Result<std::vector<std::pair<std::string, std::string>>> jobs_on_gpu(RunStore& store,
                                                                     const ProfileFlags& f) {
  int64_t run = f.run.value_or(0);
  if (run == 0) {
    Result<std::vector<RunRow>> runs = store.list_runs(0);
    if (!runs.ok()) return runs.error();
    for (const RunRow& r : *runs) {
      if (r.state == RunState::kRunning) {
        run = r.id;
        break;
      }
    }
    if (run == 0) return Error("no run is running in this store; name one with --run RUN");
  }
  Result<std::vector<JobRow>> rows = store.job_rows(run);
  if (!rows.ok()) return rows.error();
  std::vector<std::pair<std::string, std::string>> jobs;
  for (const JobRow& r : *rows) {
    if (r.state == JobState::kRunning && r.device == *f.gpu) jobs.emplace_back(r.name, r.log_path);
  }
  if (jobs.empty()) {
    return Error(fmt::format("no job of run {} is running on GPU {} now; `colo show {}` lists them",
                             run, *f.gpu, run));
  }
  return jobs;
}

// The jobs' new windows, in the order asked, once every job wrote one or
// the deadline passed (then those that did, and a message for each that
// did not).
std::vector<JobWindows> wait_for_windows(const std::vector<Asked>& asked, int64_t deadline_ms,
                                         Clock& clock) {
  std::vector<JobWindows> got(asked.size());
  size_t done = 0;
  while (true) {
    for (size_t i = 0; i < asked.size(); ++i) {
      if (!got[i].windows.empty()) continue;
      std::vector<ProfileWindow> windows = read_profile_windows(asked[i].dir, nullptr);
      if (windows.size() <= asked[i].before) continue;
      windows.erase(windows.begin(),
                    windows.begin() + static_cast<std::ptrdiff_t>(asked[i].before));
      got[i] = {asked[i].name, std::move(windows)};
      ++done;
    }
    if (done == asked.size() || clock.monotonic_ms() >= deadline_ms) break;
    clock.sleep_for_ms(250);
  }
  std::vector<JobWindows> out;
  for (size_t i = 0; i < asked.size(); ++i) {
    if (!got[i].windows.empty()) {
      out.push_back(std::move(got[i]));
      continue;
    }
    std::cerr << fmt::format(
        "colo: {} wrote no window in time (it may still: look in {}): a job profiles through "
        "colo's Python client, so its script must import colo_progress and report steps or "
        "epochs (colo.step, colo.epoch_end), and PyTorch must be importable by it\n",
        asked[i].name, asked[i].dir);
  }
  return out;
}

// `colo profile --gpu`: the jobs' windows on one clock, written as a page
// beside their run's logs; the exit code.
int draw_timeline(const std::vector<JobWindows>& got, const std::string& logs_dir, int gpu) {
  std::vector<TimelineLane> lanes;
  double from_s = 0;
  double to_s = std::numeric_limits<double>::max();
  for (const JobWindows& job : got) {
    const ProfileWindow& w = job.windows.front();
    if (w.kernels_path.empty()) continue;
    Result<std::vector<KernelSpan>> spans = read_kernel_spans(w.dir, w.kernels_path);
    if (!spans.ok()) {
      std::cerr << "colo: " << spans.error().message() << "\n";
      continue;
    }
    lanes.push_back({job.job, std::move(spans).value()});
    from_s = std::max(from_s, w.started_s);
    to_s = std::min(to_s, w.ended_s);
  }
  if (lanes.empty()) {
    std::cout << "no GPU kernels in these windows (the jobs ran on the CPU, or PyTorch recorded "
                 "no device activity): no timeline\n";
    return kExitOk;
  }
  if (to_s <= from_s) {
    std::cerr << "colo: the jobs' windows did not overlap (each opens at its job's next step or "
                 "epoch end): ask again with a longer --for\n";
    return kExitEnvironment;
  }
  const TimelineStats stats = timeline_stats(lanes, from_s * 1e6, to_s * 1e6);
  const std::string page = fmt::format("{}/gpu{}-timeline-{:.0f}.html", logs_dir, gpu, from_s);
  const std::string html =
      timeline_html(fmt::format("GPU {}: {} jobs' kernels over the same {:.2f} s", gpu,
                                lanes.size(), to_s - from_s),
                    lanes, stats);
  std::cout << format_timeline(lanes, stats);
  if (Status written = replace_file(page, html); !written.ok()) {
    std::cerr << "colo: " << written.error().message() << "; the figures above are all\n";
    return kExitEnvironment;
  }
  std::cout << "timeline: " << page << "\n";
  return kExitOk;
}

int profile_command(const ProfileFlags& flags) {
  if (flags.job.empty() == !flags.gpu) {
    std::cerr << "colo: profile takes a job, or --gpu N for every job running on that GPU\n";
    return kExitBadInput;
  }
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
  Result<std::vector<std::pair<std::string, std::string>>> jobs =
      std::vector<std::pair<std::string, std::string>>{};
  if (flags.gpu) {
    jobs = jobs_on_gpu(**store, flags);
  } else if (Result<std::pair<std::string, std::string>> job = running_job(**store, flags);
             job.ok()) {
    jobs->push_back(std::move(job).value());
  } else {
    jobs = job.error();
  }
  if (!jobs.ok()) {
    std::cerr << "colo: " << jobs.error().message() << "\n";
    return kExitBadInput;
  }
  std::vector<Asked> asked;
  for (const auto& [name, log] : *jobs) {
    const std::string dir = job_dir_of_log(log, JobDir::kProfile);
    if (dir.empty()) {
      std::cerr << fmt::format(
          "colo: job '{}' logs to {}, outside colo's layout: its profile directory is unknown\n",
          name, log);
      return kExitEnvironment;
    }
    asked.push_back({name, dir, read_profile_windows(dir, nullptr).size()});
  }
  std::optional<double> seconds;
  if (duration_ms) seconds = static_cast<double>(*duration_ms) / 1000;
  // Asked one after another at once: each opens at its own next step or epoch end.
  for (const Asked& a : asked) {
    if (Status s = request_profile_window(a.dir, seconds, flags.steps); !s.ok()) {
      std::cerr << "colo: " << s.error().message() << "\n";
      return kExitEnvironment;
    }
    std::cout << fmt::format(
        "asked {} for a torch window of {} (taken at its next step or epoch end, through the "
        "Python client); its trace and summary go to {}\n",
        a.name, flags.steps ? fmt::format("{} steps", *flags.steps) : flags.duration, a.dir);
  }
  if (*wait_ms == 0) return kExitOk;
  SystemClock clock;
  const std::vector<JobWindows> got =
      wait_for_windows(asked, clock.monotonic_ms() + duration_ms.value_or(0) + *wait_ms, clock);
  if (got.empty()) return kExitEnvironment;
  std::cout << format_profile_windows(got, 10);
  if (!flags.gpu) return kExitOk;
  const int code = draw_timeline(
      got, std::filesystem::path(asked.front().dir).parent_path().string(), *flags.gpu);
  return got.size() == asked.size() ? code : kExitEnvironment;
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  static ProfileFlags flags;
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Take a torch profiling window of a running job (or of every job on a GPU, on one "
      "timeline) and show its top operators");
  cmd->add_option("job", flags.job,
                  "the job: a colo serve job id, or with --run a job of that run (name or id)");
  cmd->add_option("--gpu", flags.gpu,
                  "instead of a job: every job running on this GPU (of --run, else of the newest "
                  "run still running), each asked for a window at once; their kernels are then "
                  "drawn on one clock, a lane per job, with where they overlapped and where the "
                  "GPU was idle (an HTML page beside the run's logs) and each job's kernel time "
                  "by family")
      ->check(CLI::NonNegativeNumber);
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
  set_example(*cmd, "colo profile tiny --run 3 --for 5s; colo profile --gpu 0 --for 3s");
  cmd->callback([&exit_code] { exit_code = profile_command(flags); });

  // For colo's own use: a job under `tool = "ncu"` as a client of an MPS
  // server is started as this command (profiling/ncu_launch.h).
  static NcuLaunch pair;
  CLI::App* ncu =
      app.add_subcommand("ncu-mps-pair", "(colo's own) ncu for one MPS client")->group("");
  ncu->add_option("--ncu", pair.ncu)->required();
  ncu->add_option("--export", pair.report)->required();
  ncu->add_option("--launch-count", pair.launch_count)->check(CLI::PositiveNumber);
  ncu->add_option("--port", pair.port)->required()->check(CLI::Range(1, 65535));
  ncu->add_option("--lock-dir", pair.lock_dir)->required();
  ncu->add_option("command", pair.command)->required();
  ncu->callback(
      [&exit_code] { exit_code = run_ncu_mps_pair(pair, std::chrono::milliseconds(60'000)); });
}

}  // namespace colo
