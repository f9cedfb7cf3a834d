#include "sched/host_budget.h"

#include <algorithm>

namespace colo {

void LoaderHostBudget::set_cost(const std::string& signature, HostCost cost) {
  costs_[signature] = std::move(cost);
}

bool LoaderHostBudget::read(const std::string& signature) const {
  auto it = costs_.find(signature);
  if (it == costs_.end() || it->second.dataset.empty()) return false;
  auto readers = readers_.find(it->second.dataset);
  return readers != readers_.end() && readers->second > 0;
}

bool LoaderHostBudget::fits(const std::string& signature, bool idle) const {
  auto it = costs_.find(signature);
  if (it == costs_.end() || it->second.dataset.empty() || read(signature) || idle) return true;
  const HostCost& c = it->second;
  return (host_cpus_ <= 0 || cpus_used_ + c.loader_cpus <= host_cpus_) &&
         (host_memory_bytes_ == 0 || memory_used_ + c.loader_memory_bytes <= host_memory_bytes_);
}

void LoaderHostBudget::update(const std::string& signature, int delta) {
  auto it = costs_.find(signature);
  if (it == costs_.end() || it->second.dataset.empty()) return;
  const HostCost& c = it->second;
  int& readers = readers_[c.dataset];
  const bool was_read = readers > 0;
  readers = std::max(0, readers + delta);
  if (!was_read && readers > 0) {
    cpus_used_ += c.loader_cpus;
    memory_used_ += c.loader_memory_bytes;
  } else if (was_read && readers == 0) {
    cpus_used_ = std::max(0.0, cpus_used_ - c.loader_cpus);
    memory_used_ -= std::min(memory_used_, c.loader_memory_bytes);
  }
}

}  // namespace colo
