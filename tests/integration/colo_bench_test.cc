// End-to-end tests of `colo bench`: the real binary runs the suites on the
// simulated backend with bench/sim_train.py (tiny epochs), a fake MPS control
// program and a real SQLite file; the experiment and its cases are checked in
// the store.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "analysis/stored.h"
#include "integration_util.h"
#include "store/run_store.h"

namespace colo {
namespace {

class ColoBench : public ColoTestDir {
 protected:
  // `colo bench ARGS` on the simulated backend, run from the source tree so
  // that bench/sim_train.py is found, with the fake MPS control program.
  std::string colo_bench(const std::string& args) const {
    const char* source = std::getenv("COLO_SOURCE_DIR");
    return "cd '" + std::string(source ? source : ".") + "' && COLO_HOME='" + dir_ +
           "/home' COLO_MPS_CONTROL='" + COLO_FAKE_MPS_CONTROL + "' " + COLO_BINARY +
           " bench --backend sim --plain --sample-period 200ms --db '" + db() + "' " + args;
  }

  // status -> count over the cases of the most recent experiment.
  std::map<std::string, int> statuses(RunStore& store) {
    std::map<std::string, int> counts;
    auto cases = store.experiment_cases(0);
    EXPECT_TRUE(cases.ok());
    if (!cases.ok()) return counts;
    for (const CaseRow& c : *cases) ++counts[c.status];
    return counts;
  }
};

TEST_F(ColoBench, UniformSmallRunsEndToEndAndIsRecordedAsOneExperiment) {
  CommandResult r =
      shell(colo_bench("--suite paper-uniform --cases 'small/*' --budget 60s --epochs 5"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("sim_train.py"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("case 12/13 small/resnet26/mps/x7/r1: ok"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("x steady speed-up (solo rates from small/resnet26/exclusive/x1/r1)"),
            std::string::npos)
      << r.output;

  auto store = open_store();
  ASSERT_TRUE(store);
  auto e = store->experiment(0);
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->suite, "paper-uniform");
  EXPECT_EQ(e->state, "ok");
  EXPECT_TRUE(e->simulated);
  EXPECT_NE(e->options_json.find("\"budget_ms\":60000"), std::string::npos) << e->options_json;
  auto cases = store->experiment_cases(e->id);
  ASSERT_TRUE(cases.ok());
  ASSERT_EQ(cases->size(), 13u);
  EXPECT_EQ((statuses(*store)), (std::map<std::string, int>{{"ok", 9}, {"not_run", 4}}));
  for (const CaseRow& c : *cases) {
    if (c.status != "ok") {
      EXPECT_EQ(c.mechanism, "mig") << c.name;
      EXPECT_EQ(c.reason, "MIG mode is disabled on gpu0 (colo never changes it)");
      continue;
    }
    ASSERT_TRUE(c.run_id.has_value()) << c.name;
    auto summary = analyse_run(*store, *c.run_id);
    ASSERT_TRUE(summary.ok()) << c.name;
    EXPECT_EQ(summary->run.mechanism, c.mechanism) << c.name;
    ASSERT_EQ(summary->jobs.size(), static_cast<size_t>(c.degree)) << c.name;
    for (const JobSummary& j : summary->jobs) {
      EXPECT_EQ(j.state, JobState::kOk) << c.name << " " << j.name;
      EXPECT_EQ(j.epochs, 5) << c.name << " " << j.name;
    }
    // A lone job always has a steady window. Jobs started together on a busy
    // machine may start seconds apart and, at 5 tiny epochs, share too short
    // a window: then the summary says so instead of a figure.
    if (c.degree == 1 || summary->steady_throughput_per_s.has_value()) {
      EXPECT_TRUE(summary->steady_throughput_per_s.has_value()) << c.name;
    } else {
      EXPECT_NE(summary->steady_note.find("did not run together long enough"), std::string::npos)
          << c.name << ": " << summary->steady_note;
    }
  }
}

TEST_F(ColoBench, MixedRunsSerialAndCollocatedAndComparesThem) {
  CommandResult r =
      shell(colo_bench("--suite paper-mixed --cases 'mixed/S+M+M/*,mixed/S+S+M+M/mps/*' "
                       "--budget 25s"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("faster than serial"), std::string::npos) << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  auto e = store->experiment(0);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->suite, "paper-mixed");
  EXPECT_EQ(e->state, "ok");
  EXPECT_EQ((statuses(*store)), (std::map<std::string, int>{{"ok", 4}, {"not_run", 1}}));
  auto cases = store->experiment_cases(0);
  ASSERT_TRUE(cases.ok());
  EXPECT_EQ((*cases)[0].name, "mixed/S+M+M/serial/x3/r1");
  auto serial = analyse_run(*store, *(*cases)[0].run_id);
  auto naive = analyse_run(*store, *(*cases)[1].run_id);
  ASSERT_TRUE(serial.ok() && naive.ok());
  EXPECT_EQ(serial->run.mechanism, "exclusive");
  // Serial: one job after another.
  EXPECT_GE(*serial->jobs[1].started_ms, *serial->jobs[0].ended_ms);
  EXPECT_LT(*naive->jobs[1].started_ms, *naive->jobs[0].ended_ms);
  EXPECT_LT(*naive->makespan_ms, *serial->makespan_ms);
}

TEST_F(ColoBench, RecsysRunsTheRecommenderAloneAndTogether) {
  CommandResult r = shell(colo_bench("--suite paper-recsys --budget 25s --repeat 1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  auto cases = store->experiment_cases(0);
  ASSERT_TRUE(cases.ok());
  ASSERT_EQ(cases->size(), 5u);
  EXPECT_EQ((*cases)[0].models, "dlrm");
  EXPECT_EQ((*cases)[2].models, "dlrm+resnet152");
  EXPECT_EQ((statuses(*store)), (std::map<std::string, int>{{"ok", 4}, {"not_run", 1}}));
  auto together = analyse_run(*store, *(*cases)[3].run_id);
  ASSERT_TRUE(together.ok());
  ASSERT_EQ(together->jobs.size(), 2u);
  EXPECT_EQ(together->jobs[0].name, "dlrm#1");
  // The recommender is memory-heavy: 20% of the simulated H200 (28 GiB) in tables, plus a
  // margin (the simulator reports the memory hint plus a context).
  ASSERT_TRUE(together->jobs[0].peak_memory_bytes.has_value());
  EXPECT_GT(*together->jobs[0].peak_memory_bytes, 28ULL << 30);
  EXPECT_LT(*together->jobs[0].peak_memory_bytes, 40ULL << 30);
}

TEST_F(ColoBench, DoesNotFitOnASmallGpuIsRecordedNotRun) {
  CommandResult r = shell(colo_bench(
      "--suite paper-uniform --gpu-model A100-40GB --cases 'large/cait_xxs24_224/naive/x7/*'"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("does not fit"), std::string::npos) << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  auto cases = store->experiment_cases(0);
  ASSERT_TRUE(cases.ok());
  ASSERT_EQ(cases->size(), 1u);
  EXPECT_EQ((*cases)[0].status, "does_not_fit");
  EXPECT_NE((*cases)[0].reason.find("default estimate"), std::string::npos);
  EXPECT_FALSE((*cases)[0].run_id.has_value());
}

TEST_F(ColoBench, DryRunAndListRunNothing) {
  CommandResult r = shell(colo_bench("--suite paper-uniform --budget 8m --dry-run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("estimated total"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("large/cait_xxs24_224/mig/x7/r1"), std::string::npos) << r.output;
  EXPECT_EQ(access(db().c_str(), F_OK), -1) << "a dry run must not create the store";
  CommandResult list = shell(colo_bench("--list"));
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find("paper-recsys"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("mixed/S+M+M+M/serial/x4/r1"), std::string::npos) << list.output;
  CommandResult bad = shell(colo_bench("--suite paper-uniform --budget 5s"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("too small"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace colo
