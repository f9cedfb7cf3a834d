// Interference per kernel family (docs/profiling.md): a job's kernels in a
// profiling window when it ran alone on its GPU against a window when it ran
// beside other jobs, family by family (kernel_family()). The windows are
// paired from where each one ran: the job's own alone window, else one of
// another job of the same signature (the same command and settings; `colo
// show` looks in other runs of the store too). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiling/timeline.h"
#include "profiling/windows.h"

namespace colo {

// A profiling window and where it ran: `others` is the number of other jobs
// that ran on its GPU at any time during it (0: alone).
struct PlacedWindow {
  std::string job;
  std::string signature;
  const ProfileWindow* window = nullptr;  // with a kernels file
  int others = 0;
};

// For each job with a window beside others: its latest such window, and a
// window when it ran alone (its own latest, else the latest of another job
// of its signature); jobs without an alone window to pair are left out.
struct AloneAndBeside {
  std::string job;
  PlacedWindow alone;
  PlacedWindow beside;
};
std::vector<AloneAndBeside> pair_windows(const std::vector<PlacedWindow>& windows);

struct FamilySlowdown {
  std::string family;
  int64_t calls_alone = 0;
  double mean_us_alone = 0;  // the family's summed kernel time over its calls
  int64_t calls_beside = 0;
  double mean_us_beside = 0;
  double slowdown() const { return mean_us_alone > 0 ? mean_us_beside / mean_us_alone : 0; }
};
// The families with kernels in both, the most kernel time beside first.
std::vector<FamilySlowdown> family_slowdowns(const std::vector<KernelSpan>& alone,
                                             const std::vector<KernelSpan>& beside);

// `colo show`'s table for one pair: each family's calls and mean kernel time
// alone and beside, and beside over alone.
std::string format_family_slowdowns(const AloneAndBeside& pair,
                                    const std::vector<FamilySlowdown>& families);

}  // namespace colo
