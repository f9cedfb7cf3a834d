#include "report/experiment_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "common/units.h"
#include "report/echarts.h"
#include "report/guidelines.h"
#include "report/table.h"

namespace colo {
namespace {

std::string jobs_label(int degree) {
  return fmt::format("{} job{}", degree, degree == 1 ? "" : "s");
}

std::string status_label(const std::string& status) {
  if (status == "does_not_fit") return "does not fit";
  if (status == "not_run") return "not run";
  return status;
}

std::string experiment_subtitle(const ExperimentMetrics& m) {
  std::string gpu = m.experiment.gpu_name.empty() ? "GPU" : m.experiment.gpu_name;
  std::string ids;
  for (const ExperimentRow& e : m.experiments)
    ids += (ids.empty() ? "#" : ", #") + std::to_string(e.id);
  if (ids.empty()) ids = "#" + std::to_string(m.experiment.id);
  std::string out = fmt::format("{} · experiment{} {} ({})", gpu,
                                m.experiments.size() > 1 ? "s" : "", ids, m.experiment.suite);
  if (m.experiment.simulated) out = "SIMULATED · " + out;
  return out;
}

// Spread as a cell value: the median, or nothing.
std::optional<double> median_of(const std::optional<Spread>& s) {
  return s ? std::optional<double>(s->median) : std::nullopt;
}

// The groups of one workload, and the categories (degrees) and series
// (mechanisms) of its bar charts.
struct WorkloadView {
  std::string workload;
  std::string models;
  std::vector<const CaseGroup*> groups;
  std::vector<int> degrees;
  std::vector<std::string> mechanisms;
};

std::vector<WorkloadView> uniform_views(const ExperimentMetrics& m) {
  std::vector<WorkloadView> views;
  for (const CaseGroup& g : m.groups) {
    if (g.workload == "mixed" || g.workload == "recsys") continue;
    auto it = std::find_if(views.begin(), views.end(), [&](const WorkloadView& v) {
      return v.workload == g.workload && v.models == g.models;
    });
    if (it == views.end()) {
      views.push_back(WorkloadView{g.workload, g.models, {}, {}, {}});
      it = views.end() - 1;
    }
    it->groups.push_back(&g);
    if (std::find(it->degrees.begin(), it->degrees.end(), g.degree) == it->degrees.end()) {
      it->degrees.push_back(g.degree);
    }
    if (std::find(it->mechanisms.begin(), it->mechanisms.end(), g.mechanism) ==
        it->mechanisms.end()) {
      it->mechanisms.push_back(g.mechanism);
    }
  }
  for (WorkloadView& v : views) {
    std::sort(v.degrees.begin(), v.degrees.end());
    std::stable_sort(v.mechanisms.begin(), v.mechanisms.end(),
                     [](const std::string& a, const std::string& b) {
                       return mechanism_rank(a) < mechanism_rank(b);
                     });
  }
  return views;
}

const CaseGroup* group_at(const WorkloadView& v, const std::string& mechanism, int degree) {
  for (const CaseGroup* g : v.groups) {
    if (g->mechanism == mechanism && g->degree == degree) return g;
  }
  return nullptr;
}

using SpreadField = std::optional<Spread> CaseGroup::*;

// One bar chart over a workload's degrees and mechanisms, and its table:
// every repetition's value (from `per_case`) plus the group's median, min, max.
Figure workload_bar_figure(const ExperimentMetrics& m, const WorkloadView& v, SpreadField field,
                           double scale, const std::string& name, const std::string& paper_ref,
                           const std::string& title, const std::string& caption,
                           const std::string& y_name, const std::string& unit,
                           const std::function<std::optional<double>(const CaseMetrics&)>& per_case,
                           std::optional<double> y_max = std::nullopt) {
  Figure f;
  f.name = name;
  f.paper_ref = paper_ref;
  f.title = title;
  f.caption = caption;
  std::vector<std::string> categories;
  for (int d : v.degrees) categories.push_back(jobs_label(d));
  std::vector<BarSeries> series;
  f.data.name = name;
  f.data.header = {"workload",       "models",         "mechanism",   "jobs",       "status",
                   "repetitions_ok", "median_" + unit, "min_" + unit, "max_" + unit};
  Table per_repetition;
  for (const std::string& mechanism : v.mechanisms) {
    BarSeries s{mechanism, mechanism_color(mechanism), {}};
    for (int d : v.degrees) {
      const CaseGroup* g = group_at(v, mechanism, d);
      BarCell cell;
      if (g && g->status == "ok" && g->*field) {
        Spread spread = *(g->*field);
        spread.median *= scale;
        spread.min *= scale;
        spread.max *= scale;
        cell.value = spread.median;
        cell.spread = spread;
      } else if (g && g->status != "ok") {
        cell.gap = status_label(g->status);
      } else if (g) {
        cell.gap = "no data";
      }
      s.cells.push_back(cell);
      if (!g) continue;
      f.data.rows.push_back({g->workload, g->models, g->mechanism, std::to_string(g->degree),
                             g->status, std::to_string(g->ok_repetitions),
                             cell.spread ? number_cell(cell.spread->median) : "",
                             cell.spread ? number_cell(cell.spread->min) : "",
                             cell.spread ? number_cell(cell.spread->max) : ""});
    }
    series.push_back(std::move(s));
  }
  // Each repetition, for readers who want the raw values.
  f.data.header.emplace_back("repetition_values_" + unit);
  size_t row = 0;
  for (const std::string& mechanism : v.mechanisms) {
    for (int d : v.degrees) {
      const CaseGroup* g = group_at(v, mechanism, d);
      if (!g) continue;
      std::string values;
      for (size_t index : g->cases) {
        const CaseMetrics& c = m.cases[index];
        if (c.row.status != "ok" || !c.run) continue;
        if (std::optional<double> value = per_case(c)) {
          values += (values.empty() ? "" : " ") + number_cell(*value * scale);
        }
      }
      f.data.rows[row++].push_back(values);
    }
  }
  int reps = 0;
  for (const CaseGroup* g : v.groups) reps = std::max(reps, g->ok_repetitions);
  std::string subtitle = experiment_subtitle(m);
  if (reps > 1) subtitle += " · bars: median of repetitions, whiskers: min to max";
  f.option = bar_option(title, subtitle, categories, "Jobs trained together on the GPU", y_name,
                        series, y_max);
  return f;
}

bool has_bar_data(const Figure& f) {
  for (const auto& row : f.data.rows) {
    if (row.size() > 6 && !row[6].empty()) return true;
  }
  return false;
}

// Time series of one metric for the representative run of each group given.
Figure over_time_figure(const ExperimentMetrics& m, const std::vector<const CaseGroup*>& groups,
                        const std::string& name, const std::string& paper_ref,
                        const std::string& title, const std::string& caption,
                        const std::string& y_name, const std::string& column,
                        const std::function<std::optional<double>(const SeriesPoint&)>& value,
                        bool from_second_epoch, std::optional<double> y_max = std::nullopt) {
  Figure f;
  f.name = name;
  f.paper_ref = paper_ref;
  f.title = title;
  f.caption = caption;
  f.data.name = name;
  f.data.header = {"mechanism", "jobs", "run_id", "t_s", column};
  std::map<std::string, int> degrees_of;  // mechanism -> how many degrees seen so far
  std::map<std::string, int> degree_count;
  for (const CaseGroup* g : groups) ++degree_count[g->mechanism];
  std::vector<LineSeries> series;
  for (const CaseGroup* g : groups) {
    if (!g->representative) continue;
    const RunMetrics& run = *m.cases[*g->representative].run;
    double from = 0;
    double to = 1e300;
    if (from_second_epoch) {
      if (!run.steady_start_s || !run.steady_end_s) continue;
      from = *run.steady_start_s;
      to = *run.steady_end_s;
    }
    const int rank = degrees_of[g->mechanism]++;
    const int count = degree_count[g->mechanism];
    // Fewer jobs: lighter shade of the mechanism's colour.
    const double light = count <= 1 ? 0.0 : 0.6 * (1.0 - static_cast<double>(rank) / (count - 1));
    LineSeries s{fmt::format("{}, {}", g->mechanism, jobs_label(g->degree)),
                 lighter(mechanism_color(g->mechanism), light),
                 {}};
    for (const SeriesPoint& p : run.series) {
      const std::optional<double> v = value(p);
      if (!v || p.t_s < from || p.t_s > to) continue;
      const double t = p.t_s - from;
      s.points.emplace_back(t, *v);
      f.data.rows.push_back({g->mechanism, std::to_string(g->degree), std::to_string(run.run.id),
                             number_cell(t), number_cell(*v)});
    }
    if (!s.points.empty()) series.push_back(std::move(s));
  }
  f.option = line_option(
      title, experiment_subtitle(m),
      from_second_epoch ? "Seconds since the second epoch began" : "Seconds since the run started",
      y_name, series, y_max);
  return f;
}

std::optional<double> memory_gib(const std::optional<uint64_t>& bytes) {
  if (!bytes) return std::nullopt;
  return static_cast<double>(*bytes) / kBytesPerGiB;
}

Section uniform_section(const ExperimentMetrics& m, const WorkloadView& v, bool first) {
  Section s;
  const std::string w = v.workload;
  s.heading =
      fmt::format("Workload {}: {} (paper Fig. 2-4{})", w, v.models, first ? ", 5, 6, 7" : ", 6");
  s.intro = fmt::format(
      "Each bar is one configuration: {} training jobs of {} run together on one GPU under one "
      "sharing mechanism. \"1 job\" is the baseline: one job alone. Measurements are taken in "
      "steady state: while all the jobs of a configuration ran together past their first epoch "
      "(warm-up), from the latest end of a first epoch to the earliest end of a last epoch.",
      w, v.models);
  const std::string sub = " (" + v.models + ")";
  s.figures.push_back(workload_bar_figure(
      m, v, &CaseGroup::second_epoch_s, 1.0, "time-per-epoch-" + w, "Fig. 2a-4a",
      "Time of the second epoch per job, " + w + sub,
      "How long one job takes for one epoch (its second; the first is warm-up), averaged over the "
      "jobs of the configuration. Collocated jobs share the GPU, so each epoch takes longer than "
      "alone; collocation pays off when N jobs take less than N times as long as one.",
      "Time per epoch (s)", "s", [](const CaseMetrics& c) { return c.run->mean_second_epoch_s; }));
  s.figures.push_back(workload_bar_figure(
      m, v, &CaseGroup::speedup, 1.0, "speedup-" + w, "",
      "Training throughput over one job alone, " + w + sub,
      "Each job's rate while all the jobs ran together (start-ups excluded) over the same model's "
      "rate alone (its exclusive case), summed over the jobs: for identical jobs, their summed "
      "samples per second over one job alone. Above 1 means collocation gets more training done "
      "per hour; the ideal for N jobs is N. A configuration whose jobs did not run together for "
      "two epochs of the slowest has no bar.",
      "Speed-up (x, one job alone = 1)", "x", [](const CaseMetrics& c) { return c.speedup; }));
  s.figures.push_back(workload_bar_figure(
      m, v, &CaseGroup::sm_active_pct, 1.0, "sm-activity-" + w, "Fig. 2b-4b",
      "Mean SM activity, " + w + sub,
      "The share of time the GPU's streaming multiprocessors had work, averaged over the steady "
      "state (NVML GPM SM activity, like dcgm's SM_ACTIVE). A job alone far below 100% leaves "
      "room for collocation; near 100% there is little to gain.",
      "SM activity (%)", "pct", [](const CaseMetrics& c) { return c.run->mean_sm_active_pct; },
      100.0));
  Figure memory = workload_bar_figure(
      m, v, &CaseGroup::peak_memory_bytes, 1.0 / kBytesPerGiB, "memory-" + w, "Fig. 2c-4c",
      "Peak GPU memory in use, " + w + sub,
      "The most memory the whole GPU had in use during the run, all jobs together. It grows "
      "with the number of jobs, roughly as the sum of the jobs alone; configurations whose sum "
      "exceeds the GPU's memory (dashed line) cannot run and are marked \"does not fit\".",
      "Memory (GiB)", "gib",
      [](const CaseMetrics& c) { return memory_gib(c.run->peak_memory_bytes); });
  if (m.memory_total_bytes) {
    // The GPU's memory as a line where it is within reach of the bars; else
    // it would flatten them, and the subtitle says it.
    const double total_gib = static_cast<double>(*m.memory_total_bytes) / kBytesPerGiB;
    double highest = 0;
    for (const CaseGroup* g : v.groups) {
      if (g->peak_memory_bytes)
        highest = std::max(highest, g->peak_memory_bytes->max / kBytesPerGiB);
    }
    if (highest >= 0.25 * total_gib) {
      mark_level(memory.option, total_gib, fmt::format("GPU memory {:.0f} GiB", total_gib));
      memory.option["yAxis"]["max"] = std::ceil(total_gib * 1.05);
    } else {
      memory.option["title"]["subtext"] = memory.option["title"]["subtext"].get<std::string>() +
                                          fmt::format(" · GPU memory {:.0f} GiB", total_gib);
    }
  }
  s.figures.push_back(std::move(memory));
  s.figures.push_back(workload_bar_figure(
      m, v, &CaseGroup::energy_per_epoch_j, 1.0, "energy-" + w, "Fig. 6",
      "GPU energy per epoch of one job, " + w + sub,
      "Energy the GPU drew in steady state divided by the epochs trained in it (all jobs), so "
      "lower is better: collocation that finishes sooner can spend less energy for the same "
      "training even at higher power.",
      "Energy per epoch (J)", "j", [](const CaseMetrics& c) { return c.run->energy_per_epoch_j; }));
  std::vector<Figure> kept;
  for (Figure& f : s.figures) {
    if (has_bar_data(f)) {
      kept.push_back(std::move(f));
    } else {
      s.intro +=
          fmt::format(" No data for \"{}\" (the measurements it needs are absent).", f.title);
    }
  }
  s.figures = std::move(kept);

  if (first) {
    std::vector<const CaseGroup*> ok;
    for (const CaseGroup* g : v.groups) {
      if (g->status == "ok" && g->mechanism != "exclusive") ok.push_back(g);
    }
    Figure pcie = over_time_figure(
        m, ok, "pcie-rx-over-time-" + w, "Fig. 5",
        "PCIe traffic into the GPU over time, " + w + sub,
        "Bytes per second the GPU received over PCIe (from the CPU) during steady state, one line "
        "per configuration, darker for more jobs. The paper finds MPS needs more of this "
        "bandwidth than naive sharing as more jobs are collocated.",
        "PCIe receive (MiB/s)", "pcie_rx_mib_per_s",
        [](const SeriesPoint& p) { return p.pcie_rx_mib_per_s; }, true);
    Figure power = over_time_figure(
        m, ok, "power-over-time-" + w, "Fig. 7", "GPU power over time, " + w + sub,
        "The GPU's power draw during steady state, one line per configuration. Configurations "
        "that use the GPU well draw more power but finish sooner; compare with the energy per "
        "epoch above.",
        "Power (W)", "power_w", [](const SeriesPoint& p) { return p.power_w; }, true);
    for (Figure* f : {&pcie, &power}) {
      if (!f->data.rows.empty()) s.figures.push_back(std::move(*f));
    }
  }
  return s;
}

Section mixed_section(const ExperimentMetrics& m) {
  Section s;
  s.heading = "Mixed workloads (paper Fig. 8, 9)";
  s.intro =
      "Jobs of different sizes trained together (S, M, L: small, medium, large models). "
      "\"exclusive\" runs the same jobs one after another (serial), the baseline.";
  std::vector<std::string> mixes;
  std::vector<std::string> mechanisms;
  for (const CaseGroup& g : m.groups) {
    if (g.workload != "mixed") continue;
    if (std::find(mixes.begin(), mixes.end(), g.models) == mixes.end()) mixes.push_back(g.models);
    if (std::find(mechanisms.begin(), mechanisms.end(), g.mechanism) == mechanisms.end()) {
      mechanisms.push_back(g.mechanism);
    }
  }
  std::stable_sort(mechanisms.begin(), mechanisms.end(), [](const auto& a, const auto& b) {
    return mechanism_rank(a) < mechanism_rank(b);
  });
  Figure f;
  f.name = "makespan-mixed";
  f.paper_ref = "Fig. 8";
  f.title = "Time to train mixed workloads, serial and collocated";
  f.caption =
      "Total time from the first job's start to the last job's end for each mix. The grey bar "
      "trains the jobs one after another; shorter bars mean collocation finished the whole mix "
      "sooner.";
  f.data.name = f.name;
  f.data.header = {"models",         "mechanism", "jobs",  "status",
                   "repetitions_ok", "median_s",  "min_s", "max_s"};
  std::vector<BarSeries> series;
  for (const std::string& mechanism : mechanisms) {
    BarSeries bar{mechanism == "exclusive" ? "exclusive (serial)" : mechanism,
                  mechanism_color(mechanism),
                  {}};
    for (const std::string& mix : mixes) {
      const CaseGroup* g = nullptr;
      for (const CaseGroup& candidate : m.groups) {
        if (candidate.workload == "mixed" && candidate.models == mix &&
            candidate.mechanism == mechanism) {
          g = &candidate;
        }
      }
      BarCell cell;
      if (g && g->status == "ok" && g->makespan_s) {
        cell.value = g->makespan_s->median;
        cell.spread = g->makespan_s;
      } else if (g) {
        cell.gap = status_label(g->status == "ok" ? "no data" : g->status);
      }
      bar.cells.push_back(cell);
      if (g) {
        f.data.rows.push_back({mix, mechanism, std::to_string(g->degree), g->status,
                               std::to_string(g->ok_repetitions),
                               g->makespan_s ? number_cell(g->makespan_s->median) : "",
                               g->makespan_s ? number_cell(g->makespan_s->min) : "",
                               g->makespan_s ? number_cell(g->makespan_s->max) : ""});
      }
    }
    series.push_back(std::move(bar));
  }
  f.option = bar_option(f.title, experiment_subtitle(m), mixes, "Mix of models trained",
                        "Makespan (s)", series);
  bool any = false;
  for (const auto& row : f.data.rows) any |= !row[5].empty();
  if (any) s.figures.push_back(std::move(f));

  // Fig. 9: the mix with the most jobs.
  const CaseGroup* widest = nullptr;
  for (const CaseGroup& g : m.groups) {
    if (g.workload == "mixed" && g.status == "ok" && (!widest || g.degree > widest->degree)) {
      widest = &g;
    }
  }
  if (widest) {
    std::vector<const CaseGroup*> groups;
    for (const CaseGroup& g : m.groups) {
      if (g.workload == "mixed" && g.models == widest->models && g.status == "ok" &&
          g.mechanism != "exclusive") {
        groups.push_back(&g);
      }
    }
    Figure util = over_time_figure(
        m, groups, "utilization-over-time-mixed", "Fig. 9",
        "SM activity over time, mix " + widest->models,
        "How busy the GPU was while the mix trained, one line per mechanism. A drop shows the "
        "moment a job finished and the others could not use what it left free.",
        "SM activity (%)", "sm_active_pct", [](const SeriesPoint& p) { return p.sm_active_pct; },
        false, 100.0);
    Figure memory = over_time_figure(
        m, groups, "memory-over-time-mixed", "Fig. 9",
        "GPU memory in use over time, mix " + widest->models,
        "Memory in use on the GPU while the mix trained; it steps down as jobs finish.",
        "Memory (GiB)", "memory_gib",
        [](const SeriesPoint& p) { return memory_gib(p.memory_used_bytes); }, false);
    for (Figure* fig : {&util, &memory}) {
      if (!fig->data.rows.empty()) s.figures.push_back(std::move(*fig));
    }
  }
  return s;
}

std::optional<double> job_time_s(const JobMetrics& job) { return job.duration_s; }

Section recsys_section(const ExperimentMetrics& m) {
  Section s;
  s.heading = "Recommender with a vision model (paper Table 2)";
  s.intro =
      "A memory-heavy recommender trained with a compute-heavy vision model. \"exclusive\" runs "
      "them one after the other (the paper's sequential baseline); the total's change is "
      "relative to it.";
  Table t;
  t.name = "table2-recsys";
  t.title = "Table 2: recommender and vision model, sequential and collocated";
  t.caption =
      "Time of each job (start to end), total time (makespan) and its change against the "
      "sequential run, mean GPU utilization (NVML) and peak GPU memory.";
  std::vector<std::string> models;
  for (const CaseGroup& g : m.groups) {
    if (g.workload != "recsys" || !g.representative) continue;
    for (const JobMetrics& job : m.cases[*g.representative].run->jobs) {
      if (std::find(models.begin(), models.end(), job.model) == models.end()) {
        models.push_back(job.model);
      }
    }
  }
  t.header = {"mechanism", "status"};
  for (const std::string& model : models) t.header.push_back(model + " time (s)");
  t.header.insert(t.header.end(), {"total time (s)", "change vs sequential (%)", "GPU util (%)",
                                   "peak memory (GiB)"});
  std::optional<double> sequential;
  for (const CaseGroup& g : m.groups) {
    if (g.workload == "recsys" && g.mechanism == "exclusive" && g.makespan_s) {
      sequential = g.makespan_s->median;
    }
  }
  for (const CaseGroup& g : m.groups) {
    if (g.workload != "recsys") continue;
    std::vector<std::string> row = {
        g.mechanism == "exclusive" ? "exclusive (sequential)" : g.mechanism,
        status_label(g.status)};
    for (const std::string& model : models) {
      std::optional<double> time;
      if (g.representative) {
        for (const JobMetrics& job : m.cases[*g.representative].run->jobs) {
          if (job.model == model) time = job_time_s(job);
        }
      }
      row.push_back(number_cell(time));
    }
    row.push_back(number_cell(median_of(g.makespan_s)));
    row.push_back(sequential && g.makespan_s && g.mechanism != "exclusive"
                      ? number_cell((g.makespan_s->median / *sequential - 1.0) * 100.0)
                      : "");
    row.push_back(number_cell(median_of(g.gpu_util_pct)));
    row.push_back(g.peak_memory_bytes ? number_cell(g.peak_memory_bytes->median / kBytesPerGiB)
                                      : "");
    t.rows.push_back(std::move(row));
  }
  s.tables.push_back(std::move(t));
  return s;
}

Table cases_table(const ExperimentMetrics& m) {
  Table t;
  t.name = "cases";
  t.title = "Every case";
  t.caption =
      "One row per case (configuration and repetition) with every measurement behind the "
      "figures. Times in seconds, memory in bytes, power in watts, energy in joules.";
  t.header = {"case",
              "workload",
              "models",
              "mechanism",
              "jobs",
              "repetition",
              "status",
              "reason",
              "run_id",
              "second_epoch_s_mean",
              "second_epoch_s_max",
              "steady_throughput_per_s",
              "speedup_vs_one_job",
              "makespan_s",
              "sm_active_pct",
              "gpu_util_pct",
              "peak_memory_bytes",
              "summed_job_peak_memory_bytes",
              "mean_power_w",
              "pcie_rx_mib_per_s",
              "steady_energy_j",
              "steady_epochs",
              "energy_per_epoch_j",
              "speedup_note"};
  for (const CaseGroup& g : m.groups) {
    for (size_t index : g.cases) {
      const CaseMetrics& c = m.cases[index];
      std::vector<std::string> row = {c.row.name,
                                      c.row.workload,
                                      c.row.models,
                                      c.row.mechanism,
                                      std::to_string(c.row.degree),
                                      std::to_string(c.row.repetition),
                                      c.row.status,
                                      c.row.reason,
                                      number_cell(c.row.run_id)};
      if (c.run) {
        const RunMetrics& r = *c.run;
        row.insert(
            row.end(),
            {number_cell(r.mean_second_epoch_s), number_cell(r.max_second_epoch_s),
             number_cell(r.steady_throughput_per_s), number_cell(c.speedup),
             number_cell(r.makespan_s), number_cell(r.mean_sm_active_pct),
             number_cell(r.mean_gpu_util_pct), number_cell(r.peak_memory_bytes),
             number_cell(r.summed_job_peak_memory_bytes), number_cell(r.mean_power_w),
             number_cell(r.mean_pcie_rx_mib_per_s), number_cell(r.steady_energy_j),
             number_cell(r.steady_epochs), number_cell(r.energy_per_epoch_j), c.speedup_note});
      }
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

std::string spread_text(const std::optional<Spread>& s, const char* format, double scale = 1.0) {
  if (!s) return "-";
  std::string out = fmt::format(fmt::runtime(format), s->median * scale);
  if (s->count > 1 && s->max > s->min) {
    out += " [" + fmt::format(fmt::runtime(format), s->min * scale) + "-" +
           fmt::format(fmt::runtime(format), s->max * scale) + "]";
  }
  return out;
}

std::string experiment_summary(const ExperimentMetrics& m,
                               const std::vector<GuidelineFinding>& findings) {
  const ExperimentRow& e = m.experiment;
  std::string out = fmt::format(
      "colo report: {} ({}), {}, started {}, {}\n",
      m.experiments.size() > 1 ? fmt::format("{} experiments from #{}", m.experiments.size(), e.id)
                               : fmt::format("experiment #{}", e.id),
      e.suite, e.gpu_name.empty() ? "GPU unknown" : e.gpu_name, format_local_datetime(e.started_ms),
      e.state);
  if (e.simulated) {
    out += "SIMULATED: these numbers come from colo's simulated GPU, not from a real one\n";
  }
  out +=
      "\nPer configuration: median over repetitions [min-max when they differ]. Epoch time is "
      "the second epoch (the first is warm-up); speed-up is the jobs' summed rate while they "
      "ran together over their rates alone (docs/measurements.md).\n\n";
  using Align = TextTable::Align;
  TextTable table({{"WORKLOAD"},
                   {"MECHANISM", Align::kRight},
                   {"JOBS", Align::kRight},
                   {"STATUS", Align::kRight},
                   {"EPOCH S", Align::kRight},
                   {"SPEED-UP", Align::kRight},
                   {"SM %", Align::kRight},
                   {"UTIL %", Align::kRight},
                   {"PEAK GIB", Align::kRight},
                   {"POWER W", Align::kRight},
                   {"J/EPOCH", Align::kRight}});
  for (const CaseGroup& g : m.groups) {
    table.add_row(
        {g.workload + " " + g.models, g.mechanism, std::to_string(g.degree),
         g.status == "ok" ? fmt::format("ok x{}", g.ok_repetitions) : status_label(g.status),
         spread_text(g.second_epoch_s, "{:.2f}"), spread_text(g.speedup, "{:.2f}"),
         spread_text(g.sm_active_pct, "{:.0f}"), spread_text(g.gpu_util_pct, "{:.0f}"),
         spread_text(g.peak_memory_bytes, "{:.1f}", 1.0 / kBytesPerGiB),
         spread_text(g.mean_power_w, "{:.0f}"), spread_text(g.energy_per_epoch_j, "{:.0f}")});
  }
  out += table.render();
  out += "\nThe paper's guidelines (section 3.4) against this GPU's data:\n\n";
  out += format_guidelines(findings);
  return out;
}

}  // namespace

ReportContent experiment_report(const ExperimentMetrics& m) {
  ReportContent r;
  const ExperimentRow& e = m.experiment;
  r.title = fmt::format("colo report: experiment #{} ({})", e.id, e.suite);
  r.simulated = e.simulated;
  r.facts.push_back(fmt::format(
      "GPU: {}{}", e.gpu_name.empty() ? "unknown" : e.gpu_name,
      m.memory_total_bytes ? fmt::format(" ({})", format_bytes(*m.memory_total_bytes)) : ""));
  r.facts.push_back(fmt::format("Started {}, state {}, backend {}",
                                format_local_datetime(e.started_ms), e.state, e.backend));
  std::map<std::string, int> statuses;
  for (const CaseMetrics& c : m.cases) ++statuses[c.row.status];
  std::string counts;
  for (const auto& [status, count] : statuses) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", count, status_label(status));
  }
  r.facts.push_back(fmt::format("{} cases: {}", m.cases.size(), counts));
  if (!e.command_line.empty()) r.facts.push_back("Command: " + e.command_line);

  const std::vector<GuidelineFinding> findings = evaluate_guidelines(m);
  Section guidelines;
  guidelines.heading = "The paper's five guidelines on this GPU";
  guidelines.intro =
      "Each guideline of the paper (section 3.4), whether this experiment's numbers support it, "
      "and the numbers.";
  guidelines.preformatted = format_guidelines(findings);
  r.sections.push_back(std::move(guidelines));

  bool first = true;
  for (const WorkloadView& v : uniform_views(m)) {
    r.sections.push_back(uniform_section(m, v, first));
    first = false;
  }
  if (std::any_of(m.groups.begin(), m.groups.end(),
                  [](const CaseGroup& g) { return g.workload == "mixed"; })) {
    r.sections.push_back(mixed_section(m));
  }
  if (std::any_of(m.groups.begin(), m.groups.end(),
                  [](const CaseGroup& g) { return g.workload == "recsys"; })) {
    r.sections.push_back(recsys_section(m));
  }
  Section all;
  all.heading = "Every case";
  all.intro = "The numbers behind every figure, one row per case and repetition.";
  all.tables.push_back(cases_table(m));
  r.sections.push_back(std::move(all));
  r.summary_text = experiment_summary(m, findings);
  return r;
}

}  // namespace colo
