#include "jobs/job_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <unordered_map>

#include "common/paths.h"
#include "common/text.h"
#include "jobs/job_signature.h"
#include "jobs/placeholders.h"

namespace colo {
namespace {

// A uniform draw in [0, 1) from SplitMix64: the same samples for the same
// seed on every machine and build (std's distributions are not specified
// bit for bit).
class UnitDraws {
 public:
  explicit UnitDraws(uint64_t seed) : state_(seed) {}
  double next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t state_;
};

// The block's points, each its grid parameters' values in grid order: the
// cartesian product of the grid (first parameter varying slowest), or a
// random search's samples (each parameter drawn on its own; a point drawn
// twice is drawn again, so that every instance has its own name). One
// empty point for a job without a grid.
std::vector<std::vector<std::string>> grid_points(const JobBlock& block) {
  std::vector<std::vector<std::string>> points;
  if (block.search) {
    UnitDraws draws(block.search->seed);
    std::set<std::vector<std::string>> seen;
    constexpr int kTriesPerSample = 100;
    for (int64_t tries = 0; static_cast<int64_t>(points.size()) < block.search->samples &&
                            tries < block.search->samples * kTriesPerSample;
         ++tries) {
      std::vector<std::string> point;
      for (const GridParam& p : block.grid) {
        const double u = draws.next();
        switch (p.draw) {
          case GridParam::Draw::kListed:
            point.push_back(
                p.values[std::min(p.values.size() - 1,
                                  static_cast<size_t>(u * static_cast<double>(p.values.size())))]);
            break;
          case GridParam::Draw::kUniform:
            point.push_back(fmt::format("{:.4g}", p.lo + u * (p.hi - p.lo)));
            break;
          case GridParam::Draw::kLogUniform:
            point.push_back(fmt::format(
                "{:.4g}", std::exp(std::log(p.lo) + u * (std::log(p.hi) - std::log(p.lo)))));
            break;
        }
      }
      if (seen.insert(point).second) points.push_back(std::move(point));
    }
    return points;
  }
  std::vector<size_t> index(block.grid.size(), 0);
  while (true) {
    std::vector<std::string> point;
    for (size_t p = 0; p < block.grid.size(); ++p) point.push_back(block.grid[p].values[index[p]]);
    points.push_back(std::move(point));
    // Odometer step; the last parameter varies fastest.
    size_t p = block.grid.size();
    while (p > 0) {
      --p;
      if (++index[p] < block.grid[p].values.size()) break;
      index[p] = 0;
      if (p == 0) return points;
    }
    if (block.grid.empty()) return points;
  }
}

}  // namespace

JobSettings JobSettings::merge(const JobSettings& base, const JobSettings& over) {
  JobSettings out = base;
  if (over.workdir) out.workdir = over.workdir;
  for (const auto& [k, v] : over.env) out.env[k] = v;
  if (over.gpu_memory_bytes) out.gpu_memory_bytes = over.gpu_memory_bytes;
  if (over.host_memory_bytes) out.host_memory_bytes = over.host_memory_bytes;
  if (over.cpus) out.cpus = over.cpus;
  if (over.gpus) out.gpus = over.gpus;
  if (over.sm_share_pct) out.sm_share_pct = over.sm_share_pct;
  if (over.memory_limit_bytes) out.memory_limit_bytes = over.memory_limit_bytes;
  if (over.epoch_regex) out.epoch_regex = over.epoch_regex;
  if (over.step_regex) out.step_regex = over.step_regex;
  if (over.epoch_samples) out.epoch_samples = over.epoch_samples;
  if (over.sm_activity_pct) out.sm_activity_pct = over.sm_activity_pct;
  if (over.gpu_util_pct) out.gpu_util_pct = over.gpu_util_pct;
  if (over.solo_time_ms) out.solo_time_ms = over.solo_time_ms;
  if (over.startup_time_ms) out.startup_time_ms = over.startup_time_ms;
  if (over.mig_profile) out.mig_profile = over.mig_profile;
  if (over.mig_group) out.mig_group = over.mig_group;
  if (over.restart) out.restart = over.restart;
  if (over.stall_timeout_ms) out.stall_timeout_ms = over.stall_timeout_ms;
  if (over.priority) out.priority = over.priority;
  if (over.preemptible) out.preemptible = over.preemptible;
  if (over.qos) out.qos = over.qos;
  if (over.min_speed) out.min_speed = over.min_speed;
  if (over.profile) out.profile = over.profile;
  if (over.dataset) out.dataset = over.dataset;
  return out;
}

std::vector<BlockProblem> check_block(const JobBlock& block) {
  std::vector<BlockProblem> problems;
  if (block.settings.min_speed && block.settings.qos != QosClass::kProtected) {
    problems.push_back(
        {block.settings.min_speed->line,
         fmt::format("min_speed is the floor of a protected job, and this job is {}: add qos = "
                     "\"protected\", or remove min_speed",
                     to_string(block.settings.qos.value_or(QosClass::kNormal)))});
  }
  if (block.search && block.grid.empty()) {
    problems.push_back(
        {block.search->line,
         "search draws the grid's parameters, and this job has no grid: add grid = { lr "
         "= { loguniform = [1e-4, 0.1] } }"});
  }
  for (const GridParam& p : block.grid) {
    if (p.draw != GridParam::Draw::kListed && !block.search) {
      problems.push_back({p.line, fmt::format("grid.{} is a distribution, which only a random "
                                              "search draws from: add search = {{ kind = "
                                              "\"random\", samples = 16 }}, or list its values",
                                              p.name)});
    }
  }
  // Every placeholder must name a grid parameter or a built-in one.
  std::set<std::string> params;
  for (const GridParam& g : block.grid) {
    const std::string& param = g.name;
    if (is_builtin_placeholder(param)) {
      problems.push_back({block.line, fmt::format("grid parameter '{}' is reserved: colo sets "
                                                  "{{{}}} itself ({}); name the parameter "
                                                  "otherwise",
                                                  param, param,
                                                  param == "gpus" ? "the job's GPU count"
                                                                  : "a free TCP port at start")});
    }
    params.insert(param);
  }
  auto check = [&](std::string_view text, int line, std::string_view field) {
    if (auto problem = check_placeholders(text, params)) {
      problems.push_back({line, fmt::format("{}: {}", field, *problem)});
    }
  };
  for (const std::string& arg : block.command.value) check(arg, block.command.line, "command");
  if (block.settings.workdir) {
    check(block.settings.workdir->value, block.settings.workdir->line, "workdir");
  }
  for (const auto& [name, value] : block.settings.env) {
    check(value.value, value.line, fmt::format("env.{}", name));
  }
  if (block.resource_params) {
    for (const std::string& entry : block.resource_params->value) {
      if (auto problem = check_resource_param(entry, params)) {
        problems.push_back(
            {block.resource_params->line, fmt::format("resource_params: {}", *problem)});
      }
    }
  }
  return problems;
}

int64_t expanded_count(const JobBlock& block) {
  int64_t count = block.repeat;
  if (block.search) return count * block.search->samples;
  for (const GridParam& p : block.grid) {
    count *= static_cast<int64_t>(p.values.size());
    if (count > kMaxExpandedJobs) break;
  }
  return count;
}

std::string normal_dir(const std::string& path, const std::string& base_dir) {
  std::string out = std::filesystem::path(absolute_path(path, base_dir)).lexically_normal();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

void expand(const JobBlock& block, const std::string& path, const std::string& base_dir,
            std::vector<JobSpec>& jobs) {
  JobSpec pattern;
  for (const std::string& arg : block.command.value) pattern.command.push_back(template_text(arg));
  pattern.working_dir = block.settings.workdir
                            ? normal_dir(template_text(block.settings.workdir->value), base_dir)
                            : base_dir;
  for (const auto& [name, value] : block.settings.env)
    pattern.env[name] = template_text(value.value);
  const std::string family = job_signature(pattern);
  std::optional<std::vector<std::string>> resource_params;
  if (block.resource_params) resource_params = block.resource_params->value;

  const int gpus = block.settings.gpus.value_or(1);
  // {gpus} is known now; {port} stays for the start (kPortPlaceholder). The
  // grid's values are set into it at each point (never over these two).
  std::map<std::string, std::string> values = {{"gpus", std::to_string(gpus)},
                                               {"port", kPortPlaceholder}};
  const std::string source = fmt::format("{}:{}", path, block.line);
  for (std::vector<std::string>& point : grid_points(block)) {
    std::map<std::string, std::string> params;
    std::string suffix;
    for (size_t p = 0; p < block.grid.size(); ++p) {
      const std::string& name = block.grid[p].name;
      if (name != "gpus" && name != "port") values[name] = point[p];
      suffix += fmt::format("{}{}={}", suffix.empty() ? "[" : ",", name, point[p]);
      params[name] = std::move(point[p]);
    }
    if (!suffix.empty()) suffix += "]";

    JobSpec base;
    base.group = block.name;
    base.family = family;
    base.resource_params = resource_params;
    for (const std::string& arg : block.command.value)
      base.command.push_back(substitute(arg, values));
    base.working_dir = block.settings.workdir
                           ? normal_dir(substitute(block.settings.workdir->value, values), base_dir)
                           : base_dir;
    for (const auto& [name, value] : block.settings.env) {
      base.env[name] = substitute(value.value, values);
    }
    base.gpus = gpus;
    base.gpu_memory_bytes = block.settings.gpu_memory_bytes;
    base.host_memory_bytes = block.settings.host_memory_bytes;
    base.cpus = block.settings.cpus;
    base.sm_share_pct = block.settings.sm_share_pct;
    base.memory_limit_bytes = block.settings.memory_limit_bytes;
    base.epoch_regex = block.settings.epoch_regex;
    base.step_regex = block.settings.step_regex;
    base.epoch_samples = block.settings.epoch_samples;
    base.sm_activity_pct = block.settings.sm_activity_pct;
    base.gpu_util_pct = block.settings.gpu_util_pct;
    base.solo_time_ms = block.settings.solo_time_ms;
    base.startup_time_ms = block.settings.startup_time_ms;
    base.mig_profile = block.settings.mig_profile;
    base.mig_group = block.settings.mig_group;
    base.restart = block.settings.restart.value_or(RestartPolicy::kOnFailure);
    base.stall_timeout_ms = block.settings.stall_timeout_ms;
    base.priority = block.settings.priority.value_or(0);
    base.profile = block.settings.profile;
    // A sweep's points may be preempted unless the file says otherwise.
    base.preemptible = block.settings.preemptible.value_or(!params.empty() || block.repeat > 1);
    base.qos = block.settings.qos.value_or(QosClass::kNormal);
    if (block.settings.min_speed) base.min_speed = block.settings.min_speed->value;
    if (block.settings.dataset) base.dataset = block.settings.dataset->value;
    base.params = std::move(params);
    base.source = source;
    // Each repeat a copy of the point's spec, but the last, which is the
    // spec itself (a grid point without repeats is built once, not copied).
    const auto named = [&](JobSpec& spec, int64_t r) {
      spec.name = block.name + suffix + (block.repeat > 1 ? fmt::format("#{}", r) : "");
      spec.repeat_index = static_cast<int>(r);
    };
    for (int64_t r = 1; r < block.repeat; ++r) named(jobs.emplace_back(base), r);
    if (block.repeat >= 1) named(jobs.emplace_back(std::move(base)), block.repeat);
  }
}

std::optional<std::string> check_profile(const ProfileSpec& p) {
  if (p.tool.empty()) return "profile needs its tool: add tool = \"torch\", \"nsys\" or \"ncu\"";
  if (p.after_epoch && p.after_ms) return "profile takes after_epoch or after, not both";
  if (p.steps && p.duration_ms) return "profile takes steps or duration, not both";
  if (p.tool != "torch" && p.after_epoch) {
    return fmt::format(
        "profile.after_epoch needs the Python client, which only tool = \"torch\" "
        "uses; {} starts after a time: use after = \"30s\"",
        p.tool);
  }
  return std::nullopt;
}

std::vector<BlockProblem> check_blocks(const std::vector<JobBlock>& blocks,
                                       const std::vector<std::string>& datasets) {
  int64_t total = 0;
  for (const JobBlock& block : blocks) {
    total += expanded_count(block);
    if (total > kMaxExpandedJobs) {
      return {{block.line,
               fmt::format("job '{}': the file expands to more than {} jobs; shrink the grid or "
                           "repeat, or split the file",
                           block.name, kMaxExpandedJobs)}};
    }
  }
  std::vector<BlockProblem> problems;
  for (const JobBlock& block : blocks) {
    const auto& dataset = block.settings.dataset;
    if (dataset && std::find(datasets.begin(), datasets.end(), dataset->value) == datasets.end()) {
      problems.push_back(
          {dataset->line,
           fmt::format("job '{}': dataset '{}' has no [data.{}] table{}; add one with the "
                       "dataset's path",
                       block.name, dataset->value, dataset->value,
                       did_you_mean(dataset->value, datasets))});
    }
  }
  return problems;
}

std::vector<BlockProblem> expand_blocks(const std::vector<JobBlock>& blocks,
                                        const std::string& path, const std::string& base_dir,
                                        const FileWide& shared, std::vector<JobSpec>& jobs) {
  std::vector<BlockProblem> problems;
  // Reserved for every block's jobs at once (a sweep's thousands of specs,
  // each over a kilobyte, not moved as the vector grows); check_blocks()
  // bounds the count.
  int64_t count = 0;
  for (const JobBlock& block : blocks)
    count = std::min(count + expanded_count(block), kMaxExpandedJobs);
  jobs.reserve(jobs.size() + static_cast<size_t>(count));
  const size_t start = jobs.size();
  std::vector<std::pair<size_t, int>> ends;  // each block's end in `jobs`, and its line
  for (const JobBlock& block : blocks) {
    const size_t first = jobs.size();
    expand(block, path, base_dir, jobs);
    for (size_t i = first; i < jobs.size(); ++i) {
      jobs[i].objective = shared.objective;
      jobs[i].lower_is_better = shared.lower_is_better;
      jobs[i].early_stop = shared.early_stop;
      jobs[i].fail_fast = shared.fail_fast;
    }
    ends.emplace_back(jobs.size(), block.line);
  }
  // Names used twice, in job order, once every block is expanded (the views
  // read names in `jobs`, which no longer moves): by name, the first job's
  // index.
  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(jobs.size() - start);
  size_t i = start;
  for (const auto& [end, line] : ends) {
    for (; i < end; ++i) {
      auto [it, inserted] = seen.emplace(jobs[i].name, i);
      if (!inserted) {
        problems.push_back(
            {line, fmt::format("job name '{}' is used more than once (also at {}); names must be "
                               "unique after grid and repeat expansion",
                               jobs[i].name, jobs[it->second].source)});
      }
    }
  }
  return problems;
}

}  // namespace colo
