#include "serve/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace colo {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

using Labels = std::vector<std::pair<std::string, std::string>>;

// A label value with backslash, double quote and newline escaped.
std::string escape(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

// One metric family: HELP and TYPE once, then its samples. A family without
// samples is left out.
class Family {
 public:
  Family(std::string name, std::string type, std::string help)
      : name_(std::move(name)), type_(std::move(type)), help_(std::move(help)) {}

  void add(const Labels& labels, double value) {
    std::string line = name_;
    if (!labels.empty()) {
      line += '{';
      for (size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) line += ',';
        line += fmt::format("{}=\"{}\"", labels[i].first, escape(labels[i].second));
      }
      line += '}';
    }
    samples_.push_back(line + ' ' + number(value) + '\n');
  }

  void write(std::string& out) const {
    if (samples_.empty()) return;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name_, help_, name_, type_);
    for (const std::string& s : samples_) out += s;
  }

 private:
  std::string name_;
  std::string type_;
  std::string help_;
  std::vector<std::string> samples_;
};

// A GPU metric under dcgm-exporter's name: the value the latest sample has,
// converted to dcgm-exporter's unit.
struct GpuMetric {
  const char* name;
  const char* type;
  const char* help;
  std::function<std::optional<double>(const DeviceSample&, const GpuView&)> value;
};

template <class T>
std::optional<double> scaled(const std::optional<T>& v, double factor) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * factor;
}

const std::vector<GpuMetric>& gpu_metrics() {
  static const std::vector<GpuMetric> kMetrics = {
      {"DCGM_FI_PROF_SM_ACTIVE", "gauge",
       "The ratio of cycles an SM has at least 1 warp assigned (0-1).",
       [](const DeviceSample& s, const GpuView&) { return scaled(s.sm_active_pct, 0.01); }},
      {"DCGM_FI_PROF_SM_OCCUPANCY", "gauge",
       "The ratio of number of warps resident on an SM to the maximum (0-1).",
       [](const DeviceSample& s, const GpuView&) { return scaled(s.sm_occupancy_pct, 0.01); }},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
       "The ratio of cycles the tensor (HMMA) pipe is active (0-1).",
       [](const DeviceSample& s, const GpuView&) { return scaled(s.tensor_active_pct, 0.01); }},
      {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
       "The ratio of cycles the device memory interface is active sending or receiving data "
       "(0-1).",
       [](const DeviceSample& s, const GpuView&) { return scaled(s.dram_active_pct, 0.01); }},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
       "The rate of data received over the PCIe bus, in bytes per second.",
       [](const DeviceSample& s, const GpuView&) { return scaled(s.pcie_rx_mib_per_s, kMiB); }},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
       "The rate of data transmitted over the PCIe bus, in bytes per second.",
       [](const DeviceSample& s, const GpuView&) { return scaled(s.pcie_tx_mib_per_s, kMiB); }},
      {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).",
       [](const DeviceSample& s, const GpuView&) { return scaled(s.gpu_util_pct, 1.0); }},
      {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).",
       [](const DeviceSample& s, const GpuView&) { return scaled(s.sm_clock_mhz, 1.0); }},
      {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
       [](const DeviceSample& s, const GpuView&) {
         return scaled(s.memory_used_bytes, 1.0 / kMiB);
       }},
      {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
       [](const DeviceSample& s, const GpuView& g) -> std::optional<double> {
         const uint64_t total = s.memory_total_bytes.value_or(g.memory_total_bytes);
         if (!s.memory_used_bytes || total == 0) return std::nullopt;
         return static_cast<double>(total - std::min(total, *s.memory_used_bytes)) / kMiB;
       }},
      {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).",
       [](const DeviceSample& s, const GpuView&) { return scaled(s.power_w, 1.0); }},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
       "Total energy consumption since the driver was loaded (in mJ).",
       [](const DeviceSample& s, const GpuView&) { return scaled(s.energy_mj, 1.0); }},
  };
  return kMetrics;
}

}  // namespace

std::string prometheus_metrics(const ServiceSnapshot& s) {
  // Each GPU's labels, with job and user when exactly one job runs there.
  std::map<int, Labels> gpu_labels;
  std::map<int, std::vector<const QueueJob*>> running_on;
  for (const QueueJob& j : s.jobs) {
    if (j.state != "running") continue;
    for (int g : gpus_of(j)) running_on[g].push_back(&j);
  }
  for (const GpuView& g : s.gpus) {
    Labels labels = {{"gpu", std::to_string(g.index)},
                     {"UUID", g.uuid},
                     {"device", fmt::format("nvidia{}", g.index)},
                     {"modelName", g.name},
                     {"Hostname", s.service.host}};
    gpu_labels[g.index] = labels;
  }

  std::string out;
  for (const GpuMetric& m : gpu_metrics()) {
    Family family(m.name, m.type, m.help);
    for (const GpuView& g : s.gpus) {
      if (!g.latest) continue;
      std::optional<double> value = m.value(*g.latest, g);
      if (!value) continue;
      Labels labels = gpu_labels[g.index];
      if (running_on[g.index].size() == 1) {
        labels.emplace_back("hpc_job", std::to_string(running_on[g.index].front()->id));
        labels.emplace_back("user", running_on[g.index].front()->owner);
      }
      family.add(labels, *value);
    }
    family.write(out);
  }

  Family jobs_on_gpu("colo_gpu_jobs_running", "gauge", "Jobs of the service running on the GPU.");
  for (const GpuView& g : s.gpus) jobs_on_gpu.add(gpu_labels[g.index], g.jobs_running);
  jobs_on_gpu.write(out);

  Family info("colo_service_info", "gauge",
              "colo serve: its mechanism (and under mps whether users share one server), "
              "policy, backend and state (value 1).");
  info.add({{"mechanism", s.service.mechanism},
            {"mps_users", s.service.mps_users},
            {"policy", s.service.policy},
            {"backend", s.service.backend},
            {"state", s.service.state},
            {"Hostname", s.service.host}},
           1);
  info.write(out);
  Family started("colo_service_start_time_seconds", "gauge",
                 "When the service started (Unix time).");
  started.add({}, static_cast<double>(s.service.started_ms) / 1000.0);
  started.write(out);
  Family up("colo_service_mechanism_up", "gauge",
            "1 while the sharing mechanism works; 0 while jobs wait for it to be restarted.");
  up.add({{"mechanism", s.service.mechanism}}, s.service.mechanism_down.empty() ? 1 : 0);
  up.write(out);

  std::map<std::string, int> by_state = {{"queued", 0}, {"running", 0}};
  for (const QueueJob& j : s.jobs) {
    if (j.state == "queued" || j.state == "running") ++by_state[j.state];
  }
  Family queue_length("colo_queue_length", "gauge", "Jobs waiting to start.");
  queue_length.add({}, by_state["queued"]);
  queue_length.write(out);
  Family jobs_running("colo_jobs_running", "gauge", "Jobs running.");
  jobs_running.add({}, by_state["running"]);
  jobs_running.write(out);
  Family jobs_stalled("colo_jobs_stalled", "gauge",
                      "Running jobs found stalled (no progress for longer than their bound), "
                      "being stopped to run again.");
  jobs_stalled.add(
      {}, static_cast<double>(std::count_if(s.jobs.begin(), s.jobs.end(), [](const QueueJob& j) {
        return shown_state(j) == "stalled";
      })));
  jobs_stalled.write(out);

  Family job_info("colo_job_info", "gauge",
                  "A job queued or running (value 1), with its state and GPU.");
  Family epoch("colo_job_epoch", "gauge", "The last epoch the job reported (this attempt).");
  Family rate("colo_job_samples_per_second", "gauge", "The job's latest progress rate.");
  Family memory("colo_job_gpu_memory_peak_bytes", "gauge",
                "The largest GPU memory the job's processes used at once (this attempt).");
  Family attempts("colo_job_attempts", "gauge", "Attempts started so far.");
  Family end("colo_job_predicted_end_timestamp_seconds", "gauge",
             "When the policy expects the job to end (Unix time).");
  // A protected job against its floor (docs/policy.md, "Protected and opportunistic jobs").
  Family min_speed("colo_job_min_speed", "gauge",
                   "A protected job's floor: the fraction of its solo speed it is to keep.");
  Family speed_of_solo("colo_job_speed_of_solo", "gauge",
                       "A protected job's latest steady epoch: its rate over its solo rate.");
  Family below_share("colo_job_below_floor_ratio", "gauge",
                     "The share of a protected job's steady time spent below its floor (0-1), "
                     "across its attempts.");
  Family below_seconds("colo_job_below_floor_seconds_total", "counter",
                       "A protected job's steady time spent below its floor, across its attempts.");
  Family steady_seconds("colo_job_steady_seconds_total", "counter",
                        "A protected job's steady time judged against its floor, across its "
                        "attempts.");
  for (const QueueJob& j : s.jobs) {
    if (j.state != "queued" && j.state != "running") continue;
    Labels labels = {{"hpc_job", std::to_string(j.id)}, {"user", j.owner}, {"name", j.name}};
    if (j.gpu && gpu_labels.count(*j.gpu) > 0) {
      for (const auto& label : gpu_labels[*j.gpu]) labels.push_back(label);
    }
    if (!j.gang_gpus.empty()) labels.emplace_back("gpus", gpus_text(j));  // a gang: all of them
    Labels with_state = labels;
    with_state.emplace_back("state", shown_state(j));
    // Why it waits, as a kind ("quota", "fair share", "gang"): the words
    // before the reason's colon, so that the label's values stay few.
    if (j.state == "queued" && !j.reason.empty()) {
      const std::string kind = j.reason.substr(0, j.reason.find(':'));
      with_state.emplace_back("waiting_for", kind.size() <= 24 ? kind : "other");
    }
    job_info.add(with_state, 1);
    attempts.add(labels, j.attempts);
    if (j.min_speed) min_speed.add(labels, *j.min_speed);
    if (j.speed_of_solo && j.state == "running") speed_of_solo.add(labels, *j.speed_of_solo);
    if (j.below_floor_share) below_share.add(labels, *j.below_floor_share);
    if (j.below_floor_ms)
      below_seconds.add(labels, static_cast<double>(*j.below_floor_ms) / 1000.0);
    if (j.steady_ms) steady_seconds.add(labels, static_cast<double>(*j.steady_ms) / 1000.0);
    if (j.state != "running") continue;
    if (j.epoch) epoch.add(labels, static_cast<double>(*j.epoch));
    if (j.samples_per_s) rate.add(labels, *j.samples_per_s);
    if (j.peak_memory_bytes) memory.add(labels, static_cast<double>(*j.peak_memory_bytes));
    if (j.predicted_end_ms) end.add(labels, static_cast<double>(*j.predicted_end_ms) / 1000.0);
  }
  for (const Family* f : {&job_info, &epoch, &rate, &memory, &attempts, &end, &min_speed,
                          &speed_of_solo, &below_share, &below_seconds, &steady_seconds})
    f->write(out);

  Family usage("colo_user_usage_seconds", "gauge",
               "Fair share: the user's charged GPU time lately (decayed with the "
               "service's half-life).");
  Family usage_total("colo_user_usage_seconds_total", "counter",
                     "The user's charged GPU time in all (kept across restarts).");
  Family weight("colo_user_fair_share_weight", "gauge", "The user's fair-share weight.");
  Family user_jobs("colo_user_jobs", "gauge", "The user's jobs queued or running.");
  for (const auto& [user, o] : s.owners) {
    const Labels labels = {{"user", user}};
    usage.add(labels, o.usage_ms / 1000.0);
    usage_total.add(labels, o.total_ms / 1000.0);
    weight.add(labels, o.weight);
    user_jobs.add({{"user", user}, {"state", "queued"}}, static_cast<double>(o.queued));
    user_jobs.add({{"user", user}, {"state", "running"}}, static_cast<double>(o.running));
  }
  for (const Family* f : {&usage, &usage_total, &weight, &user_jobs}) f->write(out);
  return out;
}

}  // namespace colo
