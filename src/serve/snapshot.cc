#include "serve/snapshot.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "analysis/run_summary.h"
#include "common/json_values.h"
#include "common/units.h"
#include "gpu/device_json.h"
#include "jobs/job_spec_json.h"
#include "sched/scheduler.h"

namespace colo {
namespace {

using nlohmann::json;

template <class T>
std::optional<T> optional_at(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

std::string rate_text(const std::optional<double>& rate) {
  if (!rate) return "-";
  if (*rate >= 10'000) return fmt::format("{:.1f}k/s", *rate / 1000);
  return fmt::format("{:.0f}/s", *rate);
}

// A share of time as a whole percentage; "<1%" for a share above 0 that rounds to 0.
std::string share_percent(double share) {
  const double pct = 100.0 * share;
  return pct > 0 && pct < 0.5 ? std::string("<1%") : fmt::format("{:.0f}%", pct);
}

// A protected job against its floor so far: ", at 0.94", ", at 0.84, 12%
// below" (of its steady time); "" before a steady epoch was judged.
std::string floor_text(const QueueJob& j) {
  if (!j.speed_of_solo) return "";
  std::string out = fmt::format(", at {:.2f}", *j.speed_of_solo);
  if (j.below_floor_share && *j.below_floor_share > 0)
    out += fmt::format(", {} below", share_percent(*j.below_floor_share));
  return out;
}

std::string job_line(const QueueJob& j, const std::string& listed_name, UnixMillis now_ms) {
  std::string ends = "-";
  if (j.state == "running" && j.predicted_end_ms)
    ends = *j.predicted_end_ms > now_ms ? "in " + format_duration_ms(*j.predicted_end_ms - now_ms)
                                        : "due";
  if (j.ended_ms) ends = format_duration_ms(std::max<int64_t>(0, now_ms - *j.ended_ms)) + " ago";
  std::string name = listed_name + (j.probe ? " (probe)" : "") + (j.outside_mps ? " (alone)" : "");
  if (j.qos != "normal") {
    name += j.min_speed ? fmt::format(" ({} {:.2f}{})", j.qos, *j.min_speed, floor_text(j))
                        : fmt::format(" ({})", j.qos);
  }
  if (!j.reason.empty() && j.state != "running") name += ": " + j.reason;
  if (!j.stalled.empty()) name += ": " + j.stalled;
  return fmt::format("  {:<6} {:<10} {:<11} {:<9} {:>5} {:>9}  {:<12} {}\n", j.id, j.owner,
                     shown_state(j) + (j.attempts > 1 ? fmt::format("#{}", j.attempts) : ""),
                     j.mechanism, j.epoch ? std::to_string(*j.epoch) : "-",
                     rate_text(j.samples_per_s), ends, name);
}

constexpr const char* kHeader = "  {:<6} {:<10} {:<11} {:<9} {:>5} {:>9}  {:<12} {}\n";

}  // namespace

std::string shown_state(const QueueJob& job) {
  return job.state == "running" && !job.stalled.empty() ? "stalled" : job.state;
}

std::string qos_marker(const QueueJob& job) {
  if (job.qos == "opportunistic") return "opp";
  if (job.qos != "protected" || !job.min_speed) return "";
  std::string out = fmt::format("P {:.2f}", *job.min_speed);
  if (job.speed_of_solo) out += fmt::format("|{:.2f}", *job.speed_of_solo);
  if (job.below_floor_share && *job.below_floor_share > 0)
    out += " " + share_percent(*job.below_floor_share);
  return out;
}

bool is_final_state(const std::string& state) { return state != "queued" && state != "running"; }

std::optional<double> slowdown(const QueueJob& job) {
  if (!job.solo_samples_per_s || !job.samples_per_s || *job.solo_samples_per_s <= 0 ||
      *job.samples_per_s <= 0)
    return std::nullopt;
  return *job.solo_samples_per_s / *job.samples_per_s;
}

QueueJob queue_job_of(const ServiceJobRow& row, const std::string& mechanism) {
  QueueJob q;
  q.id = row.id;
  q.name = row.name;
  q.group = row.group;
  q.owner = row.owner_name;
  q.owner_uid = row.owner_uid;
  q.state = to_string(row.state);
  q.reason = row.reason;
  q.gpu = row.device;
  q.mechanism = mechanism;
  q.attempts = row.attempts;
  q.submitted_ms = row.submitted_ms;
  q.started_ms = row.started_ms;
  q.ended_ms = row.ended_ms;
  q.job_file = row.job_file;
  q.submission_id = row.submission_id;
  q.submission_run_id = row.submission_run_id;
  q.submission_name = row.submission_name;
  const SpecQos qos = qos_of_spec_text(row.spec_json);
  q.qos = to_string(qos.qos);
  if (qos.qos == QosClass::kProtected) q.min_speed = qos.min_speed;
  return q;
}

std::vector<std::string> listed_names(const std::vector<QueueJob>& jobs) {
  // The submissions each name came in (no submission counts as one of its own).
  std::map<std::string, std::set<std::optional<int64_t>>> submissions_of;
  for (const QueueJob& j : jobs) submissions_of[j.name].insert(j.submission_id);
  std::vector<std::string> names;
  names.reserve(jobs.size());
  for (const QueueJob& j : jobs) {
    if (!j.submission_id || submissions_of[j.name].size() < 2) {
      names.push_back(j.name);
      continue;
    }
    const std::string title =
        j.submission_run_id
            ? submission_title(*j.submission_run_id, *j.submission_id, j.submission_name)
            : fmt::format("submission {}", *j.submission_id);
    names.push_back(title + ": " + j.name);
  }
  return names;
}

std::vector<int> gpus_of(const QueueJob& j) { return job_gpus(j.gpu, j.gang_gpus); }

std::string gpus_text(const QueueJob& j) {
  std::string out;
  for (int g : gpus_of(j)) out += fmt::format("{}{}", out.empty() ? "" : ",", g);
  return out.empty() ? "-" : out;
}

json to_json(const QueueJob& j) {
  return json{{"id", j.id},
              {"name", j.name},
              {"group", j.group},
              {"owner", j.owner},
              {"owner_uid", j.owner_uid},
              {"state", j.state},
              {"reason", j.reason},
              {"gpu", value_or_null(j.gpu)},
              {"gang_gpus", j.gang_gpus},
              {"mechanism", j.mechanism},
              {"attempts", j.attempts},
              {"epoch", value_or_null(j.epoch)},
              {"samples_per_s", value_or_null(j.samples_per_s)},
              {"last_epoch_ms", value_or_null(j.last_epoch_ms)},
              {"predicted_end_ms", value_or_null(j.predicted_end_ms)},
              {"peak_memory_bytes", value_or_null(j.peak_memory_bytes)},
              {"submitted_ms", j.submitted_ms},
              {"started_ms", value_or_null(j.started_ms)},
              {"ended_ms", value_or_null(j.ended_ms)},
              {"job_file", j.job_file},
              {"run_id", value_or_null(j.run_id)},
              {"submission_id", value_or_null(j.submission_id)},
              {"submission_run_id", value_or_null(j.submission_run_id)},
              {"submission_name", j.submission_name},
              {"probe", j.probe},
              {"pid", value_or_null(j.pid)},
              {"mps_sm_share_pct", value_or_null(j.mps_sm_share_pct)},
              {"mps_memory_limit_bytes", value_or_null(j.mps_memory_limit_bytes)},
              {"mig_instance", j.mig_instance},
              {"solo_samples_per_s", value_or_null(j.solo_samples_per_s)},
              {"slowdown", value_or_null(slowdown(j))},
              {"stalled", j.stalled.empty() ? json(nullptr) : json(j.stalled)},
              {"outside_mps", j.outside_mps},
              {"qos", j.qos},
              {"min_speed", value_or_null(j.min_speed)},
              {"speed_of_solo", value_or_null(j.speed_of_solo)},
              {"below_floor_share", value_or_null(j.below_floor_share)},
              {"steady_ms", value_or_null(j.steady_ms)},
              {"below_floor_ms", value_or_null(j.below_floor_ms)}};
}

json to_json(const ProcessView& p) {
  return json{{"gpu", p.gpu},
              {"pid", p.pid},
              {"job", value_or_null(p.job)},
              {"used_memory_bytes", value_or_null(p.used_memory_bytes)},
              {"sm_util_pct", value_or_null(p.sm_util_pct)},
              {"mps_client", p.mps_client},
              {"user", p.user},
              {"command", p.command}};
}

json to_json(const GpuView& g) {
  return json{{"index", g.index},
              {"name", g.name},
              {"uuid", g.uuid},
              {"memory_total_bytes", g.memory_total_bytes},
              {"jobs_running", g.jobs_running},
              {"latest", g.latest ? device_sample_to_json(*g.latest) : json(nullptr)},
              {"power_limit_w", value_or_null(g.power_limit_w)}};
}

json to_json(const RunView& r) {
  return json{{"id", r.id},
              {"state", r.state},
              {"started_ms", r.started_ms},
              {"ended_ms", value_or_null(r.ended_ms)},
              {"mechanism", r.mechanism},
              {"job_file", r.job_file},
              {"job_count", r.job_count}};
}

json owners_to_json(const std::map<std::string, OwnerJobs>& owners) {
  json out = json::object();
  for (const auto& [owner, n] : owners)
    out[owner] = json{{"queued", n.queued},
                      {"running", n.running},
                      {"usage_ms", n.usage_ms},
                      {"weight", n.weight},
                      {"total_ms", n.total_ms}};
  return out;
}

json usage_rows_to_json(const std::vector<ServiceUsageReport>& rows, const std::string& name_key) {
  json out = json::array();
  for (const ServiceUsageReport& r : rows) {
    out.push_back({{name_key, r.owner_name},
                   {"jobs", r.jobs},
                   {"failed", r.failed},
                   {"gpu_ms", r.gpu_ms},
                   {"solo_ms", r.solo_ms},
                   {"share_ms", r.share_ms},
                   {"energy_j", r.energy_j},
                   {"cancelled", r.cancelled},
                   {"rated_gpu_ms", r.rated_gpu_ms},
                   {"rated_share_ms", r.rated_share_ms}});
  }
  return out;
}

json to_json(const ServiceSnapshot& s) {
  json service = {{"pid", s.service.pid},
                  {"user", s.service.user},
                  {"host", s.service.host},
                  {"started_ms", s.service.started_ms},
                  {"backend", s.service.backend},
                  {"simulated", s.service.simulated},
                  {"mechanism", s.service.mechanism},
                  {"mps_users", s.service.mps_users},
                  {"policy", s.service.policy},
                  {"run_id", s.service.run_id},
                  {"state", s.service.state},
                  {"mechanism_down", s.service.mechanism_down},
                  {"store", s.service.store},
                  {"http", s.service.http}};
  json gpus = json::array();
  for (const GpuView& g : s.gpus) gpus.push_back(to_json(g));
  json jobs = json::array();
  const std::vector<std::string> names = listed_names(s.jobs);
  for (size_t i = 0; i < s.jobs.size(); ++i) {
    jobs.push_back(to_json(s.jobs[i]));
    jobs.back()["listed_name"] = names[i];
  }
  json samples = json::array();
  for (const DeviceSample& d : s.samples) samples.push_back(device_sample_to_json(d));
  json runs = json::array();
  for (const RunView& r : s.runs) runs.push_back(to_json(r));
  json processes = json::array();
  for (const ProcessView& p : s.processes) processes.push_back(to_json(p));
  json owners = owners_to_json(s.owners);
  return json{{"version", kSnapshotVersion},      {"time_ms", s.time_ms},
              {"service", std::move(service)},    {"gpus", std::move(gpus)},
              {"jobs", std::move(jobs)},          {"queued_total", s.queued_total},
              {"queued_offset", s.queued_offset}, {"owners", std::move(owners)},
              {"samples", std::move(samples)},    {"runs", std::move(runs)},
              {"processes", std::move(processes)}};
}

Result<QueueJob> queue_job_from_json(const json& j) {
  try {
    QueueJob q;
    q.id = j.at("id").get<int64_t>();
    q.name = j.value("name", "");
    q.group = j.value("group", "");
    q.owner = j.value("owner", "");
    q.owner_uid = j.value("owner_uid", 0u);
    q.state = j.value("state", "");
    q.reason = j.value("reason", "");
    q.gpu = optional_at<int>(j, "gpu");
    if (auto g = j.find("gang_gpus"); g != j.end() && g->is_array()) {
      for (const json& d : *g) {
        if (d.is_number_integer()) q.gang_gpus.push_back(d.get<int>());
      }
    }
    q.mechanism = j.value("mechanism", "");
    q.attempts = j.value("attempts", 0);
    q.epoch = optional_at<int64_t>(j, "epoch");
    q.samples_per_s = optional_at<double>(j, "samples_per_s");
    q.last_epoch_ms = optional_at<int64_t>(j, "last_epoch_ms");
    q.predicted_end_ms = optional_at<int64_t>(j, "predicted_end_ms");
    q.peak_memory_bytes = optional_at<uint64_t>(j, "peak_memory_bytes");
    q.submitted_ms = j.value("submitted_ms", int64_t{0});
    q.started_ms = optional_at<int64_t>(j, "started_ms");
    q.ended_ms = optional_at<int64_t>(j, "ended_ms");
    q.job_file = j.value("job_file", "");
    q.run_id = optional_at<int64_t>(j, "run_id");
    q.submission_id = optional_at<int64_t>(j, "submission_id");
    q.submission_run_id = optional_at<int64_t>(j, "submission_run_id");
    q.submission_name = j.value("submission_name", "");
    q.probe = j.value("probe", false);
    if (auto stalled = j.find("stalled"); stalled != j.end() && stalled->is_string())
      q.stalled = stalled->get<std::string>();
    q.outside_mps = j.value("outside_mps", false);
    q.qos = j.value("qos", "normal");
    q.min_speed = optional_at<double>(j, "min_speed");
    q.speed_of_solo = optional_at<double>(j, "speed_of_solo");
    q.below_floor_share = optional_at<double>(j, "below_floor_share");
    q.steady_ms = optional_at<int64_t>(j, "steady_ms");
    q.below_floor_ms = optional_at<int64_t>(j, "below_floor_ms");
    q.pid = optional_at<uint32_t>(j, "pid");
    q.mps_sm_share_pct = optional_at<int>(j, "mps_sm_share_pct");
    q.mps_memory_limit_bytes = optional_at<uint64_t>(j, "mps_memory_limit_bytes");
    q.mig_instance = j.value("mig_instance", "");
    q.solo_samples_per_s = optional_at<double>(j, "solo_samples_per_s");
    return q;
  } catch (const json::exception& e) {
    return Error(fmt::format("a job in the service's answer is malformed: {}", e.what()));
  }
}

Result<ServiceSnapshot> snapshot_from_json(const json& j) {
  try {
    if (j.value("version", 0) != kSnapshotVersion) {
      return Error(fmt::format(
          "the service answered with snapshot version {}, this colo reads version {} (use the "
          "colo binary of the service)",
          j.value("version", 0), kSnapshotVersion));
    }
    ServiceSnapshot s;
    s.time_ms = j.value("time_ms", int64_t{0});
    const json& svc = j.at("service");
    s.service.pid = svc.value("pid", 0);
    s.service.user = svc.value("user", "");
    s.service.host = svc.value("host", "");
    s.service.started_ms = svc.value("started_ms", int64_t{0});
    s.service.backend = svc.value("backend", "");
    s.service.simulated = svc.value("simulated", false);
    s.service.mechanism = svc.value("mechanism", "");
    s.service.mps_users = svc.value("mps_users", "");
    s.service.policy = svc.value("policy", "");
    s.service.run_id = svc.value("run_id", int64_t{0});
    s.service.state = svc.value("state", "");
    s.service.mechanism_down = svc.value("mechanism_down", "");
    s.service.store = svc.value("store", "");
    s.service.http = svc.value("http", "");
    for (const json& g : j.at("gpus")) {
      GpuView v;
      v.index = g.value("index", 0);
      v.name = g.value("name", "");
      v.uuid = g.value("uuid", "");
      v.memory_total_bytes = g.value("memory_total_bytes", uint64_t{0});
      v.jobs_running = g.value("jobs_running", 0);
      if (g.contains("latest") && !g["latest"].is_null())
        v.latest = device_sample_from_json(g["latest"]);
      v.power_limit_w = optional_at<double>(g, "power_limit_w");
      s.gpus.push_back(std::move(v));
    }
    for (const json& job : j.at("jobs")) {
      Result<QueueJob> q = queue_job_from_json(job);
      if (!q.ok()) return q.error();
      s.jobs.push_back(std::move(q).value());
    }
    // A service from before paging sent its whole queue.
    s.queued_total = j.value(
        "queued_total",
        static_cast<int64_t>(std::count_if(s.jobs.begin(), s.jobs.end(),
                                           [](const QueueJob& q) { return q.state == "queued"; })));
    s.queued_offset = j.value("queued_offset", int64_t{0});
    if (j.contains("owners")) s.owners = owners_from_json(j["owners"]);
    for (const json& d : j.at("samples")) s.samples.push_back(device_sample_from_json(d));
    for (const json& r : j.at("runs")) {
      RunView v;
      v.id = r.value("id", int64_t{0});
      v.state = r.value("state", "");
      v.started_ms = r.value("started_ms", int64_t{0});
      v.ended_ms = optional_at<int64_t>(r, "ended_ms");
      v.mechanism = r.value("mechanism", "");
      v.job_file = r.value("job_file", "");
      v.job_count = r.value("job_count", 0);
      s.runs.push_back(std::move(v));
    }
    // Added after version 1's first readers: absent from older services.
    for (const json& p : j.value("processes", json::array())) {
      ProcessView v;
      v.gpu = p.value("gpu", 0);
      v.pid = p.value("pid", 0u);
      v.job = optional_at<int64_t>(p, "job");
      v.used_memory_bytes = optional_at<uint64_t>(p, "used_memory_bytes");
      v.sm_util_pct = optional_at<double>(p, "sm_util_pct");
      v.mps_client = p.value("mps_client", false);
      v.user = p.value("user", "");
      v.command = p.value("command", "");
      s.processes.push_back(std::move(v));
    }
    return s;
  } catch (const json::exception& e) {
    return Error(fmt::format("the service's snapshot is malformed: {}", e.what()));
  }
}

std::string format_queue(const ServiceSnapshot& s, UnixMillis now_ms) {
  int running = 0;
  int64_t queued_shown = 0;
  for (const QueueJob& j : s.jobs) {
    running += j.state == "running";
    queued_shown += j.state == "queued";
  }
  // A snapshot built without counts (by hand, or by a service before paging)
  // counts what it holds.
  const int64_t queued_total = std::max(s.queued_total, s.queued_offset + queued_shown);
  std::string out = fmt::format(
      "colo serve, pid {} on {} as {}: {}, policy {}, {} GPU{}{}; {} running, {} queued{}\n",
      s.service.pid, s.service.host, s.service.user, s.service.mechanism, s.service.policy,
      s.gpus.size(), s.gpus.size() == 1 ? "" : "s", s.service.simulated ? " (SIMULATED)" : "",
      running, queued_total, s.service.state == "running" ? "" : " [" + s.service.state + "]");
  if (s.owners.size() > 1) {
    std::vector<std::string> each;
    for (const auto& [owner, n] : s.owners) {
      if (n.running == 0 && n.queued == 0) continue;  // `colo usage` has them
      each.push_back(fmt::format("{} {} running, {} queued, used {}", owner, n.running, n.queued,
                                 format_duration_ms(static_cast<int64_t>(n.usage_ms))));
    }
    out += fmt::format("by owner: {}\n", fmt::join(each, "; "));
  }
  if (!s.service.mechanism_down.empty())
    out += "placing nothing until the mechanism is back: " + s.service.mechanism_down + "\n";
  const std::vector<std::string> names = listed_names(s.jobs);
  auto line = [&](const QueueJob* j) {
    return job_line(*j, names[static_cast<size_t>(j - s.jobs.data())], now_ms);
  };
  std::map<int, std::vector<const QueueJob*>> by_gpu;
  std::vector<const QueueJob*> waiting;
  std::vector<const QueueJob*> ended;
  for (const QueueJob& j : s.jobs) {
    if (j.state == "running" && j.gpu) {
      by_gpu[*j.gpu].push_back(&j);
    } else if (j.state == "queued") {
      waiting.push_back(&j);
    } else {
      ended.push_back(&j);
    }
  }
  for (const GpuView& g : s.gpus) {
    std::string load;
    if (g.latest) {
      if (g.latest->sm_active_pct) load += fmt::format(", SM {:.0f}%", *g.latest->sm_active_pct);
      if (g.latest->memory_used_bytes)
        load += fmt::format(", memory {} of {}", format_bytes(*g.latest->memory_used_bytes),
                            format_bytes(g.memory_total_bytes));
    }
    out += fmt::format("\ngpu{}  {}  {} running{}\n", g.index, g.name, g.jobs_running, load);
    if (by_gpu[g.index].empty()) continue;
    out += fmt::format(kHeader, "ID", "OWNER", "STATE", "MECH", "EPOCH", "RATE", "END", "NAME");
    for (const QueueJob* j : by_gpu[g.index]) out += line(j);
  }
  if (!waiting.empty()) {
    if (queued_shown == queued_total) {
      out += fmt::format("\nqueued ({})\n", queued_shown);
    } else {
      out += fmt::format("\nqueued ({} to {} of {})\n", s.queued_offset + 1,
                         s.queued_offset + queued_shown, queued_total);
    }
    out += fmt::format(kHeader, "ID", "OWNER", "STATE", "MECH", "EPOCH", "RATE", "END", "NAME");
    for (const QueueJob* j : waiting) out += line(j);
    if (s.queued_offset + queued_shown < queued_total) {
      out += fmt::format("... {} more queued: colo queue --offset {}\n",
                         queued_total - s.queued_offset - queued_shown,
                         s.queued_offset + queued_shown);
    }
  }
  if (!ended.empty()) {
    out += "\nrecently ended\n";
    out += fmt::format(kHeader, "ID", "OWNER", "STATE", "MECH", "EPOCH", "RATE", "ENDED", "NAME");
    for (const QueueJob* j : ended) out += line(j);
  }
  return out;
}

std::map<std::string, OwnerJobs> owners_from_json(const json& j) {
  std::map<std::string, OwnerJobs> owners;
  if (!j.is_object()) return owners;
  for (const auto& [owner, n] : j.items()) {
    owners[owner] =
        OwnerJobs{n.value("queued", int64_t{0}), n.value("running", int64_t{0}),
                  n.value("usage_ms", 0.0), n.value("weight", 1.0), n.value("total_ms", 0.0)};
  }
  return owners;
}

UsageReport usage_by_group(const UsageReport& by_user,
                           const std::function<std::string(const std::string&)>& group_of) {
  UsageReport out;
  out.by = "group";
  for (const auto& [user, n] : by_user.owners) {
    OwnerJobs& g = out.owners.try_emplace(group_of(user), OwnerJobs{0, 0, 0, 0, 0}).first->second;
    g.queued += n.queued;
    g.running += n.running;
    g.usage_ms += n.usage_ms;
    g.total_ms += n.total_ms;
  }
  std::map<std::string, ServiceUsageReport> ended;
  for (const ServiceUsageReport& r : by_user.ended) {
    const std::string group = group_of(r.owner_name);
    ServiceUsageReport& g = ended.try_emplace(group, ServiceUsageReport{group}).first->second;
    g.jobs += r.jobs;
    g.failed += r.failed;
    g.gpu_ms += r.gpu_ms;
    g.solo_ms += r.solo_ms;
    g.share_ms += r.share_ms;
    g.energy_j += r.energy_j;
    g.cancelled += r.cancelled;
    g.rated_gpu_ms += r.rated_gpu_ms;
    g.rated_share_ms += r.rated_share_ms;
  }
  for (auto& [group, r] : ended) out.ended.push_back(std::move(r));
  std::stable_sort(out.ended.begin(), out.ended.end(),
                   [](const auto& a, const auto& b) { return a.gpu_ms > b.gpu_ms; });
  return out;
}

std::string format_usage(const UsageReport& report, const std::string& since) {
  const std::map<std::string, OwnerJobs>& by_owner = report.owners;
  const std::vector<ServiceUsageReport>& ended = report.ended;
  const std::string who = report.by == "group" ? "GROUP" : "USER";
  std::vector<std::pair<std::string, OwnerJobs>> owners(by_owner.begin(), by_owner.end());
  double all = 0;
  for (const auto& [owner, n] : owners) all += n.usage_ms;
  std::stable_sort(owners.begin(), owners.end(), [](const auto& a, const auto& b) {
    return a.second.usage_ms > b.second.usage_ms;
  });
  std::string out =
      "Usage in GPU time: a job's time times its share of its GPUs as colo measured it (the "
      "whole GPU alone)\n";
  if (owners.empty()) {
    out += "no one has used it yet\n";
  } else {
    out += fmt::format("{:<16} {:>6} {:>12} {:>6} {:>12} {:>8} {:>7}\n", who, "WEIGHT", "LATELY",
                       "SHARE", "IN ALL", "RUNNING", "QUEUED");
    for (const auto& [owner, n] : owners) {
      out +=
          fmt::format("{:<16} {:>6} {:>12} {:>6} {:>12} {:>8} {:>7}\n", owner,
                      n.weight > 0 ? fmt::format("{:g}", n.weight) : std::string("-"),
                      format_duration_ms(static_cast<int64_t>(n.usage_ms)),
                      all > 0 ? fmt::format("{:.0f}%", 100 * n.usage_ms / all) : std::string("-"),
                      format_duration_ms(static_cast<int64_t>(n.total_ms)), n.running, n.queued);
    }
    out +=
        "LATELY decays with the service's --fair-share-half-life; the next job to start comes "
        "from the user with the least LATELY over WEIGHT (docs/serve.md, Fair share)\n";
    if (report.by == "group") out += "Each user is counted in their primary group.\n";
  }
  out += fmt::format("\nJobs that ended {}:\n", since);
  if (ended.empty()) return out + "none\n";
  out += fmt::format("{:<16} {:>6} {:>7} {:>9} {:>12} {:>12} {:>9} {:>9} {:>10}\n", who, "JOBS",
                     "FAILED", "CANCELLED", "GPU TIME", "SOLO-EQUIV", "SOLO/GPU", "SPEED-UP",
                     "ENERGY");
  bool unrated = false;
  for (const ServiceUsageReport& r : ended) {
    // Solo-equivalent figures only of the time whose solo rate was known.
    unrated = unrated || r.rated_gpu_ms < r.gpu_ms;
    out += fmt::format(
        "{:<16} {:>6} {:>7} {:>9} {:>12} {:>12} {:>9} {:>9} {:>10}\n", r.owner_name, r.jobs,
        r.failed, r.cancelled, format_duration_ms(static_cast<int64_t>(r.gpu_ms)),
        r.rated_gpu_ms > 0 ? format_duration_ms(static_cast<int64_t>(r.solo_ms)) : "-",
        r.rated_gpu_ms > 0 ? fmt::format("{:.2f}", r.solo_ms / r.rated_gpu_ms) : "-",
        r.rated_share_ms > 0 ? fmt::format("{:.2f}x", r.solo_ms / r.rated_share_ms) : "-",
        r.energy_j > 0 ? format_energy(r.energy_j) : "-");
  }
  out +=
      "JOBS: those that ended their work (ok, stopped early or failed); CANCELLED: cancelled after "
      "they started (their GPU time counts; a job cancelled before it started is in no column). "
      "SOLO/GPU: the work a GPU-second gave, against a GPU of one's own (below 1: slowed by "
      "neighbours). SPEED-UP: solo-equivalent time over the GPU time charged (each job's time "
      "times its share of its GPUs as colo measured it), the gain collocation gave "
      "(1.00x: as much as GPUs of one's own; 1.40x: 40% more work from the same GPU time). "
      "ENERGY: each job's share of its GPUs' energy (split evenly among the jobs on a GPU)\n";
  if (unrated) {
    out +=
        "-: no solo rate known (colo learns a job's rate alone from its family run alone); where "
        "one was known for part of the GPU time, SOLO-EQUIV, SOLO/GPU and SPEED-UP count that "
        "part only\n";
  }
  return out;
}

std::string format_energy(double joules) {
  if (joules < 3600) return fmt::format("{:.0f} J", joules);
  if (joules < 3.6e6) return fmt::format("{:.1f} Wh", joules / 3600);
  return fmt::format("{:.2f} kWh", joules / 3.6e6);
}

std::string usage_csv(const UsageReport& report) {
  std::map<std::string, std::pair<OwnerJobs, ServiceUsageReport>> rows;
  for (const auto& [owner, n] : report.owners) rows[owner].first = n;
  for (const ServiceUsageReport& r : report.ended) rows[r.owner_name].second = r;
  std::string out =
      report.by +
      ",weight,usage_lately_ms,usage_total_ms,running,queued,ended_jobs,failed,gpu_ms,"
      "solo_ms,share_ms,energy_j,cancelled,rated_gpu_ms,rated_share_ms\n";
  for (const auto& [owner, row] : rows) {
    const auto& [n, r] = row;
    std::string quoted = "\"";
    for (char c : owner) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    quoted += '"';
    out += fmt::format(
        "{},{:g},{:.0f},{:.0f},{},{},{},{},{:.0f},{:.0f},{:.0f},{:.1f},{},{:.0f},{:.0f}\n", quoted,
        n.weight, n.usage_ms, n.total_ms, n.running, n.queued, r.jobs, r.failed, r.gpu_ms,
        r.solo_ms, r.share_ms, r.energy_j, r.cancelled, r.rated_gpu_ms, r.rated_share_ms);
  }
  return out;
}

}  // namespace colo
