// When each job of `colo simulate` is submitted (`--arrivals`), so that a
// cluster's day can be replayed instead of every job queued at once.
//
//   poisson:RATE   submissions at exponential gaps, RATE per hour on average
//                  ("120/h", "2/min", "0.5/s"; a bare number is per hour)
//   diurnal:RATE   the same, with a rate that follows the day: RATE on
//                  average, 1.75x at 14:00 and 0.25x at 02:00 of simulated time
//   FILE           a CSV trace: `time,job[,count]` per line, `time` in seconds
//                  from the start (or a duration: "90s", "1h30m"), `job` a
//                  [[job]] block's name, `count` (default 1) how many of its
//                  jobs are submitted then. A header line and lines starting
//                  with '#' are skipped.
//
// poisson and diurnal submit the job file's own jobs in their order; the
// points of one grid arrive together, as one sweep is submitted at once. A
// trace takes the jobs it names from their blocks in order and, past a
// block's end, starts again from its first job under a new name
// ("resnet26#1~2"): a short job file of templates and a long trace make a
// cluster's day. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "simulate/simulator.h"

namespace colo {

// The most jobs a trace may submit: each is held in memory (about 1 KB).
inline constexpr int64_t kMaxTraceJobs = 2'000'000;

// `jobs` (the job file's, in order; SimJob::label is the block's name) with
// their submit times set, ordered by them. An error names what is wrong:
// the form of `spec`, or the trace's file and line.
Result<std::vector<SimJob>> with_arrivals(const std::vector<SimJob>& jobs, std::string_view spec,
                                          uint64_t seed);

}  // namespace colo
