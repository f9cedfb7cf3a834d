#include "run/stall_watch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "common/units.h"

namespace colo {
namespace {

std::string seconds(int64_t ms) {
  return ms >= 10'000 ? fmt::format("{} s", (ms + 500) / 1000)
                      : fmt::format("{:.1f} s", static_cast<double>(ms) / 1000.0);
}

}  // namespace

StallWatch::StallWatch(UnixMillis started_ms, std::optional<int64_t> own_timeout_ms,
                       bool expects_progress, const StallOptions& options)
    : fixed_ms_(own_timeout_ms ? own_timeout_ms : options.timeout_ms),
      expects_progress_(expects_progress),
      options_(options),
      started_ms_(started_ms),
      last_ms_(started_ms) {}

void StallWatch::progress(UnixMillis at_ms, std::optional<int64_t> epoch,
                          std::optional<int64_t> epoch_ms) {
  if (reports_ > 0) longest_gap_ms_ = std::max(longest_gap_ms_, at_ms - last_ms_);
  last_gap_ms_ = std::max<int64_t>(0, at_ms - last_ms_);
  last_ms_ = std::max(last_ms_, at_ms);
  // A report after the fault's floor: it ran on past the fault (one sooner
  // may be work that was in flight when it hung).
  if (fault_ms_ && at_ms >= *fault_ms_ + options_.after_fault_floor_ms) fault_ms_.reset();
  ++reports_;
  if (epoch) last_epoch_ = epoch;
  if (epoch_ms && *epoch_ms > 0) last_epoch_ms_ = epoch_ms;
}

void StallWatch::fault_seen(UnixMillis at_ms) {
  fault_ms_ = at_ms;
  fault_cpu_first_.reset();
  fault_cpu_last_.reset();
}

void StallWatch::cpu_used(UnixMillis at_ms, int64_t cpu_ms) {
  if (!fault_ms_) return;
  (fault_cpu_first_ ? fault_cpu_last_ : fault_cpu_first_) = CpuRead{at_ms, cpu_ms};
}

std::optional<int64_t> StallWatch::bound_ms() const {
  const auto adaptive = [&](int64_t floor_ms, int64_t typical) {
    return floor_ms +
           static_cast<int64_t>(std::llround(options_.multiple * static_cast<double>(typical)));
  };
  if (fault_ms_ && reports_ > 0) {
    const int64_t after_fault = adaptive(options_.after_fault_floor_ms, last_gap_ms_);
    if (!fixed_ms_ || *fixed_ms_ == 0) return after_fault;
    return std::min(*fixed_ms_, after_fault);
  }
  if (fixed_ms_) return *fixed_ms_ > 0 ? fixed_ms_ : std::nullopt;
  if (reports_ == 0) {
    return expects_progress_ ? std::optional<int64_t>(options_.before_progress_ms) : std::nullopt;
  }
  return adaptive(options_.floor_ms, std::max(longest_gap_ms_, last_epoch_ms_.value_or(0)));
}

std::optional<std::string> StallWatch::stalled(UnixMillis now_ms) const {
  const std::optional<int64_t> bound = bound_ms();
  if (!bound) return std::nullopt;
  const int64_t quiet = now_ms - last_ms_;
  // After a fault: silent for the floor and its own pace, and its processes
  // asleep (a job that waits on its GPU without spinning, and reports often,
  // is never silent that long).
  if (fault_ms_ && reports_ > 0 && fault_cpu_first_ && fault_cpu_last_ &&
      quiet >= std::max(options_.after_fault_floor_ms, last_gap_ms_)) {
    const int64_t window = fault_cpu_last_->at_ms - fault_cpu_first_->at_ms;
    const int64_t used = fault_cpu_last_->cpu_ms - fault_cpu_first_->cpu_ms;
    if (window >= options_.after_fault_floor_ms &&
        static_cast<double>(used) * 100.0 <
            options_.after_fault_idle_cpu_pct * static_cast<double>(window)) {
      return fmt::format(
          "stalled: no progress for {}{}, and its processes used {} ms of CPU time in the {} "
          "after the fault",
          seconds(quiet), last_epoch_ ? fmt::format(" after epoch {}", *last_epoch_) : "", used,
          seconds(window));
    }
  }
  if (quiet <= *bound) return std::nullopt;
  std::string reason = fmt::format("stalled: no progress for {}", seconds(quiet));
  if (reports_ == 0) {
    reason += " since it started";
  } else if (last_epoch_) {
    reason += fmt::format(" after epoch {}", *last_epoch_);
  } else {
    reason += " after its last progress report";
  }
  if (last_epoch_ms_) {
    reason += fmt::format(" (last epoch took {}; the bound was {})", seconds(*last_epoch_ms_),
                          seconds(*bound));
  } else {
    reason += fmt::format(" (the bound was {})", seconds(*bound));
  }
  return reason;
}

std::string stall_evidence(int64_t job_id, const std::vector<int>& gpus,
                           const std::map<int, std::vector<EngineProcess>>& processes,
                           const std::map<int, std::deque<DeviceSample>>& recent_samples,
                           const std::vector<ProcessState>& group) {
  std::vector<std::string> parts;
  uint64_t memory = 0;
  bool seen = false;
  std::optional<double> sm;
  for (const auto& [device, listed] : processes) {
    for (const EngineProcess& p : listed) {
      if (p.job_id != job_id) continue;
      seen = true;
      memory += p.sample.used_memory_bytes.value_or(0);
      if (p.sample.sm_util_pct) sm = sm.value_or(0) + *p.sample.sm_util_pct;
    }
  }
  parts.push_back(seen ? fmt::format("GPU memory {}{}", format_bytes(memory),
                                     sm ? fmt::format(", its SM use {:.0f}%", *sm) : "")
                       : "no GPU process of it seen");
  for (int d : gpus) {
    auto recent = recent_samples.find(d);
    if (recent == recent_samples.end() || recent->second.empty()) continue;
    const DeviceSample& last = recent->second.back();
    if (last.sm_active_pct)
      parts.push_back(fmt::format("gpu{} SM activity {:.0f}%", d, *last.sm_active_pct));
  }
  std::vector<std::string> states;
  for (const ProcessState& p : group) {
    states.push_back(fmt::format("{} {} {}{}", p.pid, p.command, p.state,
                                 p.wchan.empty() ? "" : " in " + p.wchan));
  }
  parts.push_back(states.empty() ? std::string("no process left in its group")
                                 : fmt::format("processes: {}", fmt::join(states, ", ")));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace colo
