#include "report/html_report.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "common/paths.h"
#include "common/text.h"
#include "common/units.h"

namespace colo {
namespace {

// JSON safe inside a <script> element: no '<', '>' or '&' at all (JSON has
// them only inside strings, where \u escapes mean the same), so no text can
// end the element ("</script"), nor open a comment or script ("<!--",
// "<script") after which "</script>" would no longer end it.
std::string script_json(const nlohmann::json& value) {
  std::string text = value.dump();
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A table cell as a reader wants it: bytes in GiB/MiB, long decimals shortened.
std::string display_cell(const std::string& header, const std::string& cell) {
  if (cell.empty()) return "&ndash;";
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(cell.c_str(), &end);
  if (end == cell.c_str() || *end != '\0' || errno != 0) {
    // Long text (a kernel's demangled name) is cut, whole on hover and in the CSV.
    constexpr size_t kShown = 64;
    if (cell.size() <= kShown) return escape_html(cell);
    size_t cut = kShown;
    while (cut > 0 && (static_cast<unsigned char>(cell[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
    return fmt::format("<span title=\"{}\">{}&hellip;</span>", escape_html(cell),
                       escape_html(cell.substr(0, cut)));
  }
  if (header.find("bytes") != std::string::npos && value >= 0) {
    return escape_html(format_bytes(static_cast<uint64_t>(value)));
  }
  if (cell.find_first_of(".eE") == std::string::npos) return escape_html(cell);
  const double magnitude = std::abs(value);
  if (magnitude >= 100) return fmt::format("{:.0f}", value);
  if (magnitude >= 1) return fmt::format("{:.2f}", value);
  return fmt::format("{:.3g}", value);
}

std::string render_table(const Table& table) {
  std::string out = fmt::format("<h3>{}</h3>\n<p class=\"caption\">{}</p>\n",
                                escape_html(table.title), escape_html(table.caption));
  out += "<div class=\"table-wrap\"><table>\n<thead><tr>";
  for (const std::string& h : table.header) out += "<th>" + escape_html(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : table.rows) {
    out += "<tr>";
    for (size_t c = 0; c < table.header.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      if (static_cast<int>(c) == table.link_column && !cell.empty()) {
        // The file's name, its whole path on hover.
        out += fmt::format("<td><a href=\"file://{0}\" title=\"{0}\">{1}</a></td>",
                           escape_html(cell), escape_html(cell.substr(cell.rfind('/') + 1)));
      } else {
        out += "<td>" + display_cell(table.header[c], cell) + "</td>";
      }
    }
    out += "</tr>\n";
  }
  out += fmt::format(
      "</tbody></table></div>\n<p class=\"csv\">Numbers in full precision: <a "
      "href=\"csv/{0}.csv\">csv/{0}.csv</a></p>\n",
      escape_html(table.name));
  return out;
}

constexpr const char* kStyle = R"css(
body { font-family: sans-serif; margin: 0 auto; max-width: 1060px; padding: 0 16px 48px;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { border-bottom: 2px solid #ddd; padding-bottom: 4px; margin-top: 2em; }
.facts { color: #555; margin: 0; padding: 0; list-style: none; }
.banner { background: #fff3cd; border: 2px solid #d39e00; color: #6b4f00; padding: 10px 14px;
          font-weight: bold; margin: 12px 0; }
.chart { width: 100%; max-width: 1000px; height: 560px; border: 1px solid #eee; }
.caption { color: #444; max-width: 1000px; }
.figure { margin: 28px 0; }
.csv { font-size: 0.9em; color: #666; }
.controls { font-size: 0.9em; color: #444; }
table { border-collapse: collapse; font-size: 0.88em; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; }
td:first-child, th:first-child { text-align: left; }
.table-wrap { overflow-x: auto; max-width: 100%; }
pre { background: #f7f7f7; padding: 12px; white-space: pre-wrap; font-size: 0.88em; }
pre.table { white-space: pre; overflow-x: auto; }
.toc { columns: 2; }
.chart-error { color: #b00020; padding: 20px; }
footer { margin-top: 3em; color: #777; font-size: 0.85em; }
)css";

// Draws every element with a data-figure attribute from the JSON in
// #colo-figures. Bars with a spread get whiskers from a custom series whose
// x offset matches ECharts' bar layout (barCategoryGap 30%, barGap 10%).
constexpr const char* kDrawScript = R"js(
(function () {
  var CATEGORY_GAP = 0.3, BAR_GAP = 0.1;
  function whiskers(params, api) {
    var category = api.value(0), low = api.value(1), high = api.value(2);
    var index = api.value(3), bars = api.value(4);
    var band = api.size([1, 0])[0];
    var used = band * (1 - CATEGORY_GAP);
    var width = used / (bars + (bars - 1) * BAR_GAP);
    var x = api.coord([category, 0])[0] - used / 2 + index * width * (1 + BAR_GAP) + width / 2;
    var top = api.coord([category, high])[1], bottom = api.coord([category, low])[1];
    var half = Math.max(3, width * 0.25);
    var style = { stroke: '#222', lineWidth: 1.5 };
    return { type: 'group', children: [
      { type: 'line', shape: { x1: x, y1: top, x2: x, y2: bottom }, style: style },
      { type: 'line', shape: { x1: x - half, y1: top, x2: x + half, y2: top }, style: style },
      { type: 'line', shape: { x1: x - half, y1: bottom, x2: x + half, y2: bottom }, style: style }
    ] };
  }
  function prepare(option) {
    (option.series || []).forEach(function (s) {
      if (s.colo_errorbar) { s.renderItem = whiskers; delete s.colo_errorbar; }
    });
    return option;
  }
  // Each series' points smoothed by weight w (0: as reported): an
  // exponential moving average over the finite values, debiased at the start.
  function smoothed(points, w) {
    var last = 0, n = 0;
    return points.map(function (p) {
      if (w === 0 || !isFinite(p[1])) return p;
      last = last * w + (1 - w) * p[1];
      n += 1;
      return [p[0], last / (1 - Math.pow(w, n))];
    });
  }
  // The log-scale switch and the smoothing slider beside a chart of curves.
  function controls(el, chart, option) {
    var box = document.querySelector('[data-controls="' + el.getAttribute('data-figure') + '"]');
    if (!box) return;
    var log = box.querySelector('[data-log]'), smooth = box.querySelector('[data-smooth]');
    var shown = box.querySelector('output');
    var raw = option.series.map(function (s) { return s.data; });
    log.checked = option.yAxis && option.yAxis.type === 'log';
    function redraw() {
      var w = Number(smooth.value);
      shown.textContent = w.toFixed(2);
      chart.setOption({
        yAxis: { type: log.checked ? 'log' : 'value' },
        series: raw.map(function (data) { return { data: smoothed(data, w) }; })
      });
    }
    log.addEventListener('change', redraw);
    smooth.addEventListener('input', redraw);
    // A link may set them: index.html#smooth=0.9&log=1.
    var wanted = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var p = kv.split('=');
      if (p[0]) wanted[p[0]] = decodeURIComponent(p[1] || '');
    });
    if ('smooth' in wanted) smooth.value = wanted.smooth;
    if ('log' in wanted) log.checked = wanted.log === '1';
    if ('smooth' in wanted || 'log' in wanted) redraw();
  }
  var figures = JSON.parse(document.getElementById('colo-figures').textContent);
  var charts = [];
  figures.forEach(function (f) {
    var el = document.querySelector('[data-figure="' + f.name + '"]');
    if (!el) return;
    try {
      var chart = echarts.init(el, null, { renderer: 'svg' });
      chart.setOption(prepare(f.option));
      if (f.controls) controls(el, chart, f.option);
      charts.push(chart);
      el.setAttribute('data-rendered', 'yes');
    } catch (e) {
      el.innerHTML = '<div class="chart-error">This chart could not be drawn: ' +
          String(e).replace(/</g, '&lt;') + '</div>';
    }
  });
  window.addEventListener('resize', function () { charts.forEach(function (c) { c.resize(); }); });
  var version = document.getElementById('echarts-version');
  if (version) version.textContent = echarts.version;
})();
)js";

std::string figures_json(const std::vector<const Figure*>& figures) {
  nlohmann::json all = nlohmann::json::array();
  for (const Figure* f : figures) {
    all.push_back({{"name", f->name}, {"option", f->option}, {"controls", f->curve_controls}});
  }
  return script_json(all);
}

std::string figure_block(const Figure& f) {
  std::string heading = escape_html(f.title);
  if (!f.paper_ref.empty()) heading += " <small>(paper " + escape_html(f.paper_ref) + ")</small>";
  const std::string controls =
      f.curve_controls
          ? fmt::format(
                "<p class=\"controls\" data-controls=\"{}\"><label><input type=\"checkbox\" "
                "data-log> log scale</label> <label>smoothing <input type=\"range\" min=\"0\" "
                "max=\"0.99\" step=\"0.01\" value=\"0\" data-smooth> "
                "<output>0.00</output></label></p>\n",
                escape_html(f.name))
          : "";
  return fmt::format(
      "<div class=\"figure\" id=\"figure-{0}\">\n<h3>{1}</h3>\n<p class=\"caption\">{2}</p>\n"
      "{3}<div class=\"chart\" data-figure=\"{0}\"></div>\n<p class=\"csv\">Numbers behind "
      "this chart: <a href=\"csv/{0}.csv\">csv/{0}.csv</a> · single chart: <a "
      "href=\"figures/{0}.html\">figures/{0}.html</a></p>\n</div>\n",
      escape_html(f.name), heading, escape_html(f.caption), controls);
}

constexpr const char* kSimulatedBanner =
    "SIMULATED: these numbers come from colo's simulated GPU, not from measurements on a real "
    "one. They show what the report looks like, not how a GPU behaves.";

Status write_file(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) return Error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  return OkStatus();
}

}  // namespace

std::string render_index_html(const ReportContent& content) {
  std::vector<const Figure*> figures;
  std::string body;
  std::string toc = "<ul class=\"toc\">\n";
  int section_number = 0;
  for (const Section& section : content.sections) {
    ++section_number;
    const std::string anchor = fmt::format("section-{}", section_number);
    toc += fmt::format("<li><a href=\"#{}\">{}</a></li>\n", anchor, escape_html(section.heading));
    body += fmt::format("<h2 id=\"{}\">{}</h2>\n", anchor, escape_html(section.heading));
    if (!section.intro.empty()) body += "<p>" + escape_html(section.intro) + "</p>\n";
    if (!section.preformatted.empty())
      body += std::string(section.preformatted_wraps ? "<pre>" : "<pre class=\"table\">") +
              escape_html(section.preformatted) + "</pre>\n";
    for (const Figure& f : section.figures) {
      figures.push_back(&f);
      body += figure_block(f);
    }
    for (const Table& t : section.tables) {
      if (t.show_in_page) body += render_table(t);
    }
  }
  toc += "</ul>\n";

  std::string facts;
  for (const std::string& fact : content.facts) facts += "<li>" + escape_html(fact) + "</li>\n";
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>" + escape_html(content.title) + "</title>\n<style>" + kStyle + "</style>\n";
  out += "</head>\n<body>\n<h1>" + escape_html(content.title) + "</h1>\n";
  out += "<ul class=\"facts\">\n" + facts + "</ul>\n";
  if (content.simulated)
    out += "<div class=\"banner\">" + escape_html(kSimulatedBanner) + "</div>\n";
  out +=
      "<p>How to read this page: every chart has a caption saying what it shows. Hover over a "
      "chart for exact values; click a legend entry to hide or show a series. Each chart's "
      "numbers are in the CSV file linked under it. docs/report.md in colo explains every "
      "measurement.</p>\n";
  out += toc + body;
  out +=
      "<footer>Written by colo report. Charts drawn with Apache ECharts <span "
      "id=\"echarts-version\"></span> (Apache License 2.0), embedded in this file; the page "
      "needs no network.</footer>\n";
  out += "<script>\n";
  out += echarts_js();
  out += "\n</script>\n<script type=\"application/json\" id=\"colo-figures\">";
  out += figures_json(figures);
  out += "</script>\n<script>";
  out += kDrawScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

std::string render_figure_html(const Figure& figure) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>" + escape_html(figure.title) + "</title>\n";
  out +=
      "<style>html, body { margin: 0; padding: 0; background: #fff; } .chart { width: 1000px; "
      "height: 600px; } .chart-error { color: #b00020; padding: 20px; font-family: sans-serif; "
      "}</style>\n</head>\n<body>\n";
  out += fmt::format("<div class=\"chart\" data-figure=\"{}\"></div>\n", escape_html(figure.name));
  out += "<script src=\"echarts.min.js\"></script>\n";
  out += "<script type=\"application/json\" id=\"colo-figures\">";
  out += figures_json({&figure});
  out += "</script>\n<script>";
  out += kDrawScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

Result<WrittenReport> write_html_report(const ReportContent& content, const std::string& out_dir) {
  // `--out report/` names the same directory as `report` (and prints no "report//index.html").
  std::string dir = out_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  for (const std::string& sub : {dir, dir + "/figures", dir + "/csv"}) {
    if (Status made = make_dirs(sub); !made) return made.error();
  }
  WrittenReport written;
  written.index_html = dir + "/index.html";
  if (Status s = write_file(written.index_html, render_index_html(content)); !s) return s.error();
  if (Status s = write_file(dir + "/figures/echarts.min.js", echarts_js()); !s) return s.error();
  for (const Section& section : content.sections) {
    for (const Figure& f : section.figures) {
      const std::string page = dir + "/figures/" + f.name + ".html";
      if (Status s = write_file(page, render_figure_html(f)); !s) {
        return s.error();
      }
      written.figure_pages.push_back(page);
      const std::string csv = dir + "/csv/" + f.name + ".csv";
      if (Status s = write_file(csv, to_csv(f.data)); !s) return s.error();
      written.csv_files.push_back(csv);
    }
    for (const Table& t : section.tables) {
      const std::string csv = dir + "/csv/" + t.name + ".csv";
      if (Status s = write_file(csv, to_csv(t)); !s) return s.error();
      written.csv_files.push_back(csv);
    }
  }
  written.summary_txt = dir + "/summary.txt";
  if (Status s = write_file(written.summary_txt, content.summary_text); !s) return s.error();
  return written;
}

}  // namespace colo
