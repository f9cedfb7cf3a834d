#include "analysis/energy.h"

namespace colo {

std::optional<double> pair_energy_j(const DeviceSample& a, const DeviceSample& b) {
  if (b.time_ms <= a.time_ms) return std::nullopt;
  if (a.energy_mj && b.energy_mj) {
    if (*b.energy_mj < *a.energy_mj) return std::nullopt;  // counter reset (driver reload)
    return static_cast<double>(*b.energy_mj - *a.energy_mj) / 1000.0;
  }
  if (a.power_w && b.power_w)
    return (*a.power_w + *b.power_w) / 2.0 * static_cast<double>(b.time_ms - a.time_ms) / 1000.0;
  return std::nullopt;
}

std::optional<double> integrate_energy_j(const std::vector<DeviceSample>& samples,
                                         const EnergyWeight& weight) {
  double joules = 0;
  bool any = false;
  for (size_t i = 1; i < samples.size(); ++i) {
    const DeviceSample& a = samples[i - 1];
    const DeviceSample& b = samples[i];
    std::optional<double> pair_j = pair_energy_j(a, b);
    if (!pair_j) continue;
    const double w = weight(a.time_ms, b.time_ms);
    if (w <= 0) continue;
    joules += *pair_j * w;
    any = true;
  }
  if (!any) return std::nullopt;
  return joules;
}

std::optional<double> energy_j(const std::vector<DeviceSample>& samples) {
  return integrate_energy_j(samples, [](UnixMillis, UnixMillis) { return 1.0; });
}

std::optional<double> energy_within_j(const std::vector<DeviceSample>& samples,
                                      const std::vector<Interval>& merged) {
  return integrate_energy_j(samples, [&](UnixMillis a, UnixMillis b) {
    return static_cast<double>(overlap_ms(merged, a, b)) / static_cast<double>(b - a);
  });
}

}  // namespace colo
