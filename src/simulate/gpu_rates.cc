#include "simulate/gpu_rates.h"

#include <algorithm>
#include <utility>

namespace colo {

GpuRates::GpuRates(int gpus, InterferenceModel model, ShareMode mode)
    : model_(std::move(model)), mode_(mode), gpus_(static_cast<size_t>(std::max(0, gpus))) {}

void GpuRates::join(uint64_t order, std::span<const int> gpus, SoloLoad load) {
  for (int g : gpus) {
    Gpu& gpu = gpus_[static_cast<size_t>(g)];
    // Jobs mostly join in order: the place is at the back.
    auto at = std::upper_bound(gpu.orders.begin(), gpu.orders.end(), order);
    const auto pos = at - gpu.orders.begin();
    gpu.orders.insert(at, order);
    gpu.loads.insert(gpu.loads.begin() + pos, load);
    if (!std::exchange(gpu.changed, true)) changed_.push_back(g);
  }
}

void GpuRates::leave(uint64_t order, std::span<const int> gpus) {
  for (int g : gpus) {
    Gpu& gpu = gpus_[static_cast<size_t>(g)];
    auto at = std::lower_bound(gpu.orders.begin(), gpu.orders.end(), order);
    if (at == gpu.orders.end() || *at != order) continue;
    const auto pos = at - gpu.orders.begin();
    gpu.orders.erase(at);
    gpu.loads.erase(gpu.loads.begin() + pos);
    if (!std::exchange(gpu.changed, true)) changed_.push_back(g);
  }
}

void GpuRates::update() {
  for (int g : changed_) {
    Gpu& gpu = gpus_[static_cast<size_t>(g)];
    gpu.changed = false;
    gpu.rate = model_.rate_of_each(mode_, gpu.loads);
  }
  changed_.clear();
}

double GpuRates::rate_of(std::span<const int> gpus) const {
  double rate = 1.0;
  for (int g : gpus) rate = std::min(rate, gpus_[static_cast<size_t>(g)].rate);
  return rate;
}

size_t GpuRates::jobs_on(int gpu) const { return gpus_[static_cast<size_t>(gpu)].orders.size(); }

}  // namespace colo
