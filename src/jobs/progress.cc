#include "jobs/progress.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/saturating.h"
#include "jobs/log_reason.h"

namespace colo {
namespace {

bool is_blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

// Sums two optional sample counts; absent when both are.
std::optional<int64_t> add_samples(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a) return b;
  if (!b) return a;
  return saturating_add(*a, *b);
}

// `later` with the samples of both: what one event holding two says.
ProgressEvent merge(const ProgressEvent& earlier, ProgressEvent later) {
  later.samples = add_samples(earlier.samples, later.samples);
  return later;
}

}  // namespace

bool EventThrottle::Bucket::take(double per_s, int64_t burst, UnixMillis now_ms) {
  if (now_ms > refilled_ms) {
    tokens = std::min(static_cast<double>(burst),
                      tokens + static_cast<double>(now_ms - refilled_ms) * per_s / 1000.0);
    refilled_ms = now_ms;
  }
  if (tokens < 1.0) return false;
  tokens -= 1.0;
  return true;
}

EventThrottle::EventThrottle(const ProgressLimits& limits, UnixMillis now_ms)
    : limits_(limits),
      epoch_bucket_{static_cast<double>(limits.epoch_end_burst), now_ms},
      other_bucket_{static_cast<double>(limits.other_event_burst), now_ms},
      metric_step_bucket_{static_cast<double>(limits.metric_step_burst), now_ms} {}

void EventThrottle::emit_step(UnixMillis now_ms, std::vector<ProgressEvent>& out) {
  out.push_back(std::move(*pending_step_));
  pending_step_.reset();
  last_step_ms_ = now_ms;
}

void EventThrottle::emit_epoch(std::vector<ProgressEvent>& out) {
  ProgressEvent e = std::move(*pending_epoch_);
  if (pending_epochs_ > 1) {
    e.metrics["coalesced_epochs"] = static_cast<double>(pending_epochs_);
    coalesced_epochs_ += pending_epochs_ - 1;
  }
  out.push_back(std::move(e));
  pending_epoch_.reset();
  pending_epochs_ = 0;
}

void EventThrottle::add(ProgressEvent event, UnixMillis now_ms, std::vector<ProgressEvent>& out) {
  if (event.kind == "step") {
    const bool with_metrics = !event.metrics.empty();
    pending_step_ = pending_step_ ? merge(*pending_step_, std::move(event)) : std::move(event);
    if ((with_metrics &&
         metric_step_bucket_.take(limits_.metric_steps_per_s, limits_.metric_step_burst, now_ms)) ||
        now_ms - last_step_ms_ >= limits_.step_interval_ms)
      emit_step(now_ms, out);
  } else if (event.kind == "epoch_end") {
    pending_epoch_ = pending_epoch_ ? merge(*pending_epoch_, std::move(event)) : std::move(event);
    ++pending_epochs_;
    if (epoch_bucket_.take(limits_.epoch_ends_per_s, limits_.epoch_end_burst, now_ms)) {
      emit_epoch(out);
    }
  } else if (other_bucket_.take(limits_.other_events_per_s, limits_.other_event_burst, now_ms)) {
    out.push_back(std::move(event));
  } else {
    ++dropped_;
  }
}

void EventThrottle::flush(UnixMillis now_ms, bool final, std::vector<ProgressEvent>& out) {
  if (pending_epoch_ &&
      (final || epoch_bucket_.take(limits_.epoch_ends_per_s, limits_.epoch_end_burst, now_ms))) {
    emit_epoch(out);
  }
  if (pending_step_ && (final || now_ms - last_step_ms_ >= limits_.step_interval_ms)) {
    emit_step(now_ms, out);
  }
}

Result<ProgressReader> ProgressReader::create(const ProgressSources& sources, UnixMillis now_ms,
                                              const ProgressLimits& limits) {
  std::optional<OutputPattern> epoch_pattern;
  std::optional<OutputPattern> step_pattern;
  if (sources.epoch_regex) {
    Result<OutputPattern> p = OutputPattern::compile(PatternKind::kEpoch, *sources.epoch_regex);
    if (!p.ok())
      return Error(fmt::format("epoch_regex '{}' {}", *sources.epoch_regex, p.error().message()));
    epoch_pattern = std::move(p).value();
  }
  if (sources.step_regex) {
    Result<OutputPattern> p = OutputPattern::compile(PatternKind::kStep, *sources.step_regex);
    if (!p.ok())
      return Error(fmt::format("step_regex '{}' {}", *sources.step_regex, p.error().message()));
    step_pattern = std::move(p).value();
  }
  return ProgressReader(sources, now_ms, limits, std::move(epoch_pattern), std::move(step_pattern));
}

ProgressReader::ProgressReader(const ProgressSources& sources, UnixMillis now_ms,
                               const ProgressLimits& limits,
                               std::optional<OutputPattern> epoch_pattern,
                               std::optional<OutputPattern> step_pattern)
    : limits_(limits),
      created_ms_(now_ms),
      last_poll_ms_(now_ms),
      progress_(sources.progress_path, limits.progress_file),
      log_(sources.log_path, limits.log),
      epoch_pattern_(std::move(epoch_pattern)),
      step_pattern_(std::move(step_pattern)),
      epoch_samples_(sources.epoch_samples),
      steps_(sources.epoch_samples, /*derive_epochs=*/!epoch_pattern_),
      throttle_(limits, now_ms) {}

void ProgressReader::follow_log(const std::string& log_path) { log_.reset(log_path); }

void ProgressReader::take(ProgressEvent event, UnixMillis now_ms, std::vector<ProgressEvent>& out) {
  event.time_ms = std::max(event.time_ms, created_ms_);
  if (event.kind == "epoch_end" && !event.samples) event.samples = epoch_samples_;
  for (auto it = event.metrics.begin(); it != event.metrics.end();) {
    if (metric_names_.count(it->first) > 0 || (metric_names_.size() < limits_.max_metric_names &&
                                               metric_names_.insert(it->first).second)) {
      ++it;
    } else {
      ++dropped_metrics_;
      it = event.metrics.erase(it);
    }
  }
  throttle_.add(std::move(event), now_ms, out);
}

void ProgressReader::read_progress_line(std::string_view line, bool truncated, UnixMillis now_ms,
                                        std::vector<ProgressEvent>& out) {
  if (is_blank(line)) return;
  if (truncated) {
    ++malformed_;
    return;
  }
  // Over the budget, only epoch ends are worth parsing; a cheap look decides.
  const uint64_t budget = limits_.parse_bytes_per_poll;
  if (parsed_bytes_ >= budget &&
      (parsed_bytes_ >= 2 * budget || line.find("epoch_end") == std::string_view::npos)) {
    throttle_.count_dropped();
    return;
  }
  parsed_bytes_ += line.size();
  Result<ProgressEvent> event = parse_progress_line(line, now_ms);
  if (!event.ok()) {
    ++malformed_;
    return;
  }
  take(std::move(event).value(), now_ms, out);
}

void ProgressReader::read_log_line(std::string_view line, UnixMillis line_ms, UnixMillis now_ms,
                                   std::vector<ProgressEvent>& out) {
  if (epoch_pattern_) {
    Result<std::optional<PatternMatch>> m = epoch_pattern_->match(line);
    if (!m.ok()) {
      ++malformed_;
    } else if (*m) {
      const PatternMatch& match = **m;
      int64_t epoch = regex_epochs_ + 1;
      if (match.epoch) {
        epoch = *match.epoch;
      } else if (match.first_group) {
        int64_t parsed = 0;
        const std::string& g = *match.first_group;
        auto [end, ec] = std::from_chars(g.data(), g.data() + g.size(), parsed);
        if (ec == std::errc() && end == g.data() + g.size() && parsed >= 0 && parsed <= kMaxEpoch)
          epoch = parsed;
      }
      regex_epochs_ = std::min(epoch, kMaxEpoch);
      ProgressEvent e;
      e.time_ms = line_ms;
      e.kind = "epoch_end";
      e.epoch = regex_epochs_;
      e.samples = match.samples;
      e.metrics = match.metrics;
      take(std::move(e), now_ms, out);
    }
  }
  if (step_pattern_) {
    Result<std::optional<PatternMatch>> m = step_pattern_->match(line);
    if (!m.ok()) {
      ++malformed_;
    } else if (*m) {
      std::vector<ProgressEvent> events;
      steps_.add(**m, line_ms, events);
      for (ProgressEvent& e : events) take(std::move(e), now_ms, out);
    }
  }
}

std::vector<ProgressEvent> ProgressReader::poll(UnixMillis now_ms, bool job_exited) {
  std::vector<ProgressEvent> out;
  parsed_bytes_ = 0;
  throttle_.flush(now_ms, /*final=*/false, out);
  progress_.read(job_exited, [&](std::string_view line, bool truncated) {
    read_progress_line(line, truncated, now_ms, out);
  });
  if (epoch_pattern_ || step_pattern_) {
    const UnixMillis since = std::min(last_poll_ms_, now_ms);
    uint64_t through = 0;  // bytes of this read up to the end of the line
    log_.read(job_exited, [&](std::string_view line, bool /*truncated*/) {
      through += line.size() + 1;
      const double share =
          std::min(1.0, static_cast<double>(through) /
                            static_cast<double>(std::max<uint64_t>(1, log_.this_read_bytes())));
      // The last line was written when the file last changed, which a busy
      // machine may read a second later; a time outside the span since the
      // last poll is another clock's (a test's) and says nothing.
      const UnixMillis written = log_.this_read_written_ms();
      const UnixMillis until = written >= since && written < now_ms ? written : now_ms;
      read_log_line(line,
                    since + static_cast<UnixMillis>(static_cast<double>(until - since) * share),
                    now_ms, out);
    });
  }
  last_poll_ms_ = std::max(last_poll_ms_, now_ms);
  throttle_.flush(now_ms, job_exited, out);
  return out;
}

ThrottleCounts ProgressReader::throttled() const {
  ThrottleCounts c;
  c.skipped_bytes = static_cast<int64_t>(
      std::min<uint64_t>(saturating_add(progress_.skipped_bytes(), log_.skipped_bytes()),
                         static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
  c.dropped_events = throttle_.dropped_events();
  c.coalesced_epochs = throttle_.coalesced_epochs();
  c.refused_files = (progress_.refused() ? 1 : 0) + (log_.refused() ? 1 : 0);
  c.dropped_metrics = dropped_metrics_;
  return c;
}

std::vector<std::string> ProgressReader::take_notices() {
  std::vector<std::string> notices;
  for (LineFollower* f : {&progress_, &log_}) {
    if (std::optional<std::string> n = f->take_notice()) notices.push_back(std::move(*n));
  }
  ThrottleCounts c = throttled();
  if (!throttle_noted_ && (c.skipped_bytes > 0 || c.dropped_events > 0 || c.coalesced_epochs > 0)) {
    throttle_noted_ = true;
    c.refused_files = 0;
    notices.push_back(fmt::format(
        "progress throttled: the job reports faster than colo records ({} so far); epoch ends "
        "are kept, the rest is coalesced or dropped (see docs/job-file.md)",
        c.describe()));
  }
  if (!metrics_noted_ && dropped_metrics_ > 0) {
    metrics_noted_ = true;
    notices.push_back(fmt::format(
        "the job reported more than {} distinct metric names; the values of the others are "
        "dropped (counted as dropped_metrics)",
        limits_.max_metric_names));
  }
  return notices;
}

void append_note_to_log(const std::string& log_path, const std::string& note) {
  int fd = ::open(log_path.c_str(),
                  O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);
  if (fd < 0) return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const std::string line = "\n" + std::string(kColoLogNotePrefix) + note + "\n";
    (void)!::write(fd, line.data(), line.size());
  }
  ::close(fd);
}

}  // namespace colo
