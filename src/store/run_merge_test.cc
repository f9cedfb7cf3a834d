#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/stored.h"
#include "store/run_store.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using testing::add_fake_run;
using testing::FakeRun;
using testing::kFakeT0;
using testing::TempDir;

// The text in the first column of the first row of `sql` over the file.
std::string query_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return out;
}

std::unique_ptr<RunStore> open_file(const std::string& path) {
  Result<std::unique_ptr<RunStore>> store = RunStore::open(path);
  EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message());
  return store.ok() ? std::move(store).value() : nullptr;
}

// One source store per entry, each with one fake run of that degree; the
// second source's run starts 60 s after the first.
std::vector<RunSource> write_sources(const std::string& dir, const std::vector<int>& degrees) {
  std::vector<RunSource> sources;
  for (size_t i = 0; i < degrees.size(); ++i) {
    std::string path = dir + "/source" + std::to_string(i) + ".db";
    std::unique_ptr<RunStore> store = open_file(path);
    FakeRun run;
    run.degree = degrees[i];
    // An earlier run that is not the one merged (run_id 0 means the latest).
    add_fake_run(*store, FakeRun{}, kFakeT0 - 3'600'000);
    add_fake_run(*store, run, kFakeT0 + static_cast<int64_t>(i) * 60'000);
    sources.push_back({path, 0, "shard " + std::to_string(i)});
  }
  return sources;
}

TEST(MergeRuns, CopiesEveryJobEventAndSampleIntoOneRunWithDevicesRenumbered) {
  TempDir dir;
  std::vector<RunSource> sources = write_sources(dir.path(), {2, 3});
  std::unique_ptr<RunStore> merged = open_file(dir.path() + "/merged.db");
  NewRun header;
  header.mechanism = "naive";
  header.backend = "sim";
  header.simulated = true;
  header.job_file = "sweep.toml";
  header.slurm = {"77", "", "n1,n2", 0};
  Result<int64_t> run = merged->merge_runs(header, sources);
  ASSERT_TRUE(run.ok()) << run.error().message();

  Result<std::vector<RunRow>> runs = merged->list_runs(50);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  const RunRow& row = runs->front();
  EXPECT_EQ(row.state, RunState::kOk);
  EXPECT_EQ(row.job_count, 5);
  EXPECT_EQ(row.slurm.job_id, "77");
  EXPECT_EQ(row.slurm.node, "n1,n2");
  EXPECT_EQ(row.started_ms, kFakeT0 - 100);  // the earliest source run's start
  FakeRun second;
  second.degree = 3;
  EXPECT_EQ(*row.ended_ms, testing::fake_run_end_ms(second, kFakeT0 + 60'000));

  Result<RunSummary> summary = analyse_run(*merged, *run);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  std::map<int, int> jobs_per_device;
  for (const JobSummary& j : summary->jobs) {
    EXPECT_EQ(j.state, JobState::kOk) << j.name;
    EXPECT_EQ(j.epochs, 3) << j.name;            // events came along
    ASSERT_TRUE(j.peak_memory_bytes) << j.name;  // process samples point at the new jobs
    EXPECT_EQ(*j.peak_memory_bytes, 2 * testing::kFakeGiB) << j.name;
    jobs_per_device[j.device.value_or(-1)] += 1;
  }
  EXPECT_EQ(jobs_per_device, (std::map<int, int>{{0, 2}, {1, 3}}));

  // Every device sample of both merged source runs, under the new numbering.
  size_t source_samples = 0;
  for (const RunSource& s : sources) {
    std::unique_ptr<RunStore> source = open_file(s.path);
    source_samples += source->device_samples(2).value().size();
  }
  Result<std::vector<DeviceSample>> samples = merged->device_samples(*run);
  ASSERT_TRUE(samples.ok());
  EXPECT_EQ(samples->size(), source_samples);
  EXPECT_TRUE(std::any_of(samples->begin(), samples->end(),
                          [](const DeviceSample& d) { return d.device == 1; }));
}

TEST(MergeRuns, DevicesJsonNamesEachSource) {
  TempDir dir;
  std::vector<RunSource> sources = write_sources(dir.path(), {1, 1});
  {
    std::unique_ptr<RunStore> merged = open_file(dir.path() + "/merged.db");
    ASSERT_TRUE(merged->merge_runs(NewRun{}, sources).ok());
  }
  nlohmann::json devices =
      nlohmann::json::parse(query_text(dir.path() + "/merged.db", "SELECT devices_json FROM runs"));
  ASSERT_EQ(devices.size(), 2u) << devices.dump();
  EXPECT_EQ(devices[0]["index"], 0);
  EXPECT_EQ(devices[0]["source"], "shard 0");
  EXPECT_EQ(devices[1]["index"], 1);
  EXPECT_EQ(devices[1]["source_index"], 0);
  EXPECT_EQ(devices[1]["source"], "shard 1");
  EXPECT_EQ(devices[1]["uuid"], "GPU-fake");
}

TEST(MergeRuns, AFailedJobMakesTheMergedRunFailed) {
  TempDir dir;
  std::vector<RunSource> sources = write_sources(dir.path(), {2});
  {
    std::unique_ptr<RunStore> source = open_file(sources[0].path);
    Result<RunRecord> s = source->run_record(0);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(source
                    ->job_finished(s->jobs[0].id,
                                   JobExit{JobState::kFailed, 1, std::nullopt, "exit code 1", {}},
                                   kFakeT0 + 20'000, 0)
                    .ok());
  }
  std::unique_ptr<RunStore> merged = open_file(dir.path() + "/merged.db");
  Result<int64_t> run = merged->merge_runs(NewRun{}, sources);
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ(merged->list_runs(50).value().front().state, RunState::kFailed);
}

TEST(MergeRuns, RefusesAFileThatIsNotAColoStore) {
  TempDir dir;
  std::string junk = dir.path() + "/junk.db";
  std::ofstream(junk) << "not a database";
  std::unique_ptr<RunStore> merged = open_file(dir.path() + "/merged.db");
  Result<int64_t> run = merged->merge_runs(NewRun{}, {{junk, 0, "junk"}});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message().find("junk.db"), std::string::npos) << run.error().message();
}

}  // namespace
}  // namespace colo
