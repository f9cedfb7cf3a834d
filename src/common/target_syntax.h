// The one syntax every command uses to name what it acts on (docs/cli.md,
// "Naming runs, submissions and jobs"): an id, `last`, a name, RUN/SUB (a
// run and one of its submissions, as `colo submit` prints it) and, where
// several are meant, a range FIRST-LAST (as `colo submit` prints its ids).
//
// This unit reads the text only: which run, job or submission a form names
// is the caller's to resolve (a name among the caller's own, through
// RunStore::find_named). parse_target() accepts only the forms a command
// takes, and its errors name the target and list those forms.
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace colo {

// One target as written.
struct Target {
  enum class Kind {
    kLast,        // "last" (or "" where a command takes none as the most recent)
    kId,          // "12": `first` is the id
    kRange,       // "12-21": ids `first` to `last`, both included, first <= last
    kSubmission,  // "3/7": run `first`, submission `last`
    kName,        // anything else: `name`
  };
  Kind kind = Kind::kLast;
  int64_t first = 0;
  int64_t last = 0;
  std::string name;
};

// The forms a command takes, and what its ids are ("run id", "job id").
struct TargetForms {
  bool last = false;
  bool id = true;
  bool range = false;
  bool submission = false;
  bool name = false;
  std::string_view id_noun = "run id";
  // The command, for errors ("colo cancel", "--resume").
  std::string_view command;
};

// The largest range a target may span (a typo such as 12-21000 is refused).
inline constexpr int64_t kMaxTargetRange = 100'000;

// Reads `text` as one of `forms`. "" reads as "last" where last is taken.
// A text of digits, digits-digits or digits/digits is never a name, so a
// malformed one (0, 21-12, a range too wide) is an error, as is a form the
// command does not take; the error names `text` and the forms it takes.
Result<Target> parse_target(std::string_view text, const TargetForms& forms);

// The forms, in words: "a run id (12), last, a name or RUN/SUB (3/7)".
std::string describe_forms(const TargetForms& forms);

// Whether `name` may be given to a run or a submission: not empty, and not
// a text parse_target() reads as another form (a number, `last`, a range,
// RUN/SUB). An error says why not.
Status check_target_name(std::string_view name);

}  // namespace colo
