// One timeline across the jobs that shared a GPU (`colo profile --gpu`,
// docs/profiling.md): each job's device spans over the same window, as its
// Python client wrote them (torch-kernels-N.tsv: microseconds on the host's
// clock, which every process of a machine shares), on one clock; where the
// GPU ran kernels of one job, of several at once, or of none; each job's
// kernel time by kernel family. Pure but for read_kernel_spans().
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace colo {

struct KernelSpan {
  double start_us = 0;  // since the Unix epoch
  double end_us = 0;
  std::string name;
};

// What colo reads of one torch-kernels-N.tsv (docs/profiling.md).
constexpr uint64_t kMaxKernelSpansBytes = uint64_t{256} << 20;

// A torch-kernels-N.tsv: "start_us<TAB>end_us<TAB>name" per line, at `path`
// directly in the job's profile directory `dir`, read as the job's file
// (windows.h's open_window_file(), at most kMaxKernelSpansBytes). An error
// names the file, and the line that is not one.
Result<std::vector<KernelSpan>> read_kernel_spans(const std::string& dir, const std::string& path);

// A kernel's family, from its name: "convolution", "GEMM", "elementwise",
// "reduction", "normalization", "layout", "optimizer", "softmax", "memcpy",
// "memset", else "other".
std::string kernel_family(const std::string& name);

// Per kernel family: the spans' summed time within [from_us, to_us] (each
// clipped to it; the spans wholly outside left out) and how many there are.
std::map<std::string, std::pair<double, int64_t>> time_by_family(
    const std::vector<KernelSpan>& spans, double from_us = -std::numeric_limits<double>::infinity(),
    double to_us = std::numeric_limits<double>::infinity());

struct TimelineLane {
  std::string job;
  std::vector<KernelSpan> spans;  // any order
};

struct TimelineStats {
  double from_us = 0;  // the window every lane covered
  double to_us = 0;
  std::vector<double> busy_us;        // per lane: the union of its spans
  std::vector<double> only_us;        // per lane: busy while no other lane was
  std::vector<double> shared_us;      // per lane: busy while another lane was too
  std::vector<double> lanes_busy_us;  // [k]: exactly k lanes busy, k = 0..lanes
  double idle_us() const { return lanes_busy_us.front(); }  // no lane busy
  double overlap_us() const;                                // two lanes or more busy
  // Per lane, per family: the spans' summed time (not their union) and count.
  std::vector<std::map<std::string, std::pair<double, int64_t>>> families;
};

// The figures over [from_us, to_us] (spans clipped to it).
TimelineStats timeline_stats(const std::vector<TimelineLane>& lanes, double from_us, double to_us);

// The table people read: each job's busy, alone and shared time, the GPU's
// idle and overlapped time, and each family's time per job.
std::string format_timeline(const std::vector<TimelineLane>& lanes, const TimelineStats& stats);

// A self-contained HTML page: an SVG with one lane per job (its kernels, as
// drawn at the page's resolution), a lane where two jobs or more ran at once,
// a lane where none did, a time axis, and format_timeline's table.
std::string timeline_html(const std::string& title, const std::vector<TimelineLane>& lanes,
                          const TimelineStats& stats);

}  // namespace colo
