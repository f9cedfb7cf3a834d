#include "jobs/progress_event.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/text.h"
#include "common/units.h"

namespace colo {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Reads an optional integer field in [0, max]; null counts as absent.
Status read_count(const nlohmann::json& object, const char* key, int64_t max,
                  std::optional<int64_t>& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return OkStatus();
  if (!it->is_number_integer()) {
    return Error(fmt::format("\"{}\" must be an integer, got {}", key, it->dump()));
  }
  const bool in_range = it->is_number_unsigned()
                            ? it->get<uint64_t>() <= static_cast<uint64_t>(max)
                            : it->get<int64_t>() >= 0 && it->get<int64_t>() <= max;
  if (!in_range) {
    return Error(fmt::format("\"{}\" is out of range (0 to {}): {}", key, max, it->dump()));
  }
  out = it->get<int64_t>();
  return OkStatus();
}

bool is_known_key(const std::string& key) {
  return key == "event" || key == "epoch" || key == "step" || key == "samples" || key == "time" ||
         key == "metrics";
}

void add_metric(std::map<std::string, double>& metrics, const std::string& name,
                const nlohmann::json& value) {
  std::optional<double> v = metric_from_json(value);
  if (!v) return;
  // Every user's `colo show` and the dashboard print the name.
  std::string shown = strip_control_chars(name);
  if (!shown.empty()) metrics[std::move(shown)] = *v;
}

constexpr const char* kMetricNames[] = {"skipped_bytes", "dropped_events", "coalesced_epochs",
                                        "refused_files", "dropped_metrics"};

}  // namespace

nlohmann::json metric_to_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

std::optional<double> metric_from_json(const nlohmann::json& value) {
  if (value.is_number()) return value.get<double>();
  if (!value.is_string()) return std::nullopt;
  const std::string text = ascii_lower(value.get_ref<const std::string&>());
  if (text == "nan" || text == "-nan") return std::numeric_limits<double>::quiet_NaN();
  if (text == "inf" || text == "infinity" || text == "+inf")
    return std::numeric_limits<double>::infinity();
  if (text == "-inf" || text == "-infinity") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

nlohmann::json metrics_to_json(const std::map<std::string, double>& metrics) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : metrics) out[name] = metric_to_json(value);
  return out;
}

Result<ProgressEvent> parse_progress_line(std::string_view line, UnixMillis read_time_ms) {
  std::string_view text = trim(line);
  if (text.empty()) return Error("empty line");
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Error("not valid JSON");
  if (!json.is_object()) return Error("not a JSON object");

  ProgressEvent event;
  auto kind = json.find("event");
  if (kind == json.end()) return Error("missing \"event\"");
  if (!kind->is_string())
    return Error(fmt::format("\"event\" must be a string, got {}", kind->dump()));
  event.kind = kind->get<std::string>();
  if (event.kind.empty()) return Error("\"event\" must not be empty");

  if (Status s = read_count(json, "epoch", kMaxEpoch, event.epoch); !s.ok()) return s.error();
  if (Status s = read_count(json, "step", kMaxStep, event.step); !s.ok()) return s.error();
  if (Status s = read_count(json, "samples", kMaxSamplesPerEvent, event.samples); !s.ok())
    return s.error();

  event.time_ms = read_time_ms;
  if (auto t = json.find("time"); t != json.end() && !t->is_null()) {
    if (!t->is_number()) return Error(fmt::format("\"time\" must be a number, got {}", t->dump()));
    const double ms = t->get<double>() * 1000.0;
    const auto earliest = static_cast<double>(read_time_ms - kMaxLineAgeMs);
    const auto latest = static_cast<double>(read_time_ms + kMaxClockSkewMs);
    if (!std::isfinite(ms) || ms < earliest || ms > latest) {
      return Error(fmt::format(
          "\"time\" is not a plausible Unix time in seconds (colo read the line at {:.3f}): {}",
          static_cast<double>(read_time_ms) / 1000.0, t->dump()));
    }
    event.time_ms = static_cast<UnixMillis>(std::llround(ms));
  }

  if (auto m = json.find("metrics"); m != json.end() && !m->is_null()) {
    if (!m->is_object()) {
      return Error(fmt::format("\"metrics\" must be an object, got {}", m->dump()));
    }
    for (const auto& [name, value] : m->items()) add_metric(event.metrics, name, value);
  }
  for (const auto& [name, value] : json.items()) {
    if (!is_known_key(name)) add_metric(event.metrics, name, value);
  }
  return event;
}

std::string ThrottleCounts::describe() const {
  std::vector<std::string> parts;
  if (skipped_bytes > 0)
    parts.push_back(format_bytes(static_cast<uint64_t>(skipped_bytes)) + " skipped unread");
  if (dropped_events > 0) parts.push_back(fmt::format("{} events dropped", dropped_events));
  if (coalesced_epochs > 0)
    parts.push_back(fmt::format("{} epoch ends coalesced", coalesced_epochs));
  if (refused_files > 0)
    parts.push_back(fmt::format("{} file{} refused", refused_files, refused_files == 1 ? "" : "s"));
  if (dropped_metrics > 0)
    parts.push_back(
        fmt::format("{} values of metric names beyond the bound dropped", dropped_metrics));
  return fmt::format("{}", fmt::join(parts, ", "));
}

ProgressEvent ThrottleCounts::to_event(UnixMillis time_ms) const {
  ProgressEvent e;
  e.time_ms = time_ms;
  e.kind = "throttled";
  const int64_t values[] = {skipped_bytes, dropped_events, coalesced_epochs, refused_files,
                            dropped_metrics};
  for (size_t i = 0; i < std::size(kMetricNames); ++i) {
    e.metrics[kMetricNames[i]] = static_cast<double>(values[i]);
  }
  return e;
}

ThrottleCounts ThrottleCounts::from_event(const ProgressEvent& event) {
  ThrottleCounts c;
  int64_t* fields[] = {&c.skipped_bytes, &c.dropped_events, &c.coalesced_epochs, &c.refused_files,
                       &c.dropped_metrics};
  for (size_t i = 0; i < std::size(kMetricNames); ++i) {
    auto it = event.metrics.find(kMetricNames[i]);
    if (it != event.metrics.end() && it->second > 0 && it->second < 9e18) {
      *fields[i] = static_cast<int64_t>(it->second);
    }
  }
  return c;
}

}  // namespace colo
