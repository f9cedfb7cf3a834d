#include "views/top_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/units.h"
#include "jobs/job_state.h"

namespace colo {
namespace {

constexpr TopSort kSortOrder[] = {TopSort::kQueue,    TopSort::kId,     TopSort::kOwner,
                                  TopSort::kGpu,      TopSort::kEpoch,  TopSort::kRate,
                                  TopSort::kSlowdown, TopSort::kMemory, TopSort::kName};

// "30.0G", "512M", "1.2T": binary units, at most 5 characters.
std::string short_bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "K", "M", "G", "T"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1000.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{}B", bytes);
  return value >= 10 ? fmt::format("{:.0f}{}", value, kUnits[unit])
                     : fmt::format("{:.1f}{}", value, kUnits[unit]);
}

std::string rate_text(const std::optional<double>& rate) {
  if (!rate) return "-";
  if (*rate >= 10'000) return fmt::format("{:.1f}k/s", *rate / 1000);
  return fmt::format("{:.0f}/s", *rate);
}

// ASCII only: every character is one cell, so widths are byte counts.
std::string ascii(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  return out;
}

size_t line_width(const TopLine& line) {
  size_t n = 0;
  for (const TopSpan& s : line) n += s.text.size();
  return n;
}

// Cuts the line to `width` cells.
TopLine fit(TopLine line, int width) {
  TopLine out;
  size_t left = static_cast<size_t>(std::max(0, width));
  for (TopSpan& s : line) {
    if (left == 0) break;
    if (s.text.size() > left) s.text.resize(left);
    left -= s.text.size();
    out.push_back(std::move(s));
  }
  return out;
}

// Pads the line with spaces in `style` to `width` cells.
void pad(TopLine& line, int width, TopStyle style) {
  const size_t have = line_width(line);
  if (static_cast<int>(have) < width)
    line.push_back({std::string(static_cast<size_t>(width) - have, ' '), style});
}

TopStyle level_style(double fraction) {
  if (fraction >= 0.8) return TopStyle::kBarHigh;
  if (fraction >= 0.5) return TopStyle::kBarMid;
  return TopStyle::kBarLow;
}

// "SM[||||||        45%]": `inner` cells between the brackets, the text
// right-aligned over the bar's end. An absent value draws an empty bar with "n/a".
void add_bar(TopLine& line, const std::string& label, std::optional<double> fraction,
             const std::string& text, int inner) {
  line.push_back({label, TopStyle::kBold});
  line.push_back({"[", TopStyle::kDim});
  const std::string shown = fraction ? text : "n/a";
  const double f = fraction ? std::clamp(*fraction, 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(std::lround(f * inner));
  const int text_at = std::max(0, inner - static_cast<int>(shown.size()));
  std::string bar(static_cast<size_t>(inner), ' ');
  for (int i = 0; i < filled; ++i) bar[static_cast<size_t>(i)] = '|';
  // Split into the filled part (before the text), the gap, and the text.
  const int bar_end = std::min(filled, text_at);
  if (bar_end > 0) line.push_back({bar.substr(0, static_cast<size_t>(bar_end)), level_style(f)});
  if (text_at > bar_end)
    line.push_back(
        {bar.substr(static_cast<size_t>(bar_end), static_cast<size_t>(text_at - bar_end)),
         TopStyle::kNormal});
  line.push_back({shown.substr(0, static_cast<size_t>(inner - text_at)), TopStyle::kBold});
  line.push_back({"]", TopStyle::kDim});
}

std::string end_text(const QueueJob& j, UnixMillis now_ms) {
  if (j.ended_ms) return format_duration_ms(std::max<int64_t>(0, now_ms - *j.ended_ms)) + " ago";
  if (j.state == "running" && j.predicted_end_ms) {
    return *j.predicted_end_ms > now_ms ? "in " + format_duration_ms(*j.predicted_end_ms - now_ms)
                                        : "due";
  }
  return "-";
}

// MPS limits, the MIG instance, or "-".
std::string share_text(const QueueJob& j) {
  if (!j.mig_instance.empty()) return j.mig_instance;
  std::string out;
  if (j.mps_sm_share_pct) out += fmt::format("{}%", *j.mps_sm_share_pct);
  if (j.mps_memory_limit_bytes)
    out += (out.empty() ? "" : " ") + short_bytes(*j.mps_memory_limit_bytes);
  return out.empty() ? "-" : out;
}

// A job's GPU memory now: its processes' sum, else its peak.
std::optional<uint64_t> job_memory(const QueueJob& j, const ServiceSnapshot& s) {
  uint64_t sum = 0;
  bool any = false;
  for (const ProcessView& p : s.processes) {
    if (p.job == j.id && p.used_memory_bytes) {
      sum += *p.used_memory_bytes;
      any = true;
    }
  }
  if (any) return sum;
  return j.peak_memory_bytes;
}

TopStyle state_style(const std::string& state) {
  if (ended_well(state)) return TopStyle::kGood;
  if (state == "failed" || state == "oom" || state == "killed") return TopStyle::kBad;
  if (state == "running") return TopStyle::kBold;
  return TopStyle::kNormal;
}

bool matches(const QueueJob& j, const std::string& filter) {
  if (filter.empty()) return true;
  auto has = [&](const std::string& field) { return field.find(filter) != std::string::npos; };
  return has(j.name) || has(j.owner) || has(j.state) || has(j.group) ||
         std::to_string(j.id) == filter;
}

int sign(int c) { return c < 0 ? -1 : (c > 0 ? 1 : 0); }

// Compares optional numbers with absent values last whichever the direction.
template <class T>
int compare_optional(const std::optional<T>& a, const std::optional<T>& b) {
  if (!a && !b) return 0;
  if (!a) return 2;  // absent after present, both directions
  if (!b) return -2;
  return *a < *b ? -1 : (*b < *a ? 1 : 0);
}

// The widths of the table's columns that vary: NAME's, and QOS's (0: no
// such column, when every job shown is normal).
struct ColumnWidths {
  size_t name = 4;
  size_t qos = 0;
};

// ID OWNER NAME STATE GPU MECH EPOCH RATE SLOW [QOS] MEM SHARE END NOTE.
std::string table_text(const std::string& id, const std::string& owner, const std::string& name,
                       const ColumnWidths& widths, const std::string& state, const std::string& gpu,
                       const std::string& mechanism, const std::string& epoch,
                       const std::string& rate, const std::string& slow, const std::string& qos,
                       const std::string& memory, const std::string& share, const std::string& end,
                       const std::string& note) {
  std::string shown = name;
  if (shown.size() > widths.name) shown = shown.substr(0, widths.name - 1) + "~";
  const std::string qos_cell =
      widths.qos > 0 ? fmt::format(" {:<{}}", qos.substr(0, widths.qos), widths.qos) : "";
  return fmt::format(
      "{:>5} {:<9} {:<{}} {:<11} {:>3} {:<9} {:>5} {:>8} {:>5}{} {:>6} {:<10} {:<10} {}", id,
      owner.substr(0, 9), shown, widths.name, state.substr(0, 11), gpu, mechanism.substr(0, 9),
      epoch, rate, slow, qos_cell, memory, share.substr(0, 10), end.substr(0, 10), note);
}

// Wide enough for the names (as listed: `names`, one per job) and classes
// shown, within limits.
ColumnWidths column_widths(const std::vector<const QueueJob*>& jobs,
                           const std::vector<std::string>& names) {
  ColumnWidths widths;
  for (const std::string& name : names) widths.name = std::max(widths.name, name.size());
  for (const QueueJob* j : jobs) {
    if (j->qos != "normal") widths.qos = std::max<size_t>({widths.qos, 3, qos_marker(*j).size()});
  }
  widths.name = std::min<size_t>(widths.name, 28);
  widths.qos = std::min<size_t>(widths.qos, 16);
  return widths;
}

TopLine title_line(const TopInput& input, UnixMillis now_ms) {
  const ServiceSnapshot& s = input.snapshot;
  TopLine line;
  line.push_back({"colo top", TopStyle::kHeader});
  std::string what;
  if (input.from_service) {
    int running = 0;
    int queued = 0;
    for (const QueueJob& j : s.jobs) {
      running += j.state == "running";
      queued += j.state == "queued";
    }
    // The policy's name; its parameters are in `colo queue` and the dashboard.
    const std::string policy = s.service.policy.substr(0, s.service.policy.find(" ("));
    what = fmt::format("  colo serve pid {} on {}: {}, policy {}; {} running, {} queued",
                       s.service.pid, s.service.host, s.service.mechanism, policy, running, queued);
    if (s.service.state != "running" && !s.service.state.empty())
      what += " [" + s.service.state + "]";
  } else {
    what = "  " + input.source + ": no colo serve answers, so no jobs; processes only";
  }
  line.push_back({ascii(what), TopStyle::kNormal});
  if (s.service.simulated) line.push_back({"  SIMULATED", TopStyle::kBad});
  const auto clock_text = [](UnixMillis ms) {
    time_t secs = static_cast<time_t>(ms / 1000);
    struct tm tm {};
    localtime_r(&secs, &tm);
    return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
  };
  if (input.from_service && !input.error.empty()) {
    // The service stopped answering: what follows is its last answer, not now.
    line.push_back(
        {fmt::format("  LOST THE SERVICE: as it was at {}, not live", clock_text(s.time_ms)),
         TopStyle::kBad});
    return line;
  }
  line.push_back({"  " + clock_text(now_ms), TopStyle::kDim});
  return line;
}

// The GPU's bars on one line when the width allows, else on two.
std::vector<TopLine> gpu_lines(const GpuView& g, int width, bool from_service) {
  std::vector<TopLine> lines;
  TopLine head;
  head.push_back({fmt::format("gpu{}", g.index), TopStyle::kHeader});
  head.push_back({ascii(fmt::format(" {} ", g.name)), TopStyle::kNormal});
  const std::optional<DeviceSample>& d = g.latest;
  std::optional<double> sm;
  std::string sm_text;
  if (d && d->sm_active_pct) {
    sm = *d->sm_active_pct / 100.0;
    sm_text = fmt::format("{:.0f}%", *d->sm_active_pct);
  } else if (d && d->gpu_util_pct) {
    // Without GPM (before Hopper) the driver's utilization stands in, named so.
    sm = *d->gpu_util_pct / 100.0;
    sm_text = fmt::format("util {:.0f}%", *d->gpu_util_pct);
  }
  std::optional<double> mem;
  std::string mem_text;
  const uint64_t total = d && d->memory_total_bytes ? *d->memory_total_bytes : g.memory_total_bytes;
  if (d && d->memory_used_bytes && total > 0) {
    mem = static_cast<double>(*d->memory_used_bytes) / static_cast<double>(total);
    mem_text = short_bytes(*d->memory_used_bytes) + "/" + short_bytes(total);
  }
  std::optional<double> power;
  std::string power_text;
  if (d && d->power_w) {
    power_text = g.power_limit_w ? fmt::format("{:.0f}/{:.0f}W", *d->power_w, *g.power_limit_w)
                                 : fmt::format("{:.0f}W", *d->power_w);
    if (g.power_limit_w && *g.power_limit_w > 0)
      power = *d->power_w / *g.power_limit_w;
    else
      power = 0.0;  // no limit known: the number alone
  }
  std::string pcie;
  if (d && (d->pcie_rx_mib_per_s || d->pcie_tx_mib_per_s)) {
    pcie = fmt::format("  PCIe rx {} tx {} MiB/s",
                       d->pcie_rx_mib_per_s ? fmt::format("{:.0f}", *d->pcie_rx_mib_per_s) : "-",
                       d->pcie_tx_mib_per_s ? fmt::format("{:.0f}", *d->pcie_tx_mib_per_s) : "-");
  }
  const std::string jobs =
      from_service ? fmt::format("  {} job{}", g.jobs_running, g.jobs_running == 1 ? "" : "s") : "";
  const int head_w = static_cast<int>(line_width(head));
  // Three bars, labels and brackets: "SM[..] MEM[..] PWR[..]" = 3 + 4 + 4 + 2 spaces + 6 brackets.
  const int fixed = 3 + 4 + 4 + 2 + 6;
  int inner = (width - head_w - fixed - static_cast<int>(pcie.size() + jobs.size())) / 3;
  if (inner >= 14) {
    inner = std::min(inner, 40);
    add_bar(head, "SM", sm, sm_text, inner);
    head.push_back({" ", TopStyle::kNormal});
    add_bar(head, "MEM", mem, mem_text, inner);
    head.push_back({" ", TopStyle::kNormal});
    add_bar(head, "PWR", power, power_text, inner);
    head.push_back({pcie, TopStyle::kNormal});
    head.push_back({jobs, TopStyle::kDim});
    lines.push_back(std::move(head));
    return lines;
  }
  // Narrow: the name and PCIe on the first line, the bars below.
  head.push_back({pcie, TopStyle::kNormal});
  head.push_back({jobs, TopStyle::kDim});
  lines.push_back(std::move(head));
  TopLine bars;
  bars.push_back({"  ", TopStyle::kNormal});
  inner = std::max(6, (width - 2 - fixed) / 3);
  add_bar(bars, "SM", sm, sm_text, inner);
  bars.push_back({" ", TopStyle::kNormal});
  add_bar(bars, "MEM", mem, mem_text, inner);
  bars.push_back({" ", TopStyle::kNormal});
  add_bar(bars, "PWR", power, power_text, inner);
  lines.push_back(std::move(bars));
  return lines;
}

TopLine process_line(const ProcessView& p, const ServiceSnapshot& s) {
  std::string owner = p.user;
  std::string what = p.command;
  if (p.job) {
    auto it = std::find_if(s.jobs.begin(), s.jobs.end(),
                           [&](const QueueJob& j) { return j.id == *p.job; });
    if (it != s.jobs.end()) {
      if (owner.empty()) owner = it->owner;
      what = fmt::format("job {} {}", it->id, it->name) + (what.empty() ? "" : " (" + what + ")");
    } else {
      what = fmt::format("job {}", *p.job) + (what.empty() ? "" : " (" + what + ")");
    }
  }
  TopLine line;
  line.push_back({fmt::format("  {:>8} ", p.pid), TopStyle::kDim});
  line.push_back({p.mps_client ? "MPS client " : "process    ",
                  p.mps_client ? TopStyle::kBold : TopStyle::kNormal});
  line.push_back({fmt::format("{:>6} ", p.used_memory_bytes ? short_bytes(*p.used_memory_bytes)
                                                            : std::string("-")),
                  TopStyle::kNormal});
  line.push_back({p.sm_util_pct ? fmt::format("SM {:>3.0f}% ", *p.sm_util_pct) : "        ",
                  TopStyle::kNormal});
  line.push_back(
      {ascii(fmt::format("{:<9} {}", owner.empty() ? "-" : owner, what)), TopStyle::kNormal});
  return line;
}

// `name`: the job's as listed (listed_names()).
TopLine job_row(const QueueJob& j, const std::string& name, const ServiceSnapshot& s,
                UnixMillis now_ms, bool selected, const ColumnWidths& widths) {
  const std::optional<uint64_t> memory = job_memory(j, s);
  const std::optional<double> slow = slowdown(j);
  const std::string state = j.state + (j.attempts > 1 ? fmt::format("#{}", j.attempts) : "");
  std::string note = j.probe ? "new: measured where it runs" : "";
  if (!j.reason.empty() && j.state != "running") note = j.reason;
  const std::string text = ascii(
      table_text(std::to_string(j.id), j.owner, name, widths, state, gpus_text(j), j.mechanism,
                 j.epoch ? std::to_string(*j.epoch) : "-", rate_text(j.samples_per_s),
                 slow ? fmt::format("{:.2f}x", *slow) : "-", qos_marker(j),
                 memory ? short_bytes(*memory) : "-", share_text(j), end_text(j, now_ms), note));
  if (selected) return {{text, TopStyle::kSelected}};
  // The state column in its colour.
  const size_t state_at = 5 + 1 + 9 + 1 + widths.name + 1;
  return {{text.substr(0, state_at), TopStyle::kNormal},
          {text.substr(state_at, 11), state_style(j.state)},
          {text.substr(state_at + 11), TopStyle::kNormal}};
}

// The selected job if the table shows it, else the job in the row it was
// last seen in (the last row when the table is shorter now).
std::optional<int64_t> effective_selection(const std::vector<const QueueJob*>& jobs,
                                           const TopState& state) {
  if (jobs.empty()) return std::nullopt;
  if (state.selected) {
    for (const QueueJob* j : jobs) {
      if (j->id == *state.selected) return j->id;
    }
  }
  const size_t row = static_cast<size_t>(std::max(0, state.selected_row));
  return jobs[std::min(row, jobs.size() - 1)]->id;
}

std::string footer_keys(const TopInput& input, const TopState& state) {
  switch (state.mode) {
    case TopMode::kFilter:
      return "filter: " + state.filter_draft + "_   (Enter: apply, Esc: clear)";
    case TopMode::kConfirmCancel:
      return fmt::format("cancel job {}? y: yes, any other key: no", state.selected.value_or(0));
    case TopMode::kLog:
      return "q/Esc: back to the table";
    case TopMode::kHelp:
      return "any key: back";
    case TopMode::kTable:
      break;
  }
  if (!input.from_service) return "h: help  q: quit";
  return fmt::format(
      "s: sort ({}{})  r: reverse  /: filter{}  Up/Down: select  l: log  c: cancel  h: help  q: "
      "quit",
      to_string(state.sort), state.descending ? ", descending" : "",
      state.filter.empty() ? "" : " [" + state.filter + "]");
}

std::vector<TopLine> help_lines() {
  const char* text[] = {
      "colo top: this machine's GPUs and colo serve's jobs, live",
      "",
      "  Up/Down, j/k, PgUp/PgDn   select a job",
      "  s, >                      sort by the next column (queue order, id, owner, gpu, epoch,",
      "                            rate, slowdown, memory, name); <  the previous one",
      "  r                         reverse the order",
      "  /                         filter jobs by name, owner, state, group or id; Esc clears",
      "  l, Enter                  follow the selected job's log (your own jobs; root: any)",
      "  c                         cancel the selected job (your own; through colo serve's socket)",
      "  q                         quit (in a log: back to the table)",
      "",
      "SM: GPM SM activity (the driver's utilization, named so, where GPM is missing);",
      "MEM: device memory used; PWR: power against the enforced limit.",
      "Per GPU, each process the driver lists: MPS clients one by one with their memory.",
      "Columns: RATE samples/s now; SLOW how many times slower than alone; MEM the job's GPU",
      "memory (its processes now, else its peak); SHARE MPS limits (SM %, memory) or MIG instance.",
      "QOS (when a job has a class): P floor|speed of solo now, share of steady time below the",
      "floor (protected); opp (opportunistic).",
  };
  std::vector<TopLine> lines;
  for (const char* t : text) lines.push_back({{t, TopStyle::kNormal}});
  return lines;
}

std::vector<TopLine> log_lines(const TopInput& input, const TopState& state, int width,
                               int height) {
  std::vector<TopLine> lines;
  std::string name;
  for (const QueueJob& j : input.snapshot.jobs) {
    if (j.id == state.log_job) name = " (" + j.name + ")";
  }
  lines.push_back({{fmt::format("log of job {}{}", state.log_job, ascii(name)), TopStyle::kHeader},
                   {ascii("  " + state.log_path), TopStyle::kDim},
                   {state.log_ended ? "  [ended]" : "  [following]", TopStyle::kBold}});
  // A queued job has no log yet: say so, and what it waits for.
  for (const QueueJob& j : input.snapshot.jobs) {
    if (j.id != state.log_job || j.state != "queued" || !state.log_text.empty()) continue;
    lines.push_back(
        {{ascii(j.reason.empty() ? "queued: no log yet (it starts when colo serve places it)"
                                 : "queued: no log yet (waits for: " + j.reason + ")"),
          TopStyle::kDim}});
  }
  // The tail that fits, long lines wrapped.
  std::vector<std::string> wrapped;
  size_t start = 0;
  const std::string& text = state.log_text;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string raw = ascii(text.substr(start, end - start));
    if (raw.empty()) wrapped.emplace_back();
    for (size_t at = 0; at < raw.size(); at += static_cast<size_t>(std::max(1, width)))
      wrapped.push_back(raw.substr(at, static_cast<size_t>(std::max(1, width))));
    start = end + 1;
  }
  const int room = std::max(0, height - 2);
  const size_t from =
      wrapped.size() > static_cast<size_t>(room) ? wrapped.size() - static_cast<size_t>(room) : 0;
  for (size_t i = from; i < wrapped.size(); ++i) lines.push_back({{wrapped[i], TopStyle::kNormal}});
  return lines;
}

}  // namespace

const char* to_string(TopSort sort) {
  switch (sort) {
    case TopSort::kQueue:
      return "queue";
    case TopSort::kId:
      return "id";
    case TopSort::kOwner:
      return "owner";
    case TopSort::kGpu:
      return "gpu";
    case TopSort::kEpoch:
      return "epoch";
    case TopSort::kRate:
      return "rate";
    case TopSort::kSlowdown:
      return "slowdown";
    case TopSort::kMemory:
      return "memory";
    case TopSort::kName:
      return "name";
  }
  return "?";
}

std::vector<const QueueJob*> visible_jobs(const TopInput& input, const TopState& state) {
  const ServiceSnapshot& s = input.snapshot;
  std::vector<const QueueJob*> jobs;
  for (const QueueJob& j : s.jobs) {
    if (matches(j, state.filter)) jobs.push_back(&j);
  }
  auto compare = [&](const QueueJob& a, const QueueJob& b) -> int {
    switch (state.sort) {
      case TopSort::kQueue:  // handled above
      case TopSort::kId:
        return a.id < b.id ? -1 : (a.id > b.id ? 1 : 0);
      case TopSort::kOwner:
        return sign(a.owner.compare(b.owner));
      case TopSort::kGpu:
        return compare_optional(a.gpu, b.gpu);
      case TopSort::kEpoch:
        return compare_optional(a.epoch, b.epoch);
      case TopSort::kRate:
        return compare_optional(a.samples_per_s, b.samples_per_s);
      case TopSort::kSlowdown:
        return compare_optional(slowdown(a), slowdown(b));
      case TopSort::kMemory:
        return compare_optional(job_memory(a, s), job_memory(b, s));
      case TopSort::kName:
        return sign(a.name.compare(b.name));
    }
    return 0;
  };
  if (state.sort == TopSort::kQueue) {
    if (state.descending) std::reverse(jobs.begin(), jobs.end());
    return jobs;
  }
  std::stable_sort(jobs.begin(), jobs.end(), [&](const QueueJob* a, const QueueJob* b) {
    const int c = compare(*a, *b);
    if (c == 2 || c == -2) return c < 0;  // absent values last either way
    return state.descending ? c > 0 : c < 0;
  });
  return jobs;
}

std::vector<TopLine> render_top(const TopInput& input, const TopState& state, int width, int height,
                                UnixMillis now_ms) {
  width = std::max(width, 20);
  height = std::max(height, 3);
  std::vector<TopLine> body;
  const ServiceSnapshot& s = input.snapshot;
  TopLine footer = {{footer_keys(input, state), TopStyle::kDim}};
  std::string note = !state.message.empty() ? state.message : input.error;
  if (!note.empty()) footer.push_back({"  " + ascii(note), TopStyle::kNote});

  if (state.mode == TopMode::kHelp) {
    body = help_lines();
  } else if (state.mode == TopMode::kLog) {
    body = log_lines(input, state, width, height - 1);
  } else {
    body.push_back(title_line(input, now_ms));
    if (!s.service.mechanism_down.empty()) {
      body.push_back(
          {{ascii("placing nothing until the mechanism is back: " + s.service.mechanism_down),
            TopStyle::kBad}});
    }
    // GPU lines first; the rows left go to the job table, then to processes.
    std::vector<std::vector<TopLine>> gpu_blocks;
    int gpu_rows = 0;
    for (const GpuView& g : s.gpus) {
      gpu_blocks.push_back(gpu_lines(g, width, input.from_service));
      gpu_rows += static_cast<int>(gpu_blocks.back().size());
    }
    std::vector<const QueueJob*> jobs = visible_jobs(input, state);
    const int fixed_rows = static_cast<int>(body.size()) + gpu_rows + 1 /*footer*/;
    const int table_rows_wanted =
        input.from_service ? 2 + static_cast<int>(std::max<size_t>(jobs.size(), 1)) : 0;
    int process_room = std::max(0, height - fixed_rows - std::min(table_rows_wanted, 8));
    std::map<int, std::vector<const ProcessView*>> by_gpu;
    for (const ProcessView& p : s.processes) by_gpu[p.gpu].push_back(&p);
    for (size_t i = 0; i < s.gpus.size(); ++i) {
      for (TopLine& l : gpu_blocks[i]) body.push_back(std::move(l));
      const std::vector<const ProcessView*>& procs = by_gpu[s.gpus[i].index];
      const int gpus_left = static_cast<int>(s.gpus.size() - i);
      const size_t room = static_cast<size_t>(std::max(0, process_room / gpus_left));
      // When they do not all fit, the last line says how many are left out.
      const size_t listed = procs.size() <= room ? procs.size() : (room > 0 ? room - 1 : 0);
      for (size_t k = 0; k < listed; ++k) body.push_back(process_line(*procs[k], s));
      size_t used = listed;
      if (listed < procs.size() && room > 0) {
        body.push_back(
            {{fmt::format("  ... and {} more processes", procs.size() - listed), TopStyle::kDim}});
        ++used;
      }
      process_room -= static_cast<int>(used);
    }
    if (input.from_service) {
      body.push_back({});
      // Two submissions' jobs of one name, each named by its submission (as colo queue lists them).
      const std::vector<std::string> listed = listed_names(s.jobs);
      std::vector<std::string> names;
      for (const QueueJob* j : jobs)
        names.push_back(listed[static_cast<size_t>(j - s.jobs.data())]);
      const ColumnWidths widths = column_widths(jobs, names);
      body.push_back({{table_text("ID", "OWNER", "NAME", widths, "STATE", "GPU", "MECH", "EPOCH",
                                  "RATE", "SLOW", "QOS", "MEM", "SHARE", "END", "NOTE"),
                       TopStyle::kHeader}});
      pad(body.back(), width, TopStyle::kHeader);
      if (jobs.empty()) {
        body.push_back({{state.filter.empty() ? "  no jobs: colo submit FILE adds some"
                                              : "  no job matches the filter",
                         TopStyle::kDim}});
      }
      const int room = std::max(1, height - 1 - static_cast<int>(body.size()));
      // Scroll so the selected job is visible.
      const std::optional<int64_t> selection = effective_selection(jobs, state);
      size_t selected_at = 0;
      for (size_t i = 0; i < jobs.size(); ++i) {
        if (jobs[i]->id == selection) selected_at = i;
      }
      size_t first = std::min(static_cast<size_t>(std::max(0, state.first_row)), jobs.size());
      if (selected_at < first) first = selected_at;
      if (selected_at >= first + static_cast<size_t>(room))
        first = selected_at + 1 - static_cast<size_t>(room);
      for (size_t i = first; i < jobs.size() && i < first + static_cast<size_t>(room); ++i) {
        const bool selected = jobs[i]->id == selection;
        TopLine row = job_row(*jobs[i], names[i], s, now_ms, selected, widths);
        if (selected) pad(row, width, TopStyle::kSelected);
        body.push_back(std::move(row));
      }
    }
  }
  std::vector<TopLine> out;
  for (TopLine& l : body) {
    if (static_cast<int>(out.size()) >= height - 1) break;
    out.push_back(fit(std::move(l), width));
  }
  while (static_cast<int>(out.size()) < height - 1) out.push_back({});
  out.push_back(fit(std::move(footer), width));
  return out;
}

std::string plain_text(const std::vector<TopLine>& lines) {
  std::string out;
  for (const TopLine& line : lines) {
    std::string text;
    for (const TopSpan& s : line) text += s.text;
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

TopCommand handle_key(TopState& state, int key, const TopInput& input) {
  state.message.clear();
  switch (state.mode) {
    case TopMode::kHelp:
      state.mode = TopMode::kTable;
      return {};
    case TopMode::kLog:
      if (key == 'q' || key == 'Q' || key == kTopKeyEscape) {
        state.mode = TopMode::kTable;
        return {TopCommand::Kind::kStopLog, state.log_job};
      }
      return {};
    case TopMode::kFilter:
      if (key == kTopKeyEnter) {
        state.filter = state.filter_draft;
        state.mode = TopMode::kTable;
        state.first_row = 0;
        state.selected_row = 0;  // a selection the filter hides falls to the first job shown
      } else if (key == kTopKeyEscape) {
        state.filter.clear();
        state.filter_draft.clear();
        state.mode = TopMode::kTable;
      } else if (key == kTopKeyBackspace) {
        if (!state.filter_draft.empty()) state.filter_draft.pop_back();
      } else if (key >= 0x20 && key < 0x7f) {
        state.filter_draft += static_cast<char>(key);
      }
      return {};
    case TopMode::kConfirmCancel:
      state.mode = TopMode::kTable;
      if ((key == 'y' || key == 'Y') && state.selected)
        return {TopCommand::Kind::kCancel, *state.selected};
      state.message = "not cancelled";
      return {};
    case TopMode::kTable:
      break;
  }
  std::vector<const QueueJob*> jobs = visible_jobs(input, state);
  state.selected = effective_selection(jobs, state);
  int at = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (state.selected && jobs[i]->id == *state.selected) at = static_cast<int>(i);
  }
  state.selected_row = at;
  auto select = [&](int index) {
    if (jobs.empty()) return;
    index = std::clamp(index, 0, static_cast<int>(jobs.size()) - 1);
    state.selected = jobs[static_cast<size_t>(index)]->id;
    state.selected_row = index;
  };
  const int n_sorts = static_cast<int>(std::size(kSortOrder));
  int sort_at = 0;
  for (int i = 0; i < n_sorts; ++i) {
    if (kSortOrder[i] == state.sort) sort_at = i;
  }
  switch (key) {
    case 'q':
    case 'Q':
      return {TopCommand::Kind::kQuit, 0};
    case kTopKeyUp:
    case 'k':
      select(at - 1);
      break;
    case kTopKeyDown:
    case 'j':
      select(at + 1);
      break;
    case kTopKeyPageUp:
      select(at - 10);
      break;
    case kTopKeyPageDown:
      select(at + 10);
      break;
    case kTopKeyHome:
      select(0);
      break;
    case kTopKeyEnd:
      select(static_cast<int>(jobs.size()) - 1);
      break;
    case 's':
    case '>':
      state.sort = kSortOrder[(sort_at + 1) % n_sorts];
      state.message = std::string("sorted by ") + to_string(state.sort);
      break;
    case '<':
      state.sort = kSortOrder[(sort_at + n_sorts - 1) % n_sorts];
      state.message = std::string("sorted by ") + to_string(state.sort);
      break;
    case 'r':
      state.descending = !state.descending;
      break;
    case '/':
      state.mode = TopMode::kFilter;
      state.filter_draft = state.filter;
      break;
    case 'h':
    case '?':
      state.mode = TopMode::kHelp;
      break;
    case 'c':
    case 'l':
    case kTopKeyEnter: {
      if (!input.from_service) {
        state.message = "no colo serve runs: there are no jobs to act on";
        break;
      }
      if (jobs.empty()) {
        state.message = "no job selected";
        break;
      }
      const int64_t id = *state.selected;
      if (key == 'c') {
        auto job =
            std::find_if(jobs.begin(), jobs.end(), [&](const QueueJob* j) { return j->id == id; });
        if (job != jobs.end() && is_final_state((*job)->state)) {
          state.message = fmt::format("job {} has already ended ({})", id, (*job)->state);
          break;
        }
        state.mode = TopMode::kConfirmCancel;
        break;
      }
      state.mode = TopMode::kLog;
      state.log_job = id;
      state.log_text.clear();
      state.log_offset = 0;
      state.log_path.clear();
      state.log_ended = false;
      return {TopCommand::Kind::kFollowLog, id};
    }
    default:
      break;
  }
  return {};
}

void follow_selection(TopState& state, const TopInput& input) {
  const std::vector<const QueueJob*> jobs = visible_jobs(input, state);
  if (jobs.empty()) return;  // kept until the table shows jobs again
  state.selected = effective_selection(jobs, state);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i]->id == *state.selected) state.selected_row = static_cast<int>(i);
  }
}

void append_log(TopState& state, const std::string& path, const std::string& data,
                uint64_t next_offset, bool ended) {
  if (!state.log_path.empty() && path != state.log_path) {
    state.log_text += "---- a new attempt: " + path + "\n";
  }
  state.log_path = path;
  state.log_text += data;
  if (state.log_text.size() > kLogKeptBytes)
    state.log_text.erase(0, state.log_text.size() - kLogKeptBytes);
  state.log_offset = next_offset;
  state.log_ended = ended;
}

}  // namespace colo
