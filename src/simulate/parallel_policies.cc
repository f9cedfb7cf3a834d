#include "simulate/parallel_policies.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

namespace colo {

size_t usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<size_t>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<PolicyResult> simulate_policies(
    const std::vector<SimJob>& jobs, const std::vector<PolicySpec>& policies,
    const SimOptions& options, size_t threads,
    const std::function<void(size_t finished, size_t total)>& done) {
  const size_t total = policies.size();
  if (threads == 0) threads = usable_cores();
  threads = std::min(threads, total);
  std::vector<PolicyResult> results(total);
  if (threads <= 1) {
    for (size_t i = 0; i < total; ++i) {
      results[i] = simulate_policy(jobs, policies[i], options);
      if (done) done(i + 1, total);
    }
    return results;
  }
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::condition_variable changed;
  size_t finished = 0;         // guarded by mutex
  std::exception_ptr failure;  // the first, guarded by mutex
  auto work = [&] {
    for (size_t i = next++; i < total; i = next++) {
      std::exception_ptr error;
      try {
        results[i] = simulate_policy(jobs, policies[i], options);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        ++finished;
        if (error && !failure) failure = error;
      }
      changed.notify_one();
      if (error) next = total;  // the rest are not started
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(work);
  {
    std::unique_lock<std::mutex> lock(mutex);
    size_t told = 0;
    while (told < total && !failure) {
      changed.wait(lock, [&] { return finished > told || failure; });
      if (failure) break;
      told = finished;
      if (done) {
        lock.unlock();
        done(told, total);
        lock.lock();
      }
    }
  }
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return results;
}

}  // namespace colo
