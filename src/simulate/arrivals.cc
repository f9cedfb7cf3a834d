#include "simulate/arrivals.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <numbers>
#include <random>

#include "common/text.h"
#include "common/units.h"

namespace colo {
namespace {

constexpr double kMsPerHour = 3.6e6;
// diurnal: the rate swings this far above and below its mean over the day.
constexpr double kDiurnalSwing = 0.75;

// Uniform in [0, 1), the same from every standard library (the standard's
// distributions are not specified bit for bit).
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// "120/h", "2/min", "0.5/s", "120": submissions per millisecond.
Result<double> parse_rate(std::string_view text) {
  double per = kMsPerHour;
  std::string_view number = text;
  if (size_t slash = text.find('/'); slash != std::string_view::npos) {
    number = text.substr(0, slash);
    std::string_view unit = text.substr(slash + 1);
    if (unit == "h") {
      per = kMsPerHour;
    } else if (unit == "min") {
      per = 60'000;
    } else if (unit == "s") {
      per = 1'000;
    } else {
      return Error(fmt::format("unknown rate unit '{}' (h, min or s)", unit));
    }
  }
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size() || !(value > 0) ||
      !std::isfinite(value))
    return Error(fmt::format("'{}' is not a positive rate (e.g. 120/h)", text));
  return value / per;
}

// The job file's submissions: each job alone, but the points of one grid
// (consecutive grid points of one block) together.
std::vector<std::vector<size_t>> submissions(const std::vector<SimJob>& jobs) {
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const bool grid_point = !jobs[i].params.empty();
    if (grid_point && i > 0 && !jobs[i - 1].params.empty() && jobs[i - 1].label == jobs[i].label) {
      out.back().push_back(i);
    } else {
      out.push_back({i});
    }
  }
  return out;
}

Result<std::vector<SimJob>> generated(const std::vector<SimJob>& jobs, double rate_per_ms,
                                      bool diurnal, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // Thinning (Lewis and Shedler): candidates at the highest rate, each kept
  // with the rate at its time over that.
  const double top = diurnal ? rate_per_ms * (1 + kDiurnalSwing) : rate_per_ms;
  auto rate_at = [&](double t_ms) {
    if (!diurnal) return rate_per_ms;
    const double hour = std::fmod(t_ms / kMsPerHour, 24.0);
    return rate_per_ms * (1 + kDiurnalSwing * std::sin(2 * std::numbers::pi * (hour - 8) / 24));
  };
  std::vector<SimJob> out;
  out.reserve(jobs.size());
  double t = 0;
  bool first = true;
  for (const std::vector<size_t>& submission : submissions(jobs)) {
    if (!first) {
      do {
        t += -std::log(1 - uniform(rng)) / top;
      } while (uniform(rng) * top > rate_at(t));
    }
    first = false;
    for (size_t i : submission) {
      out.push_back(jobs[i]);
      out.back().submit_ms = static_cast<int64_t>(t);
    }
  }
  return out;
}

// "12.5" (seconds) or a duration ("90s", "1h30m").
Result<int64_t> parse_time(std::string_view text) {
  double seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && end == text.data() + text.size()) {
    if (!(seconds >= 0) || seconds > 1e9) return Error(fmt::format("'{}': not a time", text));
    return static_cast<int64_t>(std::llround(seconds * 1000));
  }
  return parse_duration_ms(text);
}

Result<std::vector<SimJob>> traced(const std::vector<SimJob>& jobs, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::map<std::string, std::vector<size_t>> blocks;  // block -> its jobs, in order
  for (size_t i = 0; i < jobs.size(); ++i) blocks[jobs[i].label].push_back(i);
  std::map<std::string, size_t> taken;  // block -> jobs submitted so far
  std::vector<SimJob> out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    auto where = [&] { return fmt::format("{}:{}", path, number); };
    std::string_view text = trim_space(line);
    if (text.empty() || text.front() == '#') continue;
    std::vector<std::string_view> fields;
    for (size_t from = 0;;) {
      const size_t comma = text.find(',', from);
      fields.push_back(trim_space(text.substr(
          from, comma == std::string_view::npos ? std::string_view::npos : comma - from)));
      if (comma == std::string_view::npos) break;
      from = comma + 1;
    }
    if (number == 1 && fields.size() >= 2 && fields[0] == "time") continue;  // the header
    if (fields.size() < 2 || fields.size() > 3)
      return Error(fmt::format("{}: expected time,job[,count], got '{}'", where(), text));
    Result<int64_t> at = parse_time(fields[0]);
    if (!at.ok()) return Error(fmt::format("{}: time: {}", where(), at.error().message()));
    auto block = blocks.find(std::string(fields[1]));
    if (block == blocks.end())
      return Error(fmt::format("{}: no [[job]] named '{}' in the job file", where(), fields[1]));
    int64_t count = 1;
    if (fields.size() == 3) {
      auto [end, ec] =
          std::from_chars(fields[2].data(), fields[2].data() + fields[2].size(), count);
      if (ec != std::errc() || end != fields[2].data() + fields[2].size() || count < 1)
        return Error(
            fmt::format("{}: count '{}' is not a whole number of at least 1", where(), fields[2]));
    }
    if (static_cast<int64_t>(out.size()) + count > kMaxTraceJobs)
      return Error(fmt::format("{}: the trace submits more than {} jobs", where(), kMaxTraceJobs));
    const std::vector<size_t>& members = block->second;
    size_t& next = taken[block->first];
    for (int64_t k = 0; k < count; ++k, ++next) {
      out.push_back(jobs[members[next % members.size()]]);
      SimJob& job = out.back();
      job.submit_ms = *at;
      if (const size_t round = next / members.size(); round > 0)
        job.name += fmt::format("~{}", round + 1);
    }
  }
  if (out.empty()) return Error(fmt::format("{}: the trace submits no job", path));
  std::stable_sort(out.begin(), out.end(),
                   [](const SimJob& a, const SimJob& b) { return a.submit_ms < b.submit_ms; });
  return out;
}

}  // namespace

Result<std::vector<SimJob>> with_arrivals(const std::vector<SimJob>& jobs, std::string_view spec,
                                          uint64_t seed) {
  for (std::string_view kind : {"poisson:", "diurnal:"}) {
    if (!spec.starts_with(kind)) continue;
    Result<double> rate = parse_rate(spec.substr(kind.size()));
    if (!rate.ok()) return Error(fmt::format("--arrivals {}: {}", spec, rate.error().message()));
    return generated(jobs, *rate, kind == "diurnal:", seed);
  }
  return traced(jobs, std::string(spec));
}

}  // namespace colo
