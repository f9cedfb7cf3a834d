#include "slurm/allocation.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "common/paths.h"

namespace colo {
namespace {

// The items of a `sep`-separated list, trimmed of blanks, empty ones left out.
std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

std::optional<int> parse_int(const std::string& text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// "0,1,4-6" -> 0 1 4 5 6.
Result<std::vector<int>> parse_index_list(const std::string& name, const std::string& value) {
  std::vector<int> out;
  for (const std::string& item : split_list(value, ',')) {
    size_t dash = item.find('-');
    std::optional<int> first = parse_int(item.substr(0, dash));
    std::optional<int> last = dash == std::string::npos ? first : parse_int(item.substr(dash + 1));
    if (!first || !last || *last < *first || *last - *first > 4096) {
      return Error(fmt::format(
          "{}={}: '{}' is not a GPU index or range of indices (as Slurm writes them: 0,1,4-6)",
          name, value, item));
    }
    for (int i = *first; i <= *last; ++i) out.push_back(i);
  }
  return out;
}

std::string join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += fmt::format("{}{}", out.empty() ? "" : ",", v);
  return out;
}

std::string indices_of(const std::vector<DeviceInfo>& devices) {
  std::vector<int> idx;
  for (const DeviceInfo& d : devices) idx.push_back(d.index);
  return join(idx);
}

std::vector<DeviceInfo> sorted_unique(std::vector<DeviceInfo> devices) {
  std::sort(devices.begin(), devices.end(),
            [](const DeviceInfo& a, const DeviceInfo& b) { return a.index < b.index; });
  devices.erase(
      std::unique(devices.begin(), devices.end(),
                  [](const DeviceInfo& a, const DeviceInfo& b) { return a.index == b.index; }),
      devices.end());
  return devices;
}

// CUDA_VISIBLE_DEVICES given as UUIDs (or unique UUID prefixes, as CUDA accepts).
Result<std::vector<DeviceInfo>> by_uuid(const std::vector<DeviceInfo>& found,
                                        const std::vector<std::string>& items,
                                        const std::string& value, const std::string& where) {
  std::vector<DeviceInfo> out;
  for (const std::string& item : items) {
    std::vector<const DeviceInfo*> matches;
    for (const DeviceInfo& d : found) {
      if (d.uuid.rfind(item, 0) == 0) matches.push_back(&d);
    }
    if (matches.size() != 1) {
      std::string have;
      for (const DeviceInfo& d : found) have += fmt::format("\n  gpu{} {}", d.index, d.uuid);
      return Error(fmt::format(
          "{}: CUDA_VISIBLE_DEVICES={}: '{}' {} of this machine's GPUs:{}", where, value, item,
          matches.empty() ? "names none" : "is the start of the UUID of more than one", have));
    }
    out.push_back(*matches.front());
  }
  return sorted_unique(std::move(out));
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  };
}

Result<std::optional<SlurmAllocation>> slurm_allocation(const EnvLookup& env, std::string* note) {
  std::optional<std::string> job = env("SLURM_JOB_ID");
  if (!job || job->empty()) return std::optional<SlurmAllocation>();
  std::optional<std::string> node = env("SLURMD_NODENAME");
  if (!node || node->empty()) {
    if (note != nullptr) {
      *note = fmt::format(
          "SLURM_JOB_ID={} is set, but this is not a node of that job (no SLURMD_NODENAME: a "
          "salloc shell on the submit host?): the GPUs here are not the job's; start colo with "
          "srun to run it on the allocation",
          *job);
    }
    return std::optional<SlurmAllocation>();
  }
  SlurmAllocation a;
  a.node = *node;
  a.job_id = *job;
  std::optional<std::string> array_job = env("SLURM_ARRAY_JOB_ID");
  std::optional<std::string> array_task = env("SLURM_ARRAY_TASK_ID");
  if (array_job && array_task && !array_job->empty() && !array_task->empty()) {
    a.job_id = *array_job + "_" + *array_task;
    a.array_task = parse_int(*array_task);
    if (!a.array_task)
      return Error(fmt::format("SLURM_ARRAY_TASK_ID={} is not a task index", *array_task));
  }
  a.step = env("SLURM_STEP_ID").value_or("batch");
  if (a.step.empty()) a.step = "batch";
  if (std::optional<std::string> restarts = env("SLURM_RESTART_COUNT");
      restarts && !restarts->empty()) {
    std::optional<int> n = parse_int(*restarts);
    if (!n) return Error(fmt::format("SLURM_RESTART_COUNT={} is not a count", *restarts));
    a.restart_count = *n;
  }
  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    std::optional<std::string> value = env(name);
    if (!value) continue;
    Result<std::vector<int>> indices = parse_index_list(name, *value);
    if (!indices.ok()) return indices.error();
    a.gpu_indices = std::move(*indices);
    break;
  }
  a.cuda_visible_devices = env("CUDA_VISIBLE_DEVICES");
  return std::optional<SlurmAllocation>(std::move(a));
}

Result<std::vector<DeviceInfo>> usable_devices(const std::vector<DeviceInfo>& found,
                                               const std::optional<SlurmAllocation>& allocation) {
  if (!allocation) return found;
  const SlurmAllocation& a = *allocation;
  const std::string where = fmt::format("Slurm job {} on {}", a.job_id, a.node);

  std::optional<std::vector<int>> visible;  // CUDA_VISIBLE_DEVICES as indices
  if (a.cuda_visible_devices) {
    const std::string& value = *a.cuda_visible_devices;
    std::vector<std::string> items =
        value == "NoDevFiles" ? std::vector<std::string>{} : split_list(value, ',');
    bool all_indices = std::all_of(items.begin(), items.end(),
                                   [](const std::string& s) { return parse_int(s).has_value(); });
    if (!items.empty() && !all_indices) return by_uuid(found, items, value, where);
    visible.emplace();
    for (const std::string& s : items) visible->push_back(*parse_int(s));
  }
  const size_t allocated = a.gpu_indices ? a.gpu_indices->size() : visible ? visible->size() : 0;
  if (allocated == 0 || (visible && visible->empty())) {
    return Error(fmt::format(
        "{} was given no GPU (SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES name none): ask Slurm for "
        "GPUs with --gres=gpu:N (or --gpus-per-node=N); where Slurm does not manage GPUs, set "
        "CUDA_VISIBLE_DEVICES to the ones to use",
        where));
  }
  if (found.size() < allocated) {
    return Error(fmt::format(
        "{} was given {} GPUs ({}), but the backend sees only {} (gpu {}): is the job's "
        "CUDA_VISIBLE_DEVICES or device cgroup narrower than its allocation?",
        where, allocated, a.gpu_indices ? "SLURM_JOB_GPUS=" + join(*a.gpu_indices) : "",
        found.size(), indices_of(found)));
  }
  std::vector<DeviceInfo> out;
  if (found.size() == allocated) {
    // The backend sees exactly the job's GPUs (devices constrained by cgroups,
    // or a node whose every GPU is the job's): CUDA_VISIBLE_DEVICES, when set,
    // counts among them.
    std::vector<DeviceInfo> ordered = sorted_unique(found);
    if (!visible) return ordered;
    for (int i : *visible) {
      if (i >= static_cast<int>(ordered.size())) {
        return Error(
            fmt::format("{}: CUDA_VISIBLE_DEVICES names GPU {}, but the job has only {} (gpu {})",
                        where, i, ordered.size(), indices_of(ordered)));
      }
      out.push_back(ordered[static_cast<size_t>(i)]);
    }
    return sorted_unique(std::move(out));
  }
  // The backend sees more GPUs than the job has: indices are the node's.
  const std::vector<int>& wanted = visible ? *visible : *a.gpu_indices;
  for (int i : wanted) {
    if (a.gpu_indices &&
        std::find(a.gpu_indices->begin(), a.gpu_indices->end(), i) == a.gpu_indices->end()) {
      return Error(
          fmt::format("{}: CUDA_VISIBLE_DEVICES names GPU {}, which Slurm did not give this job "
                      "(its GPUs: {})",
                      where, i, join(*a.gpu_indices)));
    }
    auto it =
        std::find_if(found.begin(), found.end(), [&](const DeviceInfo& d) { return d.index == i; });
    if (it == found.end()) {
      return Error(
          fmt::format("{}: Slurm gave this job GPU {}, which the backend does not have "
                      "(it has gpu {})",
                      where, i, indices_of(found)));
    }
    out.push_back(*it);
  }
  return sorted_unique(std::move(out));
}

std::string node_local_state_dir(const std::optional<SlurmAllocation>& allocation,
                                 const EnvLookup& env) {
  if (!allocation) return default_state_dir();
  std::string tmp = env("TMPDIR").value_or("");
  if (tmp.empty()) tmp = "/tmp";
  return fmt::format("{}/colo-{}", tmp, getuid());
}

}  // namespace colo
