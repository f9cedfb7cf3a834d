#include "jobs/output_patterns.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace colo {
namespace {

std::optional<int64_t> parse_count(std::string_view text, int64_t max) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || value > max) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_number(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

Error not_a_count(const std::string& group, std::string_view text, int64_t max) {
  return Error(fmt::format("group '{}' is not a whole number from 0 to {}: '{}'", group, max,
                           text.substr(0, 64)));
}

}  // namespace

OutputPattern::OutputPattern(PatternKind kind, std::shared_ptr<const re2::RE2> re,
                             std::vector<Group> groups, bool first_group_is_epoch)
    : kind_(kind),
      re_(std::move(re)),
      groups_(std::move(groups)),
      first_group_is_epoch_(first_group_is_epoch),
      group_count_(re_->NumberOfCapturingGroups()) {}

Result<OutputPattern> OutputPattern::compile(PatternKind kind, const std::string& pattern) {
  re2::RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const re2::RE2>(pattern, options);
  if (!re->ok()) {
    return Error(fmt::format("is not a valid regular expression (RE2 syntax): {}", re->error()));
  }
  std::vector<Group> groups;
  for (const auto& [name, index] : re->NamedCapturingGroups()) groups.push_back({index, name});
  std::sort(groups.begin(), groups.end(),
            [](const Group& a, const Group& b) { return a.index < b.index; });
  auto has = [&](const char* name) {
    return std::any_of(groups.begin(), groups.end(),
                       [&](const Group& g) { return g.name == name; });
  };
  if (kind == PatternKind::kEpoch) {
    for (const char* name : {"step", "steps"}) {
      if (has(name)) {
        return Error(fmt::format(
            "has a group named '{}', which only step_regex understands; epoch_regex knows "
            "'epoch' and 'samples'",
            name));
      }
    }
  } else {
    if (has("samples")) {
      return Error(
          "has a group named 'samples', which step_regex does not use: a step's samples come "
          "from epoch_samples (the samples of one epoch) and the part of the epoch done");
    }
    if (!has("step") && !has("epoch")) {
      return Error(
          "needs a group named 'step' or 'epoch' (or both), e.g. "
          "\"Train: (?P<epoch>\\\\d+) \\\\[\\\\s*(?P<step>\\\\d+)/(?P<steps>\\\\d+)\"");
    }
    if (has("steps") && !has("step")) {
      return Error("has a group named 'steps' but none named 'step'");
    }
  }
  const bool first_group_is_epoch =
      kind == PatternKind::kEpoch && groups.empty() && re->NumberOfCapturingGroups() >= 1;
  return OutputPattern(kind, std::move(re), std::move(groups), first_group_is_epoch);
}

Result<std::optional<PatternMatch>> OutputPattern::match(std::string_view line) const {
  const re2::StringPiece text(line.data(), line.size());
  // Without captures RE2 answers from its DFA; groups are extracted only for
  // the lines that match.
  if (!re_->Match(text, 0, text.size(), re2::RE2::UNANCHORED, nullptr, 0)) {
    return std::optional<PatternMatch>();
  }
  std::vector<re2::StringPiece> sub(static_cast<size_t>(group_count_) + 1);
  if (!re_->Match(text, 0, text.size(), re2::RE2::UNANCHORED, sub.data(),
                  static_cast<int>(sub.size()))) {
    return std::optional<PatternMatch>();
  }
  PatternMatch m;
  if (first_group_is_epoch_ && sub[1].data() != nullptr) {
    m.first_group = std::string(sub[1].data(), sub[1].size());
  }
  for (const Group& g : groups_) {
    const re2::StringPiece& piece = sub[static_cast<size_t>(g.index)];
    if (piece.data() == nullptr) continue;  // took no part in the match
    const std::string_view value(piece.data(), piece.size());
    if (g.name == "epoch") {
      if (kind_ == PatternKind::kStep && value.find('.') != std::string_view::npos) {
        std::optional<double> done = parse_number(value);
        if (!done || *done < 0 || *done > static_cast<double>(kMaxEpoch)) {
          return Error(fmt::format("group 'epoch' is not an epoch number from 0 to {}: '{}'",
                                   kMaxEpoch, value.substr(0, 64)));
        }
        m.epochs_done = done;
      } else {
        m.epoch = parse_count(value, kMaxEpoch);
        if (!m.epoch) return not_a_count(g.name, value, kMaxEpoch);
      }
    } else if (g.name == "samples") {
      m.samples = parse_count(value, kMaxSamplesPerEvent);
      if (!m.samples) return not_a_count(g.name, value, kMaxSamplesPerEvent);
    } else if (g.name == "step" || g.name == "steps") {
      std::optional<int64_t> count = parse_count(value, kMaxStep);
      if (!count) return not_a_count(g.name, value, kMaxStep);
      (g.name == "step" ? m.step : m.steps) = count;
    } else if (std::optional<double> number = parse_number(value)) {
      m.metrics[g.name] = *number;
    }
  }
  return std::optional<PatternMatch>(std::move(m));
}

void StepTracker::add(const PatternMatch& m, UnixMillis time_ms, std::vector<ProgressEvent>& out) {
  const bool fractional = m.epochs_done.has_value();
  int64_t label = seen_ ? label_ : 1;  // without an epoch group, epochs are counted from 1
  std::optional<double> fraction;
  if (fractional) {
    label = static_cast<int64_t>(std::floor(*m.epochs_done));
    fraction = *m.epochs_done - static_cast<double>(label);
  } else {
    if (m.epoch) label = *m.epoch;
    if (m.step && m.steps && *m.steps > 0) {
      fraction = std::clamp(static_cast<double>(*m.step) / static_cast<double>(*m.steps), 0.0, 1.0);
    }
  }
  bool new_epoch = false;
  if (seen_) {
    if (m.epoch || fractional) {
      new_epoch = label != label_;
    } else if (m.step && step_ && *m.step < *step_) {
      new_epoch = true;
      label = label_ + 1;
    }
  }

  // The part of an epoch done since the previous line; from the epoch's
  // start for the first line.
  std::optional<double> done;
  // (A line after the epochs went back, a restart, counts from its epoch's start.)
  if (fraction) {
    if (seen_ && !new_epoch) {
      if (fraction_) done = std::max(0.0, *fraction - *fraction_);
    } else if (seen_ && label > label_ && fraction_) {
      done = static_cast<double>(label - label_) - *fraction_ + *fraction;
    } else {
      done = *fraction;
    }
  }

  auto epoch_end = [&](int64_t number) {
    ProgressEvent e;
    e.time_ms = time_ms;
    e.kind = "epoch_end";
    e.epoch = number;
    e.samples = epoch_samples_;
    return e;
  };
  if (derive_epochs_ && new_epoch && ended_ != label_) {
    out.push_back(epoch_end(fractional ? label : label_));
    ended_ = label_;
  }

  ProgressEvent step;
  step.time_ms = time_ms;
  step.kind = "step";
  step.epoch = label;
  step.step = m.step;
  if (done && epoch_samples_) {
    step.samples = std::llround(std::min(*done * static_cast<double>(*epoch_samples_),
                                         static_cast<double>(kMaxSamplesPerEvent)));
  }
  step.metrics = m.metrics;
  out.push_back(std::move(step));

  if (derive_epochs_ && !fractional && m.step && m.steps && *m.step + 1 >= *m.steps &&
      ended_ != label) {
    ProgressEvent e = epoch_end(label);
    e.metrics = m.metrics;
    out.push_back(std::move(e));
    ended_ = label;
  }

  seen_ = true;
  label_ = label;
  fraction_ = fraction;
  step_ = m.step;
}

}  // namespace colo
