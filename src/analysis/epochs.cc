#include "analysis/epochs.h"

#include <algorithm>

#include "common/saturating.h"

namespace colo {
namespace {

// Progress from the end of epoch 1 up to `t`.
double progress_at(const std::vector<EpochEnd>& ends, UnixMillis t, bool in_samples) {
  double done = 0;
  for (size_t k = 1; k < ends.size(); ++k) {
    const EpochEnd& prev = ends[k - 1];
    const EpochEnd& next = ends[k];
    const double size = in_samples ? static_cast<double>(next.samples.value_or(0)) : 1.0;
    if (t >= next.time_ms) {
      done += size;
      continue;
    }
    if (t > prev.time_ms) {
      done += size * static_cast<double>(t - prev.time_ms) /
              static_cast<double>(next.time_ms - prev.time_ms);
    }
    break;
  }
  return done;
}

}  // namespace

std::vector<EpochEnd> epoch_ends(const std::vector<ProgressEvent>& events,
                                 std::optional<UnixMillis> started_ms) {
  std::vector<EpochEnd> ends;
  for (const ProgressEvent& e : events) {
    if (e.kind != "epoch_end" || e.time_ms < started_ms.value_or(0)) continue;
    ends.push_back({e.time_ms, e.samples, e.epoch});
  }
  std::stable_sort(ends.begin(), ends.end(),
                   [](const EpochEnd& a, const EpochEnd& b) { return a.time_ms < b.time_ms; });
  return ends;
}

bool counts_samples(const std::vector<EpochEnd>& ends) {
  return ends.size() >= 2 && std::all_of(ends.begin() + 1, ends.end(),
                                         [](const EpochEnd& e) { return e.samples.has_value(); });
}

std::optional<SteadyEpochs> steady_epochs(const std::vector<EpochEnd>& ends) {
  if (ends.size() < 2 || ends.back().time_ms <= ends.front().time_ms) return std::nullopt;
  SteadyEpochs s;
  s.start_ms = ends.front().time_ms;
  s.end_ms = ends.back().time_ms;
  s.epochs = static_cast<int64_t>(ends.size()) - 1;
  s.epoch_ms = static_cast<double>(s.end_ms - s.start_ms) / static_cast<double>(s.epochs);
  if (counts_samples(ends)) {
    int64_t samples = 0;
    for (size_t k = 1; k < ends.size(); ++k) samples = saturating_add(samples, *ends[k].samples);
    s.samples = samples;
    s.samples_per_s =
        static_cast<double>(samples) * 1000.0 / static_cast<double>(s.end_ms - s.start_ms);
  }
  return s;
}

double progress_between(const std::vector<EpochEnd>& ends, UnixMillis from, UnixMillis to,
                        bool in_samples) {
  if (ends.size() < 2 || to <= from) return 0;
  return progress_at(ends, to, in_samples) - progress_at(ends, from, in_samples);
}

}  // namespace colo
