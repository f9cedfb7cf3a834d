#include "data/loader_options.h"

#include <fmt/format.h>

#include <charconv>

namespace colo {
namespace {

std::optional<int> parse_int(std::string_view text) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

std::string number(double v) { return fmt::format("{}", v); }

}  // namespace

Result<std::vector<int>> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string_view part(text.data() + start, end - start);
    size_t dash = part.find('-');
    std::optional<int> lo = parse_int(part.substr(0, dash));
    std::optional<int> hi = dash == std::string_view::npos ? lo : parse_int(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi >= 4096) {
      return Error(
          fmt::format("'{}' is not a CPU list; write it like \"0-3\" or \"0,2,4-7\"", text));
    }
    for (int c = *lo; c <= *hi; ++c) cpus.push_back(c);
    start = end + 1;
  }
  return cpus;
}

std::vector<std::string> serve_arguments(const LoaderOptions& o) {
  std::vector<std::string> args = {
      "--name",        o.name,
      "--size",        std::to_string(o.transform.size),
      "--threads",     std::to_string(o.threads),
      "--ring",        std::to_string(o.ring_bytes),
      "--chunk",       std::to_string(o.chunk_samples),
      "--lag-timeout", fmt::format("{}ms", o.lag_timeout_ms),
      "--seed",        std::to_string(o.seed),
      "--scale",       number(o.transform.scale_min) + "," + number(o.transform.scale_max)};
  if (o.format) args.insert(args.end(), {"--format", to_string(*o.format)});
  if (!o.transform.augment) args.push_back("--no-augment");
  if (!o.cpus.empty()) args.insert(args.end(), {"--cpus", o.cpus});
  if (!o.socket_name.empty()) args.insert(args.end(), {"--socket", o.socket_name});
  if (!o.shm_name.empty()) args.insert(args.end(), {"--shm", o.shm_name});
  if (!o.state_dir.empty()) args.insert(args.end(), {"--state-dir", o.state_dir});
  if (!o.stats_path.empty()) args.insert(args.end(), {"--stats", o.stats_path});
  if (o.parent_pid > 0) args.insert(args.end(), {"--parent-pid", std::to_string(o.parent_pid)});
  args.push_back(o.path);
  return args;
}

}  // namespace colo
