#include "report/run_profiling.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include "profiling/interference.h"
#include "profiling/timeline.h"
#include "run/log_layout.h"

namespace colo {
namespace {

// Places the windows of job `self` (named `job`) among `rows`, its run's
// jobs: a window ran beside the jobs whose last attempt ran on its GPU at
// some time during it. Windows without kernels are left out.
void place_windows(const std::string& job, const JobRow& self,
                   const std::vector<ProfileWindow>& windows, const std::vector<JobRow>& rows,
                   std::vector<PlacedWindow>& out) {
  if (!self.device) return;
  for (const ProfileWindow& w : windows) {
    if (w.kernels_path.empty()) continue;
    const auto from = static_cast<UnixMillis>(w.started_s * 1000);
    const auto to = static_cast<UnixMillis>(w.ended_s * 1000);
    const auto others = std::count_if(rows.begin(), rows.end(), [&](const JobRow& r) {
      return r.id != self.id && r.device == self.device && r.started_ms && *r.started_ms < to &&
             (!r.ended_ms || *r.ended_ms > from);
    });
    out.push_back({job, self.signature, &w, static_cast<int>(others)});
  }
}

// The windows of the newest job of `signature` in a run other than
// `run_id` that has a window alone on its GPU, placed (their job named with
// its run); none when the store has none. Their windows are kept in `kept`.
std::vector<PlacedWindow> alone_elsewhere(RunStore& store, const std::string& signature,
                                          int64_t run_id,
                                          std::deque<std::vector<ProfileWindow>>& kept) {
  Result<std::vector<std::pair<int64_t, int64_t>>> found = store.jobs_of_signature(signature, 20);
  if (!found.ok()) return {};
  for (const std::pair<int64_t, int64_t>& job_and_run : *found) {
    const int64_t job_id = job_and_run.first;
    const int64_t other_run = job_and_run.second;
    if (other_run == run_id) continue;
    Result<std::vector<JobRow>> rows = store.job_rows(other_run);
    if (!rows.ok()) continue;
    auto self =
        std::find_if(rows->begin(), rows->end(), [&](const JobRow& r) { return r.id == job_id; });
    if (self == rows->end()) continue;
    kept.push_back(read_profile_windows(job_dir_of_log(self->log_path, JobDir::kProfile), nullptr));
    std::vector<PlacedWindow> placed;
    place_windows(fmt::format("{} of run {}", self->name, other_run), *self, kept.back(), *rows,
                  placed);
    std::erase_if(placed, [](const PlacedWindow& w) { return w.others > 0; });
    if (!placed.empty()) return placed;
  }
  return {};
}

// Each profiled job's kernel time per family alone on its GPU against beside
// others, from the windows placed by place_windows(); into `out`.
void add_interference(RunStore& store, int64_t run_id, RunProfiling& out,
                      std::vector<std::string>& problems) {
  const bool kernels = std::any_of(out.jobs.begin(), out.jobs.end(), [](const JobWindows& j) {
    return std::any_of(j.windows.begin(), j.windows.end(),
                       [](const ProfileWindow& w) { return !w.kernels_path.empty(); });
  });
  if (!kernels) return;
  Result<std::vector<JobRow>> rows = store.job_rows(run_id);
  if (!rows.ok()) {
    problems.push_back(rows.error().message());
    return;
  }
  std::map<int64_t, const JobRow*> by_id;
  for (const JobRow& r : *rows) by_id[r.id] = &r;
  std::vector<PlacedWindow> placed;
  for (size_t i = 0; i < out.jobs.size(); ++i) {
    if (auto self = by_id.find(out.job_ids[i]); self != by_id.end())
      place_windows(out.jobs[i].job, *self->second, out.jobs[i].windows, *rows, placed);
  }
  std::set<std::string> alone_here, beside_here;  // signatures
  for (const PlacedWindow& w : placed)
    (w.others == 0 ? alone_here : beside_here).insert(w.signature);
  std::deque<std::vector<ProfileWindow>>
      elsewhere;  // other runs' windows, which `placed` points at
  for (const std::string& signature : beside_here) {
    if (alone_here.contains(signature)) continue;
    for (const PlacedWindow& w : alone_elsewhere(store, signature, run_id, elsewhere))
      placed.push_back(w);
  }
  std::string text;
  for (const AloneAndBeside& pair : pair_windows(placed)) {
    Result<std::vector<KernelSpan>> alone =
        read_kernel_spans(pair.alone.window->dir, pair.alone.window->kernels_path);
    Result<std::vector<KernelSpan>> beside =
        read_kernel_spans(pair.beside.window->dir, pair.beside.window->kernels_path);
    if (!alone.ok() || !beside.ok()) {
      problems.push_back((alone.ok() ? beside : alone).error().message());
      continue;
    }
    const std::vector<FamilySlowdown> families = family_slowdowns(*alone, *beside);
    text += format_family_slowdowns(pair, families);
    nlohmann::json rows_json = nlohmann::json::array();
    for (const FamilySlowdown& f : families) {
      rows_json.push_back({{"family", f.family},
                           {"calls_alone", f.calls_alone},
                           {"mean_us_alone", f.mean_us_alone},
                           {"calls_beside", f.calls_beside},
                           {"mean_us_beside", f.mean_us_beside},
                           {"slowdown", f.slowdown()}});
    }
    out.interference.push_back({{"job", pair.job},
                                {"alone_job", pair.alone.job},
                                {"alone_window", pair.alone.window->window},
                                {"beside_window", pair.beside.window->window},
                                {"others", pair.beside.others},
                                {"families", std::move(rows_json)}});
  }
  if (text.empty()) return;
  out.interference_text =
      "\nInterference by kernel family (each job's kernels in a window alone on its GPU "
      "against one beside other jobs; mean time per kernel):\n" +
      text;
}

std::string number_or_empty(std::optional<double> v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : "";
}

}  // namespace

RunProfiling run_profiling(RunStore& store, const RunSummary& summary,
                           std::vector<std::string>& problems) {
  RunProfiling out;
  // The directories above the jobs' profile directories are listed once
  // each: a service's run holds 100,000 jobs, most never profiled, and an
  // open that fails for each cost as many system calls.
  std::map<std::string, std::set<std::string>> listed;  // directory -> its entries' names
  const auto exists = [&](const std::string& path) {
    const std::filesystem::path p(path);
    auto [entries, fresh] = listed.try_emplace(p.parent_path().string());
    if (fresh) {
      std::error_code error;
      for (const auto& e : std::filesystem::directory_iterator(p.parent_path(), error))
        entries->second.insert(e.path().filename().string());
    }
    return entries->second.contains(p.filename().string());
  };
  for (const JobSummary& job : summary.jobs) {
    const std::string dir = job_dir_of_log(job.log_path, JobDir::kProfile);
    if (dir.empty() || !exists(dir)) continue;
    std::vector<ProfileWindow> windows = read_profile_windows(dir, &problems);
    if (!windows.empty()) {
      out.jobs.push_back({job.name, std::move(windows)});
      out.job_ids.push_back(job.id);
    }
  }
  add_interference(store, summary.run.id, out, problems);
  return out;
}

std::optional<Section> profiling_section(const RunProfiling& profiling) {
  if (profiling.jobs.empty()) return std::nullopt;
  Section section;
  section.heading = "Profiling windows";
  section.intro =
      "Each window a job was profiled in (docs/profiling.md): the job's rate inside it against "
      "the 30 s before (what profiling cost), the GPU's busy share and the top op, and its "
      "Chrome trace (open it in Perfetto or chrome://tracing).";
  Table table;
  table.name = "profile-windows";
  table.title = "Each window";
  table.caption = "One row per window; the trace link points at the file the job wrote.";
  table.header = {"job",
                  "window",
                  "trigger",
                  "seconds",
                  "steps",
                  "rate before (samples/s)",
                  "rate in (samples/s)",
                  "GPU busy %",
                  "top op",
                  "trace"};
  table.link_column = static_cast<int>(table.header.size()) - 1;
  for (const JobWindows& job : profiling.jobs) {
    for (const ProfileWindow& w : job.windows) {
      table.rows.push_back(
          {job.job, std::to_string(w.window), w.trigger, fmt::format("{:.1f}", w.seconds),
           std::to_string(w.steps), number_or_empty(w.rate_before, "{:.1f}"),
           number_or_empty(w.rate_in, "{:.1f}"), number_or_empty(w.gpu_busy_pct, "{:.1f}"),
           w.top.empty() ? "" : w.top.front().name, w.trace_path});
    }
  }
  section.tables.push_back(std::move(table));
  if (!profiling.interference_text.empty()) {
    section.preformatted = profiling.interference_text.substr(1);  // without its leading blank line
    section.preformatted_wraps = false;
  }
  return section;
}

}  // namespace colo
