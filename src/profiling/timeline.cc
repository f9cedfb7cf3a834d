#include "profiling/timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "common/text.h"
#include "common/units.h"
#include "common/user_file.h"
#include "profiling/windows.h"

namespace colo {
namespace {

// A lane's spans within [from, to] as a union of disjoint intervals, in order.
std::vector<std::pair<double, double>> merged(const std::vector<KernelSpan>& spans, double from,
                                              double to) {
  std::vector<std::pair<double, double>> in;
  for (const KernelSpan& s : spans) {
    const double a = std::max(s.start_us, from);
    const double b = std::min(s.end_us, to);
    if (b > a) in.emplace_back(a, b);
  }
  std::sort(in.begin(), in.end());
  std::vector<std::pair<double, double>> out;
  for (const auto& [a, b] : in) {
    if (!out.empty() && a <= out.back().second) {
      out.back().second = std::max(out.back().second, b);
    } else {
      out.emplace_back(a, b);
    }
  }
  return out;
}

std::optional<double> parse_number(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string ms(double us) { return fmt::format("{:.1f} ms", us / 1000); }

std::string pct(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100 * part / whole) : "-";
}

}  // namespace

Result<std::vector<KernelSpan>> read_kernel_spans(const std::string& dir, const std::string& path) {
  Result<UserFile> file = open_window_file(dir, path);
  if (!file.ok()) return file.error();
  if (file->size() > kMaxKernelSpansBytes) {
    return Error(fmt::format("{} holds {}, more than the {} colo reads of it", path,
                             format_bytes(file->size()), format_bytes(kMaxKernelSpansBytes)));
  }
  Result<std::string> text = read_user_file_range(*file, 0, kMaxKernelSpansBytes, path);
  if (!text.ok()) return text.error();
  std::vector<KernelSpan> spans;
  std::string_view rest = *text;
  for (int number = 1; !rest.empty(); ++number) {
    const size_t newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
    if (line.empty()) continue;
    const size_t first = line.find('\t');
    const size_t second = first == std::string::npos ? first : line.find('\t', first + 1);
    std::optional<double> start, end;
    if (second != std::string::npos) {
      start = parse_number(line.substr(0, first));
      end = parse_number(line.substr(first + 1, second - first - 1));
    }
    if (!start || !end || *end < *start) {
      return Error(
          fmt::format("{}:{}: expected 'start_us<TAB>end_us<TAB>name' with end at or after start",
                      path, number));
    }
    spans.push_back({*start, *end, std::string(line.substr(second + 1))});
  }
  return spans;
}

std::string kernel_family(const std::string& name) {
  const std::string lower = ascii_lower(name);
  auto has = [&](std::initializer_list<std::string_view> words) {
    return std::any_of(words.begin(), words.end(),
                       [&](std::string_view w) { return lower.find(w) != std::string::npos; });
  };
  // The order matters: cuDNN's convolutions are implicit GEMMs.
  if (has({"memcpy"})) return "memcpy";
  if (has({"memset"})) return "memset";
  if (has({"conv", "fprop", "dgrad", "wgrad", "implicit_gemm", "winograd"})) return "convolution";
  if (has({"gemm", "xmma", "cutlass", "matmul", "cublas"})) return "GEMM";
  if (has({"norm"})) return "normalization";
  if (has({"nchwtonhwc", "nhwctonchw", "transpose", "permute", "copy_kernel"})) return "layout";
  if (has({"softmax"})) return "softmax";
  if (has({"multi_tensor", "adam", "sgd", "optimizer"})) return "optimizer";
  if (has({"reduce", "reduction"})) return "reduction";
  if (has({"elementwise", "vectorized", "unrolled"})) return "elementwise";
  return "other";
}

std::map<std::string, std::pair<double, int64_t>> time_by_family(
    const std::vector<KernelSpan>& spans, double from_us, double to_us) {
  std::map<std::string, std::pair<double, int64_t>> out;
  for (const KernelSpan& k : spans) {
    const double a = std::max(k.start_us, from_us);
    const double b = std::min(k.end_us, to_us);
    if (b < a) continue;
    auto& [time, count] = out[kernel_family(k.name)];
    time += b - a;
    ++count;
  }
  return out;
}

double TimelineStats::overlap_us() const {
  double sum = 0;
  for (size_t k = 2; k < lanes_busy_us.size(); ++k) sum += lanes_busy_us[k];
  return sum;
}

TimelineStats timeline_stats(const std::vector<TimelineLane>& lanes, double from_us, double to_us) {
  TimelineStats s;
  s.from_us = from_us;
  s.to_us = std::max(from_us, to_us);
  const size_t n = lanes.size();
  s.busy_us.assign(n, 0);
  s.only_us.assign(n, 0);
  s.shared_us.assign(n, 0);
  s.lanes_busy_us.assign(n + 1, 0);
  s.families.resize(n);
  // Each lane's union; then a sweep over every boundary, knowing which
  // lanes are busy between two of them.
  std::vector<std::pair<double, std::pair<int, size_t>>> edges;  // time, (+1 | -1, lane)
  for (size_t i = 0; i < n; ++i) {
    s.families[i] = time_by_family(lanes[i].spans, s.from_us, s.to_us);
    for (const auto& [a, b] : merged(lanes[i].spans, s.from_us, s.to_us)) {
      s.busy_us[i] += b - a;
      edges.push_back({a, {+1, i}});
      edges.push_back({b, {-1, i}});
    }
  }
  std::sort(edges.begin(), edges.end());
  std::vector<bool> busy(n, false);
  size_t count = 0;
  double at = s.from_us;
  auto account = [&](double until) {
    const double length = until - at;
    if (length <= 0) return;
    s.lanes_busy_us[count] += length;
    for (size_t i = 0; i < n; ++i) {
      if (!busy[i]) continue;
      (count == 1 ? s.only_us[i] : s.shared_us[i]) += length;
    }
  };
  for (const auto& [time, edge] : edges) {
    account(time);
    at = std::max(at, time);
    const auto& [delta, lane] = edge;
    busy[lane] = delta > 0;
    count = delta > 0 ? count + 1 : count - 1;
  }
  account(s.to_us);
  return s;
}

std::string format_timeline(const std::vector<TimelineLane>& lanes, const TimelineStats& s) {
  const double window = s.to_us - s.from_us;
  std::string out = fmt::format(
      "{} jobs over the same {} on one clock: the GPU ran none of their kernels {} of it ({}), "
      "kernels of two jobs or more at once {} ({})\n",
      lanes.size(), ms(window), ms(s.idle_us()), pct(s.idle_us(), window), ms(s.overlap_us()),
      pct(s.overlap_us(), window));
  out += fmt::format("  {:<24} {:>12} {:>7} {:>12} {:>12}\n", "JOB", "KERNELS", "BUSY", "ALONE",
                     "BESIDE OTHERS");
  for (size_t i = 0; i < lanes.size(); ++i) {
    out += fmt::format("  {:<24} {:>12} {:>7} {:>12} {:>12}\n", lanes[i].job, ms(s.busy_us[i]),
                       pct(s.busy_us[i], window), ms(s.only_us[i]), ms(s.shared_us[i]));
  }
  std::set<std::string> families;
  for (const auto& lane : s.families)
    for (const auto& [family, value] : lane) families.insert(family);
  if (families.empty()) return out;
  out += "  kernel time by family (summed spans; count):\n";
  out += fmt::format("  {:<14}", "FAMILY");
  for (const TimelineLane& lane : lanes) out += fmt::format(" {:>24}", lane.job);
  out += "\n";
  for (const std::string& family : families) {
    out += fmt::format("  {:<14}", family);
    for (const auto& lane : s.families) {
      auto it = lane.find(family);
      out += fmt::format(
          " {:>24}",
          it == lane.end() ? "-" : fmt::format("{} ({})", ms(it->second.first), it->second.second));
    }
    out += "\n";
  }
  return out;
}

namespace {

constexpr double kWidth = 1200;
constexpr double kLeft = 160;
constexpr double kLane = 26;
constexpr std::array<const char*, 8> kColors = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1",
                                                "#76b7b2", "#edc948", "#9c755f", "#bab0ac"};

// Where two lanes or more were busy, and where none was, within [from, to].
std::pair<std::vector<std::pair<double, double>>, std::vector<std::pair<double, double>>>
overlap_and_idle(const std::vector<std::vector<std::pair<double, double>>>& unions, double from,
                 double to) {
  std::vector<std::pair<double, int>> edges;
  for (const auto& u : unions) {
    for (const auto& [a, b] : u) {
      edges.emplace_back(a, +1);
      edges.emplace_back(b, -1);
    }
  }
  std::sort(edges.begin(), edges.end());
  std::vector<std::pair<double, double>> overlap, idle;
  int count = 0;
  double at = from;
  for (const auto& [time, delta] : edges) {
    if (time > at && count >= 2) overlap.emplace_back(at, time);
    if (time > at && count == 0) idle.emplace_back(at, time);
    at = std::max(at, time);
    count += delta;
  }
  if (to > at) idle.emplace_back(at, to);
  return {overlap, idle};
}

// One panel over [from, to]: a row per lane, then "two jobs or more" and
// "GPU idle". Each pixel column is drawn as tall as the share of its time
// the row was busy, so that a window of seconds shows where kernels were
// dense, and a zoom of milliseconds shows each kernel.
std::string panel(const std::string& caption, const std::vector<std::string>& names,
                  const std::vector<std::vector<std::pair<double, double>>>& unions, double from,
                  double to, double y0) {
  const double span = std::max(to - from, 1e-3);
  const int columns = static_cast<int>(kWidth - kLeft - 10);
  const double per_column = span / columns;
  auto [overlap, idle] = overlap_and_idle(unions, from, to);
  std::string svg = fmt::format("<text x='4' y='{:.0f}' font-weight='bold'>{}</text>\n", y0 + 12,
                                escape_html(caption));
  auto row = [&](const std::string& name, const std::vector<std::pair<double, double>>& busy,
                 double y, const char* color) {
    svg += fmt::format("<text x='4' y='{:.0f}'>{}</text>\n", y + 14, escape_html(name));
    std::vector<double> share(static_cast<size_t>(columns), 0);
    for (const auto& [a0, b0] : busy) {
      const double a = std::max(a0, from), b = std::min(b0, to);
      if (b <= a) continue;
      for (int c = static_cast<int>((a - from) / per_column);
           c < columns && from + c * per_column < b; ++c) {
        const double lo = std::max(a, from + c * per_column);
        const double hi = std::min(b, from + (c + 1) * per_column);
        if (hi > lo) share[static_cast<size_t>(c)] += (hi - lo) / per_column;
      }
    }
    for (int c = 0; c < columns; ++c) {
      const double h = std::min(share[static_cast<size_t>(c)], 1.0) * (kLane - 6);
      if (h < 0.3) continue;
      svg += fmt::format("<rect x='{}' y='{:.1f}' width='1' height='{:.1f}' fill='{}'/>", kLeft + c,
                         y + (kLane - 6) - h, h, color);
    }
    svg += "\n";
  };
  double y = y0 + 20;
  for (size_t i = 0; i < names.size(); ++i, y += kLane)
    row(names[i], unions[i], y, kColors[i % kColors.size()]);
  row("two jobs or more", overlap, y, "#e15759");
  y += kLane;
  row("GPU idle", idle, y, "#999999");
  y += kLane + 4;
  for (int tick = 0; tick <= 10; ++tick) {
    const double x = kLeft + (kWidth - kLeft - 10) * tick / 10.0;
    svg += fmt::format(
        "<line x1='{0:.1f}' x2='{0:.1f}' y1='{1:.0f}' y2='{2:.0f}' stroke='#888'/>"
        "<text x='{0:.1f}' y='{3:.0f}' text-anchor='{6}'>{4:.{5}f} ms</text>\n",
        x, y, y + 5, y + 18, span / 1000 * tick / 10.0, span < 20'000 ? 2 : 0,
        tick == 10 ? "end" : "middle");
  }
  return svg;
}

}  // namespace

std::string timeline_html(const std::string& title, const std::vector<TimelineLane>& lanes,
                          const TimelineStats& s) {
  std::vector<std::string> names;
  std::vector<std::vector<std::pair<double, double>>> unions;
  for (const TimelineLane& lane : lanes) {
    names.push_back(lane.job);
    unions.push_back(merged(lane.spans, s.from_us, s.to_us));
  }
  // The zoom: 5 ms around where kernels of two jobs or more ran at once the
  // longest, else from the window's start.
  constexpr double kZoomUs = 5'000;
  auto [overlap, idle] = overlap_and_idle(unions, s.from_us, s.to_us);
  double zoom_from = s.from_us;
  double longest = 0;
  for (const auto& [a, b] : overlap) {
    if (b - a > longest) {
      longest = b - a;
      zoom_from = std::max(s.from_us, (a + b) / 2 - kZoomUs / 2);
    }
  }
  const double zoom_to = std::min(s.to_us, zoom_from + kZoomUs);
  const double panel_height = kLane * static_cast<double>(lanes.size() + 2) + 50;
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{:.0f}' height='{:.0f}' "
      "font-family='sans-serif' font-size='12'>\n",
      kWidth, 2 * panel_height + 10);
  svg += panel(fmt::format("the whole window ({:.0f} ms)", (s.to_us - s.from_us) / 1000), names,
               unions, s.from_us, s.to_us, 0);
  svg += panel(fmt::format("zoom: {:.1f} ms from {:.1f} ms{}", (zoom_to - zoom_from) / 1000,
                           (zoom_from - s.from_us) / 1000,
                           longest > 0 ? " (around the longest overlap)" : ""),
               names, unions, zoom_from, zoom_to, panel_height + 10);
  svg += "</svg>\n";
  return fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{0}</title></head>\n"
      "<body style='font-family:sans-serif'>\n<h2>{0}</h2>\n<p>Each job's GPU kernels over the "
      "same window, on the host's clock; each pixel column is as tall as the share of its time "
      "the row was busy. Then where kernels of two jobs or more ran at once, and where the GPU "
      "ran none of theirs; below, a 5 ms zoom where single kernels show.</p>\n{1}<pre>{2}</pre>\n"
      "</body></html>\n",
      escape_html(title), svg, escape_html(format_timeline(lanes, s)));
}

}  // namespace colo
