#include "report/data_report.h"

#include <fmt/format.h>

#include "common/units.h"

namespace colo {
namespace {

std::string or_dash(const std::optional<int64_t>& v, const std::function<std::string(int64_t)>& f) {
  return v ? f(*v) : "-";
}

}  // namespace

std::string format_data_loaders(const std::vector<DataLoaderRow>& loaders) {
  if (loaders.empty()) return "";
  std::string out = "\ndata loaders:\n";
  for (const DataLoaderRow& l : loaders) {
    std::string cores = "-";
    if (l.cpu_ms && l.wall_ms && *l.wall_ms > 0)
      cores =
          fmt::format("{:.2f}", static_cast<double>(*l.cpu_ms) / static_cast<double>(*l.wall_ms));
    out += fmt::format(
        "  {}: {} ({}, {} samples), {} threads: CPU {} over {} ({} cores), peak memory {}, "
        "{} samples decoded{}\n",
        l.name, l.path, l.format.empty() ? "?" : l.format,
        or_dash(l.dataset_size, [](int64_t v) { return std::to_string(v); }),
        or_dash(l.threads, [](int64_t v) { return std::to_string(v); }),
        or_dash(l.cpu_ms, format_duration_ms), or_dash(l.wall_ms, format_duration_ms), cores,
        or_dash(l.peak_rss_bytes, [](int64_t v) { return format_bytes(static_cast<uint64_t>(v)); }),
        or_dash(l.samples_decoded, [](int64_t v) { return std::to_string(v); }),
        l.decode_errors.value_or(0) > 0 ? fmt::format(" ({} unreadable)", *l.decode_errors) : "");
    if (!l.note.empty()) out += "    " + l.note + "\n";
    if (l.consumers.empty()) continue;
    out += fmt::format("    {:<24} {:>6} {:>9} {:>7} {:>9} {:>7}  {}\n", "consumer", "batch",
                       "samples", "epochs", "waited", "of time", "");
    for (const DataConsumerRow& c : l.consumers) {
      const std::string who = c.job_name.empty() ? fmt::format("pid {}", c.pid) : c.job_name;
      const std::string share =
          c.duration_ms > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(c.wait_ms) /
                                                         static_cast<double>(c.duration_ms))
                            : "-";
      out += fmt::format("    {:<24} {:>6} {:>9} {:>7} {:>9} {:>7}  {}\n", who, c.batch_size,
                         c.samples, c.epochs, format_duration_ms(c.wait_ms), share, c.detached);
    }
  }
  return out;
}

nlohmann::json data_loaders_json(const std::vector<DataLoaderRow>& loaders) {
  nlohmann::json list = nlohmann::json::array();
  auto opt = [](const std::optional<int64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json();
  };
  for (const DataLoaderRow& l : loaders) {
    nlohmann::json consumers = nlohmann::json::array();
    for (const DataConsumerRow& c : l.consumers) {
      consumers.push_back({{"job_id", c.job_id ? nlohmann::json(*c.job_id) : nlohmann::json()},
                           {"job", c.job_name},
                           {"pid", c.pid},
                           {"batch_size", c.batch_size},
                           {"duration_ms", c.duration_ms},
                           {"samples", c.samples},
                           {"batches", c.batches},
                           {"epochs", c.epochs},
                           {"wait_ms", c.wait_ms},
                           {"pending_ms", c.pending_ms},
                           {"held_back_ms", c.held_back_ms},
                           {"detached", c.detached}});
    }
    list.push_back({{"name", l.name},
                    {"path", l.path},
                    {"format", l.format},
                    {"pid", opt(l.pid)},
                    {"threads", opt(l.threads)},
                    {"ring_bytes", opt(l.ring_bytes)},
                    {"dataset_size", opt(l.dataset_size)},
                    {"wall_ms", opt(l.wall_ms)},
                    {"cpu_ms", opt(l.cpu_ms)},
                    {"peak_rss_bytes", opt(l.peak_rss_bytes)},
                    {"samples_decoded", opt(l.samples_decoded)},
                    {"decode_errors", opt(l.decode_errors)},
                    {"note", l.note},
                    {"consumers", consumers}});
  }
  return list;
}

}  // namespace colo
