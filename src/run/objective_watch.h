// ObjectiveWatch: whether a job reports the [objective] metric its job file
// declares (docs/job-file.md). A job that reports training metrics but never
// the objective is one early stopping cannot judge and colo show cannot rank:
// fed the job's progress events, the watch says so once, as soon as the job
// went past its first epoch without it (a step or an epoch's start after its
// first epoch ended, or its second epoch's end: its first epoch's metrics,
// validation included, came by then), else when the job ends. Plain data,
// owned by its job's JobRuntime; no clock, no I/O: the engine says it.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jobs/progress_event.h"

namespace colo {

class ObjectiveWatch {
 public:
  // `objective`: the declared metric; `job`: the job's label in the warning.
  ObjectiveWatch(std::string objective, std::string job);

  // The job reported `e`, having ended `epochs_ended` epochs with it
  // included; the warning to give now (analysis/training_metrics.h's
  // objective_not_reported), at most once, else nullopt.
  std::optional<std::string> saw(const ProgressEvent& e, int64_t epochs_ended);

  // The job ended (an attempt's end): the warning if it reported training
  // metrics but never the objective and was not warned of yet.
  std::optional<std::string> ended();

 private:
  std::optional<std::string> warn();

  std::string objective_;
  std::string job_;
  bool seen_ = false;               // it reported the objective
  bool warned_ = false;             // the warning was given
  std::set<std::string> reported_;  // its training metrics' names, at most kMaxNames
  static constexpr size_t kMaxNames = 64;
};

}  // namespace colo
