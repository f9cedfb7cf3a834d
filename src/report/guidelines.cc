#include "report/guidelines.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/units.h"

namespace colo {
namespace {

constexpr double kHelpsSpeedup = 1.5;
constexpr double kPartlyHelpsSpeedup = 1.1;
constexpr double kSaturatedSmPct = 80.0;
constexpr double kLittleGainSpeedup = 1.25;
constexpr double kMemorySumTolerance = 0.25;
constexpr double kMpsWinTolerance = 0.05;

bool is_uniform(const CaseGroup& g) { return g.workload != "mixed" && g.workload != "recsys"; }

std::string label(const CaseGroup& g) {
  return fmt::format("{} {}, {} job{}", g.mechanism, g.models, g.degree, g.degree == 1 ? "" : "s");
}

std::string workload_label(const CaseGroup& g) {
  return g.workload == g.models ? g.workload : fmt::format("{} ({})", g.workload, g.models);
}

// One uniform workload: its degree-1 baseline and its collocated groups.
struct Workload {
  const CaseGroup* baseline = nullptr;
  std::vector<const CaseGroup*> collocated;  // degree >= 2, ran ok
  const CaseGroup* best = nullptr;           // highest median speed-up among them
};

std::vector<Workload> uniform_workloads(const ExperimentMetrics& m) {
  std::vector<Workload> out;
  for (const CaseGroup& g : m.groups) {
    if (!is_uniform(g) || g.status != "ok" || g.degree < 2 || !g.baseline) continue;
    const CaseGroup* base = &m.groups[*g.baseline];
    auto it =
        std::find_if(out.begin(), out.end(), [&](const Workload& w) { return w.baseline == base; });
    if (it == out.end()) {
      out.push_back(Workload{base, {}, nullptr});
      it = out.end() - 1;
    }
    it->collocated.push_back(&g);
    if (g.speedup && (!it->best || g.speedup->median > it->best->speedup->median)) it->best = &g;
  }
  return out;
}

std::string pct(const std::optional<Spread>& s) {
  return s ? fmt::format("{:.0f}%", s->median) : std::string("-");
}

std::string times(double x) { return fmt::format("{:.2f}x", x); }

GuidelineFinding guideline_fits(const ExperimentMetrics& m, const std::vector<Workload>& ws) {
  GuidelineFinding f;
  f.number = 1;
  f.guideline =
      "Collocation is highly beneficial when the collocated jobs together fit the GPU's compute "
      "and memory.";
  const Workload* light = nullptr;
  for (const Workload& w : ws) {
    if (!w.best) continue;
    f.evidence.push_back(fmt::format(
        "{}: one job alone keeps SM activity at {}; best collocated steady throughput {} one job "
        "alone ({})",
        workload_label(*w.baseline), pct(w.baseline->sm_active_pct), times(w.best->speedup->median),
        label(*w.best)));
    const double sm = w.baseline->sm_active_pct ? w.baseline->sm_active_pct->median : 100.0;
    const double light_sm =
        light && light->baseline->sm_active_pct ? light->baseline->sm_active_pct->median : 101.0;
    if (!light || sm < light_sm) light = &w;
  }
  int not_fitting = 0;
  for (const CaseGroup& g : m.groups) not_fitting += g.status == "does_not_fit" ? 1 : 0;
  if (not_fitting > 0) {
    f.evidence.push_back(
        fmt::format("{} configuration(s) did not fit the GPU's memory and were "
                    "not run",
                    not_fitting));
  }
  if (!light) {
    f.evidence.push_back(
        "needs a uniform workload run alone (1 job) and collocated (2+ jobs); none in this "
        "experiment");
    return f;
  }
  const double best = light->best->speedup->median;
  f.evidence.push_back(fmt::format(
      "the lightest workload ({}) gains {}; the guideline holds at >= {:.1f}x, partly at >= "
      "{:.1f}x",
      workload_label(*light->baseline), times(best), kHelpsSpeedup, kPartlyHelpsSpeedup));
  f.verdict = best >= kHelpsSpeedup         ? Verdict::kSupported
              : best >= kPartlyHelpsSpeedup ? Verdict::kPartlySupported
                                            : Verdict::kNotSupported;
  return f;
}

GuidelineFinding guideline_saturation(const std::vector<Workload>& ws) {
  GuidelineFinding f;
  f.number = 2;
  f.guideline =
      "Collocation gives diminishing returns when one job alone already keeps the GPU close to "
      "100% busy.";
  const Workload* heavy = nullptr;
  const Workload* light = nullptr;
  for (const Workload& w : ws) {
    if (!w.best || !w.baseline->sm_active_pct) continue;
    const double sm = w.baseline->sm_active_pct->median;
    if (!heavy || sm > heavy->baseline->sm_active_pct->median) heavy = &w;
    if (!light || sm < light->baseline->sm_active_pct->median) light = &w;
  }
  if (!heavy) {
    f.evidence.push_back(
        "needs SM activity of a job alone and a collocated speed-up for at least one workload");
    return f;
  }
  for (const CaseGroup* g : heavy->collocated) {
    if (g->degree == 2 && g->speedup) {
      f.evidence.push_back(
          fmt::format("{}: {} one job alone", label(*g), times(g->speedup->median)));
    }
  }
  const double heavy_sm = heavy->baseline->sm_active_pct->median;
  const double heavy_best = heavy->best->speedup->median;
  f.evidence.push_back(fmt::format(
      "the busiest workload alone is {} at {:.0f}% SM activity; its best collocated speed-up is "
      "{} ({})",
      workload_label(*heavy->baseline), heavy_sm, times(heavy_best), label(*heavy->best)));
  if (light && light != heavy) {
    f.evidence.push_back(fmt::format(
        "for comparison, {} at {} SM activity alone gains {}", workload_label(*light->baseline),
        pct(light->baseline->sm_active_pct), times(light->best->speedup->median)));
  }
  if (heavy_sm < kSaturatedSmPct) {
    f.evidence.push_back(fmt::format(
        "no workload keeps the GPU at >= {:.0f}% SM activity on its own, so saturation was not "
        "reached",
        kSaturatedSmPct));
    return f;
  }
  const bool less_than_light =
      !light || light == heavy || heavy_best < light->best->speedup->median;
  f.evidence.push_back(fmt::format(
      "the guideline holds when that gain is <= {:.2f}x, partly when below {:.1f}x, and below "
      "the lightest workload's",
      kLittleGainSpeedup, kHelpsSpeedup));
  if (heavy_best <= kLittleGainSpeedup && less_than_light) {
    f.verdict = Verdict::kSupported;
  } else if (heavy_best < kHelpsSpeedup && less_than_light) {
    f.verdict = Verdict::kPartlySupported;
  } else {
    f.verdict = Verdict::kNotSupported;
  }
  return f;
}

GuidelineFinding guideline_memory(const ExperimentMetrics& m, const std::vector<Workload>& ws) {
  GuidelineFinding f;
  f.number = 3;
  f.guideline =
      "The memory of collocated jobs is about the sum of their memory alone, and cannot exceed "
      "the GPU's memory.";
  int compared = 0;
  int within = 0;
  double worst = 0;
  for (const Workload& w : ws) {
    if (!w.baseline->peak_memory_bytes) continue;
    const double alone = w.baseline->peak_memory_bytes->median;
    for (const CaseGroup* g : w.collocated) {
      if (!g->peak_memory_bytes || alone <= 0) continue;
      const double predicted = alone * g->degree;
      const double ratio = g->peak_memory_bytes->median / predicted;
      ++compared;
      if (std::abs(ratio - 1.0) <= kMemorySumTolerance) ++within;
      worst = std::max(worst, std::abs(ratio - 1.0));
      f.evidence.push_back(
          fmt::format("{}: peak {} against {} x {} alone = {} ({:+.0f}%)", label(*g),
                      format_bytes(static_cast<uint64_t>(g->peak_memory_bytes->median)), g->degree,
                      format_bytes(static_cast<uint64_t>(alone)),
                      format_bytes(static_cast<uint64_t>(predicted)), (ratio - 1.0) * 100.0));
    }
  }
  for (const CaseGroup& g : m.groups) {
    if (g.status == "does_not_fit") {
      f.evidence.push_back(fmt::format("{}: does not fit{}", label(g),
                                       g.reason.empty() ? "" : " (" + g.reason + ")"));
    } else if (g.status == "failed" && g.reason.find("memory") != std::string::npos) {
      f.evidence.push_back(fmt::format("{}: failed: {}", label(g), g.reason));
    }
  }
  if (m.memory_total_bytes) {
    f.evidence.push_back(fmt::format("GPU memory: {}", format_bytes(*m.memory_total_bytes)));
  }
  if (compared == 0) {
    f.evidence.push_back("needs peak memory of a job alone and of 2+ jobs of the same workload");
    return f;
  }
  f.evidence.push_back(fmt::format(
      "{} of {} collocated configurations within {:.0f}% of the sum (largest difference {:.0f}%)",
      within, compared, kMemorySumTolerance * 100, worst * 100));
  f.verdict = within == compared       ? Verdict::kSupported
              : within * 2 >= compared ? Verdict::kPartlySupported
                                       : Verdict::kNotSupported;
  return f;
}

GuidelineFinding guideline_mps(const ExperimentMetrics& m) {
  GuidelineFinding f;
  f.number = 4;
  f.guideline =
      "MPS performs best across the board thanks to its flexible sharing of the GPU, but needs "
      "more interconnect (PCIe) bandwidth.";
  int comparisons = 0;
  int wins = 0;
  int pcie_compared = 0;
  int pcie_higher = 0;
  for (const CaseGroup& mps : m.groups) {
    if (mps.mechanism != "mps" || mps.status != "ok" || mps.degree < 2 ||
        !mps.steady_throughput_per_s) {
      continue;
    }
    const CaseGroup* best_other = nullptr;
    const CaseGroup* naive = nullptr;
    for (const CaseGroup& g : m.groups) {
      if (&g == &mps || g.workload != mps.workload || g.models != mps.models ||
          g.degree != mps.degree || g.status != "ok" || g.mechanism == "exclusive" ||
          !g.steady_throughput_per_s) {
        continue;
      }
      if (!best_other ||
          g.steady_throughput_per_s->median > best_other->steady_throughput_per_s->median) {
        best_other = &g;
      }
      if (g.mechanism == "naive") naive = &g;
    }
    if (!best_other) continue;
    ++comparisons;
    const double ratio =
        mps.steady_throughput_per_s->median / best_other->steady_throughput_per_s->median;
    if (ratio >= 1.0 - kMpsWinTolerance) ++wins;
    std::string line = fmt::format("{} {}, {} jobs: MPS throughput {} that of {}", mps.workload,
                                   mps.models, mps.degree, times(ratio), best_other->mechanism);
    if (naive && naive->pcie_rx_mib_per_s && mps.pcie_rx_mib_per_s &&
        naive->pcie_rx_mib_per_s->median > 0) {
      ++pcie_compared;
      const double pcie = mps.pcie_rx_mib_per_s->median / naive->pcie_rx_mib_per_s->median;
      if (pcie > 1.0) ++pcie_higher;
      line +=
          fmt::format("; PCIe receive {:.0f} MiB/s against naive {:.0f} MiB/s ({})",
                      mps.pcie_rx_mib_per_s->median, naive->pcie_rx_mib_per_s->median, times(pcie));
    }
    f.evidence.push_back(line);
  }
  if (comparisons == 0) {
    f.evidence.push_back("needs MPS and another mechanism run with the same 2+ jobs");
    return f;
  }
  f.evidence.push_back(fmt::format("MPS best (within {:.0f}%) in {} of {} comparisons",
                                   kMpsWinTolerance * 100, wins, comparisons));
  f.evidence.push_back(
      pcie_compared == 0
          ? std::string("no PCIe readings for both MPS and naive at the same configuration")
          : fmt::format("MPS received more over PCIe than naive in {} of {}", pcie_higher,
                        pcie_compared));
  const bool performs = wins == comparisons;
  const bool bandwidth = pcie_compared > 0 && pcie_higher == pcie_compared;
  if (performs && bandwidth) {
    f.verdict = Verdict::kSupported;
  } else if (performs || wins * 2 >= comparisons) {
    f.verdict = Verdict::kPartlySupported;
  } else {
    f.verdict = Verdict::kNotSupported;
  }
  return f;
}

GuidelineFinding guideline_mig(const ExperimentMetrics& m) {
  GuidelineFinding f;
  f.number = 5;
  f.guideline =
      "MIG suits collocation that needs strict separation; it is slower than MPS but can be the "
      "most energy-efficient when its instances fit the workload.";
  int slower = 0;
  int compared = 0;
  int energy_compared = 0;
  int energy_lowest = 0;
  int mig_cases = 0;
  for (const CaseGroup& mig : m.groups) {
    if (mig.mechanism != "mig") continue;
    ++mig_cases;
    if (mig.status != "ok") {
      f.evidence.push_back(fmt::format("{}: {}{}", label(mig), mig.status,
                                       mig.reason.empty() ? "" : " (" + mig.reason + ")"));
      continue;
    }
    for (const CaseGroup& g : m.groups) {
      if (g.workload != mig.workload || g.models != mig.models || g.degree != mig.degree ||
          g.status != "ok") {
        continue;
      }
      if (g.mechanism == "mps" && g.steady_throughput_per_s && mig.steady_throughput_per_s) {
        ++compared;
        const double ratio =
            mig.steady_throughput_per_s->median / g.steady_throughput_per_s->median;
        if (ratio < 1.0) ++slower;
        f.evidence.push_back(
            fmt::format("{}: throughput {} that of MPS", label(mig), times(ratio)));
      }
    }
    if (mig.energy_per_epoch_j) {
      bool lowest = true;
      bool any_other = false;
      for (const CaseGroup& g : m.groups) {
        if (&g == &mig || g.workload != mig.workload || g.models != mig.models ||
            g.degree != mig.degree || g.status != "ok" || !g.energy_per_epoch_j) {
          continue;
        }
        any_other = true;
        if (g.energy_per_epoch_j->median < mig.energy_per_epoch_j->median) lowest = false;
      }
      if (any_other) {
        ++energy_compared;
        energy_lowest += lowest ? 1 : 0;
        f.evidence.push_back(fmt::format(
            "{}: {:.0f} J per epoch, {}", label(mig), mig.energy_per_epoch_j->median,
            lowest ? "the lowest of the mechanisms" : "not the lowest of the mechanisms"));
      }
    }
  }
  if (mig_cases == 0) f.evidence.push_back("this experiment has no MIG cases");
  f.evidence.push_back("strict separation itself is a property of MIG, not measured here");
  if (compared == 0 && energy_compared == 0) return f;
  const bool slower_all = compared > 0 && slower == compared;
  const bool energy_all = energy_compared > 0 && energy_lowest == energy_compared;
  if (slower_all && energy_all) {
    f.verdict = Verdict::kSupported;
  } else if (slower_all || energy_lowest > 0) {
    f.verdict = Verdict::kPartlySupported;
  } else {
    f.verdict = Verdict::kNotSupported;
  }
  return f;
}

}  // namespace

std::string to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kSupported:
      return "supported";
    case Verdict::kPartlySupported:
      return "partly supported";
    case Verdict::kNotSupported:
      return "not supported";
    case Verdict::kNotEnoughData:
      return "not enough data";
  }
  return "not enough data";
}

std::vector<GuidelineFinding> evaluate_guidelines(const ExperimentMetrics& metrics) {
  const std::vector<Workload> workloads = uniform_workloads(metrics);
  return {guideline_fits(metrics, workloads), guideline_saturation(workloads),
          guideline_memory(metrics, workloads), guideline_mps(metrics), guideline_mig(metrics)};
}

std::string format_guidelines(const std::vector<GuidelineFinding>& findings) {
  std::string out;
  for (const GuidelineFinding& f : findings) {
    out += fmt::format("Guideline {}: {}\n  on this GPU: {}\n", f.number, f.guideline,
                       to_string(f.verdict));
    for (const std::string& line : f.evidence) out += "  - " + line + "\n";
    out += "\n";
  }
  return out;
}

}  // namespace colo
