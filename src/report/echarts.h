// The chart vocabulary of colo's reports: the ECharts options of bar and line
// charts, the marks drawn over them, and the colours that name mechanisms
// and jobs. Pure.
//
// Every chart has a title saying what it shows and axis names with units;
// mechanisms keep one colour everywhere (exclusive grey, naive orange, mps
// blue, mig green); configurations that did not fit or were not run appear
// as labelled gaps; animation is off so a screenshot taken at any moment is
// complete.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/units.h"
#include "report/case_metrics.h"

namespace colo {

// Bytes in a GiB, the unit of memory on the charts.
inline constexpr auto kBytesPerGiB = static_cast<double>(kGiB);

// A value as a chart draws it: four significant digits are plenty to draw
// and to read.
double chart_value(double value);

// Colour of a mechanism in every chart ("#1f5fbf" for mps, ...).
std::string mechanism_color(const std::string& mechanism);
// The colour of the `i`th job in the charts of what the jobs learned (ten
// colours, then again).
const std::string& job_color(size_t i);
// `color` ("#rrggbb") mixed with white; `amount` 0 keeps it, 1 gives white.
std::string lighter(const std::string& color, double amount);

// What every chart starts from: the title and subtitle, a legend, the plot's
// margins, an axis tooltip, a white background and no animation.
nlohmann::json base_option(const std::string& title, const std::string& subtitle);
// An axis of `type` ("category" or "value") named `name` along its middle.
nlohmann::json axis(const std::string& type, const std::string& name);

// A bar per series in each category, median height, whiskers from the
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
// Every category labelled, slanted when there are more than six; each bar
// labelled with its value unless some bar has whiskers.
nlohmann::json bar_option(const std::string& title, const std::string& subtitle,
                          const std::vector<std::string>& categories, const std::string& x_name,
                          const std::string& y_name, const std::vector<BarSeries>& series,
                          std::optional<double> y_max = std::nullopt);

struct LineSeries {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // x, y
};
// Lines over a value axis, without symbols. A legend that one row cannot
// hold wraps onto up to 8 rows (the plot moves down to make room), past
// that it scrolls.
nlohmann::json line_option(const std::string& title, const std::string& subtitle,
                           const std::string& x_name, const std::string& y_name,
                           const std::vector<LineSeries>& series,
                           std::optional<double> y_max = std::nullopt);

// Adds a shaded band from `from` to `to` on the x axis, labelled, to the
// first series of a line chart; nothing when it has none.
void mark_band(nlohmann::json& option, double from, double to, const std::string& label);
// Adds a dashed horizontal line at `y` with a label to the first series.
void mark_level(nlohmann::json& option, double y, const std::string& label);

}  // namespace colo
