#include "profiling/interference.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

namespace colo {
namespace {

// The later of two windows (by when they began), either may be null.
const PlacedWindow* later(const PlacedWindow* a, const PlacedWindow* b) {
  if (a == nullptr) return b;
  return b != nullptr && b->window->started_s > a->window->started_s ? b : a;
}

}  // namespace

std::vector<AloneAndBeside> pair_windows(const std::vector<PlacedWindow>& windows) {
  std::vector<std::string> jobs;  // in the order of their first window
  std::map<std::string, const PlacedWindow*> beside, alone;
  std::map<std::string, const PlacedWindow*> alone_by_signature;
  for (const PlacedWindow& w : windows) {
    if (std::find(jobs.begin(), jobs.end(), w.job) == jobs.end()) jobs.push_back(w.job);
    if (w.others > 0) {
      beside[w.job] = later(beside[w.job], &w);
    } else {
      alone[w.job] = later(alone[w.job], &w);
      alone_by_signature[w.signature] = later(alone_by_signature[w.signature], &w);
    }
  }
  std::vector<AloneAndBeside> out;
  for (const std::string& job : jobs) {
    auto b = beside.find(job);
    if (b == beside.end()) continue;
    const PlacedWindow* a = alone[job];
    if (a == nullptr) a = alone_by_signature[b->second->signature];
    if (a != nullptr) out.push_back({job, *a, *b->second});
  }
  return out;
}

std::vector<FamilySlowdown> family_slowdowns(const std::vector<KernelSpan>& alone,
                                             const std::vector<KernelSpan>& beside) {
  const auto a = time_by_family(alone);
  std::vector<std::pair<double, FamilySlowdown>> rows;  // beside's time, row
  for (const auto& [family, b] : time_by_family(beside)) {
    auto it = a.find(family);
    if (it == a.end()) continue;
    const auto& [time_alone, calls_alone] = it->second;
    const auto& [time_beside, calls_beside] = b;
    rows.push_back({time_beside,
                    {family, calls_alone, time_alone / static_cast<double>(calls_alone),
                     calls_beside, time_beside / static_cast<double>(calls_beside)}});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<FamilySlowdown> out;
  out.reserve(rows.size());
  for (auto& [time, row] : rows) out.push_back(std::move(row));
  return out;
}

std::string format_family_slowdowns(const AloneAndBeside& pair,
                                    const std::vector<FamilySlowdown>& families) {
  const std::string alone_from =
      pair.alone.job == pair.job ? "" : fmt::format(" of {} (the same signature)", pair.alone.job);
  std::string out =
      fmt::format("  {}: window {}{} alone on its GPU against window {} beside {} other job{}\n",
                  pair.job, pair.alone.window->window, alone_from, pair.beside.window->window,
                  pair.beside.others, pair.beside.others == 1 ? "" : "s");
  if (families.empty()) return out + "    (no kernel family ran in both windows)\n";
  out += fmt::format("    {:<14} {:>12} {:>14} {:>12} {:>14} {:>9}\n", "FAMILY", "CALLS ALONE",
                     "MEAN ALONE", "CALLS BESIDE", "MEAN BESIDE", "SLOWDOWN");
  for (const FamilySlowdown& f : families) {
    out +=
        fmt::format("    {:<14} {:>12} {:>11.1f} us {:>12} {:>11.1f} us {:>8.2f}x\n", f.family,
                    f.calls_alone, f.mean_us_alone, f.calls_beside, f.mean_us_beside, f.slowdown());
  }
  return out;
}

}  // namespace colo
