// Integer sums that stop at the type's limits instead of wrapping: counts a
// job reports (samples, bytes) are summed by colo and must never turn
// negative, whatever the job wrote.
#pragma once

#include <cstdint>
#include <limits>

namespace colo {

// a + b, or INT64_MAX / INT64_MIN when the exact sum does not fit.
constexpr int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// a + b for unsigned counts, or UINT64_MAX when the sum does not fit.
constexpr uint64_t saturating_add(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return std::numeric_limits<uint64_t>::max();
}

}  // namespace colo
