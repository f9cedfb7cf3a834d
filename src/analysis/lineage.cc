#include "analysis/lineage.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/result.h"

namespace colo {
namespace {

// The attempts' events, each its own, moved on as joined_events() says.
std::vector<std::vector<ProgressEvent>> joined_parts(const std::vector<AttemptHistory>& attempts) {
  std::vector<std::vector<ProgressEvent>> parts;
  std::optional<int64_t> last_step;
  std::optional<int64_t> last_epoch;
  for (const AttemptHistory& a : attempts) {
    std::vector<ProgressEvent> events;
    for (const ProgressEvent& e : a.events) {
      if (!a.started_ms || e.time_ms >= *a.started_ms) events.push_back(e);
    }
    std::stable_sort(
        events.begin(), events.end(),
        [](const ProgressEvent& x, const ProgressEvent& y) { return x.time_ms < y.time_ms; });
    std::optional<int64_t> first_step;
    std::optional<int64_t> first_epoch;
    for (const ProgressEvent& e : events) {
      if (e.step) first_step = std::min(first_step.value_or(*e.step), *e.step);
      if (e.epoch) first_epoch = std::min(first_epoch.value_or(*e.epoch), *e.epoch);
    }
    const int64_t step_by =
        last_step && first_step && *first_step <= *last_step ? *last_step - *first_step + 1 : 0;
    const int64_t epoch_by = last_epoch && first_epoch && *first_epoch <= *last_epoch
                                 ? *last_epoch - *first_epoch + 1
                                 : 0;
    for (ProgressEvent& e : events) {
      if (e.step) {
        *e.step += step_by;
        last_step = std::max(last_step.value_or(*e.step), *e.step);
      }
      if (e.epoch) {
        *e.epoch += epoch_by;
        last_epoch = std::max(last_epoch.value_or(*e.epoch), *e.epoch);
      }
    }
    parts.push_back(std::move(events));
  }
  return parts;
}

}  // namespace

std::vector<ProgressEvent> joined_events(const std::vector<AttemptHistory>& attempts) {
  std::vector<ProgressEvent> out;
  for (std::vector<ProgressEvent>& part : joined_parts(attempts)) {
    out.insert(out.end(), std::make_move_iterator(part.begin()),
               std::make_move_iterator(part.end()));
  }
  return out;
}

JobHistory join_history(const std::vector<AttemptHistory>& attempts, const MetricGoals& goals) {
  JobHistory history;
  std::vector<ProgressEvent> all;
  const std::vector<std::vector<ProgressEvent>> parts = joined_parts(attempts);
  for (size_t i = 0; i < parts.size(); ++i) {
    HistoryPart part;
    part.job = attempts[i].job;
    for (const EpochEnd& end : epoch_ends(parts[i], std::nullopt)) {
      ++part.epochs;
      if (end.epoch) {
        if (!part.first_epoch) part.first_epoch = end.epoch;
        part.last_epoch = end.epoch;
      }
      history.epoch_ends.push_back(end);
    }
    history.parts.push_back(part);
    all.insert(all.end(), parts[i].begin(), parts[i].end());
  }
  history.metrics = training_metrics(all, std::nullopt, goals);
  return history;
}

const RunRecord* AttemptRecords::record(int64_t run_id) {
  if (auto lent = lent_.find(run_id); lent != lent_.end()) return lent->second;
  auto read = read_.find(run_id);
  if (read == read_.end()) {
    Result<RunRecord> got = reader_.run_record(run_id, MetricSteps::kRead, Samples::kSkip);
    read = read_
               .emplace(run_id,
                        got.ok() ? std::optional<RunRecord>(std::move(got).value()) : std::nullopt)
               .first;
  }
  return read->second ? &*read->second : nullptr;
}

std::vector<AttemptHistory> earlier_attempts(AttemptRecords& records, const JobRow& job) {
  std::vector<AttemptHistory> earlier;
  std::set<int64_t> seen = {job.id};
  std::optional<JobRef> next = job.resumes;
  while (next && earlier.size() < kMaxAttempts && seen.insert(next->job_id).second) {
    const RunRecord* record = records.record(next->run_id);
    if (record == nullptr) break;  // the run was removed: the history starts after it
    const RunRecord& r = *record;
    const auto row = std::find_if(r.jobs.begin(), r.jobs.end(),
                                  [&](const JobRow& j) { return j.id == next->job_id; });
    if (row == r.jobs.end()) break;
    const size_t i = static_cast<size_t>(row - r.jobs.begin());
    AttemptHistory attempt{*next, row->started_ms, {}};
    if (i < r.events.size()) attempt.events = r.events[i];
    if (i < r.metric_steps.size()) {
      attempt.events.insert(attempt.events.end(), r.metric_steps[i].begin(),
                            r.metric_steps[i].end());
    }
    earlier.push_back(std::move(attempt));
    next = row->resumes;
  }
  std::reverse(earlier.begin(), earlier.end());
  return earlier;
}

}  // namespace colo
