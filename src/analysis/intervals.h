// Time intervals and their union: the one place colo merges overlapping
// spans of time (steady epochs of several jobs, jobs on one MIG instance).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace colo {

// [first, second] in milliseconds.
using Interval = std::pair<UnixMillis, UnixMillis>;

// The sorted, non-overlapping union of `intervals`; empty ones (second <=
// first) are dropped, touching ones merged.
std::vector<Interval> union_of(std::vector<Interval> intervals);

// Milliseconds covered by a union (union_of's output).
int64_t covered_ms(const std::vector<Interval>& merged);

// Milliseconds of [from, to] covered by a union.
int64_t overlap_ms(const std::vector<Interval>& merged, UnixMillis from, UnixMillis to);

// Whether `t` lies in one of the intervals (ends included).
bool inside(const std::vector<Interval>& intervals, UnixMillis t);

}  // namespace colo
