// Progress read from a job's output, for scripts colo cannot change: the
// job file's `epoch_regex` (a line that ends an epoch) and `step_regex` (a
// per-step line such as timm's "Train: 3 [ 200/390 ( 51%)]"), matched with
// RE2, whose time is linear in the line's length whatever the pattern.
//
// Named groups say what a match means (docs/job-file.md has examples):
//   epoch_regex: (?P<epoch>...) the epoch number, (?P<samples>...) the
//     epoch's samples. A pattern without named groups keeps the original
//     rule: its first group, when an integer, is the epoch number.
//   step_regex: (?P<epoch>...) the epoch number, or a fractional epoch
//     ("1.37": epochs done so far, as Hugging Face's Trainer logs it);
//     (?P<step>...) the step within the epoch; (?P<steps>...) the steps per
//     epoch. It needs `step` or `epoch`.
// Any other named group whose text is a number becomes a metric of the event
// ("loss", "lr", and also "time": colo times an event when it reads the line).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "jobs/progress_event.h"

namespace re2 {
class RE2;
}

namespace colo {

enum class PatternKind { kEpoch, kStep };

// What one matching line says; a field is absent when the pattern has no
// such group or the group took no part in the match.
struct PatternMatch {
  std::optional<int64_t> epoch;       // as printed (an integer)
  std::optional<double> epochs_done;  // a fractional epoch, e.g. 1.37
  std::optional<int64_t> step;
  std::optional<int64_t> steps;
  std::optional<int64_t> samples;
  std::optional<std::string> first_group;  // epoch_regex without named groups
  std::map<std::string, double> metrics;
};

// A compiled epoch_regex or step_regex. Copies share the compiled pattern,
// which is immutable (RE2 is thread-safe for matching).
class OutputPattern {
 public:
  // Compiles `pattern` and checks its groups. The error says what is wrong
  // with the pattern; the caller adds where it came from (file, line, key).
  static Result<OutputPattern> compile(PatternKind kind, const std::string& pattern);

  // Matches anywhere in `line`. nullopt when it does not match; an Error when
  // it matches but a group's text is not a number in range (the line is
  // then malformed).
  Result<std::optional<PatternMatch>> match(std::string_view line) const;

  PatternKind kind() const { return kind_; }

 private:
  struct Group {
    int index = 0;  // capture group number, 1-based
    std::string name;
  };
  OutputPattern(PatternKind kind, std::shared_ptr<const re2::RE2> re, std::vector<Group> groups,
                bool first_group_is_epoch);

  PatternKind kind_;
  std::shared_ptr<const re2::RE2> re_;
  std::vector<Group> groups_;  // the named ones, in group order
  bool first_group_is_epoch_ = false;
  int group_count_ = 0;
};

// Turns successive step_regex matches into progress events. Each match is a
// "step" event; colo derives an "epoch_end" when the step reaches the last
// of the epoch (step + 1 >= steps: scripts count from 0 or 1), or, for an
// epoch whose last step was not printed, at the first line of the next one
// (the epoch number changed, or the step went back). With a fractional epoch,
// an epoch ends when its integer part grows. `samples` of a step are the part
// of an epoch done since the previous line times `epoch_samples`, when both
// are known; an epoch end gets `epoch_samples`. With `derive_epochs` false
// (the job also has an epoch_regex), only steps are produced.
class StepTracker {
 public:
  StepTracker(std::optional<int64_t> epoch_samples, bool derive_epochs)
      : epoch_samples_(epoch_samples), derive_epochs_(derive_epochs) {}

  // Appends the events of one match read at `time_ms` to `out`.
  void add(const PatternMatch& match, UnixMillis time_ms, std::vector<ProgressEvent>& out);

 private:
  std::optional<int64_t> epoch_samples_;
  bool derive_epochs_;
  bool seen_ = false;
  int64_t label_ = 0;               // the current epoch's number
  std::optional<double> fraction_;  // of the current epoch done, when known
  std::optional<int64_t> step_;     // the previous line's step
  std::optional<int64_t> ended_;    // the last epoch whose end was produced
};

}  // namespace colo
