#include "report/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "analysis/training_metrics.h"
#include "common/text.h"
#include "common/units.h"
#include "report/echarts.h"
#include "report/table.h"

namespace colo {
namespace {

using nlohmann::json;

// A file stem from a metric's name: letters, digits, '.', '_' and '-' kept.
std::string stem_of(const std::string& name) {
  std::string out;
  for (char c : name)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  return out;
}

// How the jobs reported one metric. Its chart is over steps when each job's
// first point has one, else over epochs likewise, else over seconds; a later
// point with neither (the job's final "end" metrics) takes the one before
// it. Values a job reported at epoch ends of a metric drawn over steps are a
// chart of their own, over epochs: on the step axis they would sit at the
// last step stored.
struct MetricShape {
  bool all_steps = true;    // every job's first point has a step
  bool all_epochs = true;   // every job's first point has an epoch
  bool epoch_ends = false;  // some point is an epoch end's
  bool lower = false;       // lower is better
  bool declared = false;    // `lower` as the job file declares, not by the name
};

MetricShape shape_of(const RunMetrics& m, const std::string& name) {
  MetricShape shape;
  shape.lower = lower_is_better(name);
  for (const JobMetrics& j : m.jobs) {
    if (const MetricSeries* series = find_metric(j.metrics, name)) {
      if (series->declared && !shape.declared) {
        shape.lower = series->lower_is_better;
        shape.declared = true;
      }
      shape.all_steps &= series->points.front().step.has_value();
      shape.all_epochs &= series->points.front().epoch.has_value();
      shape.epoch_ends |= std::any_of(series->points.begin(), series->points.end(),
                                      [](const MetricPoint& p) { return is_epoch_end_point(p); });
    }
  }
  return shape;
}

enum class MetricAxis { kSteps, kEpochs, kSeconds, kEpochEnds };

// A loss that falls from 7 to 0.001 is a flat line on a linear axis after
// its first epoch: values all positive over two decades or more get a log
// axis, and the caption says so.
void use_log_axis_when_wide(Figure& f, const std::vector<LineSeries>& lines) {
  double low = std::numeric_limits<double>::infinity(), high = 0;
  for (const LineSeries& line : lines) {
    for (const auto& [x, y] : line.points) {
      if (!std::isfinite(y)) continue;
      low = std::min(low, y);
      high = std::max(high, y);
    }
  }
  if (std::isfinite(low) && wants_log_axis(low, high)) {
    f.option["yAxis"]["type"] = "log";
    f.caption += fmt::format(" On a log scale: its values span {:.4g} to {:.4g}.", low, high);
  }
}

// The chart of one metric over `axis`, a line per job that reported it.
Figure metric_figure(const RunMetrics& m, const std::string& name, const MetricShape& shape,
                     MetricAxis axis, const std::string& subtitle) {
  const bool steps = axis == MetricAxis::kSteps;
  const bool epochs = axis == MetricAxis::kEpochs || axis == MetricAxis::kEpochEnds;
  const std::string x_column = steps ? "step" : epochs ? "epoch" : "seconds";
  const std::string x_name = steps ? "Step" : epochs ? "Epoch" : "Time since the job started (s)";
  const bool at_epoch_ends = axis == MetricAxis::kEpochEnds;
  Figure f;
  f.name = "metric-" + stem_of(name) + (at_epoch_ends ? "-epochs" : "");
  f.title = name + (at_epoch_ends ? " at epoch ends, per job" : ", per job");
  f.caption = fmt::format("Each job's {} as it reported it{}, over its {}. {} is better.", name,
                          at_epoch_ends ? " at its epoch ends"
                          : steps && shape.epoch_ends
                              ? " at its steps (its values at epoch ends are the next chart)"
                              : "",
                          steps    ? "steps"
                          : epochs ? "epochs"
                                   : "run time",
                          std::string(shape.lower ? "Lower" : "Higher") +
                              (shape.declared ? " (as the job file declares)" : ""));
  f.data.name = f.name;
  f.data.header = {"job", x_column, name};
  std::vector<LineSeries> lines;
  for (size_t i = 0; i < m.jobs.size(); ++i) {
    const JobMetrics& j = m.jobs[i];
    const MetricSeries* series = find_metric(j.metrics, name);
    if (!series) continue;
    LineSeries line{j.name, job_color(i), {}};
    double x = 0;
    for (const MetricPoint& p : series->points) {
      if ((steps && is_epoch_end_point(p)) || (at_epoch_ends && !is_epoch_end_point(p))) continue;
      if (steps) {
        if (p.step) x = static_cast<double>(*p.step);
      } else if (epochs) {
        if (p.epoch) x = static_cast<double>(*p.epoch);
      } else {
        const UnixMillis start = j.started_ms.value_or(series->points.front().time_ms);
        x = static_cast<double>(p.time_ms - start) / 1000.0;
      }
      line.points.emplace_back(x, p.value);
      f.data.rows.push_back({j.name, number_cell(x), number_cell(p.value)});
    }
    if (!line.points.empty()) lines.push_back(std::move(line));
  }
  f.option = line_option(f.title, subtitle, x_name, name, lines);
  for (json& series : f.option["series"]) series["showSymbol"] = !steps;
  f.curve_controls = true;
  use_log_axis_when_wide(f, lines);
  return f;
}

// The table of what the jobs learned: each job's grid parameters, and the
// last and best value of each metric.
Table learned_table(const RunMetrics& m, const std::set<std::string>& param_names,
                    const std::set<std::string>& metric_names) {
  Table t;
  t.name = "learned";
  t.title = "Grid parameters and metrics, per job";
  t.caption = "The last value each job reported of each metric, and its best.";
  t.header = {"job"};
  for (const std::string& p : param_names) t.header.push_back(p);
  for (const std::string& name : metric_names) {
    t.header.push_back(name + "_last");
    t.header.push_back(name + "_best");
  }
  for (const JobMetrics& j : m.jobs) {
    std::vector<std::string> row = {j.name};
    for (const std::string& p : param_names) {
      auto it = j.params.find(p);
      row.push_back(it == j.params.end() ? "" : it->second);
    }
    for (const std::string& name : metric_names) {
      const MetricSeries* series = find_metric(j.metrics, name);
      row.push_back(series ? number_cell(series->last) : "");
      row.push_back(series ? number_cell(series->best) : "");
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

// A value axis of the parallel chart, number `dim`: it spans every job's
// value (ECharts took the extent of the first job's line alone: most lines
// ran off the chart), padded a little.
json value_axis(int dim, const std::string& axis_name, const std::vector<double>& values) {
  json a{{"dim", dim}, {"name", axis_name}, {"type", "value"}};
  if (values.empty()) return a;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  const double pad = *hi > *lo ? (*hi - *lo) * 0.05 : std::max(std::abs(*lo) * 0.1, 1e-9);
  a["min"] = chart_value(*lo - pad);
  a["max"] = chart_value(*hi + pad);
  return a;
}

// The parallel chart's axes: one per parameter (numbers where every value is
// one, else its values as categories), then one per metric's best value.
json parallel_axes(const RunMetrics& m, const std::set<std::string>& param_names,
                   const std::set<std::string>& metric_names) {
  json axes = json::array();
  int dim = 0;
  for (const std::string& p : param_names) {
    std::set<std::string> values;
    std::vector<double> numbers;
    bool numeric = true;
    for (const JobMetrics& j : m.jobs) {
      auto it = j.params.find(p);
      if (it == j.params.end()) continue;
      values.insert(it->second);
      char* end = nullptr;
      numbers.push_back(std::strtod(it->second.c_str(), &end));
      numeric &= !it->second.empty() && *end == '\0';
    }
    if (numeric) {
      axes.push_back(value_axis(dim++, p, numbers));
    } else {
      axes.push_back({{"dim", dim++},
                      {"name", p},
                      {"type", "category"},
                      {"data", std::vector<std::string>(values.begin(), values.end())}});
    }
  }
  for (const std::string& name : metric_names) {
    std::vector<double> bests;
    for (const JobMetrics& j : m.jobs) {
      const MetricSeries* ms = find_metric(j.metrics, name);
      if (ms != nullptr && std::isfinite(ms->best)) bests.push_back(ms->best);
    }
    axes.push_back(value_axis(dim++, name + " (best)", bests));
  }
  return axes;
}

// A parallel-coordinates chart of the grid parameters against each metric's
// best value, a line per job; its data is the `learned` table.
Figure parameters_figure(const RunMetrics& m, const std::set<std::string>& param_names,
                         const std::set<std::string>& metric_names, const Table& learned,
                         const std::string& subtitle) {
  Figure f;
  f.name = "parameters-and-metrics";
  f.title = "Grid parameters against each metric's best value";
  f.caption =
      "One line per job, through its grid parameters (left) and the best value of each metric "
      "it reported (right): the lines that end best show which settings won.";
  f.option = base_option(f.title, subtitle);
  f.option.erase("grid");
  f.option["tooltip"] = {{"trigger", "item"}};
  f.option["parallel"] = {{"left", 80}, {"right", 80}, {"top", 110}, {"bottom", 50}};
  const json axes = parallel_axes(m, param_names, metric_names);
  f.option["parallelAxis"] = axes;
  json series = json::array();
  for (size_t i = 0; i < m.jobs.size(); ++i) {
    const JobMetrics& j = m.jobs[i];
    json row = json::array();
    for (const std::string& p : param_names) {
      auto it = j.params.find(p);
      if (it == j.params.end()) {
        row.push_back(nullptr);
        continue;
      }
      char* end = nullptr;
      const double v = std::strtod(it->second.c_str(), &end);
      const bool numeric = axes[row.size()]["type"] == "value";
      row.push_back(numeric ? json(v) : json(it->second));
    }
    for (const std::string& name : metric_names) {
      const MetricSeries* ms = find_metric(j.metrics, name);
      row.push_back(ms && std::isfinite(ms->best) ? json(chart_value(ms->best)) : json(nullptr));
    }
    series.push_back({{"name", j.name},
                      {"type", "parallel"},
                      {"lineStyle", {{"width", 2}, {"color", job_color(i)}, {"opacity", 0.8}}},
                      {"data", json::array({row})}});
  }
  f.option["series"] = series;
  f.data.name = f.name;
  f.data.header = learned.header;
  f.data.rows = learned.rows;
  return f;
}

// What the jobs learned: one chart per training metric with a line per job
// (over its steps when every point of the metric has one, else over its
// epochs, else over seconds since the job started), a parallel-coordinates
// chart of the grid parameters against each metric's best value, and the
// table of both. Empty when no job reported a metric.
Section learning_section(const RunMetrics& m, const std::string& subtitle) {
  Section s;
  std::set<std::string> metric_names, param_names;
  for (const JobMetrics& j : m.jobs) {
    for (const MetricSeries& series : j.metrics) metric_names.insert(series.name);
    for (const auto& [k, v] : j.params) param_names.insert(k);
  }
  if (metric_names.empty()) return s;
  s.heading = "What the jobs learned";
  s.intro =
      "The metrics each job reported (through colo_progress or the named groups of its "
      "epoch_regex and step_regex), its last attempt's. Best is the lowest value of a loss or "
      "error and the highest of anything else.";
  for (const std::string& name : metric_names) {
    const MetricShape shape = shape_of(m, name);
    if (shape.all_steps) {
      s.figures.push_back(metric_figure(m, name, shape, MetricAxis::kSteps, subtitle));
      if (shape.epoch_ends)
        s.figures.push_back(metric_figure(m, name, shape, MetricAxis::kEpochEnds, subtitle));
    } else {
      const MetricAxis axis = shape.all_epochs ? MetricAxis::kEpochs : MetricAxis::kSeconds;
      s.figures.push_back(metric_figure(m, name, shape, axis, subtitle));
    }
  }
  Table learned = learned_table(m, param_names, metric_names);
  if (!param_names.empty())
    s.figures.push_back(parameters_figure(m, param_names, metric_names, learned, subtitle));
  s.tables.push_back(std::move(learned));
  return s;
}

// The lines under the page's title: when and how the run ran, its job file,
// and its totals.
std::vector<std::string> run_facts(const RunMetrics& m) {
  const RunRow& run = m.run;
  std::vector<std::string> facts;
  facts.push_back(fmt::format("Started {}, state {}, mechanism {}, backend {}",
                              format_local_datetime(run.started_ms), to_string(run.state),
                              run.mechanism, run.backend));
  if (!run.job_file.empty()) facts.push_back("Job file: " + run.job_file);
  std::string totals = fmt::format("{} job(s)", m.jobs.size());
  if (m.makespan_s)
    totals += fmt::format(", makespan {}", format_duration_ms(std::llround(*m.makespan_s * 1000)));
  if (m.steady_throughput_per_s) {
    totals += fmt::format(", steady throughput {:.0f} samples/s", *m.steady_throughput_per_s);
  }
  if (m.steady_speedup_vs_exclusive) {
    totals += fmt::format(", steady speed-up {:.2f}x over the jobs alone (while they ran together)",
                          *m.steady_speedup_vs_exclusive);
  } else if (!m.steady_note.empty()) {
    totals += ", no steady speed-up: " + m.steady_note;
  }
  facts.push_back(totals);
  return facts;
}

// The per-job table and the chart of each job's second epoch.
Section jobs_section(const RunMetrics& m, const std::string& subtitle) {
  Section jobs;
  jobs.heading = "Jobs";
  jobs.intro =
      "One row per job. The second epoch is timed because the first is warm-up (start-up, "
      "autotuning); steady throughput counts epochs 2 and later.";
  Table t;
  t.name = "jobs";
  t.title = "Per-job measurements";
  t.caption = "Times in seconds since the run started; memory is the job's own processes at peak.";
  t.header = {"job",
              "state",
              "start_s",
              "end_s",
              "duration_s",
              "epochs",
              "second_epoch_s",
              "steady_throughput_per_s",
              "peak_memory_bytes"};
  for (const JobMetrics& j : m.jobs) {
    t.rows.push_back({j.name, j.state, number_cell(j.start_s), number_cell(j.end_s),
                      number_cell(j.duration_s), std::to_string(j.epochs),
                      number_cell(j.second_epoch_s), number_cell(j.steady_throughput_per_s),
                      number_cell(j.peak_memory_bytes)});
  }
  jobs.tables.push_back(std::move(t));

  Figure epochs;
  epochs.name = "second-epoch-per-job";
  epochs.title = "Time of the second epoch, per job";
  epochs.caption =
      "How long each job took for its second epoch. Jobs sharing the GPU take longer per epoch "
      "than a job alone; similar bars mean the GPU was shared evenly.";
  epochs.data.name = epochs.name;
  epochs.data.header = {"job", "second_epoch_s"};
  std::vector<std::string> names;
  BarSeries bars{m.run.mechanism, mechanism_color(m.run.mechanism), {}};
  for (const JobMetrics& j : m.jobs) {
    names.push_back(j.name);
    BarCell cell;
    cell.value = j.second_epoch_s;
    if (!cell.value) cell.gap = j.epochs < 2 ? "fewer than 2 epochs" : "no data";
    bars.cells.push_back(cell);
    epochs.data.rows.push_back({j.name, number_cell(j.second_epoch_s)});
  }
  epochs.option =
      bar_option(epochs.title, subtitle, names, "Job", "Time of the second epoch (s)", {bars});
  if (!m.jobs.empty()) jobs.figures.push_back(std::move(epochs));
  return jobs;
}

// Shades the run's steady state (or its jobs' steady epochs), labelled
// `band`, on a chart over the run's time, when the run has one.
void mark_steady(json& option, const RunMetrics& m, const std::string& band) {
  if (m.steady_start_s && m.steady_end_s)
    mark_band(option, *m.steady_start_s, *m.steady_end_s, band);
}

// The GPU's memory in use over the run, in GiB up to the GPU's memory (the
// CSV in bytes).
Figure memory_over_time_figure(const RunMetrics& m, const std::string& subtitle,
                               const std::string& band) {
  Figure f;
  f.name = "memory-over-time";
  f.title = "GPU memory in use over time";
  f.caption = "Memory in use on the whole GPU; it rises as jobs start and falls as they end.";
  f.data.name = f.name;
  f.data.header = {"t_s", "memory_used_bytes"};
  LineSeries line{"memory in use", mechanism_color(m.run.mechanism), {}};
  for (const SeriesPoint& p : m.series) {
    if (!p.memory_used_bytes) continue;
    line.points.emplace_back(p.t_s, static_cast<double>(*p.memory_used_bytes) / kBytesPerGiB);
    f.data.rows.push_back({number_cell(p.t_s), number_cell(p.memory_used_bytes)});
  }
  f.option =
      line_option(f.title, subtitle, "Seconds since the run started", "Memory (GiB)", {line});
  if (m.memory_total_bytes) {
    f.option["yAxis"]["max"] = std::ceil(static_cast<double>(*m.memory_total_bytes) / kBytesPerGiB);
  }
  mark_steady(f.option, m, band);
  return f;
}

// A device reading the run report draws over time, as it is.
struct DeviceMetric {
  std::string name, title, caption, y_name, column;
  std::optional<double> SeriesPoint::*field;
  std::optional<double> y_max;
};

const std::vector<DeviceMetric>& device_metrics() {
  static const std::vector<DeviceMetric> kMetrics = {
      {"sm-activity-over-time", "SM activity over time",
       "The share of time the GPU's streaming multiprocessors had work (NVML GPM, like dcgm's "
       "SM_ACTIVE). Well below 100% in steady state leaves room for more jobs.",
       "SM activity (%)", "sm_active_pct", &SeriesPoint::sm_active_pct, 100.0},
      {"gpu-util-over-time", "GPU utilization over time",
       "NVML's utilization: the share of time any kernel was running. It reads 100% long before "
       "the GPU is full, which is why the paper uses SM activity.",
       "GPU utilization (%)", "gpu_util_pct", &SeriesPoint::gpu_util_pct, 100.0},
      {"power-over-time", "GPU power over time", "The GPU's power draw.", "Power (W)", "power_w",
       &SeriesPoint::power_w, std::nullopt},
      {"pcie-rx-over-time", "PCIe traffic into the GPU over time",
       "Bytes per second the GPU received over PCIe from the CPU (input data and kernel "
       "launches).",
       "PCIe receive (MiB/s)", "pcie_rx_mib_per_s", &SeriesPoint::pcie_rx_mib_per_s, std::nullopt},
  };
  return kMetrics;
}

// One device reading over the run, without a legend.
Figure device_metric_figure(const RunMetrics& m, const DeviceMetric& metric,
                            const std::string& subtitle, const std::string& band) {
  Figure f;
  f.name = metric.name;
  f.title = metric.title;
  f.caption = metric.caption;
  f.data.name = f.name;
  f.data.header = {"t_s", metric.column};
  LineSeries line{metric.title, mechanism_color(m.run.mechanism), {}};
  for (const SeriesPoint& p : m.series) {
    if (!(p.*metric.field)) continue;
    line.points.emplace_back(p.t_s, *(p.*metric.field));
    f.data.rows.push_back({number_cell(p.t_s), number_cell(*(p.*metric.field))});
  }
  f.option = line_option(f.title, subtitle, "Seconds since the run started", metric.y_name, {line},
                         metric.y_max);
  f.option.erase("legend");
  mark_steady(f.option, m, band);
  return f;
}

// The GPU's readings over the run, memory first (it is integer-valued); a
// reading never taken has no chart.
Section device_section(const RunMetrics& m, const std::string& subtitle) {
  Section device;
  device.heading = "The GPU over time";
  // The band is steady state together only when the jobs were (m.together);
  // else it spans their steady epochs, which the summary says never
  // overlapped all at once: it must not be called steady state then.
  const std::string band = m.together ? "steady state" : "steady epochs, not all together";
  device.intro =
      m.together
          ? "Device readings every sample interval. The shaded band is steady state: while the "
            "jobs ran together (from the latest end of a first epoch to the earliest end of a "
            "last epoch)."
          : "Device readings every sample interval. The jobs were never all in their steady "
            "epochs at once (the summary says why), so there is no steady state together; the "
            "shaded band spans their steady epochs, from the end of the first first epoch to the "
            "end of the last last epoch.";
  if (Figure f = memory_over_time_figure(m, subtitle, band); !f.data.rows.empty())
    device.figures.push_back(std::move(f));
  for (const DeviceMetric& metric : device_metrics()) {
    if (Figure f = device_metric_figure(m, metric, subtitle, band); !f.data.rows.empty())
      device.figures.push_back(std::move(f));
  }
  return device;
}

// The run's steady state as the paper measures it, for summary.txt.
std::string steady_state_text(const RunMetrics& m) {
  std::string steady = "\nSteady state (epochs 2+, as the paper measures):\n";
  auto add = [&](const std::string& what, const std::string& value) {
    steady += fmt::format("  {:<34} {}\n", what, value);
  };
  add("mean second-epoch time per job",
      m.mean_second_epoch_s ? fmt::format("{:.2f} s", *m.mean_second_epoch_s) : "-");
  add("aggregate throughput", m.steady_throughput_per_s
                                  ? fmt::format("{:.0f} samples/s", *m.steady_throughput_per_s)
                                  : "-");
  add("mean SM activity",
      m.mean_sm_active_pct ? fmt::format("{:.1f}%", *m.mean_sm_active_pct) : "-");
  add("mean GPU utilization",
      m.mean_gpu_util_pct ? fmt::format("{:.1f}%", *m.mean_gpu_util_pct) : "-");
  add("peak GPU memory (device)", m.peak_memory_bytes ? format_bytes(*m.peak_memory_bytes) : "-");
  add("summed per-job peak memory",
      m.summed_job_peak_memory_bytes ? format_bytes(*m.summed_job_peak_memory_bytes) : "-");
  add("mean power", m.mean_power_w ? fmt::format("{:.0f} W", *m.mean_power_w) : "-");
  add("mean PCIe receive",
      m.mean_pcie_rx_mib_per_s ? fmt::format("{:.0f} MiB/s", *m.mean_pcie_rx_mib_per_s) : "-");
  add("energy per epoch (one job)",
      m.energy_per_epoch_j ? fmt::format("{:.0f} J", *m.energy_per_epoch_j) : "-");
  return steady;
}

}  // namespace

ReportContent run_report(const RunMetrics& m, const std::string& run_summary_text) {
  ReportContent r;
  const RunRow& run = m.run;
  r.title = fmt::format("colo report: run #{} ({})", run.id, run.mechanism);
  r.simulated = run.simulated;
  r.facts = run_facts(m);
  const std::string subtitle =
      fmt::format("{}run #{} · {} · GPU {}", run.simulated ? "SIMULATED · " : "", run.id,
                  run.mechanism, m.device);
  r.sections.push_back(jobs_section(m, subtitle));
  if (Section learned = learning_section(m, subtitle); !learned.heading.empty())
    r.sections.push_back(std::move(learned));
  r.sections.push_back(device_section(m, subtitle));
  r.summary_text = run_summary_text + steady_state_text(m);
  Section text;
  text.heading = "Summary";
  text.intro = "The same text as summary.txt.";
  text.preformatted = r.summary_text;
  text.preformatted_wraps = false;  // its tables keep their columns
  r.sections.push_back(std::move(text));
  return r;
}

ReportContent comparison_report(const RunComparison& c, const RunMetrics& a, const RunMetrics& b) {
  ReportContent r;
  r.title = fmt::format("colo report: run {} against run {}", c.title_a, c.title_b);
  r.simulated = c.simulated;
  r.facts.push_back(fmt::format("Jobs matched by name: {} in both, {} only in {}, {} only in {}",
                                c.in_both, c.only_a, c.title_a, c.only_b, c.title_b));
  if (!c.metric.empty()) {
    r.facts.push_back(fmt::format("Compared by each job's best {} ({} is better)", c.metric,
                                  c.lower ? "lower" : "higher"));
  }
  Section runs;
  runs.heading = "The two runs";
  runs.intro = "B over A is run " + c.title_b + "'s figure over run " + c.title_a + "'s.";
  Table facts;
  facts.name = "runs";
  facts.title = "The runs side by side";
  facts.caption = "State, label, jobs, makespan, throughput and GPU energy of each run.";
  facts.header = {"", c.title_a, c.title_b, "B over A"};
  facts.rows = c.facts;
  for (auto& row : facts.rows) row.resize(facts.header.size());
  runs.tables.push_back(std::move(facts));
  Table jobs;
  jobs.name = "jobs-by-name";
  jobs.title = "The jobs, matched by name";
  jobs.caption = c.metric.empty() ? "Each job's state in both runs."
                                  : fmt::format(
                                        "Each job's state and best {} in both runs, and "
                                        "the change from {} to {}.",
                                        c.metric, c.title_a, c.title_b);
  for (const std::string& h : c.job_header) jobs.header.push_back(ascii_lower(h));
  jobs.rows = c.jobs;
  runs.tables.push_back(std::move(jobs));
  r.sections.push_back(std::move(runs));

  // Both runs' jobs on shared charts, each named by its run.
  RunMetrics both;
  for (const auto& [m, title] : {std::pair{&a, c.title_a}, std::pair{&b, c.title_b}}) {
    for (JobMetrics j : m->jobs) {
      j.name = fmt::format("{}: {}", title, j.name);
      both.jobs.push_back(std::move(j));
    }
  }
  const std::string subtitle = fmt::format("{}run {} against run {}",
                                           c.simulated ? "SIMULATED · " : "", c.title_a, c.title_b);
  if (Section learned = learning_section(both, subtitle); !learned.heading.empty())
    r.sections.push_back(std::move(learned));
  r.summary_text = format_run_comparison(c);
  return r;
}

}  // namespace colo
