// Names of the DeviceSample metrics, for DeviceInfo::supported_metrics and
// for telling the user what a backend measures.
#pragma once

#include <string>
#include <vector>

#include "gpu/gpu_backend.h"

namespace colo {

// Every metric field of DeviceSample, in declaration order ("sm_active_pct", ...).
const std::vector<std::string>& all_metric_names();

// The fields of `sample` that hold a value, in declaration order.
std::vector<std::string> present_metric_names(const DeviceSample& sample);

// The names in `names` ordered as in all_metric_names(), duplicates removed.
std::vector<std::string> canonical_metric_order(const std::vector<std::string>& names);

// One line for the user: "GPU 0 NVIDIA H200: 12 metrics (sm_active_pct, ...);
// absent: tensor_active_pct".
std::string describe_metrics(const DeviceInfo& device);

}  // namespace colo
