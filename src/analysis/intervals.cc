#include "analysis/intervals.h"

#include <algorithm>

namespace colo {

std::vector<Interval> union_of(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const Interval& interval : intervals) {
    if (interval.second <= interval.first) continue;
    if (!merged.empty() && interval.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, interval.second);
    } else {
      merged.push_back(interval);
    }
  }
  return merged;
}

int64_t covered_ms(const std::vector<Interval>& merged) {
  int64_t total = 0;
  for (const Interval& i : merged) total += i.second - i.first;
  return total;
}

int64_t overlap_ms(const std::vector<Interval>& merged, UnixMillis from, UnixMillis to) {
  int64_t total = 0;
  for (const Interval& i : merged) {
    const UnixMillis lo = std::max(from, i.first);
    const UnixMillis hi = std::min(to, i.second);
    if (hi > lo) total += hi - lo;
  }
  return total;
}

bool inside(const std::vector<Interval>& intervals, UnixMillis t) {
  return std::any_of(intervals.begin(), intervals.end(),
                     [t](const Interval& i) { return t >= i.first && t <= i.second; });
}

}  // namespace colo
