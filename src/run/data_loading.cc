#include "run/data_loading.h"

#include <nlohmann/json.hpp>

namespace colo {

Result<std::vector<LoaderOptions>> loaders_for(const JobFile& file) {
  std::vector<LoaderOptions> out;
  for (const auto& [name, spec] : file.data_sources) {
    bool used = false;
    for (const JobSpec& job : file.jobs) used |= job.dataset == name;
    if (!used) continue;
    LoaderOptions o;
    o.name = name;
    o.path = spec.path;
    if (spec.format) {
      Result<DatasetFormat> f = parse_dataset_format(*spec.format);
      if (!f.ok()) return f.error().with_context(spec.source);
      o.format = *f;
    }
    if (spec.image_size) o.transform.size = *spec.image_size;
    if (spec.augment) o.transform.augment = *spec.augment;
    if (spec.threads) o.threads = *spec.threads;
    if (spec.ring_bytes) o.ring_bytes = *spec.ring_bytes;
    if (spec.chunk) o.chunk_samples = static_cast<uint32_t>(*spec.chunk);
    if (spec.lag_timeout_ms) o.lag_timeout_ms = *spec.lag_timeout_ms;
    if (spec.cpus) o.cpus = *spec.cpus;
    if (spec.seed) o.seed = static_cast<uint64_t>(*spec.seed);
    out.push_back(std::move(o));
  }
  return out;
}

DataLoaderRow loader_record(const LoaderOutcome& outcome,
                            const std::map<std::string, int64_t>& job_ids) {
  DataLoaderRow row;
  row.name = outcome.name;
  row.path = outcome.path;
  row.pid = outcome.pid;
  row.note = outcome.note;
  nlohmann::json j = nlohmann::json::parse(outcome.stats_json, nullptr, false);
  if (!j.is_object()) {
    if (row.note.empty()) row.note = "the loader's statistics are unreadable";
    return row;
  }
  auto opt = [&](const char* key) -> std::optional<int64_t> {
    return j.contains(key) && j[key].is_number() ? std::optional(j[key].get<int64_t>())
                                                 : std::nullopt;
  };
  row.format = j.value("format", "");
  row.threads = opt("threads");
  row.ring_bytes = opt("ring_bytes");
  row.dataset_size = opt("dataset_size");
  row.wall_ms = opt("wall_ms");
  row.cpu_ms = opt("cpu_ms");
  row.peak_rss_bytes = opt("peak_rss_bytes");
  row.samples_decoded = opt("samples_decoded");
  row.decode_errors = opt("decode_errors");
  for (const nlohmann::json& c : j.value("consumers", nlohmann::json::array())) {
    DataConsumerRow r;
    r.job_name = c.value("job", "");
    if (auto it = job_ids.find(r.job_name); it != job_ids.end()) r.job_id = it->second;
    r.pid = c.value("pid", int64_t{0});
    r.batch_size = c.value("batch_size", int64_t{0});
    r.duration_ms = c.value("duration_ms", int64_t{0});
    r.samples = c.value("samples", int64_t{0});
    r.batches = c.value("batches", int64_t{0});
    r.epochs = c.value("epochs", int64_t{0});
    r.wait_ms = c.value("wait_ms", int64_t{0});
    r.pending_ms = c.value("pending_ms", int64_t{0});
    r.held_back_ms = c.value("held_back_ms", int64_t{0});
    r.detached = c.value("detached", "");
    row.consumers.push_back(std::move(r));
  }
  return row;
}

}  // namespace colo
