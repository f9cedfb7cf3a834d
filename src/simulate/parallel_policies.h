// simulate_policies(): `colo simulate`'s policies, each simulated on a thread
// of its own (issue 59). Each policy's simulation is independent (its own
// scheduler, clock and GPUs; `jobs` and `options` are only read), so the
// results are those of simulate_policy() called for each policy in turn, in
// the policies' order, whatever the threads and their timing; only the
// scheduler's own wall time (scheduler_total_ms and the like) differs.
//
// At most `threads` policies run at once (0: as many as the cores this
// process may run on, usable_cores()); one thread or one policy runs them on
// the calling thread. `done(finished, total)` is called on the calling
// thread as policies end (for a progress line). An exception a simulation
// throws is rethrown once every thread has stopped.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "simulate/simulator.h"

namespace colo {

// The cores this process may run on (its affinity mask, as under taskset),
// at least 1.
size_t usable_cores();

std::vector<PolicyResult> simulate_policies(
    const std::vector<SimJob>& jobs, const std::vector<PolicySpec>& policies,
    const SimOptions& options, size_t threads = 0,
    const std::function<void(size_t finished, size_t total)>& done = nullptr);

}  // namespace colo
