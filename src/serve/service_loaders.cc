#include "serve/service_loaders.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "common/paths.h"
#include "jobs/job_spec_json.h"
#include "jobs/run_as.h"
#include "run/data_loading.h"
#include "run/log_layout.h"

namespace colo {

ServiceLoaders::ServiceLoaders(Clock& clock, StoreWriter& writer, std::ostream& log,
                               ServiceLoadersOptions options)
    : clock_(clock), writer_(writer), log_(log), options_(std::move(options)) {}

Result<std::optional<HeldJob>> ServiceLoaders::attach(const ServiceJobRow& row, HeldJob held) {
  Result<std::string> key = loader_for(row, held.job);
  if (!key.ok()) return key.error();
  Loader& loader = loaders_.at(*key);
  loader.readers[row.id] = held.job.spec.name;
  loader_of_[row.id] = *key;
  if (!loader.ready) {
    loader.held.push_back(std::move(held));
    return std::optional<HeldJob>();
  }
  for (const auto& [k, v] : loader.loaders->environment_for(loader.name)) held.job.extra_env[k] = v;
  return std::optional<HeldJob>(std::move(held));
}

bool ServiceLoaders::poll(
    const std::function<void(HeldJob)>& ready,
    const std::function<void(const HeldJob&, const std::string& why)>& failed) {
  bool changed = false;
  for (auto it = loaders_.begin(); it != loaders_.end();) {
    Loader& loader = it->second;
    if (loader.ready) {
      ++it;
      continue;
    }
    Result<bool> is_ready = loader.loaders->ready();
    if (is_ready.ok() && !*is_ready) {
      ++it;
      continue;
    }
    std::vector<HeldJob> held = std::move(loader.held);
    loader.held.clear();
    changed = true;
    if (is_ready.ok()) {
      loader.ready = true;
      for (HeldJob& h : held) {
        for (const auto& [k, v] : loader.loaders->environment_for(loader.name))
          h.job.extra_env[k] = v;
        ready(std::move(h));
      }
      ++it;
      continue;
    }
    log_ << fmt::format("{}\n", is_ready.error().message());
    for (const HeldJob& h : held) {
      failed(h, "its shared data loader could not start: " + is_ready.error().message());
      loader_of_.erase(h.id);
    }
    stop(loader);
    it = loaders_.erase(it);
  }
  return changed;
}

void ServiceLoaders::started(int64_t id, int64_t job_id) {
  if (auto of = loader_of_.find(id); of != loader_of_.end()) {
    Loader& loader = loaders_.at(of->second);
    loader.job_ids[loader.readers.at(id)] = job_id;
  }
}

std::optional<HeldJob> ServiceLoaders::take_held(int64_t id) {
  auto of = loader_of_.find(id);
  if (of == loader_of_.end()) return std::nullopt;
  std::vector<HeldJob>& held = loaders_.at(of->second).held;
  auto h = std::find_if(held.begin(), held.end(), [&](const HeldJob& j) { return j.id == id; });
  if (h == held.end()) return std::nullopt;
  HeldJob taken = std::move(*h);
  held.erase(h);
  return taken;
}

void ServiceLoaders::detach(int64_t id) {
  auto of = loader_of_.find(id);
  if (of == loader_of_.end()) return;
  auto it = loaders_.find(of->second);
  loader_of_.erase(of);
  if (it == loaders_.end()) return;
  it->second.readers.erase(id);
  if (!it->second.readers.empty()) return;
  stop(it->second);
  loaders_.erase(it);
}

void ServiceLoaders::stop(Loader& loader) {
  record_loaders(loader.loaders->stop(), loader.job_ids, options_.run_id, writer_, log_);
}

Result<std::string> ServiceLoaders::loader_for(const ServiceJobRow& row, const EngineJob& job) {
  const JobSpec& spec = job.spec;
  if (!spec.data_source) {
    return Error(fmt::format("it reads dataset '{}', but its [data.{}] table did not come with it",
                             spec.dataset.value_or(""), spec.dataset.value_or("")));
  }
  const std::string table = job_spec_to_json(spec)["data_source"].dump();
  const std::string key = fmt::format("{}:{}", row.owner_uid, table);
  auto it = loaders_.find(key);
  if (it == loaders_.end()) {
    Result<LoaderOptions> options = loader_options_for(*spec.data_source);
    if (!options.ok()) return options.error();
    // Unique among this service's loaders (it names the shared memory).
    options->name = fmt::format("{}.u{}.{}", spec.data_source->name, row.owner_uid, started_++);
    // The loader writes its statistics and ring records here, as the submitter.
    const std::string dir = service_data_dir(options_.logs_root, row.owner_uid);
    if (Status s = make_dirs(dir, 0700, 0711); !s.ok()) return s.error();
    if (job.run_as) {
      if (Status s = give_to(dir, *job.run_as); !s.ok()) return s.error();
    }
    SharedLoadersOptions shared{options_.colo_binary, dir, dir};
    shared.run_as = job.run_as;
    shared.ready_timeout_ms = options_.ready_timeout_ms;
    auto loaders = std::make_unique<SharedLoaders>(clock_, shared);
    if (Status s = loaders->launch({*options}, log_); !s.ok()) return s.error();
    Loader loader;
    loader.loaders = std::move(loaders);
    loader.name = options->name;
    loaders_.emplace(key, std::move(loader));
  }
  return key;
}

}  // namespace colo
