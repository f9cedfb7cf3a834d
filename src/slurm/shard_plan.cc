#include "slurm/shard_plan.h"

#include <fmt/format.h>
#include <stdio.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "common/replace_file.h"
#include "common/units.h"

namespace colo {
namespace {

constexpr int kPlanVersion = 1;

std::vector<SimJob> subset(const std::vector<SimJob>& jobs, const std::vector<size_t>& indices) {
  std::vector<SimJob> out;
  out.reserve(indices.size());
  for (size_t i : indices) out.push_back(jobs[i]);
  return out;
}

struct ShardCheck {
  std::vector<int64_t> makespan_ms;
  bool all_in_time = true;
};

ShardCheck simulate_shards(const std::vector<SimJob>& jobs,
                           const std::vector<std::vector<size_t>>& shards, const PolicySpec& policy,
                           const SimOptions& node, std::optional<int64_t> deadline_ms) {
  ShardCheck check;
  for (const std::vector<size_t>& shard : shards) {
    PolicyResult r = simulate_policy(subset(jobs, shard), policy, node);
    check.makespan_ms.push_back(r.makespan_ms);
    if (r.jobs_failed > 0 || (deadline_ms && r.makespan_ms > *deadline_ms))
      check.all_in_time = false;
  }
  return check;
}

std::vector<std::vector<size_t>> split_jobs(const std::vector<SimJob>& jobs, int shards) {
  std::vector<int64_t> work;
  work.reserve(jobs.size());
  for (const SimJob& j : jobs) work.push_back(j.truth.solo_ms.value_or(0));
  return split_by_work(work, shards);
}

}  // namespace

std::string plan_path(const std::string& dir) { return dir + "/plan.json"; }

std::string shard_store_path(const std::string& dir, int shard, int attempt) {
  return fmt::format("{}/shards/{}/attempt-{}.db", dir, shard, attempt);
}

std::string shard_logs_dir(const std::string& dir, int shard, int attempt) {
  return fmt::format("{}/shards/{}/attempt-{}/logs", dir, shard, attempt);
}

std::string resubmission_path(const std::string& dir, int shard, int first_attempt) {
  return fmt::format("{}/shards/{}/resubmission-{}.json", dir, shard, first_attempt);
}

namespace {

// N of `name` = prefix + N + suffix; nullopt for any other name.
std::optional<int> numbered(std::string_view name, std::string_view prefix,
                            std::string_view suffix) {
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix))
    return std::nullopt;
  std::string_view number = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  int n = 0;
  auto [end, err] = std::from_chars(number.data(), number.data() + number.size(), n);
  if (err != std::errc() || end != number.data() + number.size() || n < 0) return std::nullopt;
  return n;
}

}  // namespace

ShardAttempts shard_attempts(const std::string& dir, int shard) {
  ShardAttempts out;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(fmt::format("{}/shards/{}", dir, shard), ec)) {
    const std::string name = entry.path().filename().string();
    if (std::optional<int> n = numbered(name, "attempt-", ".db")) {
      out.published.push_back(*n);
    } else if (std::optional<int> r = numbered(name, "resubmission-", ".json")) {
      out.resubmitted.push_back(*r);
    } else if (std::optional<int> a = numbered(name, "attempt-", ""); a && entry.is_directory(ec)) {
      out.started.push_back(*a);
    }
  }
  for (std::vector<int>* v : {&out.published, &out.started, &out.resubmitted})
    std::sort(v->begin(), v->end());
  return out;
}

Status write_plan(const std::string& path, const ShardPlan& plan) {
  nlohmann::json shards = nlohmann::json::array();
  for (const Shard& s : plan.shards)
    shards.push_back({{"jobs", s.jobs}, {"estimated_ms", s.estimated_ms}});
  nlohmann::json j = {{"version", kPlanVersion},
                      {"job_file", plan.job_file},
                      {"total_jobs", plan.total_jobs},
                      {"mechanism", plan.mechanism},
                      {"policy", plan.policy},
                      {"gpus_per_node", plan.gpus_per_node},
                      {"how", plan.how},
                      {"run_arguments", plan.run_arguments},
                      {"colo_binary", plan.colo_binary},
                      {"array_job_id", plan.array_job_id},
                      {"submitted_ms", plan.submitted_ms},
                      {"shards", shards}};
  if (Status s = replace_file(path, j.dump(2) + '\n'); !s.ok())
    return Error(s.error().message() + ": check the directory exists and is writable");
  return OkStatus();
}

Result<ShardPlan> read_plan(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Error(
        fmt::format("cannot read {}: give the directory `colo slurm submit` printed", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& what) {
    return Error(fmt::format("{}: not a shard plan written by colo slurm submit ({})", path, what));
  };
  if (!j.is_object()) return bad("not a JSON object");
  if (j.value("version", 0) != kPlanVersion)
    return bad(
        fmt::format("plan version {}, this colo reads {}", j.value("version", 0), kPlanVersion));
  ShardPlan plan;
  try {
    plan.job_file = j.at("job_file").get<std::string>();
    plan.total_jobs = j.at("total_jobs").get<int>();
    plan.mechanism = j.value("mechanism", "");
    plan.policy = j.value("policy", "");
    plan.gpus_per_node = j.at("gpus_per_node").get<int>();
    plan.how = j.value("how", "");
    plan.run_arguments = j.value("run_arguments", std::vector<std::string>{});
    plan.colo_binary = j.value("colo_binary", "");
    plan.array_job_id = j.value("array_job_id", "");
    plan.submitted_ms = j.value("submitted_ms", int64_t{0});
    for (const nlohmann::json& s : j.at("shards")) {
      plan.shards.push_back(
          {s.at("jobs").get<std::vector<std::string>>(), s.value("estimated_ms", int64_t{0})});
    }
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
  if (plan.shards.empty()) return bad("no shards");
  return plan;
}

PolicySpec planning_policy(const std::string& mechanism, const std::string& policy,
                           bool simulated_backend, std::string* note) {
  if (policy == "auto") return {"auto", PolicyKind::kAuto, 0};
  std::string m = mechanism.empty() ? (simulated_backend ? "naive" : "mps") : mechanism;
  if (m == "naive") return {"naive-all", PolicyKind::kNaiveAll, 0};
  if (m == "mps") return {"mps-all", PolicyKind::kMpsAll, 0};
  if (m == "mig" && note != nullptr)
    *note = "the simulator has no MIG model: mig is planned as exclusive";
  return {"exclusive", PolicyKind::kExclusive, 0};
}

std::vector<std::vector<size_t>> split_by_work(const std::vector<int64_t>& work_ms, int shards) {
  const size_t n = static_cast<size_t>(std::max(1, shards));
  std::vector<size_t> order(work_ms.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return work_ms[a] > work_ms[b]; });
  std::vector<std::vector<size_t>> out(n);
  std::vector<int64_t> load(n, 0);
  for (size_t job : order) {
    size_t least = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    out[least].push_back(job);
    load[least] += work_ms[job];
  }
  for (std::vector<size_t>& group : out) std::sort(group.begin(), group.end());
  return out;
}

Result<NodePlan> plan_nodes(const std::vector<SimJob>& jobs, const PolicySpec& policy,
                            const SimOptions& node, std::optional<int> nodes,
                            std::optional<int64_t> deadline_ms, int max_nodes) {
  if (jobs.empty()) return Error("the job file has no jobs to shard");
  const int most = static_cast<int>(jobs.size());
  NodePlan plan;
  if (!deadline_ms) {
    int n = std::clamp(nodes.value_or(1), 1, most);
    plan.shards = split_jobs(jobs, n);
    plan.makespan_ms = simulate_shards(jobs, plan.shards, policy, node, std::nullopt).makespan_ms;
    plan.how = nodes
                   ? fmt::format("--nodes {}{}", *nodes,
                                 n < *nodes ? fmt::format(" (only {})", count_of(most, "job")) : "")
                   : "one node (no --nodes or --deadline)";
    return plan;
  }
  GpuPlan gpus = fewest_gpus(jobs, policy, node, *deadline_ms, max_nodes * node.gpus);
  const std::string within = format_duration_ms(*deadline_ms);
  if (!gpus.gpus) {
    int64_t best = gpus.tried.empty() ? 0 : gpus.tried.back().makespan_ms;
    return Error(
        fmt::format("--deadline {}: even {} nodes of {} GPUs do not end every job in time under {} "
                    "(simulated makespan {}): allow more time or more nodes (--max-nodes)",
                    within, max_nodes, node.gpus, policy.name, format_duration_ms(best)));
  }
  int n = std::min(most, (*gpus.gpus + node.gpus - 1) / node.gpus);
  for (; n <= std::min(most, max_nodes); ++n) {
    std::vector<std::vector<size_t>> shards = split_jobs(jobs, n);
    ShardCheck check = simulate_shards(jobs, shards, policy, node, deadline_ms);
    if (!check.all_in_time) continue;
    plan.shards = std::move(shards);
    plan.makespan_ms = std::move(check.makespan_ms);
    plan.how = fmt::format(
        "--deadline {}: {} GPU{} in one pool would do (colo simulate, {}); as {} node{} of {} "
        "GPUs every shard ends in time",
        within, *gpus.gpus, *gpus.gpus == 1 ? "" : "s", policy.name, n, n == 1 ? "" : "s",
        node.gpus);
    return plan;
  }
  return Error(fmt::format(
      "--deadline {}: the sweep fits {} GPUs in one pool, but split into up to {} nodes of {} "
      "GPUs some shard still misses it (simulated under {}): allow more time or more nodes",
      within, *gpus.gpus, std::min(most, max_nodes), node.gpus, policy.name));
}

ShardPlan make_shard_plan(const std::string& job_file_path, const JobFile& file,
                          const NodePlan& nodes) {
  ShardPlan plan;
  plan.job_file = job_file_path;
  plan.total_jobs = static_cast<int>(file.jobs.size());
  plan.how = nodes.how;
  for (size_t i = 0; i < nodes.shards.size(); ++i) {
    Shard shard;
    for (size_t job : nodes.shards[i]) shard.jobs.push_back(file.jobs[job].name);
    shard.estimated_ms = nodes.makespan_ms[i];
    plan.shards.push_back(std::move(shard));
  }
  return plan;
}

}  // namespace colo
