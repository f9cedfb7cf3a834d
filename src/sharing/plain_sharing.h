// The mechanisms that need no daemon: exclusive (one job per GPU at a time,
// the baseline) and naive (any number of plain processes share a GPU and the
// driver time-slices them).
#pragma once

#include <vector>

#include "sharing/mechanism.h"

namespace colo {

// Gives each job CUDA_VISIBLE_DEVICES=<its device's UUID> and nothing else.
// Neither mechanism can enforce Placement::sm_share_pct or
// memory_limit_bytes; both are ignored (they stay scheduling hints), which is
// not an error, so one job file can be run under every mechanism.
//
// Owns nothing outside colo; prepare() and teardown() only remember and forget
// the devices. Not thread-safe.
class PlainSharing final : public Mechanism {
 public:
  // `kind` must be kExclusive or kNaive.
  explicit PlainSharing(MechanismKind kind);

  MechanismKind kind() const override { return kind_; }
  // Exclusive: 1. Naive: 1000, i.e. no limit of its own.
  int max_jobs_per_device() const override;
  Status prepare(const std::vector<DeviceInfo>& devices) override;
  Result<Environment> environment_for(const Placement& placement) override;
  Status health_check() override { return OkStatus(); }
  Status teardown() override;

 private:
  MechanismKind kind_;
  std::vector<DeviceInfo> devices_;
  bool prepared_ = false;
};

// The UUIDs of the placement's devices (a gang's joined by commas: its
// CUDA_VISIBLE_DEVICES), or an error naming what is wrong.
// Shared by every mechanism.
Result<std::string> placement_device_uuid(const std::vector<DeviceInfo>& devices,
                                          const Placement& placement);

}  // namespace colo
