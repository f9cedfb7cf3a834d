#include "serve/fair_share.h"

#include <algorithm>
#include <functional>

namespace colo {
namespace {

// The split that `weight` gives, when every job has a positive one.
std::optional<std::vector<double>> split_by(
    const std::vector<JobOnGpu>& jobs,
    const std::function<std::optional<double>(const JobOnGpu&)>& weight) {
  double sum = 0;
  for (const JobOnGpu& j : jobs) {
    const std::optional<double> w = weight(j);
    if (!w || !(*w > 0)) return std::nullopt;  // NaN too
    sum += *w;
  }
  std::vector<double> shares;
  for (const JobOnGpu& j : jobs) shares.push_back(*weight(j) / sum);
  return shares;
}

}  // namespace

std::vector<double> charged_shares(const std::vector<JobOnGpu>& jobs) {
  if (jobs.empty()) return {};
  const double equal = 1.0 / static_cast<double>(jobs.size());
  std::optional<std::vector<double>> shares =
      split_by(jobs, [](const JobOnGpu& j) { return j.sm_util_pct; });
  if (!shares) shares = split_by(jobs, [](const JobOnGpu& j) { return j.mps_sm_share_pct; });
  if (!shares) shares = split_by(jobs, [](const JobOnGpu& j) { return j.reported_progress; });
  if (!shares) shares = std::vector<double>(jobs.size(), equal);
  for (double& s : *shares) s = std::max(s, equal / 2);
  return *shares;
}

}  // namespace colo
