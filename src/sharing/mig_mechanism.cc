#include "sharing/mig_mechanism.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/names.h"
#include "common/paths.h"
#include "common/replace_file.h"
#include "mig/mig_profiles.h"
#include "sharing/mps_daemon.h"
#include "sharing/process_finder.h"

namespace colo {
namespace {

nlohmann::json optional_id(const std::optional<int>& id) {
  return id ? nlohmann::json(*id) : nlohmann::json(nullptr);
}

std::optional<int> read_optional_id(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int>();
}

// Creates <state_dir>/<pid>-<monotonic ms>[-k], mode 0700.
Result<std::string> make_record_dir(const std::string& state_dir, Clock& clock) {
  if (Status made = make_dirs(state_dir, 0700); !made.ok()) return made.error();
  const std::string base =
      fmt::format("{}/{}-{}", state_dir, static_cast<long>(getpid()), clock.monotonic_ms());
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string path = attempt == 0 ? base : fmt::format("{}-{}", base, attempt);
    if (mkdir(path.c_str(), 0700) == 0) return path;
    if (errno != EEXIST) {
      return Error(
          fmt::format("cannot create MIG record directory {}: {}", path, std::strerror(errno)));
    }
  }
  return Error(fmt::format("cannot create a fresh MIG record directory under {}", state_dir));
}

std::string instance_label(const MigRecordedGpuInstance& gi, const MigRecordedComputeInstance& ci) {
  return fmt::format("{} gi{} ci{} {}", gi.profile, gi.id.value_or(-1), ci.id.value_or(-1),
                     ci.uuid);
}

// Destroys the instances `record` names on GPU `device`, compute instances
// first, dropping each from the record (and saving it) once it is gone.
// `verify`: the record is a dead colo's, so a GPU instance is destroyed only
// if it still matches the record (id, profile, start), an entry without an id
// is matched by profile and start, and every compute instance inside a
// matching GPU instance goes (one created just before the crash has no id in
// the record). Returns what could not be done; empty when all is gone.
std::vector<std::string> release(MigControl& mig, int device, MigOwnerRecord& record, bool verify,
                                 const std::function<Status()>& save,
                                 std::vector<std::string>& done) {
  std::vector<std::string> problems;
  std::vector<MigGpuInstance> present;
  if (verify) {
    Result<std::vector<MigGpuInstance>> listed = mig.gpu_instances(device);
    if (!listed.ok()) return {listed.error().message()};
    present = std::move(listed).value();
  }
  auto& gis = record.gpu_instances;
  for (size_t i = gis.size(); i-- > 0;) {
    MigRecordedGpuInstance& gi = gis[i];
    if (verify) {
      auto match = std::find_if(present.begin(), present.end(), [&](const MigGpuInstance& p) {
        return (!gi.id || p.id == *gi.id) && p.profile_id == gi.profile_id && p.start == gi.start;
      });
      if (match == present.end()) {
        // Gone, or now someone else's instance: not ours to touch.
        gis.erase(gis.begin() + static_cast<std::ptrdiff_t>(i));
        (void)save();
        continue;
      }
      gi.id = match->id;
      Result<std::vector<MigComputeInstance>> cis = mig.compute_instances(device, *gi.id);
      if (!cis.ok()) {
        problems.push_back(cis.error().message());
        continue;
      }
      gi.compute_instances.clear();
      for (const MigComputeInstance& c : *cis) {
        gi.compute_instances.push_back({"", c.slice_count, c.id, ""});
      }
    }
    if (!gi.id) {  // its creation failed: nothing to destroy
      gis.erase(gis.begin() + static_cast<std::ptrdiff_t>(i));
      (void)save();
      continue;
    }
    auto& cis = gi.compute_instances;
    for (size_t k = cis.size(); k-- > 0;) {
      if (!cis[k].id) {
        cis.erase(cis.begin() + static_cast<std::ptrdiff_t>(k));
        continue;
      }
      Result<bool> destroyed = mig.destroy_compute_instance(device, *gi.id, *cis[k].id);
      if (!destroyed.ok()) {
        problems.push_back(destroyed.error().message());
        continue;
      }
      cis.erase(cis.begin() + static_cast<std::ptrdiff_t>(k));
      (void)save();
    }
    if (!cis.empty()) continue;  // the GPU instance is still in use
    Result<bool> destroyed = mig.destroy_gpu_instance(device, *gi.id);
    if (!destroyed.ok()) {
      problems.push_back(destroyed.error().message());
      continue;
    }
    if (*destroyed) done.push_back(fmt::format("{} (GPU instance {})", gi.profile, *gi.id));
    gis.erase(gis.begin() + static_cast<std::ptrdiff_t>(i));
    (void)save();
  }
  return problems;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

}  // namespace

Status write_mig_owner_record(const std::string& path, const MigOwnerRecord& record) {
  nlohmann::json gis = nlohmann::json::array();
  for (const MigRecordedGpuInstance& gi : record.gpu_instances) {
    nlohmann::json cis = nlohmann::json::array();
    for (const MigRecordedComputeInstance& ci : gi.compute_instances) {
      cis.push_back(
          {{"job", ci.job}, {"slices", ci.slices}, {"id", optional_id(ci.id)}, {"uuid", ci.uuid}});
    }
    gis.push_back({{"profile", gi.profile},
                   {"profile_id", gi.profile_id},
                   {"start", gi.start},
                   {"size", gi.size},
                   {"id", optional_id(gi.id)},
                   {"compute_instances", cis}});
  }
  nlohmann::json j = {{"colo_pid", record.colo_pid},           {"hostname", record.hostname},
                      {"start_time_ms", record.start_time_ms}, {"device", record.device},
                      {"device_uuid", record.device_uuid},     {"gpu_instances", gis}};
  if (Status s = replace_file(path, j.dump(2) + "\n"); !s.ok())
    return s.error().with_context("MIG ownership record");
  return OkStatus();
}

Result<MigOwnerRecord> read_mig_owner_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("colo_pid") ||
      !j["colo_pid"].is_number_integer() || !j.contains("gpu_instances") ||
      !j["gpu_instances"].is_array()) {
    return Error(fmt::format("{} is not a MIG ownership record (colo_pid, gpu_instances)", path));
  }
  MigOwnerRecord record;
  record.colo_pid = j["colo_pid"].get<int64_t>();
  record.hostname = j.value("hostname", "");
  record.start_time_ms = j.value("start_time_ms", int64_t{0});
  record.device = j.value("device", 0);
  record.device_uuid = j.value("device_uuid", "");
  for (const nlohmann::json& g : j["gpu_instances"]) {
    if (!g.is_object())
      return Error(fmt::format("{}: a GPU instance entry is not an object", path));
    MigRecordedGpuInstance gi{g.value("profile", ""),    g.value("profile_id", -1),
                              g.value("start", -1),      g.value("size", 0),
                              read_optional_id(g, "id"), {}};
    for (const nlohmann::json& c : g.value("compute_instances", nlohmann::json::array())) {
      gi.compute_instances.push_back({c.value("job", ""), c.value("slices", 0),
                                      read_optional_id(c, "id"), c.value("uuid", "")});
    }
    record.gpu_instances.push_back(std::move(gi));
  }
  return record;
}

MigMechanism::MigMechanism(std::string state_dir, GpuBackend& backend,
                           std::vector<MigJobDemand> jobs, Clock& clock)
    : state_dir_(std::move(state_dir)), backend_(backend), jobs_(std::move(jobs)), clock_(clock) {}

MigMechanism::~MigMechanism() {
  if (Status done = teardown(); !done.ok()) {
    fmt::print(stderr, "colo: {}\n", done.error().message());
  }
}

int MigMechanism::max_jobs_per_device() const {
  return std::max<int>(1, static_cast<int>(uuid_of_job_.size()));
}

Status MigMechanism::save() {
  return write_mig_owner_record(dir_ + "/" + kMigOwnerFileName, *record_);
}

Status MigMechanism::prepare(const std::vector<DeviceInfo>& devices) {
  if (record_) return Error("mig: prepare() called twice; call teardown() first");
  MigControl* mig = backend_.mig_control();
  if (mig == nullptr) {
    return Error(fmt::format(
        "mig: the {} backend cannot create MIG instances; run on a GPU with MIG through the "
        "nvml backend, or use --mechanism mps",
        backend_.name()));
  }
  // The first GPU with MIG mode on; otherwise the refusal for the first with MIG.
  const DeviceInfo* chosen = nullptr;
  std::optional<Error> refusal;
  for (const DeviceInfo& d : devices) {
    if (d.mig_profiles.empty()) continue;
    Result<MigModeState> mode = mig->mig_mode(d.index);
    if (!mode.ok()) {
      if (!refusal) refusal = mode.error();
      continue;
    }
    if (mode->current) {
      chosen = &d;
      break;
    }
    if (refusal) continue;
    refusal = Error(
        mode->pending
            ? fmt::format("MIG mode on GPU {0} ({1}) is enabled but pending: reset the GPU first "
                          "(`nvidia-smi -i {0} -r` as root, with no process using it) or reboot",
                          d.index, d.name)
            : fmt::format(
                  "MIG mode is disabled on GPU {0} ({1}), and colo never changes it on its own. "
                  "To enable it, stop every process using the GPU, run `colo mig enable --gpu "
                  "{0} --yes-i-know` (or `nvidia-smi -i {0} -mig 1`) as root, then reset the GPU "
                  "(`nvidia-smi -i {0} -r`) or reboot; or use --mechanism mps",
                  d.index, d.name));
  }
  if (chosen == nullptr) {
    if (refusal) return refusal->with_context("mig");
    return Error(
        "mig: no GPU of this run has MIG (A30, A100, H100, H200 and later have it); use "
        "--mechanism mps or naive");
  }
  if (chosen->uuid.empty()) {
    return Error(fmt::format("mig: GPU {} has no UUID to record its instances by", chosen->index));
  }

  Result<MigGeometry> geometry = live_mig_geometry(backend_, *chosen);
  if (!geometry.ok()) return geometry.error().with_context("mig");
  Result<std::vector<MigGpuInstance>> existing = mig->gpu_instances(chosen->index);
  if (!existing.ok()) return existing.error().with_context("mig");
  std::vector<MigPlacement> occupied;
  for (const MigGpuInstance& gi : *existing) {
    MigPlacement p;
    p.profile_id = gi.profile_id;
    p.start = gi.start;
    p.size = gi.size;
    for (const MigProfileSpec& spec : geometry->profiles) {
      if (spec.id == gi.profile_id) {
        p.profile = spec.name;
        p.compute_slices = spec.compute_slices;
      }
    }
    occupied.push_back(p);
  }
  Result<std::vector<MigInstancePlan>> plans = plan_mig_for_jobs(*geometry, jobs_, occupied);
  if (!plans.ok()) return plans.error().with_context("mig");

  // The record exists before anything is created.
  Result<std::string> dir = make_record_dir(state_dir_, clock_);
  if (!dir.ok()) return dir.error().with_context("mig");
  dir_ = *dir;
  record_ = MigOwnerRecord{getpid(), host_name(), clock_.now_ms(), chosen->index, chosen->uuid, {}};
  if (Status saved = save(); !saved.ok()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
    record_.reset();
    return saved.error().with_context("mig");
  }
  if (Status created = create_instances(*mig, *plans); !created.ok()) {
    Status released = teardown();
    return created.error().with_context(released.ok()
                                            ? "mig (everything created was destroyed again)"
                                            : "mig (" + released.error().message() + ")");
  }
  return OkStatus();
}

Status MigMechanism::create_instances(MigControl& mig, const std::vector<MigInstancePlan>& plans) {
  const int device = record_->device;
  for (const MigInstancePlan& plan : plans) {
    record_->gpu_instances.push_back({plan.placement.profile,
                                      plan.placement.profile_id,
                                      plan.placement.start,
                                      plan.placement.size,
                                      std::nullopt,
                                      {}});
    if (Status s = save(); !s.ok()) return s;
    Result<MigGpuInstance> gi =
        mig.create_gpu_instance(device, plan.placement.profile_id, plan.placement.start);
    MigRecordedGpuInstance& entry = record_->gpu_instances.back();
    if (!gi.ok()) {
      record_->gpu_instances.pop_back();
      (void)save();
      return gi.error();
    }
    entry.id = gi->id;
    if (Status s = save(); !s.ok()) return s;
    for (const std::string& job : plan.jobs) {
      entry.compute_instances.push_back({job, plan.compute_slices_per_job, std::nullopt, ""});
      if (Status s = save(); !s.ok()) return s;
      Result<MigComputeInstance> ci =
          mig.create_compute_instance(device, gi->id, plan.compute_slices_per_job);
      if (!ci.ok()) {
        entry.compute_instances.pop_back();
        (void)save();
        return ci.error();
      }
      entry.compute_instances.back().id = ci->id;
      if (Status s = save(); !s.ok()) return s;
    }
  }
  Result<std::vector<MigDevice>> mig_devices = mig.mig_devices(device);
  if (!mig_devices.ok()) return mig_devices.error();
  for (MigRecordedGpuInstance& gi : record_->gpu_instances) {
    for (MigRecordedComputeInstance& ci : gi.compute_instances) {
      auto it = std::find_if(mig_devices->begin(), mig_devices->end(), [&](const MigDevice& d) {
        return d.gpu_instance_id == *gi.id && d.compute_instance_id == *ci.id;
      });
      if (it == mig_devices->end() || it->uuid.empty()) {
        return Error(
            fmt::format("GPU {}: no MIG device shows compute instance {} of GPU instance {}; check "
                        "`nvidia-smi -L`",
                        device, *ci.id, *gi.id));
      }
      ci.uuid = it->uuid;
      uuid_of_job_[ci.job] = ci.uuid;
      instance_of_job_[ci.job] = instance_label(gi, ci);
    }
  }
  return save();
}

Result<Environment> MigMechanism::environment_for(const Placement& placement) {
  if (!record_) {
    return Error(fmt::format(
        "mig: environment for job '{}' asked while no MIG instances exist (before prepare() or "
        "after teardown())",
        placement.job_name));
  }
  if (placement.gang_devices.size() > 1) {
    return Error(
        fmt::format("mig: job '{}' needs {} GPUs; a gang does not run under MIG yet "
                    "(run it with --mechanism mps or naive)",
                    placement.job_name, placement.gang_devices.size()));
  }
  auto it = uuid_of_job_.find(placement.job_name);
  if (it == uuid_of_job_.end()) {
    return Error(fmt::format("mig: job '{}' has no MIG instance (it was not laid out in prepare())",
                             placement.job_name));
  }
  return Environment{{"CUDA_VISIBLE_DEVICES", it->second},
                     {kMigInstanceEnv, instance_of_job_.at(placement.job_name)}};
}

Status MigMechanism::health_check() {
  if (!record_) return Error("mig: no MIG instances (before prepare() or after teardown())");
  MigControl* mig = backend_.mig_control();
  Result<std::vector<MigDevice>> devices = mig->mig_devices(record_->device);
  if (!devices.ok()) return devices.error();
  for (const auto& job : uuid_of_job_) {
    const std::string& uuid = job.second;
    if (std::none_of(devices->begin(), devices->end(),
                     [&](const MigDevice& d) { return d.uuid == uuid; })) {
      return Error(fmt::format("mig: the MIG device {} of job '{}' is gone", uuid, job.first));
    }
  }
  return OkStatus();
}

Status MigMechanism::teardown() {
  uuid_of_job_.clear();
  instance_of_job_.clear();
  if (!record_) return OkStatus();
  MigControl* mig = backend_.mig_control();
  std::vector<std::string> done;
  std::vector<std::string> problems = release(
      *mig, record_->device, *record_, /*verify=*/false, [this] { return save(); }, done);
  if (!problems.empty()) {
    Error e(fmt::format(
        "mig teardown: {}; kept {} so that the next colo start retries (it destroys only what "
        "the record names)",
        join(problems, "; "), dir_));
    record_.reset();
    dir_.clear();
    return e;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  record_.reset();
  dir_.clear();
  return OkStatus();
}

Result<std::vector<std::string>> cleanup_stale_mig_instances(
    const std::string& state_dir, MigControl* mig, const std::vector<DeviceInfo>& devices) {
  std::vector<std::string> lines;
  std::error_code ec;
  if (!std::filesystem::is_directory(state_dir, ec)) return lines;
  std::vector<std::string> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir, ec)) {
    if (entry.is_directory(ec) && std::filesystem::exists(entry.path() / kMigOwnerFileName, ec)) {
      dirs.push_back(entry.path().string());
    }
  }
  if (ec) {
    return Error(fmt::format("cannot list MIG record directory {}: {}", state_dir, ec.message()));
  }
  std::sort(dirs.begin(), dirs.end());
  const std::string host = host_name();
  ProcFsProcessFinder finder;
  for (const std::string& dir : dirs) {
    const std::string path = dir + "/" + kMigOwnerFileName;
    Result<MigOwnerRecord> record = read_mig_owner_record(path);
    if (!record.ok()) {
      lines.push_back(fmt::format("left {} alone: {}", dir, record.error().message()));
      continue;
    }
    // Another host's record says nothing about this machine; a live colo
    // still uses its instances.
    if (record->hostname != host || finder.is_alive(static_cast<int>(record->colo_pid))) continue;
    if (mig == nullptr) {
      lines.push_back(fmt::format(
          "{} names MIG instances left by colo pid {}; run colo with the nvml backend to destroy "
          "them",
          dir, record->colo_pid));
      continue;
    }
    auto device = std::find_if(devices.begin(), devices.end(),
                               [&](const DeviceInfo& d) { return d.uuid == record->device_uuid; });
    if (device == devices.end()) {
      lines.push_back(
          fmt::format("left {} alone: its GPU {} is not visible here (CUDA_VISIBLE_DEVICES?)", dir,
                      record->device_uuid));
      continue;
    }
    std::vector<std::string> done;
    std::vector<std::string> problems = release(
        *mig, device->index, *record, /*verify=*/true,
        [&] { return write_mig_owner_record(path, *record); }, done);
    if (!problems.empty()) {
      lines.push_back(fmt::format("MIG instances left by colo pid {}: {}; kept {} to retry",
                                  record->colo_pid, join(problems, "; "), dir));
      continue;
    }
    std::filesystem::remove_all(dir, ec);
    lines.push_back(
        done.empty()
            ? fmt::format("removed the MIG record of colo pid {} (its instances were gone)",
                          record->colo_pid)
            : fmt::format("destroyed MIG instances left by colo pid {} on GPU {}: {}",
                          record->colo_pid, device->index, join(done, ", ")));
  }
  return lines;
}

}  // namespace colo
