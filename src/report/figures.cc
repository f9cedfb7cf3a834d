#include "report/figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "common/text.h"
#include "common/units.h"
#include "report/guidelines.h"

namespace colo {
namespace {

using nlohmann::json;

constexpr auto kBytesPerGiB = static_cast<double>(kGiB);

// Full precision for CSV: the shortest text that reads back to the same value.
std::string num(double value) { return fmt::format("{}", value); }

template <class T>
std::string num(const std::optional<T>& value) {
  return value ? fmt::format("{}", *value) : std::string();
}

// Chart values: four significant digits are plenty to draw and to read.
double rounded(double value) {
  if (value == 0 || !std::isfinite(value)) return value;
  const double magnitude = std::pow(10.0, 3 - std::floor(std::log10(std::abs(value))));
  return std::round(value * magnitude) / magnitude;
}

std::string jobs_label(int degree) {
  return fmt::format("{} job{}", degree, degree == 1 ? "" : "s");
}

std::string status_label(const std::string& status) {
  if (status == "does_not_fit") return "does not fit";
  if (status == "not_run") return "not run";
  return status;
}

// `color` mixed with white; `amount` 0 keeps it, 1 gives white.
std::string lighter(const std::string& color, double amount) {
  if (color.size() != 7 || color[0] != '#') return color;
  std::string out = "#";
  for (int i = 0; i < 3; ++i) {
    const int c = std::stoi(color.substr(1 + 2 * i, 2), nullptr, 16);
    const int mixed = static_cast<int>(std::lround(c + (255 - c) * amount));
    out += fmt::format("{:02x}", std::clamp(mixed, 0, 255));
  }
  return out;
}

// A metric's chart gets a log axis when its largest value over its smallest
// is at least this (two decades) and all are positive.
constexpr double kLogAxisRatio = 100;

json base_option(const std::string& title, const std::string& subtitle) {
  return json{
      {"animation", false},
      {"backgroundColor", "#ffffff"},
      {"textStyle", {{"fontFamily", "sans-serif"}}},
      {"title",
       {{"text", title},
        {"subtext", subtitle},
        {"left", "center"},
        {"top", 8},
        {"textStyle", {{"fontSize", 16}}}}},
      {"legend", {{"top", 56}, {"type", "scroll"}}},
      {"grid", {{"left", 80}, {"right", 40}, {"top", 100}, {"bottom", 65}}},
      {"tooltip", {{"trigger", "axis"}}},
  };
}

json axis(const std::string& type, const std::string& name) {
  return json{{"type", type},
              {"name", name},
              {"nameLocation", "middle"},
              {"nameGap", type == "category" ? 32 : 50},
              {"nameTextStyle", {{"fontSize", 13}}}};
}

// A bar per mechanism in each category, median height, whiskers from the
// smallest to the largest repetition, and a rotated label where a
// configuration has no value because it did not run.
struct BarCell {
  std::optional<double> value;
  std::optional<Spread> spread;
  std::string gap;  // label when there is no value ("does not fit"), or ""
};
struct BarSeries {
  std::string name;
  std::string color;
  std::vector<BarCell> cells;  // one per category
};

json bar_option(const std::string& title, const std::string& subtitle,
                const std::vector<std::string>& categories, const std::string& x_name,
                const std::string& y_name, const std::vector<BarSeries>& series,
                std::optional<double> y_max = std::nullopt) {
  json option = base_option(title, subtitle);
  option["xAxis"] = axis("category", x_name);
  option["xAxis"]["data"] = categories;
  // Every category labelled (ECharts hides some when they would overlap),
  // slanted when there are many.
  option["xAxis"]["axisLabel"] = {{"interval", 0}, {"rotate", categories.size() > 6 ? 30 : 0}};
  option["yAxis"] = axis("value", y_name);
  if (y_max) option["yAxis"]["max"] = *y_max;
  bool any_spread = false;
  for (const BarSeries& s : series) {
    for (const BarCell& cell : s.cells)
      any_spread |= cell.spread && cell.spread->max > cell.spread->min;
  }
  json all = json::array();
  const int bars = static_cast<int>(series.size());
  for (int i = 0; i < bars; ++i) {
    const BarSeries& s = series[i];
    json data = json::array();
    json whiskers = json::array();
    for (size_t c = 0; c < s.cells.size(); ++c) {
      const BarCell& cell = s.cells[c];
      if (cell.value) {
        data.push_back(rounded(*cell.value));
      } else if (!cell.gap.empty()) {
        data.push_back(json{{"value", 0},
                            {"label",
                             {{"show", true},
                              {"formatter", cell.gap},
                              {"position", "insideBottom"},
                              {"rotate", 90},
                              {"align", "left"},
                              {"verticalAlign", "middle"},
                              {"distance", 6},
                              {"fontSize", 12},
                              {"color", "#333"},
                              {"fontStyle", "italic"}}}});
      } else {
        data.push_back("-");
      }
      if (cell.value && cell.spread && cell.spread->max > cell.spread->min) {
        whiskers.push_back(json::array(
            {static_cast<int>(c), rounded(cell.spread->min), rounded(cell.spread->max), i, bars}));
      }
    }
    json bar{{"name", s.name},  {"type", "bar"},           {"data", data},
             {"barGap", "10%"}, {"barCategoryGap", "30%"}, {"itemStyle", {{"color", s.color}}}};
    if (!any_spread) {
      bar["label"] = {{"show", true}, {"position", "top"}, {"fontSize", 10}, {"color", "#333"}};
    }
    all.push_back(bar);
    if (!whiskers.empty()) {
      // Drawn by the page's script (colo_errorbar): a custom series cannot carry
      // its render function in JSON.
      all.push_back(json{{"name", s.name},
                         {"type", "custom"},
                         {"colo_errorbar", true},
                         {"data", whiskers},
                         {"encode", {{"x", 0}, {"y", json::array({1, 2})}}},
                         {"z", 10},
                         {"tooltip", {{"show", false}}}});
    }
  }
  option["series"] = all;
  return option;
}

struct LineSeries {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;
};

// A legend that one row cannot hold wraps onto more rows, all shown, and the
// plot moves down to make room (on a 600 px page, 8 rows leave it 280 px);
// past kMaxLegendRows it scrolls (page by page) instead. Item widths are
// estimated from the names (a chart is about kLegendWidth pixels wide; an
// item is its symbol, its text and a gap).
constexpr int kMaxLegendRows = 8;
constexpr double kLegendWidth = 900;
void fit_legend(json& option, const std::vector<LineSeries>& series) {
  double row = 0;
  int rows = 1;
  for (const LineSeries& s : series) {
    const double item = 25 + 10 + 7.0 * static_cast<double>(s.name.size());
    if (row > 0 && row + item > kLegendWidth) {
      ++rows;
      row = 0;
    }
    row += item;
  }
  if (rows == 1 || rows > kMaxLegendRows) return;
  option["legend"]["type"] = "plain";
  option["legend"]["left"] = 40;
  option["legend"]["right"] = 40;
  option["grid"]["top"] = 100 + 22 * (rows - 1);
}

json line_option(const std::string& title, const std::string& subtitle, const std::string& x_name,
                 const std::string& y_name, const std::vector<LineSeries>& series,
                 std::optional<double> y_max = std::nullopt) {
  json option = base_option(title, subtitle);
  option["xAxis"] = axis("value", x_name);
  option["yAxis"] = axis("value", y_name);
  if (y_max) option["yAxis"]["max"] = *y_max;
  json all = json::array();
  for (const LineSeries& s : series) {
    json data = json::array();
    for (const auto& [x, y] : s.points) data.push_back(json::array({rounded(x), rounded(y)}));
    all.push_back(json{{"name", s.name},
                       {"type", "line"},
                       {"showSymbol", false},
                       {"data", data},
                       {"lineStyle", {{"width", 2}}},
                       {"itemStyle", {{"color", s.color}}}});
  }
  option["series"] = all;
  fit_legend(option, series);
  return option;
}

// Adds a shaded band to the first series of a line chart.
void mark_band(json& option, double from, double to, const std::string& label) {
  if (option["series"].empty()) return;
  option["series"][0]["markArea"] = {
      {"silent", true},
      {"itemStyle", {{"color", "rgba(120,120,120,0.10)"}}},
      {"label", {{"show", true}, {"position", "insideTop"}, {"color", "#555"}}},
      {"data", json::array({json::array({json{{"name", label}, {"xAxis", rounded(from)}},
                                         json{{"xAxis", rounded(to)}}})})}};
}

// Adds a dashed horizontal line with a label to the first series.
void mark_level(json& option, double y, const std::string& label) {
  if (option["series"].empty()) return;
  option["series"][0]["markLine"] = {
      {"silent", true},
      {"symbol", "none"},
      {"lineStyle", {{"type", "dashed"}, {"color", "#c0392b"}}},
      {"label", {{"formatter", label}, {"position", "insideEndTop"}, {"color", "#c0392b"}}},
      {"data", json::array({json{{"yAxis", rounded(y)}}})}};
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
      f.data.rows.push_back(
          {g->workload, g->models, g->mechanism, std::to_string(g->degree), g->status,
           std::to_string(g->ok_repetitions), cell.spread ? num(cell.spread->median) : "",
           cell.spread ? num(cell.spread->min) : "", cell.spread ? num(cell.spread->max) : ""});
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
          values += (values.empty() ? "" : " ") + num(*value * scale);
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
      f.data.rows.push_back(
          {g->mechanism, std::to_string(g->degree), std::to_string(run.run.id), num(t), num(*v)});
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
                               g->makespan_s ? num(g->makespan_s->median) : "",
                               g->makespan_s ? num(g->makespan_s->min) : "",
                               g->makespan_s ? num(g->makespan_s->max) : ""});
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
      row.push_back(num(time));
    }
    row.push_back(num(median_of(g.makespan_s)));
    row.push_back(sequential && g.makespan_s && g.mechanism != "exclusive"
                      ? num((g.makespan_s->median / *sequential - 1.0) * 100.0)
                      : "");
    row.push_back(num(median_of(g.gpu_util_pct)));
    row.push_back(g.peak_memory_bytes ? num(g.peak_memory_bytes->median / kBytesPerGiB) : "");
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
                                      num(c.row.run_id)};
      if (c.run) {
        const RunMetrics& r = *c.run;
        row.insert(
            row.end(),
            {num(r.mean_second_epoch_s), num(r.max_second_epoch_s), num(r.steady_throughput_per_s),
             num(c.speedup), num(r.makespan_s), num(r.mean_sm_active_pct), num(r.mean_gpu_util_pct),
             num(r.peak_memory_bytes), num(r.summed_job_peak_memory_bytes), num(r.mean_power_w),
             num(r.mean_pcie_rx_mib_per_s), num(r.steady_energy_j), num(r.steady_epochs),
             num(r.energy_per_epoch_j), c.speedup_note});
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

std::string mechanism_color(const std::string& mechanism) {
  static const std::map<std::string, std::string> kColors = {
      {"exclusive", "#7a7a7a"}, {"naive", "#e07b00"}, {"mps", "#1f5fbf"}, {"mig", "#2e9e44"}};
  auto it = kColors.find(mechanism);
  return it == kColors.end() ? "#8e44ad" : it->second;
}

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

namespace {

// One colour per job in the charts of what the jobs learned.
const std::string& job_color(size_t i) {
  static const std::vector<std::string> kColors = {"#1f5fbf", "#e8710a", "#1e8e3e", "#d93025",
                                                   "#9334e6", "#12a4af", "#f538a0", "#795548",
                                                   "#5f6368", "#b8a300"};
  return kColors[i % kColors.size()];
}

// A file stem from a metric's name: letters, digits, '.', '_' and '-' kept.
std::string stem_of(const std::string& name) {
  std::string out;
  for (char c : name)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  return out;
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
    // Over steps when each job's first point has one, else over epochs
    // likewise, else over seconds; a later point with neither (the job's
    // final "end" metrics) takes the one before it. Values a job reported
    // at epoch ends of a metric drawn over steps are a chart of their own,
    // over epochs: on the step axis they would sit at the last step stored.
    bool all_steps = true, all_epochs = true, epoch_ends = false;
    bool lower = lower_is_better(name), declared = false;
    for (const JobMetrics& j : m.jobs) {
      if (const MetricSeries* series = find_metric(j.metrics, name)) {
        if (series->declared && !declared) {
          lower = series->lower_is_better;
          declared = true;
        }
        all_steps &= series->points.front().step.has_value();
        all_epochs &= series->points.front().epoch.has_value();
        epoch_ends |= std::any_of(series->points.begin(), series->points.end(),
                                  [](const MetricPoint& p) { return is_epoch_end_point(p); });
      }
    }
    enum class Axis { kSteps, kEpochs, kSeconds, kEpochEnds };
    auto add_figure = [&](Axis axis) {
      const bool steps = axis == Axis::kSteps;
      const bool epochs = axis == Axis::kEpochs || axis == Axis::kEpochEnds;
      const std::string x_column = steps ? "step" : epochs ? "epoch" : "seconds";
      const std::string x_name = steps    ? "Step"
                                 : epochs ? "Epoch"
                                          : "Time since the job started (s)";
      const bool at_epoch_ends = axis == Axis::kEpochEnds;
      Figure f;
      f.name = "metric-" + stem_of(name) + (at_epoch_ends ? "-epochs" : "");
      f.title = name + (at_epoch_ends ? " at epoch ends, per job" : ", per job");
      f.caption = fmt::format("Each job's {} as it reported it{}, over its {}. {} is better.", name,
                              at_epoch_ends ? " at its epoch ends"
                              : steps && epoch_ends
                                  ? " at its steps (its values at epoch ends are the next chart)"
                                  : "",
                              steps    ? "steps"
                              : epochs ? "epochs"
                                       : "run time",
                              std::string(lower ? "Lower" : "Higher") +
                                  (declared ? " (as the job file declares)" : ""));
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
          if ((steps && is_epoch_end_point(p)) || (at_epoch_ends && !is_epoch_end_point(p)))
            continue;
          if (steps) {
            if (p.step) x = static_cast<double>(*p.step);
          } else if (epochs) {
            if (p.epoch) x = static_cast<double>(*p.epoch);
          } else {
            const UnixMillis start = j.started_ms.value_or(series->points.front().time_ms);
            x = static_cast<double>(p.time_ms - start) / 1000.0;
          }
          line.points.emplace_back(x, p.value);
          f.data.rows.push_back({j.name, num(x), num(p.value)});
        }
        if (!line.points.empty()) lines.push_back(std::move(line));
      }
      f.option = line_option(f.title, subtitle, x_name, name, lines);
      for (json& series : f.option["series"]) series["showSymbol"] = !steps;
      f.curve_controls = true;
      // A loss that falls from 7 to 0.001 is a flat line on a linear axis
      // after its first epoch: values all positive over two decades or more
      // get a log axis.
      double low = std::numeric_limits<double>::infinity(), high = 0;
      for (const LineSeries& line : lines) {
        for (const auto& [x, y] : line.points) {
          if (!std::isfinite(y)) continue;
          low = std::min(low, y);
          high = std::max(high, y);
        }
      }
      if (low > 0 && std::isfinite(low) && high / low >= kLogAxisRatio) {
        f.option["yAxis"]["type"] = "log";
        f.caption += fmt::format(" On a log scale: its values span {:.4g} to {:.4g}.", low, high);
      }
      s.figures.push_back(std::move(f));
    };
    if (all_steps) {
      add_figure(Axis::kSteps);
      if (epoch_ends) add_figure(Axis::kEpochEnds);
    } else {
      add_figure(all_epochs ? Axis::kEpochs : Axis::kSeconds);
    }
  }

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
      row.push_back(series ? num(series->last) : "");
      row.push_back(series ? num(series->best) : "");
    }
    t.rows.push_back(std::move(row));
  }

  if (!param_names.empty()) {
    // One axis per parameter (numbers where every value is one, else its
    // values as categories), then one per metric's best value; a line per job.
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
    json axes = json::array();
    int dim = 0;
    // A value axis spans every job's value (ECharts took the extent of the
    // first job's line alone: most lines ran off the chart), padded a little.
    const auto value_axis = [&](const std::string& axis_name, const std::vector<double>& values) {
      json a{{"dim", dim++}, {"name", axis_name}, {"type", "value"}};
      if (values.empty()) return a;
      const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
      const double pad = *hi > *lo ? (*hi - *lo) * 0.05 : std::max(std::abs(*lo) * 0.1, 1e-9);
      a["min"] = rounded(*lo - pad);
      a["max"] = rounded(*hi + pad);
      return a;
    };
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
        axes.push_back(value_axis(p, numbers));
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
      axes.push_back(value_axis(name + " (best)", bests));
    }
    f.option["parallelAxis"] = axes;
    json series = json::array();
    f.data.name = f.name;
    f.data.header = t.header;
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
        const bool numeric = axes[static_cast<int>(row.size())]["type"] == "value";
        row.push_back(numeric ? json(v) : json(it->second));
      }
      for (const std::string& name : metric_names) {
        const MetricSeries* ms = find_metric(j.metrics, name);
        row.push_back(ms && std::isfinite(ms->best) ? json(rounded(ms->best)) : json(nullptr));
      }
      series.push_back({{"name", j.name},
                        {"type", "parallel"},
                        {"lineStyle", {{"width", 2}, {"color", job_color(i)}, {"opacity", 0.8}}},
                        {"data", json::array({row})}});
    }
    f.option["series"] = series;
    f.data.rows = t.rows;
    s.figures.push_back(std::move(f));
  }
  s.tables.push_back(std::move(t));
  return s;
}

}  // namespace

ReportContent run_report(const RunMetrics& m, const std::string& run_summary_text) {
  ReportContent r;
  const RunRow& run = m.run;
  r.title = fmt::format("colo report: run #{} ({})", run.id, run.mechanism);
  r.simulated = run.simulated;
  r.facts.push_back(fmt::format("Started {}, state {}, mechanism {}, backend {}",
                                format_local_datetime(run.started_ms), to_string(run.state),
                                run.mechanism, run.backend));
  if (!run.job_file.empty()) r.facts.push_back("Job file: " + run.job_file);
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
  r.facts.push_back(totals);
  const std::string subtitle =
      fmt::format("{}run #{} · {} · GPU {}", run.simulated ? "SIMULATED · " : "", run.id,
                  run.mechanism, m.device);

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
    t.rows.push_back({j.name, j.state, num(j.start_s), num(j.end_s), num(j.duration_s),
                      std::to_string(j.epochs), num(j.second_epoch_s),
                      num(j.steady_throughput_per_s), num(j.peak_memory_bytes)});
  }
  jobs.tables.push_back(t);

  Figure epochs;
  epochs.name = "second-epoch-per-job";
  epochs.title = "Time of the second epoch, per job";
  epochs.caption =
      "How long each job took for its second epoch. Jobs sharing the GPU take longer per epoch "
      "than a job alone; similar bars mean the GPU was shared evenly.";
  epochs.data.name = epochs.name;
  epochs.data.header = {"job", "second_epoch_s"};
  std::vector<std::string> names;
  BarSeries bars{run.mechanism, mechanism_color(run.mechanism), {}};
  for (const JobMetrics& j : m.jobs) {
    names.push_back(j.name);
    BarCell cell;
    cell.value = j.second_epoch_s;
    if (!cell.value) cell.gap = j.epochs < 2 ? "fewer than 2 epochs" : "no data";
    bars.cells.push_back(cell);
    epochs.data.rows.push_back({j.name, num(j.second_epoch_s)});
  }
  epochs.option =
      bar_option(epochs.title, subtitle, names, "Job", "Time of the second epoch (s)", {bars});
  if (!m.jobs.empty()) jobs.figures.push_back(std::move(epochs));
  r.sections.push_back(std::move(jobs));
  if (Section learned = learning_section(m, subtitle); !learned.heading.empty())
    r.sections.push_back(std::move(learned));

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
  struct Metric {
    std::string name, title, caption, y_name, column;
    std::optional<double> SeriesPoint::*field;
    std::optional<double> y_max;
  };
  const std::vector<Metric> metrics = {
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
  // Memory first: it is integer-valued.
  {
    Figure f;
    f.name = "memory-over-time";
    f.title = "GPU memory in use over time";
    f.caption = "Memory in use on the whole GPU; it rises as jobs start and falls as they end.";
    f.data.name = f.name;
    f.data.header = {"t_s", "memory_used_bytes"};
    LineSeries line{"memory in use", mechanism_color(run.mechanism), {}};
    for (const SeriesPoint& p : m.series) {
      if (!p.memory_used_bytes) continue;
      line.points.emplace_back(p.t_s, static_cast<double>(*p.memory_used_bytes) / kBytesPerGiB);
      f.data.rows.push_back({num(p.t_s), num(p.memory_used_bytes)});
    }
    f.option =
        line_option(f.title, subtitle, "Seconds since the run started", "Memory (GiB)", {line});
    if (m.memory_total_bytes) {
      f.option["yAxis"]["max"] =
          std::ceil(static_cast<double>(*m.memory_total_bytes) / kBytesPerGiB);
    }
    if (m.steady_start_s && m.steady_end_s)
      mark_band(f.option, *m.steady_start_s, *m.steady_end_s, band);
    if (!f.data.rows.empty()) device.figures.push_back(std::move(f));
  }
  for (const Metric& metric : metrics) {
    Figure f;
    f.name = metric.name;
    f.title = metric.title;
    f.caption = metric.caption;
    f.data.name = f.name;
    f.data.header = {"t_s", metric.column};
    LineSeries line{metric.title, mechanism_color(run.mechanism), {}};
    for (const SeriesPoint& p : m.series) {
      if (!(p.*metric.field)) continue;
      line.points.emplace_back(p.t_s, *(p.*metric.field));
      f.data.rows.push_back({num(p.t_s), num(*(p.*metric.field))});
    }
    f.option = line_option(f.title, subtitle, "Seconds since the run started", metric.y_name,
                           {line}, metric.y_max);
    f.option.erase("legend");
    if (m.steady_start_s && m.steady_end_s)
      mark_band(f.option, *m.steady_start_s, *m.steady_end_s, band);
    if (!f.data.rows.empty()) device.figures.push_back(std::move(f));
  }
  r.sections.push_back(std::move(device));

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
  r.summary_text = run_summary_text + steady;
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
