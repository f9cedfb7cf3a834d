#include "bench/bench_runner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gpu/sim_backend.h"

namespace colo {
namespace {

// A temporary directory with a stand-in trainer: two epochs of 0.3 s, each
// reported through the progress file.
class BenchRunnerTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "colo_bench.XXXXXX").string();
    std::array<char, 4096> buffer{};
    pattern.copy(buffer.data(), buffer.size() - 1);
    ASSERT_NE(mkdtemp(buffer.data()), nullptr);
    dir_ = buffer.data();
    std::ofstream(dir_ + "/trainer.sh")
        << "for e in 1 2; do sleep 0.3; printf '{\"event\":\"epoch_end\",\"epoch\":%d,"
           "\"samples\":512}\\n' $e >> \"$COLO_PROGRESS_FILE\"; done\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<BenchCase> cases(const std::string& suite, std::vector<std::string> globs) {
    ExpandOptions options;
    options.case_globs = std::move(globs);
    options.mig_reason = "MIG mode is disabled on gpu0 (colo never changes it)";
    Result<std::vector<BenchCase>> c = expand_suite(suite, options);
    EXPECT_TRUE(c.ok()) << c.error().message();
    return c.ok() ? *c : std::vector<BenchCase>{};
  }

  // Runs `cases` on a simulated `gpu_model` with the stand-in trainer.
  Result<BenchOutcome> run(const std::vector<BenchCase>& c, const std::string& gpu_model) {
    Result<std::unique_ptr<SimBackend>> backend = SimBackend::create(gpu_model, 1, clock_);
    if (!backend.ok()) return backend.error();
    backend_ = std::move(backend).value();
    Result<std::unique_ptr<RunStore>> store = RunStore::open(":memory:");
    if (!store.ok()) return store.error();
    store_ = std::move(store).value();
    Result<Plan> plan = make_plan(c, PlanOptions{});
    if (!plan.ok()) return plan.error();
    BenchRunOptions options;
    options.suite = "paper-uniform";
    options.trainer.python = "sh";
    options.trainer.trainer = dir_ + "/trainer.sh";
    options.trainer.working_dir = dir_;
    options.run.logs_root = dir_ + "/logs";
    options.run.sample_period_ms = 100;
    options.run.tick_ms = 50;
    MechanismOptions mechanism_options;
    mechanism_options.state_dir = dir_ + "/mps";
    BenchContext ctx{clock_, *backend_, *store_, mechanism_options, out_, stop_};
    return run_bench(c, *plan, options, ctx);
  }

  std::string dir_;
  SystemClock clock_;
  std::unique_ptr<SimBackend> backend_;
  std::unique_ptr<RunStore> store_;
  std::ostringstream out_;
  std::atomic<int> stop_{0};
};

TEST(JobFileFor, OneJobPerWorkloadWithThePlansEpochSize) {
  ExpandOptions options;
  options.case_globs = {"mixed/S+M+M/naive/*"};
  Result<std::vector<BenchCase>> c = expand_suite("paper-mixed", options);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 1u);
  Result<Plan> plan = make_plan(*c, PlanOptions{});
  ASSERT_TRUE(plan.ok());
  TrainerConfig trainer;
  trainer.trainer = "/repo/bench/sim_train.py";
  trainer.working_dir = "/repo";
  trainer.sim_trainer = true;
  JobFile file = job_file_for((*c)[0], *plan, trainer, "paper-mixed");
  ASSERT_EQ(file.jobs.size(), 3u);
  EXPECT_EQ(file.jobs[0].name, "resnet26#1");
  EXPECT_EQ(file.jobs[1].name, "resnet50#1");
  EXPECT_EQ(file.jobs[2].name, "resnet50#2");
  EXPECT_EQ(file.max_jobs_per_gpu, 3);
  EXPECT_EQ(file.mechanism, "naive");
  const std::vector<std::string>& cmd = file.jobs[1].command;
  ASSERT_GE(cmd.size(), 2u);
  EXPECT_EQ(cmd[0], "python3");
  EXPECT_EQ(cmd[1], "/repo/bench/sim_train.py");
  auto arg = [&](const std::string& flag) {
    auto it = std::find(cmd.begin(), cmd.end(), flag);
    return it != cmd.end() && it + 1 != cmd.end() ? *(it + 1) : std::string();
  };
  EXPECT_EQ(arg("--model"), "resnet50");
  EXPECT_EQ(arg("--dataset"), "imagenet64");
  EXPECT_EQ(arg("--batch-size"), "128");
  EXPECT_EQ(arg("--epochs"), "4");
  EXPECT_EQ(arg("--epoch-samples"),
            std::to_string(plan->workloads.at("resnet50/imagenet64/b128").epoch_samples));
  EXPECT_EQ(file.jobs[1].env.at("COLO_SIM_SHARING"), "3");
  EXPECT_EQ(file.jobs[1].working_dir, "/repo");

  // Serial: one job at a time; the real recommender runs bench/dlrm.py.
  options.case_globs = {"recsys/dlrm/exclusive/*"};
  Result<std::vector<BenchCase>> r = expand_suite("paper-recsys", options);
  ASSERT_TRUE(r.ok());
  Result<Plan> rplan = make_plan(*r, PlanOptions{});
  ASSERT_TRUE(rplan.ok());
  TrainerConfig real;
  real.trainer = "/repo/bench/train.py";
  real.dlrm = "/repo/bench/dlrm.py";
  real.dlrm_memory_gib = 28;
  JobFile dlrm = job_file_for((*r)[0], *rplan, real, "paper-recsys");
  ASSERT_EQ(dlrm.jobs.size(), 1u);
  EXPECT_EQ(dlrm.jobs[0].command[1], "/repo/bench/dlrm.py");
  EXPECT_NE(std::find(dlrm.jobs[0].command.begin(), dlrm.jobs[0].command.end(), "28"),
            dlrm.jobs[0].command.end());
  EXPECT_FALSE(dlrm.jobs[0].env.contains("COLO_SIM_SHARING"));
  EXPECT_EQ(dlrm.max_jobs_per_gpu, 1);
}

TEST_F(BenchRunnerTest, DoesNotFitUsesTheMeasuredPeakOfTheDegreeOneCase) {
  // On a simulated H100 (79.6 GiB), 7 x cait at the default 11 GiB would fit;
  // the simulator measures 11 GiB + its 500 MiB context per job, so it does not.
  std::vector<BenchCase> c = cases(
      "paper-uniform", {"large/cait_xxs24_224/exclusive/x1/r1", "large/cait_xxs24_224/naive/x7/r1",
                        "large/cait_xxs24_224/mig/x7/r1"});
  ASSERT_EQ(c.size(), 3u);
  Result<BenchOutcome> outcome = run(c, "H100");
  ASSERT_TRUE(outcome.ok()) << outcome.error().message() << "\n" << out_.str();
  EXPECT_EQ(outcome->state, "ok") << out_.str();
  EXPECT_EQ(outcome->ok, 1);
  EXPECT_EQ(outcome->does_not_fit, 1);
  EXPECT_EQ(outcome->not_run, 1);

  Result<std::vector<CaseRow>> rows = store_->experiment_cases(outcome->experiment_id);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].status, "ok");
  ASSERT_TRUE((*rows)[0].run_id.has_value());
  EXPECT_EQ((*rows)[1].status, "does_not_fit");
  EXPECT_FALSE((*rows)[1].run_id.has_value());
  EXPECT_NE((*rows)[1].reason.find("measured in large/cait_xxs24_224/exclusive/x1/r1"),
            std::string::npos)
      << (*rows)[1].reason;
  EXPECT_EQ((*rows)[2].status, "not_run");
  EXPECT_EQ((*rows)[2].reason, "MIG mode is disabled on gpu0 (colo never changes it)");

  Result<ExperimentRow> e = store_->experiment(outcome->experiment_id);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->state, "ok");
  EXPECT_TRUE(e->simulated);
  EXPECT_EQ(e->gpu_name, "Simulated NVIDIA H100");
  EXPECT_NE(out_.str().find("case 2/3 large/cait_xxs24_224/naive/x7/r1: does not fit"),
            std::string::npos)
      << out_.str();
}

TEST_F(BenchRunnerTest, DoesNotFitWithDefaultsOnASmallGpuRunsNothing) {
  std::vector<BenchCase> c = cases("paper-uniform", {"large/cait_xxs24_224/*/x7/r1"});
  ASSERT_EQ(c.size(), 3u);  // naive, mps, mig
  Result<BenchOutcome> outcome = run(c, "A100-40GB");
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_EQ(outcome->does_not_fit, 2);
  EXPECT_EQ(outcome->not_run, 1);
  Result<std::vector<RunRow>> runs = store_->list_runs(50);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
  Result<std::vector<CaseRow>> rows = store_->experiment_cases(0);
  ASSERT_TRUE(rows.ok());
  EXPECT_NE((*rows)[0].reason.find("7 x 11.0 GiB"), std::string::npos) << (*rows)[0].reason;
  EXPECT_NE((*rows)[0].reason.find("default estimate"), std::string::npos);
}

TEST_F(BenchRunnerTest, AFailedCaseDoesNotStopTheExperiment) {
  std::ofstream(dir_ + "/trainer.sh", std::ios::trunc)
      << "case \"$*\" in *resnet26*) exit 3;; esac; sleep 0.2\n";
  std::vector<BenchCase> c = cases("paper-mixed", {"mixed/S+M+M/naive/*"});
  std::vector<BenchCase> more = cases("paper-uniform", {"medium/resnet50/exclusive/x1/r1"});
  c.insert(c.begin(), more.begin(), more.end());
  // The first case runs resnet50 (ok), the second a mix with resnet26 (fails).
  std::swap(c[0], c[1]);
  Result<BenchOutcome> outcome = run(c, "H200");
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_EQ(outcome->failed, 1) << out_.str();
  EXPECT_EQ(outcome->ok, 1) << out_.str();
  EXPECT_EQ(outcome->state, "failed");
  Result<std::vector<CaseRow>> rows = store_->experiment_cases(0);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].status, "failed");
  EXPECT_NE((*rows)[0].reason.find("resnet26#1"), std::string::npos) << (*rows)[0].reason;
  EXPECT_EQ((*rows)[1].status, "ok");
}

TEST_F(BenchRunnerTest, AStopRequestCancelsTheRemainingCases) {
  stop_ = 1;  // Ctrl-C before the first case
  std::vector<BenchCase> c = cases("paper-uniform", {"small/resnet26/naive/*"});
  Result<BenchOutcome> outcome = run(c, "H200");
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->state, "cancelled");
  EXPECT_EQ(outcome->cancelled, 4);
  Result<ExperimentRow> e = store_->experiment(0);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->state, "cancelled");
}

}  // namespace
}  // namespace colo
