#include "report/case_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <tuple>
#include <utility>

#include "analysis/energy.h"
#include "analysis/intervals.h"
#include "analysis/stored.h"
#include "analysis/together.h"

namespace colo {
namespace {

std::string model_of(const std::string& job_name) {
  const size_t hash = job_name.rfind('#');
  if (hash == std::string::npos || hash == 0) return job_name;
  const std::string suffix = job_name.substr(hash + 1);
  if (suffix.empty() || !std::all_of(suffix.begin(), suffix.end(),
                                     [](unsigned char c) { return std::isdigit(c) != 0; }))
    return job_name;
  return job_name.substr(0, hash);
}

std::optional<double> second_epoch_s(const std::vector<EpochEnd>& ends) {
  const bool numbered =
      std::all_of(ends.begin(), ends.end(), [](const EpochEnd& e) { return e.epoch.has_value(); });
  std::optional<UnixMillis> first;
  std::optional<UnixMillis> second;
  if (numbered) {
    for (const EpochEnd& e : ends) {
      if (*e.epoch == 1 && !first) first = e.time_ms;
      if (*e.epoch == 2 && !second) second = e.time_ms;
    }
  } else if (ends.size() >= 2) {
    first = ends[0].time_ms;
    second = ends[1].time_ms;
  }
  if (!first || !second || *second < *first) return std::nullopt;
  return static_cast<double>(*second - *first) / 1000.0;
}

template <class T>
std::optional<double> mean_of(const std::vector<DeviceSample>& samples,
                              const std::vector<Interval>& steady,
                              std::optional<T> DeviceSample::*field) {
  double sum = 0;
  int count = 0;
  for (const DeviceSample& s : samples) {
    if (!(s.*field) || !inside(steady, s.time_ms)) continue;
    sum += static_cast<double>(*(s.*field));
    ++count;
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

double seconds_between(UnixMillis from, UnixMillis to) {
  return static_cast<double>(to - from) / 1000.0;
}

const CaseGroup* find_group(const std::vector<CaseGroup>& groups, const std::string& workload,
                            const std::string& models, const std::string& mechanism, int degree) {
  for (const CaseGroup& g : groups) {
    if (g.workload == workload && g.models == models && g.mechanism == mechanism &&
        g.degree == degree && g.status == "ok") {
      return &g;
    }
  }
  return nullptr;
}

std::optional<Spread> spread_over(
    const ExperimentMetrics& metrics, const CaseGroup& group,
    const std::function<std::optional<double>(const CaseMetrics&)>& value) {
  std::vector<double> values;
  for (size_t index : group.cases) {
    const CaseMetrics& c = metrics.cases[index];
    if (c.row.status != "ok" || !c.run) continue;
    if (std::optional<double> v = value(c)) values.push_back(*v);
  }
  return spread_of(std::move(values));
}

template <class T>
std::optional<double> as_double(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  return static_cast<double>(*value);
}

}  // namespace

std::optional<Spread> spread_of(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  Spread spread;
  spread.count = static_cast<int>(values.size());
  spread.min = values.front();
  spread.max = values.back();
  const size_t mid = values.size() / 2;
  spread.median = values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
  return spread;
}

int workload_rank(const std::string& workload) {
  static const std::vector<std::string> kOrder = {"small", "medium", "large", "mixed", "recsys"};
  auto it = std::find(kOrder.begin(), kOrder.end(), workload);
  return it == kOrder.end() ? static_cast<int>(kOrder.size())
                            : static_cast<int>(it - kOrder.begin());
}

int mechanism_rank(const std::string& mechanism) {
  static const std::vector<std::string> kOrder = {"exclusive", "naive", "mps", "mig"};
  auto it = std::find(kOrder.begin(), kOrder.end(), mechanism);
  return it == kOrder.end() ? static_cast<int>(kOrder.size())
                            : static_cast<int>(it - kOrder.begin());
}

RunMetrics run_metrics_from(const RunSummary& summary, const std::vector<DeviceSample>& samples) {
  RunMetrics m;
  m.run = summary.run;
  const UnixMillis origin = summary.run.started_ms;
  for (const JobSummary& job : summary.jobs) {
    if (job.device) {
      m.device = *job.device;
      break;
    }
  }

  std::vector<Interval> steady_parts;
  std::vector<double> second_epochs;
  uint64_t summed_peaks = 0;
  bool any_peak = false;
  for (const JobSummary& job : summary.jobs) {
    JobMetrics j;
    j.job_id = job.id;
    j.name = job.name;
    j.model = model_of(job.name);
    j.state = to_string(job.state);
    if (job.started_ms) j.start_s = seconds_between(origin, *job.started_ms);
    if (job.ended_ms) j.end_s = seconds_between(origin, *job.ended_ms);
    if (job.duration_ms) j.duration_s = static_cast<double>(*job.duration_ms) / 1000.0;
    j.epochs = job.epochs;
    j.second_epoch_s = second_epoch_s(job.epoch_ends);
    j.steady_throughput_per_s = job.steady_throughput_per_s;
    j.peak_memory_bytes = job.peak_memory_bytes;
    j.device = job.device;
    j.epoch_ends = job.epoch_ends;
    j.params = job.params;
    j.metrics = job.metrics;
    j.started_ms = job.started_ms;
    if (j.second_epoch_s) second_epochs.push_back(*j.second_epoch_s);
    if (job.peak_memory_bytes) {
      summed_peaks += *job.peak_memory_bytes;
      any_peak = true;
    }
    if (job.steady_start_ms && job.steady_end_ms) {
      steady_parts.emplace_back(*job.steady_start_ms, *job.steady_end_ms);
    }
    m.jobs.push_back(std::move(j));
  }
  if (any_peak) m.summed_job_peak_memory_bytes = summed_peaks;
  if (!second_epochs.empty()) {
    double sum = 0;
    for (double s : second_epochs) sum += s;
    m.mean_second_epoch_s = sum / static_cast<double>(second_epochs.size());
    m.max_second_epoch_s = *std::max_element(second_epochs.begin(), second_epochs.end());
  }

  if (summary.makespan_ms) m.makespan_s = static_cast<double>(*summary.makespan_ms) / 1000.0;
  m.throughput_per_s = summary.throughput_per_s;
  m.steady_throughput_per_s = summary.steady_throughput_per_s;
  m.baseline_run_id = summary.baseline_run_id;
  m.steady_speedup_vs_exclusive = summary.steady_speedup_vs_exclusive;
  m.steady_note = summary.steady_note;

  // Steady: W when the jobs ran together long enough, else their steady epochs.
  std::vector<Interval> steady;
  if (summary.together && summary.steady_throughput_per_s) {
    steady = {{summary.together->start_ms, summary.together->end_ms}};
    m.together = true;
  } else {
    steady = union_of(steady_parts);
  }
  if (!steady.empty()) {
    m.steady_start_s = seconds_between(origin, steady.front().first);
    m.steady_end_s = seconds_between(origin, steady.back().second);
  }
  for (const JobMetrics& j : m.jobs) {
    for (const Interval& i : steady) {
      m.steady_epochs += progress_between(j.epoch_ends, i.first, i.second, false);
    }
  }

  std::vector<DeviceSample> mine;
  for (const DeviceSample& s : samples) {
    if (s.device == m.device) mine.push_back(s);
  }
  std::sort(mine.begin(), mine.end(),
            [](const DeviceSample& a, const DeviceSample& b) { return a.time_ms < b.time_ms; });
  m.mean_sm_active_pct = mean_of(mine, steady, &DeviceSample::sm_active_pct);
  m.mean_gpu_util_pct = mean_of(mine, steady, &DeviceSample::gpu_util_pct);
  m.mean_power_w = mean_of(mine, steady, &DeviceSample::power_w);
  m.mean_pcie_rx_mib_per_s = mean_of(mine, steady, &DeviceSample::pcie_rx_mib_per_s);
  m.steady_energy_j = energy_within_j(mine, steady);
  if (m.steady_energy_j && m.steady_epochs > 0) {
    m.energy_per_epoch_j = *m.steady_energy_j / m.steady_epochs;
  }
  for (const DeviceSample& s : mine) {
    if (s.memory_used_bytes) {
      m.peak_memory_bytes = std::max(m.peak_memory_bytes.value_or(0), *s.memory_used_bytes);
    }
    if (s.memory_total_bytes) m.memory_total_bytes = s.memory_total_bytes;
    SeriesPoint p;
    p.t_s = seconds_between(origin, s.time_ms);
    p.sm_active_pct = s.sm_active_pct;
    p.gpu_util_pct = s.gpu_util_pct;
    p.memory_used_bytes = s.memory_used_bytes;
    p.power_w = s.power_w;
    p.pcie_rx_mib_per_s = s.pcie_rx_mib_per_s;
    m.series.push_back(p);
  }
  return m;
}

Result<RunMetrics> compute_run_metrics(RunStore& store, int64_t run_id) {
  Result<RunRecord> record = store.run_record(run_id);
  if (!record) return record.error();
  Result<RunSummary> summary = analyse_record(store, *record);
  if (!summary) return summary.error();
  return run_metrics_from(*summary, record->device_samples);
}

std::map<std::string, SoloRate> solo_rates_by_model(const std::vector<CaseMetrics>& cases,
                                                    std::optional<int64_t> experiment_id) {
  struct Seen {
    std::vector<double> samples_per_s;
    std::vector<double> epoch_ms;
    std::vector<std::string> cases;
  };
  // [model][exclusive?]
  std::map<std::string, std::map<bool, Seen>> seen;
  for (const CaseMetrics& c : cases) {
    if (c.row.status != "ok" || !c.run) continue;
    if (experiment_id && c.row.experiment_id != *experiment_id) continue;
    const bool exclusive = c.row.mechanism == "exclusive";
    if (!exclusive && c.row.degree != 1) continue;
    for (const JobMetrics& j : c.run->jobs) {
      std::optional<SteadyEpochs> steady = steady_epochs(j.epoch_ends);
      if (!steady) continue;
      Seen& s = seen[j.model][exclusive];
      if (steady->samples_per_s) s.samples_per_s.push_back(*steady->samples_per_s);
      s.epoch_ms.push_back(steady->epoch_ms);
      if (std::find(s.cases.begin(), s.cases.end(), c.row.name) == s.cases.end())
        s.cases.push_back(c.row.name);
    }
  }
  std::map<std::string, SoloRate> out;
  for (auto& [model, by_kind] : seen) {
    Seen& s = by_kind.contains(true) ? by_kind[true] : by_kind[false];
    SoloRate rate;
    if (std::optional<Spread> v = spread_of(s.samples_per_s)) rate.samples_per_s = v->median;
    if (std::optional<Spread> v = spread_of(s.epoch_ms)) rate.epoch_ms = v->median;
    rate.source = s.cases.size() == 1
                      ? s.cases.front()
                      : fmt::format("{} and {} more case{}", s.cases.front(), s.cases.size() - 1,
                                    s.cases.size() == 2 ? "" : "s");
    out[model] = rate;
  }
  return out;
}

ExperimentMetrics experiment_metrics_from(ExperimentRow experiment,
                                          std::vector<CaseMetrics> cases) {
  return experiment_metrics_from(std::vector<ExperimentRow>{std::move(experiment)},
                                 std::move(cases));
}

ExperimentMetrics experiment_metrics_from(std::vector<ExperimentRow> experiments,
                                          std::vector<CaseMetrics> cases) {
  ExperimentMetrics metrics;
  metrics.experiments = std::move(experiments);
  if (!metrics.experiments.empty()) metrics.experiment = metrics.experiments.front();
  for (size_t i = 1; i < metrics.experiments.size(); ++i) {
    const ExperimentRow& e = metrics.experiments[i];
    metrics.experiment.suite += " + " + e.suite;
    metrics.experiment.simulated = metrics.experiment.simulated || e.simulated;
    if (e.gpu_name != metrics.experiment.gpu_name) metrics.experiment.gpu_name = "several GPUs";
  }
  metrics.cases = std::move(cases);

  // Group by configuration, in first-appearance order, then sort.
  std::map<std::tuple<std::string, std::string, std::string, int>, size_t> index_of;
  for (size_t i = 0; i < metrics.cases.size(); ++i) {
    const CaseRow& row = metrics.cases[i].row;
    auto key = std::make_tuple(row.workload, row.models, row.mechanism, row.degree);
    auto it = index_of.find(key);
    if (it == index_of.end()) {
      CaseGroup group;
      group.workload = row.workload;
      group.models = row.models;
      group.mechanism = row.mechanism;
      group.degree = row.degree;
      it = index_of.emplace(key, metrics.groups.size()).first;
      metrics.groups.push_back(std::move(group));
    }
    metrics.groups[it->second].cases.push_back(i);
    if (metrics.cases[i].run && metrics.cases[i].run->memory_total_bytes) {
      metrics.memory_total_bytes = metrics.cases[i].run->memory_total_bytes;
    }
  }
  std::map<std::string, size_t> first_seen;
  for (const CaseGroup& g : metrics.groups) first_seen.emplace(g.workload, first_seen.size());
  std::stable_sort(metrics.groups.begin(), metrics.groups.end(),
                   [&](const CaseGroup& a, const CaseGroup& b) {
                     auto key = [&](const CaseGroup& g) {
                       return std::make_tuple(workload_rank(g.workload), first_seen[g.workload],
                                              mechanism_rank(g.mechanism), g.mechanism, g.degree);
                     };
                     return key(a) < key(b);
                   });

  for (CaseGroup& group : metrics.groups) {
    std::sort(group.cases.begin(), group.cases.end(), [&](size_t a, size_t b) {
      return metrics.cases[a].row.repetition < metrics.cases[b].row.repetition;
    });
    for (size_t index : group.cases) {
      const CaseMetrics& c = metrics.cases[index];
      if (c.row.status == "ok" && c.run) {
        ++group.ok_repetitions;
        if (!group.representative) group.representative = index;
      }
    }
    if (group.ok_repetitions > 0) {
      group.status = "ok";
    } else if (!group.cases.empty()) {
      const CaseRow& first = metrics.cases[group.cases.front()].row;
      group.status = first.status == "ok" ? "failed" : first.status;  // ok without a run
      group.reason = first.status == "ok" ? "its run is missing from the store" : first.reason;
    }
  }

  // Baselines: the degree-1 group of the same workload and models.
  for (CaseGroup& group : metrics.groups) {
    const CaseGroup* base = nullptr;
    for (const std::string& mechanism :
         {std::string("exclusive"), std::string("naive"), group.mechanism}) {
      base = find_group(metrics.groups, group.workload, group.models, mechanism, 1);
      if (base) break;
    }
    if (base) group.baseline = static_cast<size_t>(base - metrics.groups.data());
  }

  for (CaseGroup& group : metrics.groups) {
    group.second_epoch_s = spread_over(
        metrics, group, [](const CaseMetrics& c) { return c.run->mean_second_epoch_s; });
    group.steady_throughput_per_s = spread_over(
        metrics, group, [](const CaseMetrics& c) { return c.run->steady_throughput_per_s; });
  }
  // A case is compared with the solo rates of its own experiment (the same
  // session and machine), and with the other experiments' only for models its
  // experiment never ran alone.
  const std::map<std::string, SoloRate> pooled = solo_rates_by_model(metrics.cases);
  std::map<int64_t, std::map<std::string, SoloRate>> own;
  for (const CaseMetrics& c : metrics.cases) {
    if (!own.contains(c.row.experiment_id))
      own[c.row.experiment_id] = solo_rates_by_model(metrics.cases, c.row.experiment_id);
  }
  for (CaseMetrics& c : metrics.cases) {
    if (c.row.status != "ok" || !c.run) continue;
    const std::map<std::string, SoloRate>& same = own[c.row.experiment_id];
    std::vector<TogetherJob> jobs;
    for (const JobMetrics& j : c.run->jobs) {
      if (!j.start_s) continue;
      std::optional<SoloRate> solo;
      if (auto it = same.find(j.model); it != same.end()) {
        solo = it->second;
      } else if (auto any = pooled.find(j.model); any != pooled.end()) {
        solo = any->second;
      }
      jobs.push_back({j.name, &j.epoch_ends, j.device, solo});
    }
    Together together = measure_together(jobs);
    c.speedup = together.speedup;
    c.speedup_note = together.why_not;
  }
  for (CaseGroup& group : metrics.groups) {
    group.speedup = spread_over(metrics, group, [](const CaseMetrics& c) { return c.speedup; });
    group.makespan_s =
        spread_over(metrics, group, [](const CaseMetrics& c) { return c.run->makespan_s; });
    group.sm_active_pct =
        spread_over(metrics, group, [](const CaseMetrics& c) { return c.run->mean_sm_active_pct; });
    group.gpu_util_pct =
        spread_over(metrics, group, [](const CaseMetrics& c) { return c.run->mean_gpu_util_pct; });
    group.peak_memory_bytes = spread_over(
        metrics, group, [](const CaseMetrics& c) { return as_double(c.run->peak_memory_bytes); });
    group.summed_job_peak_memory_bytes = spread_over(metrics, group, [](const CaseMetrics& c) {
      return as_double(c.run->summed_job_peak_memory_bytes);
    });
    group.mean_power_w =
        spread_over(metrics, group, [](const CaseMetrics& c) { return c.run->mean_power_w; });
    group.pcie_rx_mib_per_s = spread_over(
        metrics, group, [](const CaseMetrics& c) { return c.run->mean_pcie_rx_mib_per_s; });
    group.energy_per_epoch_j =
        spread_over(metrics, group, [](const CaseMetrics& c) { return c.run->energy_per_epoch_j; });
  }
  return metrics;
}

Result<ExperimentMetrics> compute_experiment_metrics(RunStore& store, int64_t experiment_id) {
  return compute_experiments_metrics(store, {experiment_id});
}

Result<ExperimentMetrics> compute_experiments_metrics(RunStore& store,
                                                      const std::vector<int64_t>& experiment_ids) {
  std::vector<ExperimentRow> experiments;
  std::vector<CaseMetrics> cases;
  for (int64_t experiment_id : experiment_ids) {
    Result<ExperimentRow> experiment = store.experiment(experiment_id);
    if (!experiment) return experiment.error();
    Result<std::vector<CaseRow>> rows = store.experiment_cases(experiment->id);
    if (!rows) return rows.error();
    for (CaseRow& row : *rows) {
      CaseMetrics c;
      c.row = std::move(row);
      if (c.row.run_id) {
        Result<RunRecord> record = store.run_record(*c.row.run_id);
        if (!record) {
          return record.error().with_context(
              fmt::format("experiment #{} case {}", experiment->id, c.row.name));
        }
        c.run = run_metrics_from(summarize(*record), record->device_samples);
      }
      cases.push_back(std::move(c));
    }
    experiments.push_back(std::move(*experiment));
  }
  return experiment_metrics_from(std::move(experiments), std::move(cases));
}

}  // namespace colo
