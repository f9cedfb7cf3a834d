// Faults stay with their job (docs/reliability.md), end to end: the real
// colo binary on the simulated backend under the stand-in MPS control
// program, with jobs that behave as CUDA clients do when a fatal GPU fault
// reaches them, when a recovering MPS server refuses them, and when they hang.
#include <gtest/gtest.h>

#include <string>

#include "analysis/stored.h"
#include "integration_util.h"
#include "store/run_store.h"

namespace colo {
namespace {

// What PyTorch prints for a device-side assert in cross_entropy (one line per
// failing thread, then its error and hints): only the faulting client prints it.
constexpr const char* kAssertion =
    "/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
    "block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.";

class ColoFaults : public ColoTestDir {
 protected:
  void SetUp() override {
    ColoTestDir::SetUp();
    bin_ = dir_ + "/bin";
    shell("mkdir -p '" + bin_ + "' && cp '" COLO_FAKE_MPS_CONTROL "' '" + bin_ +
          "/nvidia-cuda-mps-control'");
  }
  CommandResult colo_run(const std::string& file, const std::string& flags) const {
    return shell("PATH='" + bin_ + "':$PATH COLO_HOME='" + dir_ + "/home' " COLO_BINARY " run " +
                 file +
                 " --backend sim --mechanism mps --policy fixed --plain --grace 2s --logs '" +
                 dir_ + "/logs' --db " + db() + " " + flags + " 2>&1");
  }
  // The job's attempts, by its name in the only run.
  std::vector<AttemptRow> attempts(RunStore& store, const RunSummary& run,
                                   const std::string& name) const {
    for (const JobSummary& j : run.jobs) {
      if (j.name != name) continue;
      Result<std::vector<AttemptRow>> rows = store.job_attempts(j.id);
      EXPECT_TRUE(rows.ok());
      return rows.ok() ? *rows : std::vector<AttemptRow>{};
    }
    ADD_FAILURE() << "no job " << name;
    return {};
  }
  std::string bin_;
};

const JobSummary* job_named(const RunSummary& run, const std::string& name) {
  for (const JobSummary& j : run.jobs) {
    if (j.name == name) return &j;
  }
  return nullptr;
}

// A fault on a GPU under MPS: the job whose kernel asserted fails; of its
// four neighbours, one exits with "MPS client terminated" and two hang, as
// clients the fault reached do, and one runs on unharmed, as most do
// (docs/reliability.md). colo watches the neighbours, which have reported
// progress: the one that failed and the two that went silent run again
// without counting an attempt, and the one that ran on is left alone. The
// culprit runs alone (outside the shared server), fails the same way, and
// ends failed with its assertion as the reason. The neighbours end ok.
TEST_F(ColoFaults, AFaultOnTheServerRequeuesThoseItReachedUncountedAndRunsTheCulpritAlone) {
  // A healthy job: once it has reported its first epoch it says so; its first
  // attempt then, on the fault, exits as a terminated client ($2 = exit),
  // hangs ($2 = hang) or runs on ($2 = run); later attempts train.
  const std::string healthy = write_file(
      "healthy.sh",
      "first=0; [ -e \"$COLO_CHECKPOINT_DIR/ran\" ] || { first=1; touch "
      "\"$COLO_CHECKPOINT_DIR/ran\"; }\n"
      "for e in 1 2 3 4 5 6 7 8 9 10; do\n"
      "  if [ $first = 1 ] && [ \"$2\" != run ] && [ -e '" +
          dir_ +
          "/fault' ]; then\n"
          "    if [ \"$2\" = exit ]; then\n"
          "      echo 'RuntimeError: CUDA error: the MPS client has been terminated by the server. "
          "To continue using CUDA, the process must be terminated and relaunched'\n"
          "      echo 'Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.'; exit "
          "1\n"
          "    fi\n"
          "    sleep 600\n"
          "  fi\n"
          "  sleep 0.3; printf '{\"event\":\"epoch_end\",\"epoch\":%d,\"samples\":1000}\\n' $e >> "
          "\"$COLO_PROGRESS_FILE\"; echo epoch $e\n"
          "  touch '" +
          dir_ +
          "/reported.'$1\n"
          "done\n");
  // The culprit asserts once its neighbours have reported; alone it says so,
  // and asserts again.
  const std::string culprit = write_file(
      "culprit.sh",
      "echo \"mps client: ${CUDA_MPS_PIPE_DIRECTORY:+yes}${CUDA_MPS_PIPE_DIRECTORY:-no}\"\n"
      "while [ $(ls '" +
          dir_ +
          "'/reported.* 2>/dev/null | wc -l) -lt 4 ]; do sleep 0.1; done\n"
          "echo '" +
          std::string(kAssertion) +
          "'\n"
          "echo 'RuntimeError: CUDA error: device-side assert triggered'\n"
          "echo 'Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.'\n"
          "touch '" +
          dir_ + "/fault'; exit 1\n");
  std::string jobs;
  for (const auto& [name, mode] : {std::pair{"reached", "exit"},
                                   {"hung-1", "hang"},
                                   {"hung-2", "hang"},
                                   {"unharmed", "run"}}) {
    jobs += std::string("[[job]]\nname = \"") + name + "\"\ncommand = [\"sh\", \"" + healthy +
            "\", \"" + name + "\", \"" + mode + "\"]\n";
  }
  jobs += "[[job]]\nname = \"buggy\"\ncommand = [\"sh\", \"" + culprit + "\"]\n";
  CommandResult r = colo_run(write_file("jobs.toml", jobs), "--max-per-gpu 5");
  EXPECT_EQ(r.exit_code, 1) << r.output;  // a job failed
  EXPECT_NE(r.output.find("gpu0: fatal GPU fault under MPS, buggy raised it"), std::string::npos)
      << r.output;

  auto store = open_store();
  ASSERT_TRUE(store);
  Result<RunSummary> run = analyse_run(*store, 0);
  ASSERT_TRUE(run.ok());
  for (const char* name : {"reached", "hung-1", "hung-2"}) {
    const JobSummary* j = job_named(*run, name);
    ASSERT_NE(j, nullptr) << name;
    EXPECT_EQ(j->state, JobState::kOk) << name << ": " << r.output;
    std::vector<AttemptRow> rows = attempts(*store, *run, name);
    ASSERT_EQ(rows.size(), 2u) << name;
    EXPECT_EQ(rows[0].state, "requeued");
    EXPECT_NE(rows[0].reason.find("not counted as an attempt"), std::string::npos)
        << rows[0].reason;
    EXPECT_NE(rows[0].reason.find("buggy raised a fatal GPU fault on gpu0"), std::string::npos)
        << rows[0].reason;
    EXPECT_EQ(rows[1].state, "ok");
  }
  for (const char* name : {"hung-1", "hung-2"}) {
    std::vector<AttemptRow> rows = attempts(*store, *run, name);
    ASSERT_EQ(rows.size(), 2u) << name;
    EXPECT_NE(rows[0].reason.find("it stopped reporting progress after buggy raised"),
              std::string::npos)
        << rows[0].reason;
  }
  // The neighbour the fault did not reach ran on: one attempt, never stopped.
  const JobSummary* unharmed = job_named(*run, "unharmed");
  ASSERT_NE(unharmed, nullptr);
  EXPECT_EQ(unharmed->state, JobState::kOk) << r.output;
  EXPECT_EQ(attempts(*store, *run, "unharmed").size(), 1u) << r.output;

  const JobSummary* buggy = job_named(*run, "buggy");
  ASSERT_NE(buggy, nullptr);
  EXPECT_EQ(buggy->state, JobState::kFailed);
  std::vector<AttemptRow> rows = attempts(*store, *run, "buggy");
  ASSERT_EQ(rows.size(), 2u);
  // Its record names the fault and its neighbours; its last reason is its
  // own assertion, and that it failed alone too.
  EXPECT_NE(rows[0].reason.find("its next attempt runs alone, outside the shared MPS server"),
            std::string::npos)
      << rows[0].reason;
  for (const char* name : {"reached", "hung-1", "hung-2", "unharmed"})
    EXPECT_NE(rows[0].reason.find(name), std::string::npos) << rows[0].reason;
  EXPECT_NE(rows[1].reason.find("Assertion `t >= 0 && t < n_classes` failed."), std::string::npos)
      << rows[1].reason;
  EXPECT_NE(rows[1].reason.find("the fault is its own: it failed again alone"), std::string::npos)
      << rows[1].reason;
  EXPECT_NE(shell("cat '" + rows[1].log_path + "'").output.find("mps client: no"),
            std::string::npos);
  EXPECT_NE(shell("cat '" + rows[0].log_path + "'").output.find("mps client: yes"),
            std::string::npos);
}

// A recovering MPS server refuses new clients ("busy or unavailable" at
// torch.cuda.set_device): a gang's start that fails so, before any progress,
// waits and starts again, and neither refusal counts as an attempt, so even
// a job that may not be restarted runs.
TEST_F(ColoFaults, AStartRefusedByARecoveringServerWaitsAndIsNotCounted) {
  const std::string job = write_file(
      "gang.sh",
      "n=$(cat \"$COLO_CHECKPOINT_DIR/starts\" 2>/dev/null || echo 0); n=$((n + 1)); "
      "echo $n > \"$COLO_CHECKPOINT_DIR/starts\"\n"
      "if [ $n -le 2 ]; then\n"
      "  echo 'torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or "
      "unavailable'; exit 1\n"
      "fi\n"
      "printf '{\"event\":\"epoch_end\",\"epoch\":1,\"samples\":1000}\\n' >> "
      "\"$COLO_PROGRESS_FILE\"\n");
  CommandResult r = colo_run(write_file("jobs.toml",
                                        "[[job]]\nname = \"ddp\"\ngpus = 2\nrestart = \"never\"\n"
                                        "command = [\"sh\", \"" +
                                            job + "\"]\n"),
                             "--sim-devices 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  Result<RunSummary> run = analyse_run(*store, 0);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->jobs.size(), 1u);
  EXPECT_EQ(run->jobs[0].state, JobState::kOk) << r.output;
  std::vector<AttemptRow> rows = attempts(*store, *run, "ddp");
  ASSERT_EQ(rows.size(), 3u) << r.output;
  for (int i : {0, 1}) {
    EXPECT_EQ(rows[i].state, "requeued");
    EXPECT_NE(
        rows[i].reason.find("its start was refused: the MPS server on gpus 0,1 was not ready"),
        std::string::npos)
        << rows[i].reason;
    EXPECT_NE(rows[i].reason.find("not counted as an attempt"), std::string::npos);
  }
  // It waited before starting again, longer the second time.
  ASSERT_TRUE(rows[0].ended_ms && rows[1].ended_ms);
  EXPECT_GE(rows[1].started_ms - *rows[0].ended_ms, 1900);
  EXPECT_GE(rows[2].started_ms - *rows[1].ended_ms, 3900);
}

// A job that stops reporting progress while its process lives is found
// stalled once its bound passed, stopped with the evidence in its log, and
// run again; the reason names how long it was silent and after which epoch.
TEST_F(ColoFaults, AStalledJobIsStoppedWithItsEvidenceAndRunAgain) {
  const std::string job =
      write_file("stall.sh",
                 "first=0; [ -e \"$COLO_CHECKPOINT_DIR/ran\" ] || { first=1; touch "
                 "\"$COLO_CHECKPOINT_DIR/ran\"; }\n"
                 "for e in 1 2 3; do\n"
                 "  printf '{\"event\":\"epoch_end\",\"epoch\":%d,\"samples\":1000}\\n' $e >> "
                 "\"$COLO_PROGRESS_FILE\"; echo epoch $e\n"
                 "  if [ $first = 1 ] && [ $e = 2 ]; then sleep 600; fi\n"
                 "  sleep 0.2\n"
                 "done\n");
  CommandResult r = colo_run(write_file("jobs.toml",
                                        "[[job]]\nname = \"stuck\"\n"
                                        "stall_timeout = \"2s\"\ncommand = [\"sh\", \"" +
                                            job + "\"]\n"),
                             "");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("stuck stalled: no progress for"), std::string::npos) << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  Result<RunSummary> run = analyse_run(*store, 0);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->jobs.size(), 1u);
  EXPECT_EQ(run->jobs[0].state, JobState::kOk);
  std::vector<AttemptRow> rows = attempts(*store, *run, "stuck");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].reason.rfind("stalled: no progress for ", 0), 0u) << rows[0].reason;
  EXPECT_NE(rows[0].reason.find("after epoch 2 (last epoch took "), std::string::npos)
      << rows[0].reason;
  EXPECT_NE(rows[0].reason.find("; the bound was 2.0 s)"), std::string::npos) << rows[0].reason;
  EXPECT_NE(rows[0].reason.find("running it again (attempt 2 of 3)"), std::string::npos);
  // Found by its own 2 s bound (the reason says so), not the adaptive one,
  // whose floor alone is 60 s; loose enough for a loaded machine.
  ASSERT_TRUE(rows[0].ended_ms);
  EXPECT_LT(*rows[0].ended_ms - rows[0].started_ms, 60'000);
  const std::string log = shell("cat '" + rows[0].log_path + "'").output;
  EXPECT_NE(log.find("processes: "), std::string::npos) << log;
  EXPECT_NE(log.find(" sleep S"), std::string::npos) << log;
}

}  // namespace
}  // namespace colo
