#include "analysis/lineage.h"

#include <gtest/gtest.h>

#include "analysis/stored.h"
#include "store/run_store.h"
#include "store/testing/fake_runs.h"
#include "store/testing/forwarding_reader.h"

namespace colo {
namespace {

ProgressEvent at(UnixMillis t, const char* kind, std::optional<int64_t> epoch,
                 std::optional<int64_t> step, std::map<std::string, double> metrics = {}) {
  ProgressEvent e;
  e.time_ms = t;
  e.kind = kind;
  e.epoch = epoch;
  e.step = step;
  e.metrics = std::move(metrics);
  return e;
}

std::vector<int64_t> epochs_of(const std::vector<ProgressEvent>& events) {
  std::vector<int64_t> out;
  for (const ProgressEvent& e : events) out.push_back(e.epoch.value_or(-1));
  return out;
}
std::vector<int64_t> steps_of(const std::vector<ProgressEvent>& events) {
  std::vector<int64_t> out;
  for (const ProgressEvent& e : events) out.push_back(e.step.value_or(-1));
  return out;
}

TEST(Lineage, JoinedEventsKeepStepsAndEpochsIncreasing) {
  struct Case {
    const char* name;
    std::vector<AttemptHistory> attempts;
    std::vector<int64_t> epochs;
    std::vector<int64_t> steps;
  } cases[] = {
      {"a checkpoint's count continues: left as it is",
       {{{1, 10}, 0, {at(100, "epoch_end", 1, 50), at(200, "epoch_end", 2, 100)}},
        {{2, 20}, 1000, {at(1100, "epoch_end", 3, 150), at(1200, "epoch_end", 4, 200)}}},
       {1, 2, 3, 4},
       {50, 100, 150, 200}},
      {"a script counting from the start again: moved on past the last",
       {{{1, 10}, 0, {at(100, "epoch_end", 1, 50), at(200, "epoch_end", 2, 100)}},
        {{2, 20}, 1000, {at(1100, "epoch_end", 1, 0), at(1200, "epoch_end", 2, 50)}}},
       {1, 2, 3, 4},
       {50, 100, 101, 151}},
      {"an attempt's events before its start (an earlier try in its row) left out",
       {{{1, 10}, 50, {at(10, "epoch_end", 1, 5), at(100, "epoch_end", 1, 50)}},
        {{2, 20}, 1000, {at(1200, "epoch_end", 2, 100), at(1100, "step", std::nullopt, 75)}}},
       {1, -1, 2},
       {50, 75, 100}},
      {"three attempts, a resumed one reporting nothing",
       {{{1, 10}, 0, {at(100, "epoch_end", 1, std::nullopt)}},
        {{2, 20}, 500, {}},
        {{3, 30}, 1000, {at(1100, "epoch_end", 2, std::nullopt)}}},
       {1, 2},
       {-1, -1}},
  };
  for (const Case& c : cases) {
    const std::vector<ProgressEvent> joined = joined_events(c.attempts);
    EXPECT_EQ(epochs_of(joined), c.epochs) << c.name;
    EXPECT_EQ(steps_of(joined), c.steps) << c.name;
  }
}

TEST(Lineage, JoinHistoryGivesPartsEpochsAndMetricsOverAll) {
  const std::vector<AttemptHistory> attempts = {
      {{4, 12},
       0,
       {at(100, "epoch_end", 1, std::nullopt, {{"loss", 0.9}}),
        at(200, "epoch_end", 2, std::nullopt, {{"loss", 0.2}})}},
      {{5, 17},
       1000,
       {at(1100, "epoch_end", 3, std::nullopt, {{"loss", 0.5}}),
        at(1200, "epoch_end", 4, std::nullopt, {{"loss", 0.4}})}},
  };
  const JobHistory h = join_history(attempts, {});
  ASSERT_EQ(h.parts.size(), 2U);
  EXPECT_EQ(h.parts[0], (HistoryPart{{4, 12}, 2, 1, 2}));
  EXPECT_EQ(h.parts[1], (HistoryPart{{5, 17}, 2, 3, 4}));
  EXPECT_EQ(h.epoch_ends.size(), 4U);
  ASSERT_EQ(h.metrics.size(), 1U);
  EXPECT_EQ(h.metrics[0].points.size(), 4U);
  EXPECT_DOUBLE_EQ(h.metrics[0].best, 0.2);  // from the first attempt
  EXPECT_DOUBLE_EQ(h.metrics[0].last, 0.4);
}

// A run of one job "w" that ends epochs `from`..`to` (loss 1/epoch),
// resuming `resumes` when given.
struct Written {
  int64_t run = 0;
  int64_t job = 0;
};
Written write_run(RunStore& store, UnixMillis t0, int64_t from, int64_t to,
                  std::optional<Written> resumes) {
  NewRun run;
  run.started_ms = t0;
  run.mechanism = "naive";
  run.backend = "sim";
  if (resumes) run.resumes_run = resumes->run;
  Result<int64_t> id = store.begin_run(run);
  EXPECT_TRUE(id.ok());
  JobSpec spec;
  spec.name = "w";
  spec.command = {"train"};
  Result<std::vector<int64_t>> jobs =
      store.add_jobs(*id, {spec}, {}, t0, {resumes ? resumes->job : 0});
  EXPECT_TRUE(jobs.ok());
  const int64_t job = jobs->front();
  EXPECT_TRUE(store.job_started(job, 100, 0, t0 + 10).ok());
  std::vector<std::pair<int64_t, ProgressEvent>> events;
  for (int64_t e = from; e <= to; ++e) {
    events.emplace_back(job, at(t0 + 100 * e, "epoch_end", e, std::nullopt,
                                {{"loss", 1.0 / static_cast<double>(e)}}));
  }
  EXPECT_TRUE(store.add_job_events(events).ok());
  JobExit exit;
  exit.state = to >= 10 ? JobState::kOk : JobState::kFailed;
  EXPECT_TRUE(store.job_finished(job, exit, t0 + 100 * to + 10, 0).ok());
  EXPECT_TRUE(
      store.end_run(*id, to >= 10 ? RunState::kOk : RunState::kFailed, t0 + 100 * to + 20).ok());
  return {*id, job};
}

TEST(Lineage, AnalysedRunJoinsTheAttemptsItResumes) {
  std::unique_ptr<RunStore> store = testing::open_memory_store();
  const UnixMillis t0 = testing::kFakeT0;
  const Written first = write_run(*store, t0, 1, 3, std::nullopt);
  const Written second = write_run(*store, t0 + 10'000, 4, 6, first);
  const Written third = write_run(*store, t0 + 20'000, 7, 10, second);

  Result<RunSummary> summary = analyse_run(*store, third.run);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->run.resumes_run, second.run);
  ASSERT_EQ(summary->jobs.size(), 1U);
  const JobSummary& job = summary->jobs.front();
  EXPECT_EQ(job.epochs, 4);  // this attempt's own
  ASSERT_TRUE(job.history);
  ASSERT_EQ(job.history->parts.size(), 3U);
  EXPECT_EQ(job.history->parts[0], (HistoryPart{{first.run, first.job}, 3, 1, 3}));
  EXPECT_EQ(job.history->parts[2], (HistoryPart{{third.run, third.job}, 4, 7, 10}));
  EXPECT_EQ(job.history->epoch_ends.size(), 10U);
  ASSERT_EQ(job.metrics.size(), 1U);
  EXPECT_EQ(job.metrics[0].points.size(), 10U);
  EXPECT_EQ(job.metrics[0].points.front().epoch, 1);

  // The first run knows who resumed it, and has no history of its own.
  Result<RunSummary> older = analyse_run(*store, first.run);
  ASSERT_TRUE(older.ok());
  EXPECT_EQ(older->run.resumed_by, second.run);
  EXPECT_FALSE(older->jobs.front().history);

  // A removed run ends the chain there.
  ASSERT_TRUE(store->remove_run(first.run).ok());
  Result<RunSummary> shorter = analyse_run(*store, third.run);
  ASSERT_TRUE(shorter.ok());
  ASSERT_TRUE(shorter->jobs.front().history);
  EXPECT_EQ(shorter->jobs.front().history->parts.size(), 2U);
}

// Counts the run records read through it.
class CountingReader : public testing::ForwardingReader {
 public:
  using ForwardingReader::ForwardingReader;
  using RunReader::run_record;
  Result<RunRecord> run_record(int64_t run_id, MetricSteps steps, Samples samples) override {
    ++reads;
    return ForwardingReader::run_record(run_id, steps, samples);
  }
  int reads = 0;
};

TEST(Lineage, EachRunIsReadOnceAndALentRecordNever) {
  std::unique_ptr<RunStore> store = testing::open_memory_store();
  const Written first = write_run(*store, testing::kFakeT0, 1, 3, std::nullopt);
  const Written second = write_run(*store, testing::kFakeT0 + 10'000, 4, 6, first);
  CountingReader reader(*store);
  AttemptRecords records(reader);
  Result<RunRecord> shown = store->run_record(second.run);
  ASSERT_TRUE(shown.ok());
  records.lend(*shown);
  const struct {
    const char* name;
    int64_t run;
    bool found;
    int reads;  // after it, in all
  } cases[] = {
      {"lent", second.run, true, 0},
      {"read", first.run, true, 1},
      {"read again: kept", first.run, true, 1},
      {"no such run", 99, false, 2},
      {"no such run again: not asked twice", 99, false, 2},
  };
  for (const auto& c : cases) {
    const RunRecord* r = records.record(c.run);
    EXPECT_EQ(r != nullptr, c.found) << c.name;
    if (r != nullptr) EXPECT_EQ(r->run.id, c.run) << c.name;
    EXPECT_EQ(reader.reads, c.reads) << c.name;
  }
  const std::vector<AttemptHistory> earlier = earlier_attempts(records, shown->jobs.front());
  ASSERT_EQ(earlier.size(), 1U);
  EXPECT_EQ(earlier.front().job, (JobRef{first.run, first.job}));
  EXPECT_EQ(reader.reads, 2);
}

}  // namespace
}  // namespace colo
