#include "sharing/plain_sharing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

namespace colo {

Result<std::string> placement_device_uuid(const std::vector<DeviceInfo>& devices,
                                          const Placement& placement) {
  std::string uuids;
  for (int index : placement.devices()) {
    auto it = std::find_if(devices.begin(), devices.end(),
                           [&](const DeviceInfo& d) { return d.index == index; });
    if (it == devices.end()) {
      return Error(fmt::format("job '{}' is placed on GPU {}, which this run does not use",
                               placement.job_name, index));
    }
    if (it->uuid.empty()) {
      return Error(
          fmt::format("device {} ({}) has no UUID, so job '{}' cannot be pinned to it with "
                      "CUDA_VISIBLE_DEVICES",
                      it->index, it->name, placement.job_name));
    }
    uuids += (uuids.empty() ? "" : ",") + it->uuid;
  }
  return uuids;
}

PlainSharing::PlainSharing(MechanismKind kind) : kind_(kind) {
  assert(kind == MechanismKind::kExclusive || kind == MechanismKind::kNaive);
}

int PlainSharing::max_jobs_per_device() const {
  return kind_ == MechanismKind::kExclusive ? 1 : 1000;
}

Status PlainSharing::prepare(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return Error(fmt::format("{}: no GPUs to run on", to_string(kind_)));
  devices_ = devices;
  prepared_ = true;
  return OkStatus();
}

Result<Environment> PlainSharing::environment_for(const Placement& placement) {
  if (!prepared_) {
    return Error(fmt::format("{}: environment for job '{}' asked before prepare()",
                             to_string(kind_), placement.job_name));
  }
  Result<std::string> uuid = placement_device_uuid(devices_, placement);
  if (!uuid.ok()) return uuid.error();
  return Environment{{"CUDA_VISIBLE_DEVICES", *uuid}};
}

Status PlainSharing::teardown() {
  devices_.clear();
  prepared_ = false;
  return OkStatus();
}

}  // namespace colo
