// Clock seam: everything that reads time or sleeps takes a Clock&, so tests
// and the simulator can run on a controlled clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace colo {

// Milliseconds since the Unix epoch; the unit of every timestamp colo stores.
using UnixMillis = int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, for records.
  virtual UnixMillis now_ms() const = 0;
  // Monotonic time in milliseconds from an arbitrary origin, for durations.
  virtual int64_t monotonic_ms() const = 0;
  virtual void sleep_for_ms(int64_t ms) = 0;
};

// The real clock. Thread-safe.
class SystemClock final : public Clock {
 public:
  UnixMillis now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t monotonic_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void sleep_for_ms(int64_t ms) override;
};

// A clock that moves only when told to (sleep_for_ms advances it). Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(UnixMillis start_ms = 1'700'000'000'000) : now_(start_ms) {}
  UnixMillis now_ms() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  int64_t monotonic_ms() const override { return now_ms(); }
  void sleep_for_ms(int64_t ms) override { advance_ms(ms); }
  void advance_ms(int64_t ms) {
    std::lock_guard lock(mu_);
    now_ += ms;
  }

 private:
  mutable std::mutex mu_;
  UnixMillis now_;
};

}  // namespace colo
