// Sweeps under --policy auto end to end (issue 17): the real colo binary on
// the simulated backend, with stand-in jobs (bench/gain_standin.py) whose
// gain from sharing is known and whose simulated memory follows their batch
// size. A grid is one family: probed once, then packed; a batch-size grid is
// fitted from two probes, and its estimates checked against what colo then
// measured.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/stored.h"
#include "integration_util.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

class ColoSweep : public ColoTestDir {
 protected:
  void SetUp() override {
    ColoTestDir::SetUp();
    shell("mkdir -p '" + dir_ + "/bin' '" + dir_ + "/shared' && cp '" COLO_FAKE_MPS_CONTROL "' '" +
          dir_ + "/bin/nvidia-cuda-mps-control'");
  }

  std::string colo(const std::string& args) const {
    return "PATH='" + dir_ + "/bin':$PATH COLO_HOME='" + dir_ + "/home' " +
           std::string(COLO_BINARY) + " " + args;
  }

  // One [[job]] of stand-in jobs: `args` after the common ones, `grid` its grid.
  std::string grid_file(const std::string& name, const std::string& args, const std::string& grid) {
    return write_file(name, "[[job]]\nname = \"toy\"\ncommand = [\"python3\", \"" COLO_SOURCE_DIR
                            "/bench/gain_standin.py\", \"--shared\", \"" +
                                dir_ + "/shared\", \"--gain\", \"3.2\", " + args +
                                "]\ngrid = " + grid + "\n");
  }

  Result<RunSummary> last_run(const std::string& db) const {
    auto store = RunStore::open(db);
    if (!store.ok()) return store.error();
    return analyse_run(**store, 0);
  }

  static size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
};

// The CI criterion of issue 17: a 12-point grid (learning rate x weight
// decay) under auto measures one newcomer, then packs the rest, and ends
// within 1.2x of mps-all on the same file. Each job: 0.5 s of start-up, then
// 12 epochs of 0.15 s alone; together k jobs progress min(k, 3.2) / k each.
TEST_F(ColoSweep, AGridUnderAutoMeasuresOneThenPacksNearMpsAll) {
  const std::string file = grid_file(
      "grid.toml",
      "\"--epochs\", \"12\", \"--epoch-s\", \"0.15\", \"--startup\", \"0.5\", \"--sm-activity\", "
      "\"15\", \"--lr\", \"{lr}\", \"--weight-decay\", \"{wd}\"",
      "{ lr = [0.1, 0.05, 0.02, 0.01], wd = [0.0, 0.0001, 0.001] }");
  const std::string auto_db = dir_ + "/auto.db";
  CommandResult r = shell(colo("run " + file +
                               " --backend sim --mechanism mps --policy auto --plain "
                               "--sample-period 100ms --db " +
                               auto_db));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, "(new: measured where it runs)"), 1u) << r.output;
  EXPECT_THAT(r.output, HasSubstr("toy[lr=0.1,wd=0.0]: never measured; prior: "));
  EXPECT_THAT(r.output, HasSubstr("starting it on idle gpu0, memory limit "));
  EXPECT_THAT(r.output, HasSubstr("measured there for its family (11 other kinds of job, placed "
                                  "by its measurement)"));
  EXPECT_THAT(r.output, HasSubstr("and 9 more instances: starting beside its family's newcomer "
                                  "while that is measured"));
  Result<RunSummary> autod = last_run(auto_db);
  ASSERT_TRUE(autod.ok()) << autod.error().message();
  for (const JobSummary& j : autod->jobs) EXPECT_EQ(j.state, JobState::kOk) << j.name;
  EXPECT_EQ(most_at_once(*autod), 12u) << "the eleven siblings start beside the newcomer";

  const std::string mps_db = dir_ + "/mps.db";
  CommandResult all = shell(colo("run " + file +
                                 " --backend sim --mechanism mps --max-per-gpu 48 --plain "
                                 "--sample-period 100ms --db " +
                                 mps_db));
  ASSERT_EQ(all.exit_code, 0) << all.output;
  Result<RunSummary> mps_all = last_run(mps_db);
  ASSERT_TRUE(mps_all.ok()) << mps_all.error().message();
  ASSERT_TRUE(autod->makespan_ms && mps_all->makespan_ms);
  const double ratio =
      static_cast<double>(*autod->makespan_ms) / static_cast<double>(*mps_all->makespan_ms);
  std::cout << "[ grid ] auto " << *autod->makespan_ms << " ms, mps-all " << *mps_all->makespan_ms
            << " ms: " << ratio << "x\n";
  EXPECT_LE(ratio, 1.2);

  // The next run of the same grid knows the family from the store: no newcomer.
  CommandResult again = shell(colo("run " + file +
                                   " --backend sim --mechanism mps --policy auto --plain "
                                   "--sample-period 100ms --db " +
                                   auto_db));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(count(again.output, "never measured"), 0u) << again.output;
}

// A batch-size grid, two jobs at a time: one sibling starts beside the first
// newcomer (32) while it is measured; batch_size is presumed to matter (its
// name), so after the newcomer colo measures the farthest value (512), fits the rest
// (memory: 1000 MiB + 8 MiB per sample, plus the simulated CUDA context) and
// widens their memory limits by the fit's uncertainty. No job runs out of
// memory, and every estimate is within 15% of what colo then measured.
TEST_F(ColoSweep, ABatchSizeGridIsFittedFromTwoMeasuredInstances) {
  const std::string file = grid_file(
      "batch.toml",
      "\"--epochs\", \"20\", \"--epoch-s\", \"0.15\", \"--startup\", \"0.3\", \"--memory-mib\", "
      "\"1000\", \"--memory-mib-per-sample\", \"8\", \"--sm-activity\", \"20\", \"--batch-size\", "
      "\"{batch_size}\"",
      "{ batch_size = [32, 64, 128, 256, 512] }");
  CommandResult r = shell(colo("run " + file +
                               " --backend sim --mechanism mps --policy auto --max-per-gpu 2 "
                               "--plain --sample-period 100ms --db " +
                               db()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, "(new: measured where it runs)"), 2u) << r.output;
  // 512: what one measured value of batch_size cannot say (SM activity, and
  // memory unless the speculative sibling's end told it) needs a second.
  EXPECT_THAT(r.output, HasSubstr("toy[batch_size=512]: its family's measurements do not cover "
                                  "it ("));
  EXPECT_THAT(r.output, HasSubstr("one measured value of batch_size (32): a fit needs two); "
                                  "starting it on "));
  // Memory is fitted; SM activity (20% for every batch size here) is seen
  // not to depend on it, so both measured instances speak for it.
  EXPECT_THAT(r.output, HasSubstr(": profile memory from a fit over batch_size to "
                                  "toy[batch_size=32], "));
  EXPECT_THAT(r.output, HasSubstr("SM activity from 2 siblings (toy[batch_size=32], "
                                  "toy[batch_size=512])"));
  Result<RunSummary> run = last_run(db());
  ASSERT_TRUE(run.ok()) << run.error().message();
  int estimated = 0;
  for (const JobSummary& j : run->jobs) {
    EXPECT_EQ(j.state, JobState::kOk) << j.name;
    EXPECT_EQ(j.attempts, 1) << j.name;
    if (!j.estimate) continue;
    ++estimated;
    ASSERT_TRUE(j.peak_memory_bytes) << j.name;
    const double error = static_cast<double>(*j.estimate->peak_memory_bytes) /
                             static_cast<double>(*j.peak_memory_bytes) -
                         1.0;
    std::cout << "[ batch ] " << j.name << ": estimated " << *j.estimate->peak_memory_bytes
              << " B, measured " << *j.peak_memory_bytes << " B (" << 100 * error << "%)\n";
    EXPECT_LT(std::abs(error), 0.15) << j.name;
  }
  EXPECT_GE(estimated, 1);

  // colo profiles: the estimates beside the measurements, what batch_size
  // does, and what the file's jobs would be placed by next time.
  CommandResult profiles = shell(colo("profiles " + file + " --db " + db()));
  ASSERT_EQ(profiles.exit_code, 0) << profiles.output;
  EXPECT_THAT(profiles.output, HasSubstr("ESTIMATES the auto policy placed jobs by"));
  EXPECT_THAT(profiles.output, HasSubstr("toy[batch_size=128]"));
  EXPECT_THAT(profiles.output, HasSubstr("batch_size       peak memory  matters, measured: "
                                         "toy[batch_size=32]"));
  EXPECT_THAT(profiles.output, HasSubstr("JOBS OF " + file));
  // Next time every job of the file is placed by what was measured.
  EXPECT_EQ(count(profiles.output, "new, measured where it runs"), 0u) << profiles.output;
  EXPECT_EQ(count(profiles.output, "after its family's newcomer"), 0u) << profiles.output;
  EXPECT_THAT(profiles.output, HasSubstr("store: run 1 job 5 (mps, probe, simulated)"));
}

}  // namespace
}  // namespace colo
