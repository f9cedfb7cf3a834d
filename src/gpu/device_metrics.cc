#include "gpu/device_metrics.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace colo {

const std::vector<std::string>& all_metric_names() {
  static const std::vector<std::string> kNames = {
      "sm_active_pct", "sm_occupancy_pct",  "tensor_active_pct",  "dram_active_pct",
      "gpu_util_pct",  "memory_used_bytes", "memory_total_bytes", "power_w",
      "energy_mj",     "pcie_rx_mib_per_s", "pcie_tx_mib_per_s",  "sm_clock_mhz"};
  return kNames;
}

std::vector<std::string> present_metric_names(const DeviceSample& sample) {
  const bool present[] = {
      sample.sm_active_pct.has_value(),      sample.sm_occupancy_pct.has_value(),
      sample.tensor_active_pct.has_value(),  sample.dram_active_pct.has_value(),
      sample.gpu_util_pct.has_value(),       sample.memory_used_bytes.has_value(),
      sample.memory_total_bytes.has_value(), sample.power_w.has_value(),
      sample.energy_mj.has_value(),          sample.pcie_rx_mib_per_s.has_value(),
      sample.pcie_tx_mib_per_s.has_value(),  sample.sm_clock_mhz.has_value()};
  static_assert(std::size(present) == 12, "keep in step with all_metric_names()");
  std::vector<std::string> names;
  for (size_t i = 0; i < std::size(present); ++i) {
    if (present[i]) names.push_back(all_metric_names()[i]);
  }
  return names;
}

std::vector<std::string> canonical_metric_order(const std::vector<std::string>& names) {
  std::vector<std::string> ordered;
  for (const std::string& name : all_metric_names()) {
    if (std::find(names.begin(), names.end(), name) != names.end()) ordered.push_back(name);
  }
  return ordered;
}

std::string describe_metrics(const DeviceInfo& device) {
  std::vector<std::string> absent;
  for (const std::string& name : all_metric_names()) {
    if (std::find(device.supported_metrics.begin(), device.supported_metrics.end(), name) ==
        device.supported_metrics.end()) {
      absent.push_back(name);
    }
  }
  std::string line =
      fmt::format("GPU {} {}: {} metrics ({})", device.index, device.name,
                  device.supported_metrics.size(), fmt::join(device.supported_metrics, ", "));
  if (!absent.empty()) line += fmt::format("; absent: {}", fmt::join(absent, ", "));
  return line;
}

}  // namespace colo
