#include "gpu/device_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/json_values.h"

namespace colo {
namespace {

template <class T>
nlohmann::json nullable(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

template <class T>
std::optional<T> optional_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace

nlohmann::json device_to_json(const DeviceInfo& d) {
  nlohmann::json j = {{"index", d.index},
                      {"name", d.name},
                      {"uuid", d.uuid},
                      {"pci_bus_id", d.pci_bus_id},
                      {"memory_total_bytes", d.memory_total_bytes},
                      {"sm_count", nullable(d.sm_count)},
                      {"compute_capability", nullptr},
                      {"mig_enabled", nullable(d.mig_enabled)},
                      {"mig_profiles", nlohmann::json::array()},
                      {"gpm_supported", d.gpm_supported},
                      {"supported_metrics", d.supported_metrics}};
  if (d.cuda_compute_major) {
    j["compute_capability"] =
        fmt::format("{}.{}", *d.cuda_compute_major, d.cuda_compute_minor.value_or(0));
  }
  for (const MigProfile& p : d.mig_profiles) {
    j["mig_profiles"].push_back({{"id", p.id},
                                 {"name", p.name},
                                 {"slices", p.slice_count},
                                 {"memory_bytes", p.memory_bytes},
                                 {"max_instances", p.max_instances},
                                 {"sm_count", p.sm_count}});
  }
  return j;
}

nlohmann::json devices_to_json(const std::vector<DeviceInfo>& devices) {
  nlohmann::json list = nlohmann::json::array();
  for (const DeviceInfo& d : devices) list.push_back(device_to_json(d));
  return list;
}

Result<std::vector<DeviceInfo>> devices_from_json(std::string_view text) {
  nlohmann::json list = nlohmann::json::parse(text, nullptr, false);
  if (!list.is_array()) {
    return Error(fmt::format("a device list must be a JSON array, not '{}'",
                             text.substr(0, std::min<size_t>(text.size(), 60))));
  }
  std::vector<DeviceInfo> out;
  for (const nlohmann::json& j : list) {
    if (!j.is_object()) return Error("a device in a device list must be a JSON object");
    DeviceInfo d;
    d.index = optional_field<int>(j, "index").value_or(0);
    d.name = optional_field<std::string>(j, "name").value_or("");
    d.uuid = optional_field<std::string>(j, "uuid").value_or("");
    d.pci_bus_id = optional_field<std::string>(j, "pci_bus_id").value_or("");
    d.memory_total_bytes = optional_field<uint64_t>(j, "memory_total_bytes").value_or(0);
    d.sm_count = optional_field<int>(j, "sm_count");
    d.mig_enabled = optional_field<bool>(j, "mig_enabled");
    if (auto cc = optional_field<std::string>(j, "compute_capability")) {
      int major = 0;
      int minor = 0;
      if (std::sscanf(cc->c_str(), "%d.%d", &major, &minor) == 2) {
        d.cuda_compute_major = major;
        d.cuda_compute_minor = minor;
      }
    }
    if (auto profiles = j.find("mig_profiles"); profiles != j.end() && profiles->is_array()) {
      for (const nlohmann::json& p : *profiles) {
        if (!p.is_object()) continue;
        MigProfile m;
        m.id = optional_field<int>(p, "id").value_or(0);
        m.name = optional_field<std::string>(p, "name").value_or("");
        m.slice_count = optional_field<int>(p, "slices").value_or(0);
        m.memory_bytes = optional_field<uint64_t>(p, "memory_bytes").value_or(0);
        m.max_instances = optional_field<int>(p, "max_instances").value_or(0);
        m.sm_count = optional_field<int>(p, "sm_count").value_or(0);
        d.mig_profiles.push_back(std::move(m));
      }
    }
    d.gpm_supported = optional_field<bool>(j, "gpm_supported")
                          .value_or(optional_field<bool>(j, "gpm").value_or(false));
    d.supported_metrics = optional_field<std::vector<std::string>>(j, "supported_metrics")
                              .value_or(optional_field<std::vector<std::string>>(j, "metrics")
                                            .value_or(std::vector<std::string>{}));
    out.push_back(std::move(d));
  }
  return out;
}

namespace {

template <class T>
std::optional<T> optional_at(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

}  // namespace

nlohmann::json device_sample_to_json(const DeviceSample& s) {
  return nlohmann::json{{"gpu", s.device},
                        {"time_ms", s.time_ms},
                        {"sm_active_pct", value_or_null(s.sm_active_pct)},
                        {"sm_occupancy_pct", value_or_null(s.sm_occupancy_pct)},
                        {"tensor_active_pct", value_or_null(s.tensor_active_pct)},
                        {"dram_active_pct", value_or_null(s.dram_active_pct)},
                        {"gpu_util_pct", value_or_null(s.gpu_util_pct)},
                        {"memory_used_bytes", value_or_null(s.memory_used_bytes)},
                        {"memory_total_bytes", value_or_null(s.memory_total_bytes)},
                        {"power_w", value_or_null(s.power_w)},
                        {"energy_mj", value_or_null(s.energy_mj)},
                        {"pcie_rx_mib_per_s", value_or_null(s.pcie_rx_mib_per_s)},
                        {"pcie_tx_mib_per_s", value_or_null(s.pcie_tx_mib_per_s)},
                        {"sm_clock_mhz", value_or_null(s.sm_clock_mhz)}};
}

DeviceSample device_sample_from_json(const nlohmann::json& j) {
  DeviceSample s;
  s.device = j.value("gpu", 0);
  s.time_ms = j.value("time_ms", int64_t{0});
  s.sm_active_pct = optional_at<double>(j, "sm_active_pct");
  s.sm_occupancy_pct = optional_at<double>(j, "sm_occupancy_pct");
  s.tensor_active_pct = optional_at<double>(j, "tensor_active_pct");
  s.dram_active_pct = optional_at<double>(j, "dram_active_pct");
  s.gpu_util_pct = optional_at<double>(j, "gpu_util_pct");
  s.memory_used_bytes = optional_at<uint64_t>(j, "memory_used_bytes");
  s.memory_total_bytes = optional_at<uint64_t>(j, "memory_total_bytes");
  s.power_w = optional_at<double>(j, "power_w");
  s.energy_mj = optional_at<uint64_t>(j, "energy_mj");
  s.pcie_rx_mib_per_s = optional_at<double>(j, "pcie_rx_mib_per_s");
  s.pcie_tx_mib_per_s = optional_at<double>(j, "pcie_tx_mib_per_s");
  s.sm_clock_mhz = optional_at<uint32_t>(j, "sm_clock_mhz");
  return s;
}

}  // namespace colo
