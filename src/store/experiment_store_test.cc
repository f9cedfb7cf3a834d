// Tests of the experiment half of RunStore (experiment_store.cc) and of
// migration 2.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include "common/names.h"
#include "store/run_store.h"
#include "store/schema.h"
#include "store/testing/lifecycle_runs.h"

namespace colo {
namespace {

NewExperiment make_experiment(const std::string& suite) {
  NewExperiment e;
  e.suite = suite;
  e.started_ms = kT0;
  e.options_json = R"({"budget":"8m"})";
  e.simulated = true;
  e.backend = "sim";
  e.gpu_name = "Simulated NVIDIA H200";
  e.command_line = "colo bench --suite " + suite;
  return e;
}

CaseRow make_case(const std::string& name, const std::string& mechanism, int degree) {
  CaseRow c;
  c.name = name;
  c.workload = "small";
  c.models = "resnet26";
  c.mechanism = mechanism;
  c.degree = degree;
  return c;
}

TEST(ExperimentStore, RecordsAnExperimentAndItsCasesInOrder) {
  auto store = open_memory();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), latest_schema_version());
  EXPECT_GE(latest_schema_version(), 2);

  Result<int64_t> id = store->begin_experiment(make_experiment("paper-uniform"));
  ASSERT_TRUE(id.ok()) << id.error().message();
  Result<int64_t> a =
      store->add_case(*id, make_case("small/resnet26/exclusive/x1/r1", "exclusive", 1));
  CaseRow mig = make_case("small/resnet26/mig/x3/r1", "mig", 3);
  mig.status = "not_run";
  mig.reason = "MIG mode is disabled on gpu0 (colo never changes it)";
  Result<int64_t> b = store->add_case(*id, mig);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_TRUE(b.ok()) << b.error().message();

  NewRun run;
  run.started_ms = kT0;
  run.mechanism = "exclusive";
  run.backend = "sim";
  Result<int64_t> run_id = store->begin_run(run);
  ASSERT_TRUE(run_id.ok());
  ASSERT_TRUE(store->update_case(*a, *run_id, "ok", "").ok());
  ASSERT_TRUE(store->end_experiment(*id, "ok", kT0 + 5000).ok());

  Result<ExperimentRow> e = store->experiment(0);  // the most recent
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->id, *id);
  EXPECT_EQ(e->suite, "paper-uniform");
  EXPECT_EQ(e->state, "ok");
  EXPECT_EQ(e->ended_ms, kT0 + 5000);
  EXPECT_TRUE(e->simulated);
  EXPECT_EQ(e->backend, "sim");
  EXPECT_EQ(e->gpu_name, "Simulated NVIDIA H200");
  EXPECT_EQ(e->options_json, R"({"budget":"8m"})");

  Result<std::vector<CaseRow>> cases = store->experiment_cases(*id);
  ASSERT_TRUE(cases.ok()) << cases.error().message();
  ASSERT_EQ(cases->size(), 2u);
  EXPECT_EQ((*cases)[0].name, "small/resnet26/exclusive/x1/r1");
  EXPECT_EQ((*cases)[0].status, "ok");
  EXPECT_EQ((*cases)[0].run_id, *run_id);
  EXPECT_EQ((*cases)[0].experiment_id, *id);
  EXPECT_EQ((*cases)[1].mechanism, "mig");
  EXPECT_EQ((*cases)[1].degree, 3);
  EXPECT_EQ((*cases)[1].status, "not_run");
  EXPECT_EQ((*cases)[1].reason, "MIG mode is disabled on gpu0 (colo never changes it)");
  EXPECT_FALSE((*cases)[1].run_id.has_value());
}

TEST(ExperimentStore, ListsNewestFirstAndRejectsUnknownIdsAndStates) {
  auto store = open_memory();
  ASSERT_TRUE(store);
  Result<std::vector<ExperimentRow>> none = store->list_experiments();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  Result<ExperimentRow> missing = store->experiment(0);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("colo bench"), std::string::npos);

  auto first = store->begin_experiment(make_experiment("paper-uniform"));
  auto second = store->begin_experiment(make_experiment("paper-mixed"));
  ASSERT_TRUE(first.ok() && second.ok());
  auto list = store->list_experiments(10);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].suite, "paper-mixed");
  EXPECT_EQ((*list)[0].state, "running");  // our own colo is alive
  EXPECT_EQ((*list)[1].suite, "paper-uniform");

  EXPECT_FALSE(store->experiment(*second + 100).ok());
  EXPECT_FALSE(store->experiment_cases(*second + 100).ok());
  EXPECT_FALSE(store->end_experiment(*first, "bogus", kT0).ok());
  EXPECT_FALSE(store->end_experiment(*first, "running", kT0).ok());
  EXPECT_FALSE(store->end_experiment(*second + 100, "ok", kT0).ok());
  CaseRow bad = make_case("x", "naive", 1);
  bad.status = "exploded";
  EXPECT_FALSE(store->add_case(*first, bad).ok());
  EXPECT_FALSE(store->update_case(12345, std::nullopt, "ok", "").ok());
  // Case names are unique within an experiment.
  ASSERT_TRUE(store->add_case(*first, make_case("x", "naive", 1)).ok());
  EXPECT_FALSE(store->add_case(*first, make_case("x", "naive", 1)).ok());
  EXPECT_TRUE(store->add_case(*second, make_case("x", "naive", 1)).ok());
}

class ExperimentStoreFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "colo_experiment_test.XXXXXX").string();
    std::array<char, 4096> buffer{};
    pattern.copy(buffer.data(), buffer.size() - 1);
    const char* made = mkdtemp(buffer.data());
    ASSERT_NE(made, nullptr);
    dir_ = made;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string db() const { return dir_ + "/colo.db"; }

  // Pretends the experiment belongs to the colo with `pid` (begin_experiment
  // records our own).
  void set_pid(int64_t experiment_id, pid_t pid) {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
    std::string sql = "UPDATE experiments SET colo_pid = " + std::to_string(pid) +
                      " WHERE id = " + std::to_string(experiment_id);
    EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }

  std::string dir_;
};

TEST_F(ExperimentStoreFile, AnExperimentWhoseColoDiedIsInterruptedWithItsPlannedCasesCancelled) {
  int64_t id = 0;
  {
    auto store = RunStore::open(db());
    ASSERT_TRUE(store.ok()) << store.error().message();
    auto e = (*store)->begin_experiment(make_experiment("paper-mixed"));
    ASSERT_TRUE(e.ok());
    id = *e;
    auto done = (*store)->add_case(id, make_case("a", "naive", 1));
    ASSERT_TRUE(done.ok());
    ASSERT_TRUE((*store)->update_case(*done, std::nullopt, "ok", "").ok());
    ASSERT_TRUE((*store)->add_case(id, make_case("b", "naive", 2)).ok());
  }
  set_pid(id, dead_pid());
  auto store = RunStore::open(db());
  ASSERT_TRUE(store.ok());
  auto e = (*store)->experiment(id);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->state, "interrupted");
  EXPECT_TRUE(e->ended_ms.has_value());
  auto cases = (*store)->experiment_cases(id);
  ASSERT_TRUE(cases.ok());
  ASSERT_EQ(cases->size(), 2u);
  EXPECT_EQ((*cases)[0].status, "ok");
  EXPECT_EQ((*cases)[1].status, "cancelled");
  EXPECT_NE((*cases)[1].reason.find("colo stopped"), std::string::npos);
}

TEST_F(ExperimentStoreFile, ARunMarkedInterruptedTakesTheExperimentOfTheSameColoWithIt) {
  auto store = RunStore::open(db());
  ASSERT_TRUE(store.ok());
  auto e = (*store)->begin_experiment(make_experiment("paper-recsys"));
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE((*store)->add_case(*e, make_case("c", "mps", 2)).ok());
  NewRun run;
  run.started_ms = kT0;
  run.mechanism = "mps";
  run.backend = "sim";
  run.host = host_name();
  run.colo_pid = getpid();
  ASSERT_TRUE((*store)->begin_run(run).ok());
  // As open() does after a SIGKILL, with a liveness check that says "gone".
  auto marked = (*store)->mark_stale_runs_interrupted([](pid_t) { return false; }, kT0 + 1000);
  ASSERT_TRUE(marked.ok());
  ASSERT_EQ(marked->size(), 1u);
  auto row = (*store)->experiment(*e);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->state, "interrupted");
  auto cases = (*store)->experiment_cases(*e);
  ASSERT_TRUE(cases.ok());
  EXPECT_EQ((*cases)[0].status, "cancelled");
}

}  // namespace
}  // namespace colo
