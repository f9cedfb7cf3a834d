// Energy a GPU drew, from its samples: the one integrator behind every
// energy figure colo prints (a run's total, each job's share, the energy of
// the steady window).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "analysis/intervals.h"
#include "gpu/gpu_backend.h"

namespace colo {

// The share of the energy between two consecutive samples (at a_ms and b_ms)
// that counts, in [0, 1].
using EnergyWeight = std::function<double(UnixMillis a_ms, UnixMillis b_ms)>;

// Joules drawn between two consecutive samples of one device (a before b):
// the driver's energy counter's increase when both carry it (a decrease, a
// counter reset, gives nothing), else the mean of their power times the time
// between them when both carry power, else nothing.
std::optional<double> pair_energy_j(const DeviceSample& a, const DeviceSample& b);

// Joules drawn by one device over its samples (oldest first, one device):
// each pair of consecutive samples contributes its pair_energy_j() times
// weight(a, b). nullopt when no pair contributed.
std::optional<double> integrate_energy_j(const std::vector<DeviceSample>& samples,
                                         const EnergyWeight& weight);

// Every pair counts fully.
std::optional<double> energy_j(const std::vector<DeviceSample>& samples);

// The part of each pair inside `merged` (a union, see union_of) counts.
std::optional<double> energy_within_j(const std::vector<DeviceSample>& samples,
                                      const std::vector<Interval>& merged);

}  // namespace colo
