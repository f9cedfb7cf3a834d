#include "store/store_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "analysis/stored.h"
#include "store/sqlite_util.h"
#include "store/testing/lifecycle_runs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

class StoreWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "colo_writer_test.XXXXXX").string();
    std::array<char, 4096> buffer{};
    pattern.copy(buffer.data(), buffer.size() - 1);
    ASSERT_NE(mkdtemp(buffer.data()), nullptr);
    dir_ = buffer.data();
    path_ = dir_ + "/colo.db";
    auto store = RunStore::open(path_);
    ASSERT_TRUE(store.ok()) << store.error().message();
    store_ = std::move(store).value();
    NewRun run;
    run.started_ms = kT0;
    run.mechanism = "naive";
    run.backend = "sim";
    run.host = "elsewhere";  // never judged stale by this host
    auto id = store_->begin_run(run);
    ASSERT_TRUE(id.ok());
    run_id_ = *id;
    JobSpec a;
    a.name = "a";
    a.command = {"true"};
    JobSpec b = a;
    b.name = "b";
    auto ids = store_->add_jobs(run_id_, {a, b}, {}, kT0);
    ASSERT_TRUE(ids.ok());
    jobs_ = *ids;
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A second connection that holds the write lock until unlock().
  void lock() {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
    locker_.reset(raw);
    ASSERT_TRUE(exec_sql(raw, path_, "BEGIN IMMEDIATE", "lock").ok());
  }
  void unlock() { locker_.reset(); }

  static JobExit ok_exit() { return JobExit{JobState::kOk, 0, std::nullopt, "exit code 0", {}}; }

  static std::vector<std::pair<int64_t, ProgressEvent>> events(int64_t job, int n, UnixMillis t0) {
    std::vector<std::pair<int64_t, ProgressEvent>> out;
    for (int i = 0; i < n; ++i) {
      ProgressEvent e;
      e.time_ms = t0 + i;
      e.kind = "epoch_end";
      e.epoch = i + 1;
      e.samples = 100;
      out.emplace_back(job, e);
    }
    return out;
  }

  std::string dir_;
  std::string path_;
  std::unique_ptr<RunStore> store_;
  int64_t run_id_ = 0;
  std::vector<int64_t> jobs_;
  SqliteDb locker_;
  FakeClock clock_{kT0};
};

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// Writes are numbered as queued; written_through() follows what reached the
// store (a caller that noted last_queued() knows when its write is there),
// and trouble() says why writes wait while the store is locked.
TEST_F(StoreWriterTest, NumberedWritesSayHowFarTheStoreIsWrittenAndWhyNotFurther) {
  StoreWriter writer(*store_, clock_);
  EXPECT_EQ(writer.last_queued(), 0U);
  EXPECT_EQ(writer.written_through(), 0U);
  struct Step {
    std::string what;
    std::function<void()> act;
    uint64_t last_queued;
    uint64_t written_through;
    std::string trouble;  // in trouble() ("" : unset)
  };
  const std::vector<Step> steps = {
      {"queued, not flushed",
       [&] {
         writer.job_started(jobs_[0], 100, 0, kT0 + 1000);
         writer.add_job_events(events(jobs_[0], 3, kT0 + 1500));
       },
       2, 0, ""},
      {"flushed", [&] { writer.flush(); }, 2, 2, ""},
      {"locked: the end waits",
       [&] {
         lock();
         writer.job_finished(jobs_[0], ok_exit(), kT0 + 3000, 0);
         writer.flush();
         clock_.advance_ms(3000);
       },
       3, 2, "cannot write the store for 3.0s now: " + path_},
      {"an empty events list queues nothing", [&] { writer.add_job_events({}); }, 3, 2,
       "database is locked"},
      {"unlocked and flushed",
       [&] {
         unlock();
         writer.flush();
       },
       3, 3, ""},
  };
  for (const Step& step : steps) {
    step.act();
    EXPECT_EQ(writer.last_queued(), step.last_queued) << step.what;
    EXPECT_EQ(writer.written_through(), step.written_through) << step.what;
    if (step.trouble.empty()) {
      EXPECT_FALSE(writer.trouble()) << step.what << ": " << writer.trouble().value_or("");
    } else {
      ASSERT_TRUE(writer.trouble()) << step.what;
      EXPECT_THAT(*writer.trouble(), HasSubstr(step.trouble)) << step.what;
    }
  }
}

// Samples dropped from the middle of the queue (its bound) leave the
// numbering of what stays as it was.
TEST_F(StoreWriterTest, WritesDroppedForTheBoundKeepTheNumbersOfTheRest) {
  StoreWriterOptions options;
  options.max_queued_rows = 2;
  StoreWriter writer(*store_, clock_, options);
  lock();
  writer.job_started(jobs_[0], 100, 0, kT0 + 1000);
  writer.add_samples(run_id_, {DeviceSample{}}, {});
  writer.add_samples(run_id_, {DeviceSample{}, DeviceSample{}}, {});
  writer.job_finished(jobs_[0], ok_exit(), kT0 + 3000, 0);
  writer.flush();  // locked: the oldest samples' write, beyond the bound, is dropped
  EXPECT_EQ(writer.queued(), 3U);
  EXPECT_EQ(writer.last_queued(), 4U);
  EXPECT_EQ(writer.written_through(), 0U);
  unlock();
  clock_.advance_ms(10'000);
  writer.flush();
  EXPECT_EQ(writer.written_through(), 4U);
  EXPECT_EQ(writer.queued(), 0U);
}

// Six colos on one store once lost a job's end to "database is locked": the
// job stayed running inside a run recorded ok.
TEST_F(StoreWriterTest, ALockedStoreDelaysWritesInOrderAndLosesNone) {
  StoreWriter writer(*store_, clock_);
  lock();
  writer.job_started(jobs_[0], 100, 0, kT0 + 1000);
  writer.add_job_events(events(jobs_[0], 3, kT0 + 1500));
  writer.job_finished(jobs_[0], ok_exit(), kT0 + 3000, 0);
  writer.end_run(run_id_, RunState::kOk, kT0 + 3100);
  std::string said = joined(writer.flush());
  EXPECT_THAT(said, HasSubstr("cannot write the start of job"));
  EXPECT_THAT(said, HasSubstr("locked"));
  EXPECT_EQ(writer.queued(), 4U);

  // Still locked: the backoff doubles, nothing is said twice.
  clock_.advance_ms(100);
  EXPECT_EQ(joined(writer.flush()), "");
  EXPECT_EQ(writer.queued(), 4U);
  clock_.advance_ms(50);  // within the doubled backoff: not even tried
  EXPECT_EQ(joined(writer.flush()), "");

  unlock();
  clock_.advance_ms(10'000);
  said = joined(writer.flush());
  EXPECT_THAT(said, HasSubstr("writable again after 10.2s; 4 queued writes made"));
  EXPECT_EQ(writer.queued(), 0U);

  auto summary = analyse_run(*store_, run_id_);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->run.state, RunState::kOk);
  EXPECT_EQ(summary->run.ended_ms, kT0 + 3100);
  EXPECT_EQ(summary->jobs[0].state, JobState::kOk);
  EXPECT_EQ(summary->jobs[0].started_ms, kT0 + 1000);  // when it happened
  EXPECT_EQ(summary->jobs[0].ended_ms, kT0 + 3000);
  EXPECT_EQ(summary->jobs[0].epochs, 3);
}

// A full disk once dropped a whole batch of progress events (exit 0).
TEST_F(StoreWriterTest, AFullDiskKeepsRowsUpToTheBoundDroppingSamplesFirst) {
  StoreWriterOptions options;
  options.max_queued_rows = 2500;
  StoreWriter writer(*store_, clock_, options);
  // As large as the file is now (SQLite never caps below): a write that needs a page is full.
  ASSERT_TRUE(store_->set_max_pages(1).ok());
  writer.job_started(jobs_[0], 100, 0, kT0 + 1000);
  writer.add_samples(run_id_, std::vector<DeviceSample>(1000, DeviceSample{}), {});
  writer.add_job_events(events(jobs_[0], 1000, kT0 + 2000));
  std::string said = joined(writer.flush());
  EXPECT_THAT(said, HasSubstr("full"));
  writer.add_samples(run_id_, std::vector<DeviceSample>(1000, DeviceSample{}), {});
  writer.add_job_events(events(jobs_[0], 1000, kT0 + 4000));
  writer.job_finished(jobs_[0], ok_exit(), kT0 + 9000, 0);
  clock_.advance_ms(100);
  said = joined(writer.flush());
  // 4000 rows waited, 2500 may: the older 1000 samples went, then 500 more.
  EXPECT_THAT(said, HasSubstr("1500 GPU samples and 0 progress events dropped"));
  EXPECT_EQ(writer.queued_rows(), 2500U);

  ASSERT_TRUE(store_->set_max_pages(1'000'000).ok());
  clock_.advance_ms(1000);
  said = joined(writer.flush());
  EXPECT_THAT(said, HasSubstr("writable again"));
  auto summary = analyse_run(*store_, run_id_);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->jobs[0].state, JobState::kOk);
  EXPECT_EQ(summary->jobs[0].epochs, 2000);  // every progress event kept
  EXPECT_EQ(summary->device_samples, 500);
  EXPECT_EQ(writer.dropped_samples(), 1500);
  EXPECT_EQ(writer.dropped_events(), 0);
}

// The soak test (bench/soak.sh) once lost every epoch of a run: six colos'
// floods kept the store locked, and the bound dropped the oldest events,
// epoch ends among them.
TEST_F(StoreWriterTest, AFloodWaitingForTheStoreLosesStepsBeforeEpochEnds) {
  StoreWriterOptions options;
  options.max_queued_rows = 500;
  options.max_rows_per_write = 200;
  StoreWriter writer(*store_, clock_, options);
  lock();
  std::vector<std::pair<int64_t, ProgressEvent>> flood;
  for (int i = 0; i < 1000; ++i) {
    ProgressEvent e;
    e.time_ms = kT0 + i;
    e.kind = "step";
    e.step = i;
    flood.emplace_back(jobs_[0], e);
    if (i % 100 == 99) {
      e.kind = "epoch_end";
      e.epoch = i / 100 + 1;
      flood.emplace_back(jobs_[0], e);
    }
  }
  writer.add_job_events(std::move(flood));
  EXPECT_EQ(writer.queued(), 6U);  // 1010 events, at most 200 to a transaction
  std::string said = joined(writer.flush());
  EXPECT_THAT(said, HasSubstr("locked"));
  EXPECT_THAT(said, HasSubstr("0 GPU samples and 510 progress events dropped"));
  EXPECT_EQ(writer.queued_rows(), 500U);
  unlock();
  clock_.advance_ms(1000);
  EXPECT_THAT(joined(writer.flush()), HasSubstr("writable again"));
  auto events = store_->job_events(jobs_[0]);
  ASSERT_TRUE(events.ok());
  int epochs = 0;
  int64_t first_step = -1;
  for (const ProgressEvent& e : *events) {
    if (e.kind == "epoch_end") ++epochs;
    if (e.kind == "step" && first_step < 0) first_step = *e.step;
  }
  EXPECT_EQ(epochs, 10);
  EXPECT_EQ(events->size(), 500U);
  EXPECT_EQ(first_step, 510);  // the oldest steps went
}

TEST_F(StoreWriterTest, APermanentFailureDropsOnlyThatWrite) {
  StoreWriter writer(*store_, clock_);
  writer.job_started(9999, 100, 0, kT0);  // no such job: a bug, not worth retrying
  writer.job_started(jobs_[1], 101, 0, kT0 + 5);
  std::string said = joined(writer.flush());
  EXPECT_THAT(said, HasSubstr("could not write the start of job #9999"));
  EXPECT_EQ(writer.queued(), 0U);
  auto summary = analyse_run(*store_, run_id_);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->jobs[1].state, JobState::kRunning);
}

TEST_F(StoreWriterTest, DrainGivesUpAfterItsTimeoutNamingTheLostTransitions) {
  StoreWriter writer(*store_, clock_);
  ASSERT_TRUE(store_->set_max_pages(1).ok());
  writer.add_job_events(events(jobs_[0], 2000, kT0));
  writer.job_finished(jobs_[0], ok_exit(), kT0 + 3000, 0);
  writer.end_run(run_id_, RunState::kOk, kT0 + 3100);
  std::vector<std::string> said;
  Status status = writer.drain(60'000, [&](const std::string& l) { said.push_back(l); });
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message(), HasSubstr("after trying for 1m"));
  EXPECT_THAT(status.error().message(), HasSubstr("2000 sample and event rows"));
  EXPECT_THAT(status.error().message(), HasSubstr("the end of job #" + std::to_string(jobs_[0])));
  EXPECT_THAT(status.error().message(), HasSubstr("the end of run"));
  EXPECT_EQ(said.size(), 1U);  // the failure, said once

  // Once the disk has room, the same writer finishes the job.
  ASSERT_TRUE(store_->set_max_pages(1'000'000).ok());
  ASSERT_TRUE(writer.drain(60'000, [](const std::string&) {}).ok());
  auto summary = analyse_run(*store_, run_id_);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run.state, RunState::kOk);
}

}  // namespace
}  // namespace colo
