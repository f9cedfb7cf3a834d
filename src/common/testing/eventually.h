// Waiting on a condition in tests: another thread (a sampler, a child
// process) makes it true when it gets a core. The bound is generous, so that
// a loaded machine makes a test slower, never failed; only a broken one waits
// it out.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

namespace colo::testutil {

// Polls `condition` every 2 ms until it holds or `limit_ms` of real time
// passed; its last answer.
template <class Condition>
bool eventually(Condition condition, int64_t limit_ms = 60'000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return condition();
}

}  // namespace colo::testutil
