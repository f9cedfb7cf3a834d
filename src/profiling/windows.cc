#include "profiling/windows.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "common/paths.h"
#include "common/replace_file.h"
#include "common/units.h"
#include "common/user_file.h"

namespace colo {
namespace {

using nlohmann::json;

std::optional<double> number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// ", closed by the job's end" for a window's closed_by.
std::string closed_by_text(const ProfileWindow& w) {
  const std::string& closed_by = w.closed_by;
  if (closed_by == "steps") return ", closed after its steps";
  if (closed_by == "duration") return ", closed after its duration";
  if (closed_by == "epoch end") return ", closed at the epoch's end";
  if (closed_by == "job end") return ", closed by the job's end";
  if (closed_by == "forwards") {
    return fmt::format(", closed after {} forward passes (the job reports no steps)", w.forwards);
  }
  if (closed_by == "no step") {
    return w.no_step_bound_s
               ? fmt::format(", closed after {:.1f}s without a step", *w.no_step_bound_s)
               : ", closed without a step";
  }
  return "";
}

}  // namespace

Result<ProfileWindow> parse_profile_window(const std::string& text, const std::string& dir) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return Error("not a JSON object");
  ProfileWindow w;
  const std::optional<double> window = number(j, "window");
  if (!window || *window < 1) return Error("no window number");
  w.window = static_cast<int>(*window);
  w.trigger = j.value("trigger", "");
  w.closed_by = j.value("closed_by", "");
  const std::optional<double> started = number(j, "started");
  const std::optional<double> ended = number(j, "ended");
  if (started && ended && *ended >= *started) {
    w.seconds = *ended - *started;
    w.started_s = *started;
    w.ended_s = *ended;
  }
  w.steps = static_cast<int64_t>(number(j, "steps").value_or(0));
  w.rate_in = number(j, "rate_in");
  w.rate_before = number(j, "rate_before");
  w.rate_after = number(j, "rate_after");
  w.written_s = number(j, "written_s");
  w.no_step_bound_s = number(j, "no_step_bound_s");
  w.forwards = static_cast<int64_t>(number(j, "forwards").value_or(0));
  w.gpu_busy_pct = number(j, "gpu_busy_pct");
  w.memcpy_us = number(j, "memcpy_us");
  w.sorted_by = j.value("sorted_by", "self_cpu_us");
  w.dir = dir;
  const std::string trace = j.value("trace", "");
  if (!trace.empty()) w.trace_path = trace[0] == '/' ? trace : dir + "/" + trace;
  const std::string kernels = j.value("kernels", "");
  if (!kernels.empty()) w.kernels_path = kernels[0] == '/' ? kernels : dir + "/" + kernels;
  if (auto top = j.find("top"); top != j.end() && top->is_array()) {
    for (const json& op : *top) {
      if (!op.is_object()) continue;
      w.top.push_back(ProfileOp{op.value("name", ""),
                                static_cast<int64_t>(number(op, "calls").value_or(0)),
                                number(op, w.sorted_by.c_str()).value_or(0)});
    }
  }
  return w;
}

Result<UserFile> open_window_file(const std::string& dir, const std::string& path) {
  const std::string prefix = dir + "/";
  const std::string name = path.starts_with(prefix) ? path.substr(prefix.size()) : "";
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    return Error(fmt::format("{} is not a file of the job's profile directory {}", path, dir));
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir_fd.get() < 0) return Error(fmt::format("cannot open {}: {}", dir, std::strerror(errno)));
  Result<std::optional<UserFile>> file = open_user_file(name, dir_fd.get(), path);
  if (!file.ok()) return file.error();
  if (!*file) return Error(fmt::format("{} does not exist", path));
  return std::move(**file);
}

std::vector<ProfileWindow> read_profile_windows(const std::string& dir,
                                                std::vector<std::string>* problems) {
  auto problem = [&](std::string what) {
    if (problems != nullptr) problems->push_back(std::move(what));
  };
  // The directory is the job's: opened once, not through a link, each
  // summary read relative to it within its bounds.
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir_fd.get() < 0) {
    if (errno != ENOENT) problem(fmt::format("cannot open {}: {}", dir, std::strerror(errno)));
    return {};
  }
  std::map<int, std::string> names;  // by the N of torch-summary-N.json
  {
    DIR* listing = ::fdopendir(::dup(dir_fd.get()));
    if (listing == nullptr) return {};
    while (const dirent* entry = ::readdir(listing)) {
      const std::string name = entry->d_name;
      constexpr std::string_view kPrefix = "torch-summary-";
      constexpr std::string_view kSuffix = ".json";
      if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) continue;
      const std::string n =
          name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
      if (n.empty() || n.size() > 9 || !std::all_of(n.begin(), n.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c)) != 0;
          }))
        continue;
      names.emplace(std::stoi(n), name);
    }
    ::closedir(listing);
  }
  std::map<int, ProfileWindow> by_number;
  uint64_t read_bytes = 0;
  for (const auto& [n, name] : names) {
    const std::string path = dir + "/" + name;
    if (read_bytes >= kMaxProfileSummariesBytes) {
      problem(
          fmt::format("{}: not read, the job's summaries before it took the {} colo reads of "
                      "one job's",
                      path, format_bytes(kMaxProfileSummariesBytes)));
      continue;
    }
    Result<std::string> text = read_user_file(name, kMaxProfileSummaryBytes, dir_fd.get(), path);
    if (!text.ok()) {
      problem(text.error().message());
      continue;
    }
    read_bytes += text->size();
    Result<ProfileWindow> w = parse_profile_window(*text, dir);
    if (!w.ok()) {
      problem(fmt::format("{}: {}", path, w.error().message()));
      continue;
    }
    by_number[w->window] = std::move(*w);
  }
  std::vector<ProfileWindow> out;
  for (auto& [n, w] : by_number) out.push_back(std::move(w));
  return out;
}

std::string format_profile_windows(const std::vector<JobWindows>& jobs, size_t ops) {
  std::string out;
  for (const JobWindows& job : jobs) {
    for (const ProfileWindow& w : job.windows) {
      if (out.empty()) out = "\nProfiling windows (docs/profiling.md)\n";
      std::string rate;
      if (w.rate_in) {
        // Outside the window: after it where known (a job that reports only
        // epochs has no rate before its first window), else before it.
        const std::optional<double>& outside = w.rate_after ? w.rate_after : w.rate_before;
        rate = fmt::format(", {:.0f} samples/s inside", *w.rate_in);
        if (outside && *outside > 0) {
          const char* when = w.rate_after ? "after" : "before";
          rate += fmt::format(
              " against {:.0f} {} it (inside/{} {:.2f}x: below 1 is what profiling cost)", *outside,
              when, when, *w.rate_in / *outside);
        }
      }
      out += fmt::format(
          "{} window {} ({}{}): {:.2f}s, {} steps{}{}{}\n", job.job, w.window,
          w.trigger.empty() ? "?" : w.trigger, closed_by_text(w), w.seconds, w.steps, rate,
          w.gpu_busy_pct ? fmt::format(", GPU busy {:.1f}%", *w.gpu_busy_pct) : "",
          w.written_s ? fmt::format("; writing its trace took {:.1f}s", *w.written_s) : "");
      double total = 0;
      for (const ProfileOp& op : w.top) total += op.self_us;
      const bool device = w.sorted_by == "self_device_us";
      for (size_t i = 0; i < std::min(ops, w.top.size()); ++i) {
        const ProfileOp& op = w.top[i];
        // A kernel's name may be a page of template arguments: its head
        // (the JSON and the trace have it whole).
        constexpr size_t kNameChars = 100;
        const std::string name =
            op.name.size() > kNameChars ? op.name.substr(0, kNameChars - 3) + "..." : op.name;
        out += fmt::format("  {:>10.3f} ms {:>5.1f}%  {:>6} calls  {}\n", op.self_us / 1000,
                           total > 0 ? 100 * op.self_us / total : 0.0, op.calls, name);
      }
      out += fmt::format("  ({}, of the top {}; memcpy {}; trace: {})\n",
                         device ? "GPU time of its kernels" : "self CPU time of its operators",
                         w.top.size(),
                         w.memcpy_us ? fmt::format("{:.3f} ms", *w.memcpy_us / 1000) : "-",
                         w.trace_path.empty() ? "-" : w.trace_path);
    }
  }
  return out;
}

json profile_windows_json(const std::vector<JobWindows>& jobs) {
  json out = json::object();
  for (const JobWindows& job : jobs) {
    json windows = json::array();
    for (const ProfileWindow& w : job.windows) {
      json top = json::array();
      for (const ProfileOp& op : w.top)
        top.push_back({{"name", op.name}, {"calls", op.calls}, {"self_us", op.self_us}});
      const auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(); };
      windows.push_back({{"window", w.window},
                         {"trigger", w.trigger},
                         {"closed_by", w.closed_by},
                         {"forwards", w.forwards},
                         {"seconds", w.seconds},
                         {"steps", w.steps},
                         {"rate_in", opt(w.rate_in)},
                         {"rate_before", opt(w.rate_before)},
                         {"rate_after", opt(w.rate_after)},
                         {"written_s", opt(w.written_s)},
                         {"no_step_bound_s", opt(w.no_step_bound_s)},
                         {"gpu_busy_pct", opt(w.gpu_busy_pct)},
                         {"memcpy_us", opt(w.memcpy_us)},
                         {"sorted_by", w.sorted_by},
                         {"trace", w.trace_path},
                         {"top", std::move(top)}});
    }
    out[job.job] = std::move(windows);
  }
  return out;
}

Status request_profile_window(const std::string& dir, std::optional<double> duration_s,
                              std::optional<int64_t> steps) {
  if (Status s = make_dirs(dir, 0700); !s.ok()) return s.error().with_context("profile directory");
  json request = {{"tool", "torch"}};
  if (duration_s) request["duration_s"] = *duration_s;
  if (steps) request["steps"] = *steps;
  return replace_file(dir + "/request.json", request.dump() + "\n");
}

}  // namespace colo
