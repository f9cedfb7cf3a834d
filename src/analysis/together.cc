#include "analysis/together.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace colo {
namespace {

std::string seconds(double ms) { return fmt::format("{:.1f} s", ms / 1000.0); }

}  // namespace

std::optional<TogetherWindow> together_window(
    const std::vector<const std::vector<EpochEnd>*>& jobs) {
  if (jobs.empty()) return std::nullopt;
  TogetherWindow w{std::numeric_limits<UnixMillis>::min(), std::numeric_limits<UnixMillis>::max()};
  for (const std::vector<EpochEnd>* ends : jobs) {
    if (ends->size() < 2) return std::nullopt;
    w.start_ms = std::max(w.start_ms, ends->front().time_ms);
    w.end_ms = std::min(w.end_ms, ends->back().time_ms);
  }
  if (w.end_ms <= w.start_ms) return std::nullopt;
  return w;
}

Together measure_together(const std::vector<TogetherJob>& jobs) {
  Together out;
  if (jobs.empty()) {
    out.why_not = "no job started";
    return out;
  }
  std::set<int> devices;
  std::vector<const std::vector<EpochEnd>*> all;
  for (const TogetherJob& job : jobs) {
    devices.insert(job.device.value_or(-1));
    all.push_back(job.ends);
    if (job.ends->size() < 2) {
      out.why_not = fmt::format(
          "{} ended {} epoch{} (it needs two: the first is warm-up), so its steady rate is "
          "unknown",
          job.name, job.ends->size(), job.ends->size() == 1 ? "" : "s");
      return out;
    }
  }
  out.gpus = static_cast<int>(devices.size());
  out.window = together_window(all);
  if (!out.window) {
    out.why_not = "the jobs never were in their steady epochs at the same time";
    return out;
  }

  // Long enough: two steady epochs of the slowest job.
  const TogetherJob* slowest = nullptr;
  double slowest_ms = 0;
  for (const TogetherJob& job : jobs) {
    std::optional<SteadyEpochs> steady = steady_epochs(*job.ends);
    if (steady && steady->epoch_ms > slowest_ms) {
      slowest_ms = steady->epoch_ms;
      slowest = &job;
    }
  }
  const auto length = static_cast<double>(out.window->length_ms());
  if (jobs.size() >= 2 && slowest != nullptr && length < 2 * slowest_ms) {
    out.why_not = fmt::format(
        "the jobs did not run together long enough: they all were in their steady epochs for "
        "{}, less than two steady epochs of the slowest job ({}, {} each)",
        seconds(length), slowest->name, seconds(slowest_ms));
    return out;
  }

  const UnixMillis from = out.window->start_ms;
  const UnixMillis to = out.window->end_ms;
  double summed_normalized = 0;
  double summed_samples = 0;
  bool every_rate = true;
  bool every_samples = true;
  std::vector<std::string> without_solo;
  for (const TogetherJob& job : jobs) {
    JobInWindow j;
    const bool samples = counts_samples(*job.ends);
    j.epochs_per_s = progress_between(*job.ends, from, to, false) * 1000.0 / length;
    if (samples) {
      j.samples_per_s = progress_between(*job.ends, from, to, true) * 1000.0 / length;
      summed_samples += *j.samples_per_s;
    } else {
      every_samples = false;
    }
    if (job.solo && samples && job.solo->samples_per_s && *job.solo->samples_per_s > 0) {
      j.normalized_rate = *j.samples_per_s / *job.solo->samples_per_s;
    } else if (job.solo && job.solo->epoch_ms && *job.solo->epoch_ms > 0) {
      j.normalized_rate = j.epochs_per_s * *job.solo->epoch_ms / 1000.0;
    }
    if (j.normalized_rate && *j.normalized_rate > 0) {
      j.slowdown = 1.0 / *j.normalized_rate;
      summed_normalized += *j.normalized_rate;
    } else {
      every_rate = false;
      without_solo.push_back(job.name);
    }
    out.jobs.push_back(j);
  }
  if (every_samples) out.samples_per_s = summed_samples;
  if (every_rate) {
    out.speedup = summed_normalized / out.gpus;
  } else {
    std::string names;
    for (size_t i = 0; i < without_solo.size() && i < 3; ++i)
      names += (i > 0 ? ", " : "") + without_solo[i];
    if (without_solo.size() > 3) names += fmt::format(" and {} more", without_solo.size() - 3);
    out.why_not = fmt::format(
        "no solo rate for {} (run the same jobs with --mechanism exclusive, or one of them alone, "
        "to measure it)",
        names);
  }
  return out;
}

}  // namespace colo

namespace colo {

NormalizedThroughput normalized_throughput(const std::vector<TogetherJob>& jobs) {
  // Each job's steady epochs (2..n) on its GPU, with its normalized rate in each.
  struct Piece {
    UnixMillis start = 0;
    UnixMillis end = 0;
    std::optional<double> normalized;
    bool estimated = false;
    size_t job = 0;  // index into `jobs`
  };
  std::map<int, std::vector<Piece>> by_gpu;  // an unknown GPU counts as one, -1
  for (size_t index = 0; index < jobs.size(); ++index) {
    const TogetherJob& j = jobs[index];
    const std::vector<EpochEnd>& ends = *j.ends;
    for (size_t k = 1; k < ends.size(); ++k) {
      Piece p{ends[k - 1].time_ms, ends[k].time_ms, std::nullopt, false, index};
      if (p.end <= p.start) continue;
      const auto ms = static_cast<double>(p.end - p.start);
      if (j.solo && ends[k].samples && j.solo->samples_per_s && *j.solo->samples_per_s > 0) {
        p.normalized = static_cast<double>(*ends[k].samples) * 1000.0 / ms / *j.solo->samples_per_s;
      } else if (j.solo && j.solo->epoch_ms && *j.solo->epoch_ms > 0) {
        p.normalized = *j.solo->epoch_ms / ms;
      }
      p.estimated = j.solo && j.solo->estimated;
      by_gpu[j.device.value_or(-1)].push_back(p);
    }
  }
  NormalizedThroughput out;
  double integral = 0;  // normalized rate x ms
  std::vector<double> job_integral(jobs.size(), 0.0);
  std::vector<int64_t> job_ms(jobs.size(), 0);
  std::set<std::string> without_solo;
  for (const auto& gpu_pieces : by_gpu) {
    const std::vector<Piece>& pieces = gpu_pieces.second;
    std::set<UnixMillis> cuts;
    for (const Piece& p : pieces) cuts.insert({p.start, p.end});
    // One sweep over the cuts: the pieces that start by each cut join, those
    // that end by it leave; the rest are active until the next cut. Active
    // pieces are kept in their order in `pieces`, so that sums add up alike.
    std::vector<size_t> by_start(pieces.size());
    std::iota(by_start.begin(), by_start.end(), size_t{0});
    std::stable_sort(by_start.begin(), by_start.end(),
                     [&](size_t a, size_t b) { return pieces[a].start < pieces[b].start; });
    std::multimap<UnixMillis, size_t> ending;  // the active pieces by their end
    std::set<size_t> in;
    size_t joined = 0;
    for (auto t = cuts.begin(); t != cuts.end() && std::next(t) != cuts.end(); ++t) {
      const UnixMillis from = *t;
      const UnixMillis to = *std::next(t);
      for (; joined < by_start.size() && pieces[by_start[joined]].start <= from; ++joined) {
        in.insert(by_start[joined]);
        ending.emplace(pieces[by_start[joined]].end, by_start[joined]);
      }
      while (!ending.empty() && ending.begin()->first <= from) {
        in.erase(ending.begin()->second);
        ending.erase(ending.begin());
      }
      if (in.size() < 2) continue;
      std::vector<const Piece*> active;
      for (size_t i : in) active.push_back(&pieces[i]);
      double sum = 0;
      bool known = true;
      for (const Piece* p : active) {
        if (!p->normalized) {
          known = false;
          without_solo.insert(jobs[p->job].name);
        }
        sum += p->normalized.value_or(0);
      }
      if (!known) continue;
      for (const Piece* p : active) {
        out.estimated = out.estimated || p->estimated;
        job_integral[p->job] += *p->normalized * static_cast<double>(to - from);
        job_ms[p->job] += to - from;
      }
      integral += sum * static_cast<double>(to - from);
      out.shared_ms += to - from;
    }
  }
  out.job_normalized.resize(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (job_ms[i] > 0) out.job_normalized[i] = job_integral[i] / static_cast<double>(job_ms[i]);
  }
  if (out.shared_ms > 0) {
    out.value = integral / static_cast<double>(out.shared_ms);
  } else if (!without_solo.empty()) {
    out.why_not = fmt::format("no solo rate for {}", *without_solo.begin());
  } else {
    out.why_not = "no two jobs were in their steady epochs on one GPU at the same time";
  }
  return out;
}

}  // namespace colo
