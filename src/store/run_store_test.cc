#include "store/run_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/names.h"
#include "store/schema.h"
#include "store/testing/lifecycle_runs.h"

namespace colo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A temporary directory removed at the end of the test.
class StoreDir {
 public:
  StoreDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "colo_store_test.XXXXXX").string();
    std::array<char, 4096> buffer{};
    pattern.copy(buffer.data(), buffer.size() - 1);
    const char* made = mkdtemp(buffer.data());
    EXPECT_NE(made, nullptr);
    if (made != nullptr) path_ = made;
  }
  ~StoreDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  StoreDir(const StoreDir&) = delete;
  StoreDir& operator=(const StoreDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Runs the SQL directly on a database file, outside RunStore.
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  std::string text = message != nullptr ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << text;
}

// ---------------------------------------------------------------- schema

TEST(SchemaTest, MigratesAnEmptyDatabaseToTheLatestVersion) {
  auto store = open_memory();
  EXPECT_EQ(store->schema_version(), latest_schema_version());
  EXPECT_GE(latest_schema_version(), 1);
  auto runs = store->list_runs(50);
  ASSERT_TRUE(runs.ok()) << runs.error().message();
  EXPECT_TRUE(runs->empty());
}

TEST(SchemaTest, ReopeningKeepsDataAndVersion) {
  StoreDir dir;
  const std::string path = dir.file("nested/dir/colo.db");  // parent directories are created
  int64_t run_id = 0;
  {
    auto store = RunStore::open(path);
    ASSERT_TRUE(store.ok()) << store.error().message();
    NewRun run = make_run("naive", kT0);
    run.host = "elsewhere";  // so the reopen does not judge the fake pid
    auto id = (*store)->begin_run(run);
    ASSERT_TRUE(id.ok()) << id.error().message();
    run_id = *id;
    ASSERT_TRUE((*store)->end_run(run_id, RunState::kOk, kT0 + 10).ok());
  }
  auto store = RunStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error().message();
  EXPECT_EQ((*store)->schema_version(), latest_schema_version());
  auto runs = (*store)->list_runs(50);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1U);
  EXPECT_EQ((*runs)[0].id, run_id);
  EXPECT_EQ((*runs)[0].state, RunState::kOk);
  EXPECT_EQ((*runs)[0].ended_ms, kT0 + 10);
  EXPECT_EQ((*runs)[0].mechanism, "naive");
}

TEST(SchemaTest, RefusesADatabaseFromANewerColo) {
  StoreDir dir;
  const std::string path = dir.file("colo.db");
  { ASSERT_TRUE(RunStore::open(path).ok()); }
  raw_sql(path, "PRAGMA user_version = 99");
  auto store = RunStore::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.error().message(), HasSubstr(path));
  EXPECT_THAT(store.error().message(), HasSubstr("schema version 99"));
  EXPECT_THAT(store.error().message(), HasSubstr("upgrade colo"));
}

TEST(SchemaTest, RefusesANegativeSchemaVersion) {
  // A corrupt or hand-edited header once indexed the migrations at -1 (SIGSEGV).
  StoreDir dir;
  const std::string path = dir.file("colo.db");
  { ASSERT_TRUE(RunStore::open(path).ok()); }
  for (const char* version : {"-1", "-2147483648"}) {
    raw_sql(path, std::string("PRAGMA user_version = ") + version);
    auto store = RunStore::open(path);
    ASSERT_FALSE(store.ok()) << version;
    EXPECT_THAT(store.error().message(), HasSubstr(path));
    EXPECT_THAT(store.error().message(), HasSubstr(std::string("schema version ") + version));
    EXPECT_THAT(store.error().message(), HasSubstr("not written by colo"));
  }
}

TEST(SchemaTest, RefusesAFileThatIsNotADatabase) {
  StoreDir dir;
  const std::string path = dir.file("notes.txt");
  {
    std::ofstream out(path);
    for (int i = 0; i < 200; ++i) out << "this is a text file, not a database\n";
  }
  auto store = RunStore::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.error().message(),
              HasSubstr(path + " is not a colo database (file is not a database); pass --db to "
                               "choose another path"));
  // The file was not touched.
  std::ifstream in(path);
  std::string first_line;
  std::getline(in, first_line);
  EXPECT_EQ(first_line, "this is a text file, not a database");
}

TEST(SchemaTest, RefusesAnotherProgramsSqliteDatabase) {
  StoreDir dir;
  const std::string path = dir.file("other.db");
  raw_sql(path, "CREATE TABLE bookmarks (url TEXT)");
  auto store = RunStore::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.error().message(), HasSubstr("is not a colo database"));
  EXPECT_THAT(store.error().message(), HasSubstr("--db"));
}

TEST(SqliteErrorTest, SaysWhatToDoForCommonFailures) {
  // (A real lock would make the test wait out the 5 s busy timeout.)
  std::string locked = sqlite_error(nullptr, SQLITE_BUSY, "cannot commit", "/x/colo.db").message();
  EXPECT_THAT(locked, HasSubstr("/x/colo.db: cannot commit: database is locked"));
  EXPECT_THAT(locked, HasSubstr("another colo"));
  EXPECT_THAT(locked, HasSubstr("--db"));
  std::string not_db = sqlite_error(nullptr, SQLITE_NOTADB, "cannot open", "/x/f").message();
  EXPECT_THAT(not_db, HasSubstr("/x/f is not a colo database (file is not a database); pass --db "
                                "to choose another path"));
  std::string full = sqlite_error(nullptr, SQLITE_FULL, "cannot insert", "/x/colo.db").message();
  EXPECT_THAT(full, HasSubstr("disk"));
  // Locked and full may pass later (a writer queues and retries them); the rest will not.
  EXPECT_TRUE(sqlite_error(nullptr, SQLITE_BUSY, "w", "/x").transient());
  EXPECT_TRUE(sqlite_error(nullptr, SQLITE_FULL, "w", "/x").with_context("c").transient());
  EXPECT_TRUE(sqlite_error(nullptr, SQLITE_IOERR, "w", "/x").transient());
  EXPECT_FALSE(sqlite_error(nullptr, SQLITE_NOTADB, "w", "/x").transient());
  EXPECT_FALSE(sqlite_error(nullptr, SQLITE_CONSTRAINT, "w", "/x").transient());
  std::string other =
      sqlite_error(nullptr, SQLITE_MISMATCH, "cannot insert", "/x/colo.db").message();
  EXPECT_THAT(other, HasSubstr("/x/colo.db: cannot insert: "));
}

// A new SQLite file at `path` holding one table, t (x INTEGER); null on failure.
SqliteDb table_t(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open(path.c_str(), &raw);
  SqliteDb db(raw);
  if (rc != SQLITE_OK || !exec_sql(db.get(), path, "CREATE TABLE t (x INTEGER)", "create").ok())
    return SqliteDb();
  return db;
}

TEST(SqliteErrorTest, TransactionRollsBackUnlessCommitted) {
  StoreDir dir;
  const std::string path = dir.file("t.db");
  SqliteDb db = table_t(path);
  ASSERT_TRUE(db);
  {
    auto tx = Transaction::begin(db.get(), path);
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(exec_sql(db.get(), path, "INSERT INTO t VALUES (1)", "insert").ok());
  }  // rolled back
  {
    auto tx = Transaction::begin(db.get(), path);
    ASSERT_TRUE(tx.ok());
    auto insert = Statement::prepare(db.get(), path, "INSERT INTO t VALUES (?)");
    ASSERT_TRUE(insert.ok());
    ASSERT_TRUE(insert->bind(1, int64_t{2}).run().ok());
    ASSERT_TRUE(insert->bind(1, std::optional<int64_t>()).run().ok());
    ASSERT_TRUE(tx->commit().ok());
  }
  auto select = Statement::prepare(db.get(), path, "SELECT x FROM t ORDER BY x");
  ASSERT_TRUE(select.ok());
  std::vector<std::optional<int64_t>> values;
  while (true) {
    auto row = select->step();
    ASSERT_TRUE(row.ok());
    if (!*row) break;
    values.push_back(select->opt_int64_at(0));
  }
  EXPECT_THAT(values, ElementsAre(std::nullopt, 2));
  // A bind error surfaces at the next step, naming the statement.
  auto bad = Statement::prepare(db.get(), path, "INSERT INTO t VALUES (?)");
  ASSERT_TRUE(bad.ok());
  Status status = bad->bind(5, int64_t{1}).run();
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message(), HasSubstr("cannot bind parameter 5"));
  // A syntax error names the store and the SQL.
  auto wrong = Statement::prepare(db.get(), path, "SELEKT 1");
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.error().message(), HasSubstr(path));
  EXPECT_THAT(wrong.error().message(), HasSubstr("SELEKT 1"));
}

TEST(ReadSnapshotTest, BeginsOnlyOutsideATransactionAndEndsWithItsScope) {
  StoreDir dir;
  const std::string path = dir.file("t.db");
  SqliteDb db = table_t(path);
  ASSERT_TRUE(db);
  {
    const ReadSnapshot snapshot(db.get());
    EXPECT_EQ(sqlite3_get_autocommit(db.get()), 0);  // inside a transaction
    { const ReadSnapshot nested(db.get()); }         // began nothing, ends nothing
    EXPECT_EQ(sqlite3_get_autocommit(db.get()), 0);
  }
  EXPECT_NE(sqlite3_get_autocommit(db.get()), 0);
  // Inside a writer's transaction it neither fails nor ends that transaction.
  auto tx = Transaction::begin(db.get(), path);
  ASSERT_TRUE(tx.ok());
  { const ReadSnapshot inside(db.get()); }
  ASSERT_TRUE(exec_sql(db.get(), path, "INSERT INTO t VALUES (1)", "insert").ok());
  ASSERT_TRUE(tx->commit().ok());
}

// ------------------------------------------------------------- lifecycle

TEST_F(LifecycleTest, StoresAndReadsBackSamplesAndEvents) {
  auto store = open_memory();
  Ids ids = record_collocated_run(*store, "mps", kT0);

  auto devices = store->device_samples(ids.run);
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 26U);
  EXPECT_EQ((*devices)[0].time_ms, kT0);
  EXPECT_EQ((*devices)[0].device, 0);
  EXPECT_EQ((*devices)[1].device, 1);
  EXPECT_FALSE((*devices)[1].memory_used_bytes.has_value());  // absent stays absent
  EXPECT_FALSE((*devices)[1].power_w.has_value());
  EXPECT_EQ((*devices)[2].energy_mj, 101000U);
  EXPECT_DOUBLE_EQ((*devices)[2].sm_active_pct.value_or(-1), 0.5);

  auto processes = store->process_samples(ids.run);
  ASSERT_TRUE(processes.ok());
  ASSERT_EQ(processes->size(), 6U);
  EXPECT_EQ((*processes)[0].job_id, ids.jobs[0]);
  EXPECT_FALSE((*processes)[5].job_id.has_value());

  auto events = store->job_events(ids.jobs[0]);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 4U);
  ASSERT_EQ((*events)[0].kind, "step");  // oldest first
  ASSERT_EQ((*events)[0].metrics.count("loss"), 1U);
  EXPECT_DOUBLE_EQ((*events)[0].metrics.at("loss"), 0.5);
  EXPECT_EQ((*events)[0].step, 10);
  EXPECT_EQ((*events)[1].kind, "epoch_end");
  EXPECT_EQ((*events)[3].epoch, 3);

  auto runs = store->list_runs(50);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1U);
  EXPECT_EQ((*runs)[0].job_count, 3);
  EXPECT_EQ((*runs)[0].job_file, "sweep.toml");
  EXPECT_FALSE((*runs)[0].jobs_signature.empty());
}

// Steps that carry metrics (a loss per step) are read back thinned: evenly
// spaced, the last always among them; steps without metrics never.
TEST_F(LifecycleTest, MetricStepsAreThinnedEvenlyKeepingTheLast) {
  auto store = open_memory();
  Ids ids = record_collocated_run(*store, "mps", kT0);
  std::vector<std::pair<int64_t, ProgressEvent>> steps;
  for (int i = 1; i <= 1'000; ++i) {
    ProgressEvent e;
    e.time_ms = kT0 + 100'000 + i;
    e.kind = "step";
    e.step = i;
    if (i % 2 == 0) e.metrics["loss"] = 1.0 / i;  // 500 with a loss, 500 without
    steps.emplace_back(ids.jobs[1], e);
  }
  ASSERT_TRUE(store->add_job_events(steps).ok());
  auto all = store->metric_steps(ids.jobs[1], 1'000);
  ASSERT_TRUE(all.ok()) << all.error().message();
  ASSERT_EQ(all->size(), 500U);
  EXPECT_EQ(all->front().step, 2);
  auto some = store->metric_steps(ids.jobs[1], 100);
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->size(), 101U) << "every fifth, and the last";
  EXPECT_EQ((*some)[1].step, 12);
  EXPECT_EQ(some->back().step, 1'000) << "the last kept";
  auto record = store->run_record(ids.run);
  ASSERT_TRUE(record.ok());
  ASSERT_EQ(record->metric_steps.size(), record->jobs.size());
}

TEST_F(LifecycleTest, JobRowsCarryTheFamilyAndGridValues) {
  auto store = open_memory();
  auto run = store->begin_run(make_run("mps", kT0));
  ASSERT_TRUE(run.ok()) << run.error().message();
  JobSpec instance = make_job("toy[lr=0.1]", {"python", "toy.py", "--lr", "0.1"});
  instance.group = "toy";
  instance.family = "0123456789abcdef";
  instance.params = {{"lr", "0.1"}};
  instance.resource_params = std::vector<std::string>{};
  JobSpec plain = make_job("plain", {"python", "plain.py"});
  ASSERT_TRUE(store->add_jobs(*run, {instance, plain}, {"a.log", "b.log"}, kT0).ok());
  auto record = store->run_record(*run);
  ASSERT_TRUE(record.ok()) << record.error().message();
  const std::vector<JobRow>& rows = record->jobs;
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].family, "0123456789abcdef");
  EXPECT_EQ(rows[0].params, (std::map<std::string, std::string>{{"lr", "0.1"}}));
  EXPECT_EQ(rows[1].family, "");  // not read from a job file
  EXPECT_TRUE(rows[1].params.empty());
}

TEST_F(LifecycleTest, ARunsLabelIsKeptChangedAndFoundByItsName) {
  auto store = open_memory();
  NewRun run;
  run.started_ms = kT0;
  run.mechanism = "mps";
  run.backend = "sim";
  run.label = {"lr-a", {{"model", "resnet26"}}, "first try"};
  Result<int64_t> first = store->begin_run(run);
  Result<int64_t> second = store->begin_run(run);  // the same name again
  ASSERT_TRUE(first.ok() && second.ok());
  Result<RunRow> row = store->run(*first);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->label.name, "lr-a");
  EXPECT_EQ(row->label.tags, (std::map<std::string, std::string>{{"model", "resnet26"}}));
  EXPECT_EQ(row->label.note, "first try");
  Result<std::optional<NamedTarget>> named = store->find_named("lr-a", 0, NameKinds::kRuns);
  ASSERT_TRUE(named.ok() && *named);
  EXPECT_EQ((*named)->id, *second);  // the newest of that name (runs before owners: anyone's)

  ASSERT_TRUE(store->set_label(*first, {"lr-b", {}, ""}).ok());
  Result<std::vector<RunRow>> runs = store->list_runs(0);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ(runs->back().label.name, "lr-b");
  EXPECT_TRUE(runs->back().label.tags.empty());
  EXPECT_EQ(store->find_named("lr-b", 0, NameKinds::kRuns).value()->id, *first);
  EXPECT_EQ(store->find_named("nobody", 0).value(), std::nullopt);
  EXPECT_EQ(store->find_named("", 0).value(), std::nullopt);  // unnamed runs are not found by ""
  Status missing = store->set_label(99, {"x", {}, ""});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message(), HasSubstr("has no run #99"));
}

// Issue 58, item 9: the one rule for tags given over tags carried (colo
// label, colo run --resume, colo submit --resume): a given key takes its
// value, a key given empty is removed, the others stay.
TEST(ChangedTags, AGivenKeyTakesItsValueAndAnEmptyValueRemovesIt) {
  using Tags = std::map<std::string, std::string>;
  struct Case {
    const char* what;
    Tags carried;
    Tags given;
    Tags expected;
  };
  const Case cases[] = {
      {"nothing given", {{"model", "r26"}}, {}, {{"model", "r26"}}},
      {"added", {{"model", "r26"}}, {{"seed", "2"}}, {{"model", "r26"}, {"seed", "2"}}},
      {"changed", {{"model", "r26"}}, {{"model", "vit"}}, {{"model", "vit"}}},
      {"removed", {{"model", "r26"}, {"team", "a"}}, {{"team", ""}}, {{"model", "r26"}}},
      {"removed, added, kept",
       {{"model", "r26"}, {"team", "a"}},
       {{"team", ""}, {"seed", "2"}},
       {{"model", "r26"}, {"seed", "2"}}},
      {"removing what is not there", {{"model", "r26"}}, {{"team", ""}}, {{"model", "r26"}}},
      {"a new label's empty tag is not kept", {}, {{"team", ""}, {"seed", "2"}}, {{"seed", "2"}}},
  };
  for (const Case& c : cases) EXPECT_EQ(changed_tags(c.carried, c.given), c.expected) << c.what;
}

// Issue 58 (9): a resumed run records the run and, by job, the jobs it
// continues; the older run knows the newest run that resumes it.
TEST_F(LifecycleTest, AResumedRunRecordsWhatItResumesAndTheOlderOneWhoResumedIt) {
  auto store = open_memory();
  NewRun run;
  run.started_ms = kT0;
  run.mechanism = "mps";
  run.backend = "sim";
  JobSpec spec;
  spec.name = "w";
  spec.command = {"x"};
  const int64_t first = *store->begin_run(run);
  std::vector<int64_t> old_jobs = *store->add_jobs(first, {spec, spec}, {}, kT0);
  run.resumes_run = first;
  const int64_t second = *store->begin_run(run);
  // The first job is resumed; the second ended well and is not.
  std::vector<int64_t> new_jobs = *store->add_jobs(second, {spec}, {}, kT0, {old_jobs[0]});
  EXPECT_FALSE(store->add_jobs(second, {spec}, {}, kT0, {1, 2}).ok());  // one per job

  Result<RunRow> older = store->run(first);
  Result<RunRow> newer = store->run(second);
  ASSERT_TRUE(older.ok() && newer.ok());
  EXPECT_EQ(newer->resumes_run, first);
  EXPECT_FALSE(newer->resumed_by);
  EXPECT_EQ(older->resumed_by, second);
  EXPECT_FALSE(older->resumes_run);
  Result<std::vector<JobRow>> rows = store->job_rows(second);
  ASSERT_TRUE(rows.ok() && rows->size() == 1);
  EXPECT_EQ(rows->front().resumes, (JobRef{first, old_jobs[0]}));
  rows = store->job_rows(first);
  ASSERT_TRUE(rows.ok() && rows->size() == 2);
  EXPECT_FALSE(rows->front().resumes);
  EXPECT_EQ(new_jobs.size(), 1u);
}

TEST_F(LifecycleTest, RefusesUpdatesOfUnknownJobsAndRuns) {
  auto store = open_memory();
  Status status = store->job_started(12345, 1, 0, kT0);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message(), HasSubstr("no job #12345"));
  status = store->end_run(777, RunState::kOk, kT0);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message(), HasSubstr("no run #777"));
  auto jobs = store->add_jobs(777, {make_job("j", {"x"})}, {}, kT0);
  ASSERT_FALSE(jobs.ok());
  EXPECT_THAT(jobs.error().message(), HasSubstr("no run #777"));
  auto summary = store->run_record(0);
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.error().message(), HasSubstr("no runs yet"));
  auto run = store->begin_run(make_run("naive", kT0));
  ASSERT_TRUE(run.ok());
  auto ids = store->add_jobs(*run, {make_job("j", {"x"})}, {}, kT0);
  ASSERT_TRUE(ids.ok());
  EXPECT_FALSE(store->job_finished((*ids)[0], exit_with(JobState::kRunning, 0), kT0, 0).ok());
}

// ------------------------------------------------------------ stale runs

TEST(StaleRunTest, MarksRunsOfDeadColoProcessesInterrupted) {
  auto store = open_memory();
  // Run 1: its colo (pid 111) died while job x ran and job y waited.
  NewRun dead = make_run("mps", kT0);
  dead.colo_pid = 111;
  auto dead_run = store->begin_run(dead);
  ASSERT_TRUE(dead_run.ok());
  auto dead_jobs = store->add_jobs(
      *dead_run, {make_job("x", {"x"}), make_job("y", {"y"}), make_job("z", {"z"})}, {}, kT0);
  ASSERT_TRUE(dead_jobs.ok());
  ASSERT_TRUE(store->job_started((*dead_jobs)[0], 5, 0, kT0 + 1000).ok());
  ASSERT_TRUE(store->job_started((*dead_jobs)[2], 6, 0, kT0 + 1000).ok());
  ASSERT_TRUE(
      store->job_finished((*dead_jobs)[2], exit_with(JobState::kOk, 0), kT0 + 3000, 0).ok());
  DeviceSample sample;
  sample.time_ms = kT0 + 5000;
  ASSERT_TRUE(store->add_samples(*dead_run, {sample}, {}).ok());

  // Run 2: its colo (pid 222) is alive.
  NewRun alive = make_run("mps", kT0);
  alive.colo_pid = 222;
  auto alive_run = store->begin_run(alive);
  ASSERT_TRUE(alive_run.ok());

  // Run 3: dead colo, nothing recorded: ends "now".
  NewRun empty = make_run("naive", kT0);
  empty.colo_pid = 333;
  auto empty_run = store->begin_run(empty);
  ASSERT_TRUE(empty_run.ok());

  std::vector<pid_t> asked;
  auto is_alive = [&](pid_t pid) {
    asked.push_back(pid);
    return pid == 222;
  };
  auto marked = store->mark_stale_runs_interrupted(is_alive, kT0 + 60'000);
  ASSERT_TRUE(marked.ok()) << marked.error().message();
  EXPECT_THAT(*marked, ElementsAre(*dead_run, *empty_run));

  auto summary = store->run_record(*dead_run);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run.state, RunState::kInterrupted);
  EXPECT_EQ(summary->run.ended_ms, kT0 + 5000);  // the last sample
  EXPECT_EQ(summary->jobs[0].state, JobState::kInterrupted);
  EXPECT_EQ(summary->jobs[0].reason,
            "colo stopped while the job was running (found at next start)");
  EXPECT_EQ(summary->jobs[0].ended_ms, kT0 + 5000);
  EXPECT_EQ(summary->jobs[1].state, JobState::kInterrupted);
  EXPECT_EQ(summary->jobs[1].reason, "colo stopped before the job started (found at next start)");
  EXPECT_EQ(summary->jobs[2].state, JobState::kOk);  // finished jobs keep their state

  auto empty_summary = store->run_record(*empty_run);
  ASSERT_TRUE(empty_summary.ok());
  EXPECT_EQ(empty_summary->run.state, RunState::kInterrupted);
  EXPECT_EQ(empty_summary->run.ended_ms, kT0 + 60'000);

  auto alive_summary = store->run_record(*alive_run);
  ASSERT_TRUE(alive_summary.ok());
  EXPECT_EQ(alive_summary->run.state, RunState::kRunning);

  // A second pass finds nothing more and asks only about the live run.
  asked.clear();
  marked = store->mark_stale_runs_interrupted(is_alive, kT0 + 70'000);
  ASSERT_TRUE(marked.ok());
  EXPECT_TRUE(marked->empty());
  EXPECT_THAT(asked, ElementsAre(222));
}

// A dead colo's run ends at the last thing it recorded, whichever it is: a
// sample of any of its GPUs (each GPU's last found by a seek), a process
// sample, a progress event or a job's start or end; another run's never.
TEST(StaleRunTest, ARunEndsAtTheLastThingItRecordedWhateverItIs) {
  struct Case {
    std::string name;
    std::vector<std::pair<int, int64_t>> device_samples;  // (GPU, ms after kT0)
    std::optional<int64_t> process_sample;
    std::optional<int64_t> event;
    std::optional<int64_t> job_end;
    int64_t ended;  // ms after kT0
  };
  const std::vector<Case> cases = {
      {"a later GPU's sample", {{0, 4000}, {3, 9000}, {7, 2000}}, 3000, 3500, 3000, 9000},
      {"the first GPU's sample", {{0, 9500}, {3, 9000}, {7, 2000}}, 3000, 3500, 3000, 9500},
      {"a process sample", {{2, 4000}}, 8000, 3500, 3000, 8000},
      {"an event", {{2, 4000}}, std::nullopt, 8500, 3000, 8500},
      {"a job's end", {}, std::nullopt, std::nullopt, 7000, 7000},
      {"a job's start", {}, std::nullopt, std::nullopt, std::nullopt, 1000},
  };
  for (const Case& c : cases) {
    auto store = open_memory();
    NewRun dead = make_run("mps", kT0);
    dead.colo_pid = 111;
    auto run = store->begin_run(dead);
    ASSERT_TRUE(run.ok());
    auto jobs = store->add_jobs(*run, {make_job("x", {"x"})}, {}, kT0);
    ASSERT_TRUE(jobs.ok());
    ASSERT_TRUE(store->job_started((*jobs)[0], 5, 0, kT0 + 1000).ok());
    if (c.job_end) {
      ASSERT_TRUE(
          store->job_finished((*jobs)[0], exit_with(JobState::kOk, 0), kT0 + *c.job_end, 0).ok());
    }
    std::vector<DeviceSample> devices;
    for (const auto& [device, t] : c.device_samples) {
      for (int64_t at : {t - 500, t}) {
        DeviceSample d;
        d.device = device;
        d.time_ms = kT0 + at;
        devices.push_back(d);
      }
    }
    std::vector<ProcessSampleRow> processes;
    if (c.process_sample)
      processes.push_back(process(kT0 + *c.process_sample, 5, (*jobs)[0], kGiB));
    ASSERT_TRUE(store->add_samples(*run, devices, processes).ok());
    if (c.event)
      ASSERT_TRUE(store->add_job_events({{(*jobs)[0], epoch_end(kT0 + *c.event, 1, 10)}}).ok());
    // Another run, alive, recorded later on every count.
    NewRun alive = make_run("mps", kT0);
    alive.colo_pid = 222;
    auto other = store->begin_run(alive);
    ASSERT_TRUE(other.ok());
    DeviceSample late;
    late.device = 3;
    late.time_ms = kT0 + 50'000;
    ASSERT_TRUE(store->add_samples(*other, {late}, {}).ok());

    auto marked =
        store->mark_stale_runs_interrupted([](pid_t pid) { return pid == 222; }, kT0 + 60'000);
    ASSERT_TRUE(marked.ok()) << marked.error().message();
    EXPECT_THAT(*marked, ElementsAre(*run)) << c.name;
    auto row = store->run(*run);
    ASSERT_TRUE(row.ok());
    EXPECT_EQ(row->ended_ms, kT0 + c.ended) << c.name;
  }
}

// The runs' rows without their job counts: list_runs' rows otherwise.
TEST(StaleRunTest, RunRowsAreListedWithoutTheirJobCounts) {
  auto store = open_memory();
  for (int k = 0; k < 3; ++k) {
    auto run = store->begin_run(make_run(k == 1 ? "naive" : "mps", kT0 + k));
    ASSERT_TRUE(run.ok());
    ASSERT_TRUE(store->add_jobs(*run, {make_job("x", {"x"}), make_job("y", {"y"})}, {}, kT0).ok());
  }
  for (int limit : {0, 1, 2, 5}) {
    auto counted = store->list_runs(limit);
    auto rows = store->list_run_rows(limit);
    ASSERT_TRUE(counted.ok() && rows.ok());
    ASSERT_EQ(rows->size(), counted->size()) << limit;
    for (size_t i = 0; i < rows->size(); ++i) {
      EXPECT_EQ((*counted)[i].job_count, 2) << limit;
      EXPECT_EQ((*rows)[i].job_count, 0) << limit;
      EXPECT_EQ((*rows)[i].id, (*counted)[i].id);
      EXPECT_EQ((*rows)[i].mechanism, (*counted)[i].mechanism);
      EXPECT_EQ((*rows)[i].state, (*counted)[i].state);
      EXPECT_EQ((*rows)[i].started_ms, (*counted)[i].started_ms);
    }
  }
  auto row = store->run_row(0);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->job_count, 0);
  EXPECT_EQ(row->mechanism, "mps");
}

// colo runs/show/report read a store even when they cannot write it: here a
// writer holds the lock while a dead colo's run waits to be marked.
TEST(StoreAccessTest, AReaderFallsBackToReadOnlyWhenItCannotWrite) {
  StoreDir dir;
  const std::string path = dir.file("colo.db");
  {
    auto store = RunStore::open(path);
    ASSERT_TRUE(store.ok());
    NewRun run = make_run("naive", kT0);
    run.host = host_name();
    run.colo_pid = dead_pid();
    ASSERT_TRUE((*store)->begin_run(run).ok());
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  SqliteDb writer(raw);
  ASSERT_TRUE(exec_sql(writer.get(), path,
                       "BEGIN IMMEDIATE; INSERT INTO runs (started_ms, state, "
                       "mechanism, backend, simulated, job_file, host, colo_pid, command_line, "
                       "devices_json) VALUES (1, 'ok', 'naive', 'sim', 1, 'x', 'h', 1, 'c', '[]')",
                       "lock")
                  .ok());

  auto reader = RunStore::open(path, StoreAccess::kRead);
  ASSERT_TRUE(reader.ok()) << reader.error().message();
  EXPECT_THAT((*reader)->read_only_reason(), HasSubstr("locked"));
  auto runs = (*reader)->list_runs(0);
  ASSERT_TRUE(runs.ok()) << runs.error().message();
  ASSERT_EQ(runs->size(), 1U);                      // the writer's uncommitted run is not seen
  EXPECT_EQ((*runs)[0].state, RunState::kRunning);  // not marked: shown as it was left
  EXPECT_FALSE((*reader)->end_run((*runs)[0].id, RunState::kOk, kT0).ok());

  ASSERT_TRUE(exec_sql(writer.get(), path, "ROLLBACK", "unlock").ok());
  auto after = RunStore::open(path, StoreAccess::kRead);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)->read_only_reason(), "");
  EXPECT_EQ((*after)->runs_interrupted_at_open().size(), 1U);
}

// A colo killed with SIGKILL in the middle of a run leaves a database that
// the next colo opens, reads, and in which it finds the run interrupted.
TEST(StaleRunTest, SigkillMidRunLeavesAReadableDatabase) {
  StoreDir dir;
  const std::string path = dir.file("colo.db");
  constexpr int kBatches = 5;
  constexpr int kSamplesPerBatch = 4;

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child must not return into gtest: every failure exits with a code.
    auto store = RunStore::open(path);
    if (!store.ok()) _exit(10);
    NewRun run = make_run("mps", kT0);
    run.host = host_name();
    run.colo_pid = getpid();
    auto run_id = (*store)->begin_run(run);
    if (!run_id.ok()) _exit(11);
    auto jobs = (*store)->add_jobs(*run_id, {make_job("a", {"a"}), make_job("b", {"b"})}, {}, kT0);
    if (!jobs.ok()) _exit(12);
    if (!(*store)->job_started((*jobs)[0], 4000, 0, kT0 + 10).ok()) _exit(13);
    for (int batch = 0; batch < kBatches; ++batch) {
      std::vector<DeviceSample> samples;
      for (int i = 0; i < kSamplesPerBatch; ++i) {
        DeviceSample s;
        s.time_ms = kT0 + 100 * (batch * kSamplesPerBatch + i);
        s.sm_active_pct = 50;
        samples.push_back(s);
      }
      if (!(*store)->add_samples(*run_id, samples, {}).ok()) _exit(14);
    }
    raise(SIGKILL);
    _exit(15);  // not reached
  }

  int wait_status = 0;
  ASSERT_EQ(waitpid(child, &wait_status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wait_status)) << "child exited with " << WEXITSTATUS(wait_status);
  ASSERT_EQ(WTERMSIG(wait_status), SIGKILL);

  auto store = RunStore::open(path);  // finds the dead colo's run
  ASSERT_TRUE(store.ok()) << store.error().message();
  auto runs = (*store)->list_runs(50);
  ASSERT_TRUE(runs.ok()) << runs.error().message();
  ASSERT_EQ(runs->size(), 1U);
  EXPECT_EQ((*runs)[0].state, RunState::kInterrupted);
  EXPECT_EQ((*runs)[0].colo_pid, child);
  const UnixMillis last_sample = kT0 + 100 * (kBatches * kSamplesPerBatch - 1);
  EXPECT_EQ((*runs)[0].ended_ms, last_sample);

  auto samples = (*store)->device_samples((*runs)[0].id);
  ASSERT_TRUE(samples.ok()) << samples.error().message();
  EXPECT_EQ(samples->size(), static_cast<size_t>(kBatches * kSamplesPerBatch));
  auto summary = (*store)->run_record((*runs)[0].id);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->jobs[0].state, JobState::kInterrupted);
  EXPECT_EQ(summary->jobs[1].state, JobState::kInterrupted);
  double sm_sum = 0;
  for (const DeviceSample& d : summary->device_samples) sm_sum += d.sm_active_pct.value_or(0);
  EXPECT_DOUBLE_EQ(sm_sum / static_cast<double>(summary->device_samples.size()), 50.0);
}

// The store's own check of its file (what `colo serve` runs every second)
// sees each way the file can be lost under it, through the descriptor it
// holds: the file is never opened again, which would drop SQLite's locks.
TEST(StoreFileTest, DamageToTheFileUnderAnOpenStoreIsSeenAndNamed) {
  StoreDir dir;
  const std::string path = dir.file("colo.db");
  auto store = RunStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error().message();
  EXPECT_EQ((*store)->file_damage(), "");
  EXPECT_TRUE((*store)->quick_check().ok());

  // Everything after the 100-byte header overwritten (zeros).
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    const std::string zeros(4096, '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  EXPECT_THAT((*store)->file_damage(), HasSubstr("its first page is no longer SQLite's schema"));
  // Truncated to nothing.
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  EXPECT_EQ((*store)->file_damage(), "was truncated under the service to 0 bytes");
  // Replaced, then deleted.
  ASSERT_EQ(std::rename(path.c_str(), dir.file("old.db").c_str()), 0);
  EXPECT_EQ((*store)->file_damage(), "was moved away under the service");
  std::ofstream(path) << "not a store";
  EXPECT_EQ((*store)->file_damage(), "was replaced under the service by another file");
  ASSERT_EQ(std::remove(dir.file("old.db").c_str()), 0);
  EXPECT_EQ((*store)->file_damage(), "was deleted under the service");
}

// The whole file overwritten from its second page on is found by the
// integrity check (the header and the schema page still look right).
TEST(StoreFileTest, QuickCheckFindsPagesOverwrittenBehindAGoodHeader) {
  StoreDir dir;
  const std::string path = dir.file("colo.db");
  {
    auto store = RunStore::open(path);
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 200; ++i) ASSERT_TRUE((*store)->begin_run(make_run("mps", kT0 + i)).ok());
  }
  auto store = RunStore::open(path);
  ASSERT_TRUE(store.ok());
  raw_sql(path, "PRAGMA wal_checkpoint(TRUNCATE)");
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 8192u);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string junk(size - 4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  EXPECT_EQ((*store)->file_damage(), "");
  Status sound = (*store)->quick_check();
  ASSERT_FALSE(sound.ok());
  EXPECT_THAT(sound.error().message(), HasSubstr("failed SQLite's integrity check"));
}

// A link at the store's path (a dangling one in a directory others may
// write) is refused: root would create the store where it points.
TEST(StoreFileTest, ALinkAtTheStorePathIsRefusedAndNothingIsCreatedWhereItPoints) {
  StoreDir dir;
  const std::string target = dir.file("elsewhere.db");
  ASSERT_EQ(::symlink(target.c_str(), dir.file("colo.db").c_str()), 0);
  auto store = RunStore::open(dir.file("colo.db"));
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.error().message(), HasSubstr("is a symbolic link"));
  EXPECT_FALSE(std::filesystem::exists(target));
}

// Thinning keeps, in each span, each GPU's first sample and each process's
// largest; samples outside the range stay, and thinning again removes none.
TEST(RunStoreThinning, KeepsEachGpusFirstSampleAndEachProcesssLargestPerSpan) {
  auto store = open_memory();
  auto run = store->begin_run(make_run("naive", kT0));
  ASSERT_TRUE(run.ok());
  std::vector<DeviceSample> devices;
  std::vector<ProcessSampleRow> processes;
  for (int k = 0; k < 20; ++k) {  // every 500 ms for 10 s
    const UnixMillis t = kT0 + 500 * static_cast<int64_t>(k);
    for (int d = 0; d < 2; ++d) {
      DeviceSample s;
      s.time_ms = t;
      s.device = d;
      s.sm_active_pct = k;
      devices.push_back(s);
    }
    processes.push_back(process(t, 100, std::nullopt, static_cast<uint64_t>(k % 4 + 1) * kGiB));
  }
  ASSERT_TRUE(store->add_samples(*run, devices, processes).ok());

  Result<int64_t> removed = store->thin_samples(*run, kT0, kT0 + 6000, 2000);
  ASSERT_TRUE(removed.ok()) << removed.error().message();
  EXPECT_EQ(*removed, 2 * 9 + 9);  // of 12 samples each in the range, 3 stay
  auto kept = store->device_samples(*run);
  ASSERT_TRUE(kept.ok());
  std::vector<UnixMillis> gpu0;
  for (const DeviceSample& s : *kept) {
    if (s.device == 0) gpu0.push_back(s.time_ms - kT0);
  }
  EXPECT_THAT(gpu0, ElementsAre(0, 2000, 4000, 6000, 6500, 7000, 7500, 8000, 8500, 9000, 9500));
  auto kept_processes = store->process_samples(*run);
  ASSERT_TRUE(kept_processes.ok());
  ASSERT_EQ(kept_processes->size(), 3U + 8U);
  for (int span = 0; span < 3; ++span) {
    EXPECT_EQ((*kept_processes)[span].sample.time_ms, kT0 + 2000 * span + 1500);
    EXPECT_EQ((*kept_processes)[span].sample.used_memory_bytes, 4 * kGiB) << "the largest";
  }
  Result<int64_t> again = store->thin_samples(*run, kT0, kT0 + 6000, 2000);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
  EXPECT_FALSE(store->thin_samples(*run, kT0, kT0 + 6000, 0).ok());
}

// Collects what a SampleSink is handed: (device, time) of each device
// sample, time of each process sample, in order.
class CollectingSink : public SampleSink {
 public:
  void add(const DeviceSample& s) override { devices.emplace_back(s.device, s.time_ms - kT0); }
  void add(const ProcessSampleRow& r) override { processes.push_back(r.sample.time_ms - kT0); }
  std::vector<std::pair<int, int64_t>> devices;
  std::vector<int64_t> processes;
};

// The samples of a window, read a range of the index per device: what the
// whole run's samples hold in that window, in the same order (device by
// device, each oldest first), other runs' never.
TEST(RunStoreSamplesBetween, AWindowGivesWhatTheWholeRunHoldsInIt) {
  auto store = open_memory();
  auto other = store->begin_run(make_run("naive", kT0));
  auto run = store->begin_run(make_run("naive", kT0));
  ASSERT_TRUE(other.ok() && run.ok());
  std::vector<DeviceSample> devices;
  std::vector<ProcessSampleRow> processes;
  for (int k = 0; k < 10; ++k) {  // every second for 10 s, on GPUs 0, 2 and 5; 5 stops at 4 s
    const UnixMillis t = kT0 + 1000 * static_cast<int64_t>(k);
    for (int d : {5, 0, 2}) {
      if (d == 5 && k > 4) continue;
      DeviceSample s;
      s.time_ms = t;
      s.device = d;
      s.sm_active_pct = k;
      devices.push_back(s);
    }
    processes.push_back(process(t, 100, std::nullopt, kGiB));
  }
  ASSERT_TRUE(store->add_samples(*run, devices, processes).ok());
  DeviceSample elsewhere;  // another run's, on a GPU this run has no sample of
  elsewhere.time_ms = kT0 + 3000;
  elsewhere.device = 1;
  ASSERT_TRUE(store->add_samples(*other, {elsewhere}, {}).ok());

  CollectingSink whole;
  ASSERT_TRUE(store->for_each_sample(*run, whole).ok());
  struct Case {
    int64_t from;
    int64_t to;
  };
  const std::vector<Case> cases = {
      {0, 9000}, {3000, 3000}, {2500, 6500}, {5000, 9000}, {-5000, -1}, {9001, 20000}, {-100, 0},
  };
  for (const Case& c : cases) {
    std::vector<std::pair<int, int64_t>> expected_devices;
    for (const auto& d : whole.devices) {
      if (d.second >= c.from && d.second <= c.to) expected_devices.push_back(d);
    }
    std::vector<int64_t> expected_processes;
    for (int64_t t : whole.processes) {
      if (t >= c.from && t <= c.to) expected_processes.push_back(t);
    }
    CollectingSink window;
    ASSERT_TRUE(store->for_each_sample_between(*run, kT0 + c.from, kT0 + c.to, window).ok());
    EXPECT_EQ(window.devices, expected_devices) << c.from << ".." << c.to;
    EXPECT_EQ(window.processes, expected_processes) << c.from << ".." << c.to;
  }
  CollectingSink all;
  ASSERT_TRUE(store->for_each_sample_between(*run, kT0, kT0 + 9000, all).ok());
  EXPECT_EQ(all.devices.size(), 25U);
  EXPECT_EQ(all.devices.front(), std::make_pair(0, int64_t{0}));
  EXPECT_EQ(all.devices.back(), std::make_pair(5, int64_t{4000}));
}

}  // namespace
}  // namespace colo
