// Lineage: one history of a job resumed across runs (`colo run --resume`,
// `colo submit --resume`), as W&B's `resume` joins a run's attempts into one.
// Each attempt is a `jobs` row whose JobRow::resumes names the row before it;
// `colo show` draws the joined epochs and metrics, and `colo export mlflow`
// writes one metric history per job from them.
//
// join_history and joined_events are pure; earlier_attempts reads the rows
// before a job through a RunReader.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "analysis/epochs.h"
#include "analysis/training_metrics.h"
#include "common/clock.h"
#include "jobs/progress_event.h"
#include "store/rows.h"

namespace colo {

// One attempt of a job's history: what one `jobs` row recorded.
struct AttemptHistory {
  JobRef job;
  // Its last start: what came before it in the same row (an out-of-memory
  // retry's first try) is not part of its history, as for a job alone.
  std::optional<UnixMillis> started_ms;
  std::vector<ProgressEvent> events;  // its progress events (metric steps among them)
};

// The events of `attempts` (oldest attempt first) as one history: of each,
// those at or after its start, in time order. Steps and epochs keep
// increasing: an attempt whose first step (epoch) is at or below the last
// step (epoch) before it, as a script that counts from 0 again gives, has
// its steps (epochs) moved on to start just after that last one; one that
// continues the count (a checkpoint's epoch 7 after epoch 6) is left as it is.
std::vector<ProgressEvent> joined_events(const std::vector<AttemptHistory>& attempts);

// One attempt's part in a joined history.
struct HistoryPart {
  JobRef job;
  int64_t epochs = 0;                  // its epoch ends
  std::optional<int64_t> first_epoch;  // their numbers in the joined history, when reported
  std::optional<int64_t> last_epoch;
  bool operator==(const HistoryPart&) const = default;
};

// A job's history across the attempts it resumes.
struct JobHistory {
  std::vector<HistoryPart> parts;     // oldest first; the last is the job itself
  std::vector<EpochEnd> epoch_ends;   // of every attempt, oldest first
  std::vector<MetricSeries> metrics;  // training_metrics() of joined_events()
};

// The history of `attempts` (oldest first, the job itself last); `goals`:
// the job's declared objective.
JobHistory join_history(const std::vector<AttemptHistory>& attempts, const MetricGoals& goals);

// The run records attempts are read from, each read once through a
// RunReader (without samples) however many jobs' histories lead there: a
// service's run, which holds most attempts of its jobs, may be large. A
// record the caller holds already (the run being shown) can be lent
// instead. Not thread-safe; borrows the reader and what is lent.
class AttemptRecords {
 public:
  explicit AttemptRecords(RunReader& reader) : reader_(reader) {}
  AttemptRecords(const AttemptRecords&) = delete;
  AttemptRecords& operator=(const AttemptRecords&) = delete;
  // `record` stands for its run; it must outlive this.
  void lend(const RunRecord& record) { lent_[record.run.id] = &record; }
  // Run `run_id`'s record; nullptr when it cannot be read (removed).
  const RunRecord* record(int64_t run_id);

 private:
  RunReader& reader_;
  std::map<int64_t, const RunRecord*> lent_;
  std::map<int64_t, std::optional<RunRecord>> read_;  // nullopt: could not be read
};

// The attempts before `job` (oldest first), following JobRow::resumes
// through `records`: each its row's events and metric steps (at most
// RunRecord::kMaxMetricSteps of them). A run or job no longer in the store
// (removed) ends the chain there, as does a link back to a job already seen;
// at most kMaxAttempts are followed. Empty when `job` resumes none.
inline constexpr size_t kMaxAttempts = 100;
std::vector<AttemptHistory> earlier_attempts(AttemptRecords& records, const JobRow& job);

}  // namespace colo
