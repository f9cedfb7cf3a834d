// The one JSON shape of a GPU (DeviceInfo): what `colo devices --json`
// prints and what a run records about the GPUs it found (runs.devices_json);
// and of one sample of it (DeviceSample).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gpu/gpu_backend.h"

namespace colo {

// {"index", "name", "uuid", "pci_bus_id", "memory_total_bytes", "sm_count",
//  "compute_capability", "mig_enabled", "mig_profiles", "gpm_supported",
//  "supported_metrics"}; absent optional facts are null.
nlohmann::json device_to_json(const DeviceInfo& device);
nlohmann::json devices_to_json(const std::vector<DeviceInfo>& devices);

// One device sample: {"gpu", "time_ms"} and every metric of DeviceSample
// under its field's name (all_metric_names()), null when absent: what `colo
// monitor --json` prints, the service's snapshot and the HTTP API's samples.
nlohmann::json device_sample_to_json(const DeviceSample& sample);
// Reads one written by device_sample_to_json; missing keys stay absent.
DeviceSample device_sample_from_json(const nlohmann::json& j);

// Reads a list written by devices_to_json (or by colo before it, whose
// records name "gpm" and "metrics" instead). Unknown keys are ignored;
// anything but an array of objects is an error.
Result<std::vector<DeviceInfo>> devices_from_json(std::string_view text);

}  // namespace colo
