// LoaderHostBudget: the host's CPUs and memory taken by shared data loaders
// (docs/data-sharing.md), for the `auto` policy. Jobs that read one dataset
// share one loader, so its cost (HostCost: decoding threads and ring) counts
// once, from the first running reader to the last. A job whose dataset is
// being read already always fits; so does any job on an idle host, and any
// job of a signature without a dataset. A limit of 0 is not checked.
//
// Pure; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "sched/scheduler.h"

namespace colo {

class LoaderHostBudget {
 public:
  // host_cpus 0, host_memory_bytes 0: that limit is not checked.
  LoaderHostBudget(double host_cpus, uint64_t host_memory_bytes)
      : host_cpus_(host_cpus), host_memory_bytes_(host_memory_bytes) {}

  // The loader `signature`'s jobs read through.
  void set_cost(const std::string& signature, HostCost cost);
  // Whether any signature was given a cost.
  bool any_cost() const { return !costs_.empty(); }
  // Whether `signature`'s dataset has a running reader.
  bool read(const std::string& signature) const;
  // Whether a job of `signature` may start; `idle`: no job runs on the host.
  bool fits(const std::string& signature, bool idle) const;
  // A job of `signature` started or ended.
  void started(const std::string& signature) { update(signature, +1); }
  void ended(const std::string& signature) { update(signature, -1); }

  double cpus_used() const { return cpus_used_; }
  uint64_t memory_used_bytes() const { return memory_used_; }

 private:
  void update(const std::string& signature, int delta);

  double host_cpus_ = 0;
  uint64_t host_memory_bytes_ = 0;
  std::map<std::string, HostCost> costs_;  // by signature
  std::map<std::string, int> readers_;     // running jobs per dataset
  double cpus_used_ = 0;
  uint64_t memory_used_ = 0;
};

}  // namespace colo
