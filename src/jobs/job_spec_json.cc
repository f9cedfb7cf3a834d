#include "jobs/job_spec_json.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/text.h"
#include "jobs/secret_env.h"

namespace colo {
namespace {

using nlohmann::json;

bool valid_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// A name shown in `colo queue` and written in the service's log: printable,
// one line, bounded.
constexpr size_t kMaxNameBytes = 256;
std::string name_problem(std::string_view name) {
  if (name.size() > kMaxNameBytes)
    return fmt::format("is {} bytes long; at most {} are allowed", name.size(), kMaxNameBytes);
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return fmt::format("holds the control character 0x{:02x}", u);
  }
  return "";
}

// Reads the fields of one job object; the first problem is kept.
class FieldReader {
 public:
  explicit FieldReader(const json& j) : j_(j) {}

  std::optional<std::string> text(const char* key, bool required = false) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (required) fail(fmt::format("'{}' is missing", key));
      return std::nullopt;
    }
    if (!it->is_string()) {
      fail(fmt::format("'{}' must be a string", key));
      return std::nullopt;
    }
    return it->get<std::string>();
  }

  template <class Int>
  std::optional<Int> integer(const char* key, int64_t lo, int64_t hi) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
      fail(fmt::format("'{}' must be an integer from {} to {}", key, lo, hi));
      return std::nullopt;
    }
    return static_cast<Int>(it->get<int64_t>());
  }

  std::optional<uint64_t> bytes(const char* key) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_unsigned()) {
      fail(fmt::format("'{}' must be a number of bytes", key));
      return std::nullopt;
    }
    return it->get<uint64_t>();
  }

  std::optional<std::vector<std::string>> string_list(const char* key) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return std::nullopt;
    std::vector<std::string> out;
    if (!it->is_array()) {
      fail(fmt::format("'{}' must be an array of strings", key));
      return out;
    }
    for (const json& v : *it) {
      if (!v.is_string()) {
        fail(fmt::format("'{}' must be an array of strings", key));
        break;
      }
      out.push_back(v.get<std::string>());
    }
    return out;
  }

  std::map<std::string, std::string> string_map(const char* key) {
    std::map<std::string, std::string> out;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return out;
    if (!it->is_object()) {
      fail(fmt::format("'{}' must be an object of strings", key));
      return out;
    }
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) {
        fail(fmt::format("'{}.{}' must be a string", key, k));
        continue;
      }
      out[k] = v.get<std::string>();
    }
    return out;
  }

  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }
  const std::string& error() const { return error_; }

 private:
  const json& j_;
  std::string error_;
};

}  // namespace

json job_spec_to_json(const JobSpec& job) {
  json j;
  j["name"] = job.name;
  j["group"] = job.group;
  j["command"] = job.command;
  j["working_dir"] = job.working_dir;
  j["env"] = job.env;
  if (job.gpus > 1) j["gpus"] = job.gpus;
  if (job.gpu_memory_bytes) j["gpu_memory_bytes"] = *job.gpu_memory_bytes;
  if (job.sm_share_pct) j["sm_share_pct"] = *job.sm_share_pct;
  if (job.memory_limit_bytes) j["memory_limit_bytes"] = *job.memory_limit_bytes;
  if (job.host_memory_bytes) j["host_memory_bytes"] = *job.host_memory_bytes;
  if (job.cpus) j["cpus"] = *job.cpus;
  if (job.epoch_regex) j["epoch_regex"] = *job.epoch_regex;
  if (job.step_regex) j["step_regex"] = *job.step_regex;
  if (job.epoch_samples) j["epoch_samples"] = *job.epoch_samples;
  if (job.sm_activity_pct) j["sm_activity_pct"] = *job.sm_activity_pct;
  if (job.gpu_util_pct) j["gpu_util_pct"] = *job.gpu_util_pct;
  if (job.solo_time_ms) j["solo_time_ms"] = *job.solo_time_ms;
  if (job.startup_time_ms) j["startup_time_ms"] = *job.startup_time_ms;
  if (job.stall_timeout_ms) j["stall_timeout_ms"] = *job.stall_timeout_ms;
  if (job.priority != 0) j["priority"] = job.priority;
  if (job.preemptible) j["preemptible"] = true;
  if (job.qos != QosClass::kNormal) j["qos"] = to_string(job.qos);
  if (job.qos == QosClass::kProtected) j["min_speed"] = job.min_speed;
  if (!job.objective.empty()) j["objective"] = job.objective;
  if (!job.fail_fast) j["fail_fast"] = false;
  if (const std::optional<ProfileSpec>& p = job.profile) {
    json t = {{"tool", p->tool}};
    if (p->after_epoch) t["after_epoch"] = *p->after_epoch;
    if (p->after_ms) t["after_ms"] = *p->after_ms;
    if (p->steps) t["steps"] = *p->steps;
    if (p->duration_ms) t["duration_ms"] = *p->duration_ms;
    j["profile"] = std::move(t);
  }
  if (!job.lower_is_better.empty()) {
    nlohmann::json goals = nlohmann::json::object();
    for (const auto& [name, lower] : job.lower_is_better) goals[name] = lower ? "min" : "max";
    j["goals"] = std::move(goals);
  }
  if (const std::optional<EarlyStopSpec>& e = job.early_stop) {
    json t = {{"rule", to_string(e->rule)},
              {"min_epochs", e->min_epochs},
              {"min_trials", e->min_trials},
              {"reduction", e->reduction}};
    if (e->max_epochs) t["max_epochs"] = *e->max_epochs;
    j["early_stop"] = std::move(t);
  }
  if (job.mig_profile) j["mig_profile"] = *job.mig_profile;
  if (job.mig_group) j["mig_group"] = *job.mig_group;
  if (job.dataset) j["dataset"] = *job.dataset;
  if (const std::optional<DataSourceSpec>& d = job.data_source) {
    json t = {{"name", d->name}, {"path", d->path}};
    if (d->format) t["format"] = *d->format;
    if (d->image_size) t["image_size"] = *d->image_size;
    if (d->augment) t["augment"] = *d->augment;
    if (d->threads) t["threads"] = *d->threads;
    if (d->ring_bytes) t["ring_bytes"] = *d->ring_bytes;
    if (d->chunk) t["chunk"] = *d->chunk;
    if (d->lag_timeout_ms) t["lag_timeout_ms"] = *d->lag_timeout_ms;
    if (d->cpus) t["cpus"] = *d->cpus;
    if (d->seed) t["seed"] = *d->seed;
    j["data_source"] = std::move(t);
  }
  j["restart"] = to_string(job.restart);
  j["params"] = job.params;
  if (!job.family.empty()) j["family"] = job.family;
  if (job.resource_params) j["resource_params"] = *job.resource_params;
  j["repeat_index"] = job.repeat_index;
  j["source"] = job.source;
  return j;
}

SpecObjective objective_of_spec(const json& spec) {
  SpecObjective out;
  if (!spec.is_object()) return out;
  if (auto o = spec.find("objective"); o != spec.end() && o->is_string())
    out.metric = o->get<std::string>();
  if (auto g = spec.find("goals"); g != spec.end() && g->is_object()) {
    for (const auto& [name, goal] : g->items()) {
      if (goal == "min" || goal == "max") out.lower_is_better[name] = goal == "min";
    }
  }
  return out;
}

SpecQos qos_of_spec(const json& spec) {
  SpecQos out;
  if (!spec.is_object()) return out;
  if (auto q = spec.find("qos"); q != spec.end() && q->is_string()) {
    out.qos = parse_qos_class(q->get<std::string>()).value_or(QosClass::kNormal);
  }
  if (auto m = spec.find("min_speed");
      out.qos == QosClass::kProtected && m != spec.end() && m->is_number()) {
    if (!min_speed_problem(m->get<double>())) out.min_speed = m->get<double>();
  }
  return out;
}

SpecQos qos_of_spec_text(std::string_view spec_json) {
  // Most stored specs are normal and do not name "qos": a search spares
  // parsing them (a key inside a JSON string would read \"qos\").
  if (spec_json.find("\"qos\"") == std::string_view::npos) return {};
  return qos_of_spec(json::parse(spec_json, nullptr, false));
}

json job_spec_to_stored_json(const JobSpec& job) {
  json j = job_spec_to_json(job);
  j["env"] = redact_secret_env(job.env);
  return j;
}

Result<JobSpec> job_spec_from_json(const json& j) {
  if (!j.is_object()) return Error("a job must be a JSON object");
  FieldReader r(j);
  JobSpec job;
  job.name = r.text("name", true).value_or("");
  if (job.name.empty()) r.fail("'name' must not be empty");
  if (std::string why = name_problem(job.name); !why.empty()) {
    r.fail("'name' " + why);
    job.name.clear();  // not echoed back in the error
  }
  job.group = r.text("group").value_or(job.name);
  job.family = r.text("family").value_or("");
  for (const auto& [key, value] : {std::pair{"group", &job.group}, {"family", &job.family}}) {
    if (std::string why = name_problem(*value); !why.empty())
      r.fail(fmt::format("'{}' {}", key, why));
  }
  auto command = j.find("command");
  if (command == j.end() || !command->is_array() || command->empty()) {
    r.fail("'command' must be a non-empty array of strings");
  } else {
    for (const json& arg : *command) {
      if (!arg.is_string()) {
        r.fail("'command' must be a non-empty array of strings");
        break;
      }
      job.command.push_back(arg.get<std::string>());
    }
  }
  job.working_dir = r.text("working_dir", true).value_or("");
  if (job.working_dir.empty() || job.working_dir[0] != '/')
    r.fail("'working_dir' must be an absolute path");
  job.env = r.string_map("env");
  for (const auto& [name, value] : job.env) {
    if (!valid_env_name(name)) r.fail(fmt::format("env: '{}' is not a valid name", name));
  }
  job.gpus = r.integer<int>("gpus", 1, kMaxJobGpus).value_or(1);
  job.gpu_memory_bytes = r.bytes("gpu_memory_bytes");
  job.sm_share_pct = r.integer<int>("sm_share_pct", 1, 100);
  job.memory_limit_bytes = r.bytes("memory_limit_bytes");
  job.host_memory_bytes = r.bytes("host_memory_bytes");
  job.cpus = r.integer<int>("cpus", 1, 4096);
  job.epoch_regex = r.text("epoch_regex");
  job.step_regex = r.text("step_regex");
  job.epoch_samples = r.integer<int64_t>("epoch_samples", 1, INT64_MAX);
  job.sm_activity_pct = r.integer<int>("sm_activity_pct", 1, 100);
  job.gpu_util_pct = r.integer<int>("gpu_util_pct", 1, 100);
  job.solo_time_ms = r.integer<int64_t>("solo_time_ms", 1, INT64_MAX);
  job.startup_time_ms = r.integer<int64_t>("startup_time_ms", 1, INT64_MAX);
  job.stall_timeout_ms = r.integer<int64_t>("stall_timeout_ms", 0, INT64_MAX);
  job.priority = r.integer<int>("priority", kMinJobPriority, kMaxJobPriority).value_or(0);
  if (auto p = j.find("preemptible"); p != j.end()) {
    if (p->is_boolean()) {
      job.preemptible = p->get<bool>();
    } else {
      r.fail("'preemptible' must be true or false");
    }
  }
  if (std::optional<std::string> qos = r.text("qos")) {
    if (std::optional<QosClass> parsed = parse_qos_class(*qos)) {
      job.qos = *parsed;
    } else {
      r.fail(fmt::format("'qos' must be {}", kQosClassesText));
    }
  }
  if (auto m = j.find("min_speed"); m != j.end() && !m->is_null()) {
    if (!m->is_number() || min_speed_problem(m->get<double>())) {
      r.fail("'min_speed' must be a number above 0 and at most 1");
    } else if (job.qos != QosClass::kProtected) {
      r.fail("'min_speed' is the floor of a protected job: it needs \"qos\": \"protected\"");
    } else {
      job.min_speed = m->get<double>();
    }
  }
  job.objective = r.text("objective").value_or("");
  if (auto f = j.find("fail_fast"); f != j.end()) {
    if (f->is_boolean()) {
      job.fail_fast = f->get<bool>();
    } else {
      r.fail("'fail_fast' must be true or false");
    }
  }
  for (const auto& [name, goal] : r.string_map("goals")) {
    if (goal != "min" && goal != "max") {
      r.fail(fmt::format("'goals.{}' must be \"min\" or \"max\"", name));
      continue;
    }
    job.lower_is_better[name] = goal == "min";
  }
  if (auto it = j.find("profile"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      r.fail("'profile' must be an object (a job's profile table)");
    } else {
      FieldReader p(*it);
      ProfileSpec spec;
      spec.tool = p.text("tool", true).value_or("");
      if (spec.tool != "torch" && spec.tool != "nsys" && spec.tool != "ncu")
        p.fail("'tool' must be \"torch\", \"nsys\" or \"ncu\"");
      spec.after_epoch = p.integer<int>("after_epoch", 0, 1'000'000'000);
      spec.after_ms = p.integer<int64_t>("after_ms", 1, INT64_MAX);
      spec.steps = p.integer<int>("steps", 1, 1'000'000'000);
      spec.duration_ms = p.integer<int64_t>("duration_ms", 1, INT64_MAX);
      if (!p.error().empty()) r.fail("profile: " + p.error());
      job.profile = std::move(spec);
    }
  }
  if (auto it = j.find("early_stop"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      r.fail("'early_stop' must be an object (an [early_stop] table)");
    } else {
      FieldReader e(*it);
      EarlyStopSpec spec;
      const std::string rule = e.text("rule", true).value_or("");
      if (rule == "asha") {
        spec.rule = EarlyStopRule::kAsha;
      } else if (rule != "median") {
        e.fail("'rule' must be \"median\" or \"asha\"");
      }
      spec.min_epochs = e.integer<int>("min_epochs", 1, 1'000'000).value_or(spec.min_epochs);
      spec.min_trials = e.integer<int>("min_trials", 1, 1'000'000).value_or(spec.min_trials);
      spec.reduction = e.integer<int>("reduction", 2, 1'000'000).value_or(spec.reduction);
      spec.max_epochs = e.integer<int>("max_epochs", 1, 1'000'000);
      if (job.objective.empty()) e.fail("needs the job's 'objective'");
      if (!e.error().empty()) r.fail("early_stop: " + e.error());
      job.early_stop = spec;
    }
  }
  job.mig_profile = r.text("mig_profile");
  job.mig_group = r.text("mig_group");
  job.dataset = r.text("dataset");
  if (auto it = j.find("data_source"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      r.fail("'data_source' must be an object (a [data.NAME] table)");
    } else {
      FieldReader d(*it);
      DataSourceSpec spec;
      spec.name = d.text("name", true).value_or("");
      spec.path = d.text("path", true).value_or("");
      spec.format = d.text("format");
      spec.image_size = d.integer<int>("image_size", 1, 4096);
      if (auto a = it->find("augment"); a != it->end() && a->is_boolean())
        spec.augment = a->get<bool>();
      spec.threads = d.integer<int>("threads", 1, 1024);
      spec.ring_bytes = d.bytes("ring_bytes");
      spec.chunk = d.integer<int>("chunk", 1, 1 << 20);
      spec.lag_timeout_ms = d.integer<int64_t>("lag_timeout_ms", 1, INT64_MAX);
      spec.cpus = d.text("cpus");
      spec.seed = d.integer<int64_t>("seed", 0, INT64_MAX);
      spec.source = "submitted";
      if (spec.path.empty() || spec.path[0] != '/') d.fail("'path' must be an absolute path");
      if (!job.dataset || spec.name != *job.dataset) d.fail("'name' must be the job's dataset");
      if (!d.error().empty()) r.fail("data_source: " + d.error());
      job.data_source = std::move(spec);
    }
  }
  std::string restart = r.text("restart").value_or("on-failure");
  if (restart == "never") {
    job.restart = RestartPolicy::kNever;
  } else if (restart != "on-failure") {
    r.fail("'restart' must be \"on-failure\" or \"never\"");
  }
  job.params = r.string_map("params");
  job.resource_params = r.string_list("resource_params");
  job.repeat_index = r.integer<int>("repeat_index", 1, INT32_MAX).value_or(1);
  job.source = r.text("source").value_or("");
  // What every user's `colo queue` and `colo show` print, and what decides
  // what runs: a control character there (ESC, BEL, CR, ...) is refused, so
  // that no user's text acts on another's terminal.
  std::vector<std::pair<std::string, std::string_view>> shown = {
      {"command[0]", job.command.empty() ? std::string_view() : job.command[0]},
      {"working_dir", job.working_dir},
      {"epoch_regex", job.epoch_regex ? *job.epoch_regex : std::string_view()},
      {"step_regex", job.step_regex ? *job.step_regex : std::string_view()},
      {"mig_profile", job.mig_profile ? *job.mig_profile : std::string_view()},
      {"mig_group", job.mig_group ? *job.mig_group : std::string_view()},
      {"dataset", job.dataset ? *job.dataset : std::string_view()},
      {"source", job.source}};
  if (job.data_source) shown.emplace_back("data_source.path", job.data_source->path);
  for (const auto& [key, value] : job.params) {
    shown.emplace_back("a key of 'params'", key);
    shown.emplace_back(fmt::format("params.{}", strip_control_chars(key)), value);
  }
  for (const auto& [key, value] : shown) {
    if (std::optional<size_t> at = control_char_at(value)) {
      r.fail(fmt::format("'{}' holds a control character (byte {}, 0x{:02x}); remove it", key, *at,
                         static_cast<unsigned char>(value[*at])));
    }
  }
  if (!r.error().empty()) {
    return Error(fmt::format("job '{}': {}", job.name.empty() ? "?" : job.name, r.error()));
  }
  return job;
}

nlohmann::json param_to_json(const std::string& text) {
  if (text == "true" || text == "false") return text == "true";
  const char* begin = text.data();
  const char* end = begin + text.size();
  int64_t whole = 0;
  if (auto [at, ec] = std::from_chars(begin, end, whole); ec == std::errc() && at == end)
    return whole;
  double number = 0;
  if (auto [at, ec] = std::from_chars(begin, end, number);
      ec == std::errc() && at == end && std::isfinite(number))
    return number;
  return text;
}

nlohmann::json params_to_json(const std::map<std::string, std::string>& params) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : params) out[name] = param_to_json(value);
  return out;
}

}  // namespace colo
