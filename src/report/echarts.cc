#include "report/echarts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace colo {
namespace {

using nlohmann::json;

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

}  // namespace

double chart_value(double value) {
  if (value == 0 || !std::isfinite(value)) return value;
  const double magnitude = std::pow(10.0, 3 - std::floor(std::log10(std::abs(value))));
  return std::round(value * magnitude) / magnitude;
}

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

json bar_option(const std::string& title, const std::string& subtitle,
                const std::vector<std::string>& categories, const std::string& x_name,
                const std::string& y_name, const std::vector<BarSeries>& series,
                std::optional<double> y_max) {
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
        data.push_back(chart_value(*cell.value));
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
        whiskers.push_back(json::array({static_cast<int>(c), chart_value(cell.spread->min),
                                        chart_value(cell.spread->max), i, bars}));
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

json line_option(const std::string& title, const std::string& subtitle, const std::string& x_name,
                 const std::string& y_name, const std::vector<LineSeries>& series,
                 std::optional<double> y_max) {
  json option = base_option(title, subtitle);
  option["xAxis"] = axis("value", x_name);
  option["yAxis"] = axis("value", y_name);
  if (y_max) option["yAxis"]["max"] = *y_max;
  json all = json::array();
  for (const LineSeries& s : series) {
    json data = json::array();
    for (const auto& [x, y] : s.points)
      data.push_back(json::array({chart_value(x), chart_value(y)}));
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

void mark_band(json& option, double from, double to, const std::string& label) {
  if (option["series"].empty()) return;
  option["series"][0]["markArea"] = {
      {"silent", true},
      {"itemStyle", {{"color", "rgba(120,120,120,0.10)"}}},
      {"label", {{"show", true}, {"position", "insideTop"}, {"color", "#555"}}},
      {"data", json::array({json::array({json{{"name", label}, {"xAxis", chart_value(from)}},
                                         json{{"xAxis", chart_value(to)}}})})}};
}

void mark_level(json& option, double y, const std::string& label) {
  if (option["series"].empty()) return;
  option["series"][0]["markLine"] = {
      {"silent", true},
      {"symbol", "none"},
      {"lineStyle", {{"type", "dashed"}, {"color", "#c0392b"}}},
      {"label", {{"formatter", label}, {"position", "insideEndTop"}, {"color", "#c0392b"}}},
      {"data", json::array({json{{"yAxis", chart_value(y)}}})}};
}

std::string mechanism_color(const std::string& mechanism) {
  static const std::map<std::string, std::string> kColors = {
      {"exclusive", "#7a7a7a"}, {"naive", "#e07b00"}, {"mps", "#1f5fbf"}, {"mig", "#2e9e44"}};
  auto it = kColors.find(mechanism);
  return it == kColors.end() ? "#8e44ad" : it->second;
}

const std::string& job_color(size_t i) {
  static const std::vector<std::string> kColors = {"#1f5fbf", "#e8710a", "#1e8e3e", "#d93025",
                                                   "#9334e6", "#12a4af", "#f538a0", "#795548",
                                                   "#5f6368", "#b8a300"};
  return kColors[i % kColors.size()];
}

}  // namespace colo
