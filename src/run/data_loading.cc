#include "run/data_loading.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/units.h"

namespace colo {

uint64_t default_ring_bytes(int consumers, uint64_t shm_free_bytes) {
  const uint64_t wanted =
      std::max<uint64_t>(kGiB, static_cast<uint64_t>(std::max(consumers, 1)) * (kGiB / 2));
  return std::max(kGiB, std::min(wanted, shm_free_bytes / 2));
}

Result<LoaderOptions> loader_options_for(const DataSourceSpec& spec, int consumers) {
  LoaderOptions o;
  o.name = spec.name;
  o.path = spec.path;
  if (spec.format) {
    Result<DatasetFormat> f = parse_dataset_format(*spec.format);
    if (!f.ok()) return f.error().with_context(spec.source);
    o.format = *f;
  }
  if (spec.image_size) o.transform.size = *spec.image_size;
  if (spec.augment) o.transform.augment = *spec.augment;
  if (spec.threads) o.threads = *spec.threads;
  if (spec.ring_bytes) {
    o.ring_bytes = *spec.ring_bytes;
  } else {
    struct statvfs shm {};
    const uint64_t free_bytes =
        statvfs("/dev/shm", &shm) == 0 ? static_cast<uint64_t>(shm.f_bavail) * shm.f_frsize : 0;
    o.ring_bytes = default_ring_bytes(consumers, free_bytes);
  }
  if (spec.chunk) o.chunk_samples = static_cast<uint32_t>(*spec.chunk);
  if (spec.lag_timeout_ms) o.lag_timeout_ms = *spec.lag_timeout_ms;
  if (spec.cpus) o.cpus = *spec.cpus;
  if (spec.seed) o.seed = static_cast<uint64_t>(*spec.seed);
  return o;
}

Result<std::vector<LoaderOptions>> loaders_for(const JobFile& file) {
  std::vector<LoaderOptions> out;
  for (const auto& [name, spec] : file.data_sources) {
    int consumers = 0;
    for (const JobSpec& job : file.jobs) consumers += job.dataset == name ? 1 : 0;
    if (consumers == 0) continue;
    Result<LoaderOptions> o = loader_options_for(spec, consumers);
    if (!o.ok()) return o.error();
    out.push_back(std::move(o).value());
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

std::map<std::string, int64_t> attach_loaders(std::vector<EngineJob>& jobs,
                                              const SharedLoaders& loaders,
                                              const std::vector<LoaderOptions>& options,
                                              std::ostream& out) {
  std::map<std::string, HostCost> costs;
  for (const LoaderOptions& l : options)
    costs[l.name] = HostCost{l.name, static_cast<double>(l.threads), l.ring_bytes};
  std::map<std::string, int64_t> job_ids;
  for (EngineJob& j : jobs) {
    job_ids[j.spec.name] = j.id;
    if (!j.spec.dataset) continue;
    std::map<std::string, std::string> env = loaders.environment_for(*j.spec.dataset);
    if (env.empty()) {
      out << fmt::format("warning: {}: the data loader of '{}' is not running\n", j.spec.name,
                         *j.spec.dataset);
    }
    for (const auto& [k, v] : env) j.extra_env[k] = v;
    if (auto cost = costs.find(*j.spec.dataset); cost != costs.end()) j.host_cost = cost->second;
  }
  return job_ids;
}

void record_loaders(const std::vector<LoaderOutcome>& outcomes,
                    const std::map<std::string, int64_t>& job_ids, int64_t run_id,
                    StoreWriter& writer, std::ostream& out) {
  for (const LoaderOutcome& loader : outcomes) {
    DataLoaderRow row = loader_record(loader, job_ids);
    if (row.cpu_ms && row.wall_ms && *row.wall_ms > 0) {
      out << fmt::format("data loader '{}': {} samples decoded, {} CPU ({:.2f} cores)\n", row.name,
                         row.samples_decoded.value_or(0), format_duration_ms(*row.cpu_ms),
                         static_cast<double>(*row.cpu_ms) / static_cast<double>(*row.wall_ms));
    } else if (!row.note.empty()) {
      out << fmt::format("warning: data loader '{}': {}\n", row.name, row.note);
    }
    writer.add_data_loader(run_id, std::move(row));
  }
}

}  // namespace colo
