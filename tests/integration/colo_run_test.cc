// End-to-end tests of `colo run` and friends: the real binary, real child
// processes and a real SQLite file, on the simulated GPU backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "analysis/stored.h"
#include "integration_util.h"
#include "store/run_store.h"

namespace colo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A fresh COLO_HOME, store and job-file directory per test.
class ColoRun : public ColoTestDir {
 protected:
  // `colo ARGS` with COLO_HOME and --db inside the test directory.
  std::string colo(const std::string& args) const {
    return "COLO_HOME='" + dir_ + "/home' " + std::string(COLO_BINARY) + " " + args;
  }
  // A job script in this test's directory that sleeps `seconds`, and a
  // shell count of its processes still alive (the pattern cannot match the
  // counting shell itself).
  std::string sleeper(const std::string& name, int seconds) {
    write_file(name, "sleep " + std::to_string(seconds) + "\n");
    return dir_ + "/" + name;
  }
  std::string alive(const std::string& name) {
    return shell("pgrep -f '" + dir_ + "/" + name.substr(0, name.size() - 1) + "[" + name.back() +
                 "]' | wc -l")
        .output;
  }
};

// A job that "trains" for `epochs` epochs of `ms` milliseconds, reporting each
// through the progress file the way python/colo_progress.py does.
std::string toy_job(const std::string& name, int epochs, int ms, const std::string& extra = "") {
  return "[[job]]\nname = \"" + name + "\"\n" + "command = [\"sh\", \"-c\", \"for e in $(seq 1 " +
         std::to_string(epochs) + "); do sleep " + std::to_string(ms / 1000.0) +
         "; printf '{\\\"event\\\":\\\"epoch_end\\\",\\\"epoch\\\":%d,\\\"samples\\\":1000}\\\\n' "
         "$e >> "
         "\\\"$COLO_PROGRESS_FILE\\\"; echo epoch $e; done\"]\n" +
         extra;
}

// Simulated GPUs belong to one COLO_HOME: simulated runs of two homes at
// once never wait for each other (they once shared one UUID and the
// machine-wide lock directory), each home's GPUs keep their UUIDs from one
// colo to the next, and their locks stay in the home.
TEST_F(ColoRun, SimulatedRunsOfTwoHomesNeitherShareGpusNorWait) {
  const std::string file =
      write_file("slow.toml", "[[job]]\nname = \"slow\"\ncommand = [\"sleep\", \"2\"]\n");
  auto in_home = [&](const std::string& home, const std::string& args) {
    return "env -u COLO_LOCK_DIR COLO_HOME='" + dir_ + "/" + home + "' " +
           std::string(COLO_BINARY) + " " + args;
  };
  auto run_in = [&](const std::string& home) {
    return in_home(home, "run " + file +
                             " --backend sim --mechanism naive --plain --no-wait --db '" + dir_ +
                             "/" + home + ".db'") +
           " > '" + dir_ + "/" + home + ".out' 2>&1; echo $? > '" + dir_ + "/" + home + ".rc'";
  };
  shell("(" + run_in("a") + ") & (" + run_in("b") + ") & wait");
  for (const std::string home : {"a", "b"}) {
    const std::string out = shell("cat '" + dir_ + "/" + home + ".out'").output;
    EXPECT_EQ(shell("cat '" + dir_ + "/" + home + ".rc'").output, "0\n") << home << ": " << out;
    EXPECT_EQ(out.find("in use by colo pid"), std::string::npos) << out;
  }
  auto uuid_in = [&](const std::string& home) {
    CommandResult r = shell("(" + in_home(home, "devices --json --backend sim") + " 2>/dev/null)");
    nlohmann::json j = nlohmann::json::parse(r.output, nullptr, false);
    return j.is_object() ? j["devices"][0].value("uuid", "") : std::string();
  };
  const std::string a = uuid_in("a");
  ASSERT_EQ(a.rfind("GPU-", 0), 0u) << a;
  EXPECT_EQ(uuid_in("a"), a) << "stable within a home";
  EXPECT_NE(uuid_in("b"), a);
  EXPECT_EQ(shell("ls '" + dir_ + "/a/sim-locks/" + a + ".lock'").exit_code, 0);
}

TEST_F(ColoRun, RunsJobsOnTheSimulatedBackendAndRecordsEverything) {
  std::string file = write_file(
      "jobs.toml", "[run]\nmax_per_gpu = 2\n\n" + toy_job("toy", 3, 300, "repeat = 3\n"));
  CommandResult r =
      shell(colo("run " + file +
                 " --backend sim --mechanism naive --plain --sample-period 100ms --db " + db()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("SIMULATED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("toy#3"), std::string::npos) << r.output;

  auto store = open_store();
  ASSERT_TRUE(store);
  auto summary = analyse_run(*store, 0);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->run.state, RunState::kOk);
  EXPECT_TRUE(summary->run.simulated);
  ASSERT_EQ(summary->jobs.size(), 3u);
  for (const JobSummary& j : summary->jobs) {
    EXPECT_EQ(j.state, JobState::kOk) << j.name;
    EXPECT_EQ(j.epochs, 3) << j.name;
    EXPECT_EQ(j.samples.value_or(0), 3000) << j.name;
    ASSERT_TRUE(j.peak_memory_bytes.has_value()) << j.name;  // from simulated process samples
  }
  // max_per_gpu = 2: the third job waits for a slot, so it starts after the first ends.
  EXPECT_GE(*summary->jobs[2].started_ms,
            std::min(*summary->jobs[0].ended_ms, *summary->jobs[1].ended_ms));
  EXPECT_GT(summary->device_samples, 3);
  EXPECT_TRUE(summary->throughput_per_s.has_value());
}

TEST_F(ColoRun, AJobThatCannotStartFailsAloneWithAReason) {
  std::string file =
      write_file("jobs.toml",
                 toy_job("good", 1, 100) +
                     "[[job]]\nname = \"typo\"\ncommand = [\"pythn3-does-not-exist\", \"x.py\"]\n");
  CommandResult r =
      shell(colo("run " + file + " --backend sim --mechanism naive --plain --db " + db()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("pythn3-does-not-exist"), std::string::npos) << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  auto summary = analyse_run(*store, 0);
  ASSERT_TRUE(summary.ok());
  ASSERT_EQ(summary->jobs.size(), 2u);
  EXPECT_EQ(summary->jobs[0].state, JobState::kOk);
  EXPECT_EQ(summary->jobs[1].state, JobState::kFailed);
  EXPECT_NE(summary->jobs[1].reason.find("pythn3-does-not-exist"), std::string::npos)
      << summary->jobs[1].reason;
  EXPECT_EQ(summary->run.state, RunState::kFailed);
}

TEST_F(ColoRun, ExitsAreClassified) {
  std::string file =
      write_file("jobs.toml",
                 "[[job]]\nname = \"oom\"\ncommand = [\"sh\", \"-c\", \"echo "
                 "'torch.OutOfMemoryError: CUDA out of memory. Tried "
                 "to allocate 2.00 GiB'; exit 1\"]\n"
                 "[[job]]\nname = \"code\"\ncommand = [\"sh\", \"-c\", \"exit 7\"]\n"
                 "[[job]]\nname = \"signal\"\ncommand = [\"sh\", \"-c\", \"kill -KILL $$\"]\n");
  CommandResult r =
      shell(colo("run " + file + " --backend sim --mechanism naive --plain --db " + db()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  auto summary = analyse_run(*store, 0);
  ASSERT_TRUE(summary.ok());
  ASSERT_EQ(summary->jobs.size(), 3u);
  EXPECT_EQ(summary->jobs[0].state, JobState::kOutOfMemory);
  EXPECT_EQ(summary->jobs[1].state, JobState::kFailed);
  EXPECT_NE(summary->jobs[1].reason.find("7"), std::string::npos);
  EXPECT_EQ(summary->jobs[2].state, JobState::kKilled);
}

TEST_F(ColoRun, AutoRetriesAJobOutOfMemoryAndRecordsTheAttempts) {
  // The first attempt ends one epoch, then runs out of memory; the second
  // (the marker file exists) ends two epochs.
  write_file("flaky.sh",
             "if [ -e \"$0.tried\" ]; then\n"
             "  for e in 1 2; do sleep 0.2; printf '{\"event\":\"epoch_end\",\"epoch\":%d,"
             "\"samples\":1000}\\n' $e >> \"$COLO_PROGRESS_FILE\"; done\n"
             "else\n"
             "  touch \"$0.tried\"\n"
             "  printf '{\"event\":\"epoch_end\",\"epoch\":1,\"samples\":500}\\n' >> "
             "\"$COLO_PROGRESS_FILE\"\n"
             "  echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'\n"
             "  exit 1\n"
             "fi\n");
  std::string file =
      write_file("jobs.toml", "[[job]]\nname = \"flaky\"\ncommand = [\"sh\", \"" + dir_ +
                                  "/flaky.sh\"]\ngpu_memory = \"1GiB\"\n"
                                  "sm_activity = 20\n");
  CommandResult r = shell(
      colo("run " + file + " --backend sim --mechanism naive --policy auto --plain --db " + db()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("requeued"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("on attempt 2"), std::string::npos) << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  auto summary = analyse_run(*store, 0);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  ASSERT_EQ(summary->jobs.size(), 1u);
  const JobSummary& job = summary->jobs[0];
  EXPECT_EQ(job.state, JobState::kOk);
  EXPECT_EQ(job.attempts, 2);
  EXPECT_EQ(job.epochs, 2) << "only the last attempt's epochs";
  EXPECT_EQ(job.samples.value_or(0), 2000);
  EXPECT_NE(job.log_path.find(".attempt2.log"), std::string::npos) << job.log_path;
}

TEST_F(ColoRun, SimulatePlansTheFewestGpusForADeadline) {
  // Eight 10-minute jobs that each fill a GPU: one GPU needs 80 minutes.
  std::string file = write_file("sweep.toml",
                                "[[job]]\nname = \"big\"\ncommand = [\"true\"]\nrepeat = 8\n"
                                "gpu_memory = \"60GiB\"\nsm_activity = 100\nsolo_time = \"10m\"\n");
  CommandResult r = shell(colo("simulate " + file +
                               " --gpu-model H200 --no-store --policies exclusive --deadline 25m"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("SIMULATED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PLAN: the fewest GPUs (up to 64) that end every job within 25m"),
            std::string::npos)
      << r.output;
  // ceil(8 / GPUs) rounds of 10 minutes within 25: 4 GPUs.
  EXPECT_NE(r.output.find("exclusive   4 GPUs"), std::string::npos) << r.output;

  CommandResult bad = shell(colo("simulate " + file + " --no-store --deadline soon"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--deadline: 'soon' is not a duration"), std::string::npos)
      << bad.output;
}

TEST_F(ColoRun, CtrlCCancelsRunningAndQueuedJobs) {
  std::string file = write_file("jobs.toml",
                                "[run]\nmax_per_gpu = 2\n[[job]]\nname = \"long\"\nrepeat = 3\n"
                                "command = [\"sh\", \"" +
                                    sleeper("long.sh", 60) + "\"]\n");
  CommandResult r = shell(
      colo("run " + file + " --backend sim --mechanism naive --plain --grace 1s --db " + db()) +
      " & pid=$!; sleep 1.5; kill -INT $pid; wait $pid; echo exit=$?");
  EXPECT_NE(r.output.find("exit=130"), std::string::npos) << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  auto summary = analyse_run(*store, 0);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run.state, RunState::kCancelled);
  for (const JobSummary& j : summary->jobs) EXPECT_EQ(j.state, JobState::kCancelled) << j.name;
  EXPECT_NE(summary->jobs[2].reason.find("before it started"), std::string::npos)
      << summary->jobs[2].reason;
  // No job process outlives the run.
  EXPECT_EQ(alive("long.sh"), "0\n");
}

TEST_F(ColoRun, AfterSigkillTheNextRunMarksTheOldOneInterruptedAndStopsItsMpsDaemon) {
  std::string bin = dir_ + "/bin";
  shell("mkdir -p '" + bin + "' && cp '" COLO_FAKE_MPS_CONTROL "' '" + bin +
        "/nvidia-cuda-mps-control'");
  std::string path = "PATH='" + bin + "':$PATH ";
  std::string file =
      write_file("jobs.toml", "[[job]]\nname = \"long\"\ncommand = [\"sh\", \"-c\", \"sh " +
                                  sleeper("long.sh", 61) + "; true\"]\n");
  CommandResult killed =
      shell(path + colo("run " + file + " --backend sim --mechanism mps --plain --db " + db()) +
            " & pid=$!; sleep 1.5; kill -KILL $pid; wait $pid; echo exit=$?");
  ASSERT_NE(killed.output.find("exit=137"), std::string::npos) << killed.output;
  // The job's direct child died with colo (PDEATHSIG); its own child (a
  // grandchild of colo) and the fake MPS daemon are still there.
  shell("sleep 0.3");
  EXPECT_EQ(alive("long.sh"), "1\n");
  std::string mps_dir = dir_ + "/home/mps";
  EXPECT_NE(shell("ls '" + mps_dir + "'").output, "")
      << "colo left no ownership record for its daemon";

  std::string quick = write_file("quick.toml", toy_job("quick", 1, 50));
  CommandResult next =
      shell(path + colo("run " + quick + " --backend sim --mechanism mps --plain --db " + db()));
  EXPECT_EQ(next.exit_code, 0) << next.output;
  EXPECT_NE(next.output.find("interrupted"), std::string::npos) << next.output;
  EXPECT_NE(next.output.find("MPS daemon"), std::string::npos) << next.output;
  // "... of run 1" (found by the run's token) or "... of a colo that died" (its cgroup).
  EXPECT_NE(next.output.find("leftover job processes of"), std::string::npos) << next.output;
  EXPECT_EQ(alive("long.sh"), "0\n");
  EXPECT_EQ(shell("ls -A '" + mps_dir + "' | wc -l").output, "0\n")
      << "stale MPS state left behind";

  auto store = open_store();
  ASSERT_TRUE(store);
  auto runs = store->list_runs(10);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[1].state, RunState::kInterrupted);
  auto old = analyse_run(*store, (*runs)[1].id);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->jobs[0].state, JobState::kInterrupted);
}

// The race of issue 25: the server dies, a periodic health check runs (and
// sees a new server the control daemon started), and only then does its
// client fail. The death must still be named, and the job run again.
TEST_F(ColoRun, AnMpsServerDeathSeenFirstByThePeriodicCheckIsNamedAndItsJobRunsAgain) {
  std::string bin = dir_ + "/bin";
  shell("mkdir -p '" + bin + "' && cp '" COLO_FAKE_MPS_CONTROL "' '" + bin +
        "/nvidia-cuda-mps-control'");
  // A client that fails 7 s after its server is gone (the health check runs every 5 s),
  // and otherwise ends ok after 4 s.
  std::string file =
      write_file("jobs.toml",
                 "[[job]]\nname = \"client\"\ncommand = [\"sh\", \"-c\", \"srv=$(cat "
                 "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-server.pid); for i in $(seq 1 40); do "
                 "if ! kill -0 $srv 2>/dev/null; then sleep 7; echo lost my server; exit 1; fi; "
                 "sleep 0.1; done\"]\n");
  CommandResult r =
      shell("PATH='" + bin + "':$PATH " +
            colo("run " + file + " --backend sim --mechanism mps --plain --db " + db()) + " > '" +
            dir_ + "/out' 2>&1 & pid=$!; sleep 2; kill -KILL $(cat '" + dir_ +
            "'/home/mps/*/pipe/nvidia-cuda-mps-server.pid); wait $pid; echo exit=$?; cat '" + dir_ +
            "/out'");
  EXPECT_NE(r.output.find("exit=0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is gone: it died under its clients"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("server.log"), std::string::npos) << r.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  auto summary = analyse_run(*store, 0);
  ASSERT_TRUE(summary.ok());
  ASSERT_EQ(summary->jobs.size(), 1u);
  EXPECT_EQ(summary->jobs[0].state, JobState::kOk);
  EXPECT_EQ(shell("ls -A '" + dir_ + "/home/mps' | wc -l").output, "0\n");
}

TEST_F(ColoRun, MpsJobsGetThePrivatePipeDirectoryAndLimits) {
  std::string bin = dir_ + "/bin";
  shell("mkdir -p '" + bin + "' && cp '" COLO_FAKE_MPS_CONTROL "' '" + bin +
        "/nvidia-cuda-mps-control'");
  std::string file = write_file(
      "jobs.toml",
      "[defaults]\nsm_share = 40\nmemory_limit = \"6GiB\"\n"
      "[[job]]\nname = \"env\"\ncommand = [\"sh\", \"-c\", \"env | grep -E '^CUDA_' | sort\"]\n");
  CommandResult r = shell("PATH='" + bin + "':$PATH " +
                          colo("run " + file + " --backend sim --mechanism mps --plain --logs " +
                               dir_ + "/logs --db " + db()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string log = shell("cat " + dir_ + "/logs/*/*/001-env.log").output;
  EXPECT_NE(log.find("CUDA_MPS_PIPE_DIRECTORY=" + dir_ + "/home/mps/"), std::string::npos) << log;
  EXPECT_NE(log.find("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=40"), std::string::npos) << log;
  EXPECT_NE(log.find("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=6144M"), std::string::npos) << log;
  EXPECT_NE(log.find("CUDA_VISIBLE_DEVICES=GPU-"), std::string::npos) << log;
  // The daemon is gone after the run, and so is its directory.
  EXPECT_EQ(shell("ls -A '" + dir_ + "/home/mps' | wc -l").output, "0\n");
}

// Issue 56: --qos over the file for every job; an opportunistic job under MPS
// starts at below-normal client priority; colo show says each job's class;
// wrong flags are refused before anything runs.
TEST_F(ColoRun, QosFlagsSetEveryJobsClassAndAnOpportunisticMpsJobRunsBelowNormal) {
  std::string bin = dir_ + "/bin";
  shell("mkdir -p '" + bin + "' && cp '" COLO_FAKE_MPS_CONTROL "' '" + bin +
        "/nvidia-cuda-mps-control'");
  std::string file = write_file(
      "jobs.toml",
      "[[job]]\nname = \"env\"\ncommand = [\"sh\", \"-c\", \"env | grep -E '^CUDA_' | sort\"]\n");
  const std::string base = "PATH='" + bin + "':$PATH " +
                           colo("run " + file + " --backend sim --mechanism mps --plain --logs " +
                                dir_ + "/logs --db " + db());
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {" --qos gold", R"(--qos must be "protected", "normal" or "opportunistic")"},
           {" --qos normal --min-speed 0.8", "--min-speed is the floor of a protected job"},
           {" --qos protected --min-speed 1.5", "--min-speed must be a fraction"}}) {
    CommandResult refused = shell(base + flags + " 2>&1");
    EXPECT_EQ(refused.exit_code, 2) << flags << ": " << refused.output;
    EXPECT_NE(refused.output.find(message), std::string::npos) << flags << ": " << refused.output;
  }
  CommandResult r = shell(base + " --qos opportunistic");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string log = shell("cat " + dir_ + "/logs/*/*/001-env.log").output;
  EXPECT_NE(log.find("CUDA_MPS_CLIENT_PRIORITY=1"), std::string::npos) << log;
  EXPECT_EQ(log.find("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), std::string::npos) << log;
  CommandResult shown = shell("(" + colo("show --json --db " + db()) + " 2>/dev/null)");
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  nlohmann::json j = nlohmann::json::parse(shown.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << shown.output;
  EXPECT_EQ(j["jobs"][0]["qos"], "opportunistic");
  EXPECT_TRUE(j["jobs"][0]["min_speed"].is_null());

  ASSERT_EQ(shell(base + " --qos protected --min-speed 0.8").exit_code, 0);
  CommandResult text = shell(colo("show --db " + db()));
  EXPECT_NE(text.output.find("env is protected: its floor is 0.80 of its solo speed"),
            std::string::npos)
      << text.output;
}

// Issue 56, item 6: a protected job that ran alone (exclusive: the store
// learns its solo rate) and then at half that rate: `colo show` gives its
// floor, its speed of solo per steady epoch and the share of its steady time
// below the floor, in text and in --json.
TEST_F(ColoRun, AProtectedJobsSpeedOfSoloAndTimeBelowItsFloorAreShown) {
  write_file("samples", "1000\n");
  const std::string script = write_file(
      "main.sh", "n=$(cat '" + dir_ +
                     "/samples'); for e in 1 2 3 4 5; do sleep 0.4; printf "
                     "'{\"event\":\"epoch_end\",\"epoch\":%d,\"samples\":%d,\"time\":%s}\\n' $e $n "
                     "$(date +%s.%N) >> \"$COLO_PROGRESS_FILE\"; done\n");
  const std::string file = write_file("jobs.toml",
                                      "[[job]]\nname = \"main\"\nqos = \"protected\"\ncommand = "
                                      "[\"sh\", \"" +
                                          script + "\"]\n");
  const std::string run = colo("run " + file + " --backend sim --plain --db " + db());
  CommandResult alone = shell(run + " --mechanism exclusive 2>&1");
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  write_file("samples", "500\n");
  CommandResult shared = shell(run + " --mechanism naive 2>&1");
  ASSERT_EQ(shared.exit_code, 0) << shared.output;

  CommandResult shown = shell("(" + colo("show --json --db " + db()) + " 2>/dev/null)");
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  nlohmann::json j = nlohmann::json::parse(shown.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << shown.output;
  const nlohmann::json& main = j["jobs"][0];
  EXPECT_EQ(main["qos"], "protected");
  EXPECT_DOUBLE_EQ(main["min_speed"].get<double>(), 0.9);
  ASSERT_TRUE(main["speed_of_solo"].is_number()) << main.dump();
  EXPECT_GT(main["speed_of_solo"].get<double>(), 0.3);
  EXPECT_LT(main["speed_of_solo"].get<double>(), 0.7);
  EXPECT_DOUBLE_EQ(main["below_floor_share"].get<double>(), 1.0);
  EXPECT_EQ(main["below_floor_ms"], main["steady_ms"]);
  EXPECT_GT(main["steady_ms"].get<int64_t>(), 1'000);
  // Epochs 2..5: the first has no rate (start-up).
  ASSERT_EQ(main["speed_of_solo_series"].size(), 4U) << main.dump();
  for (const nlohmann::json& p : main["speed_of_solo_series"]) {
    EXPECT_EQ(p["attempt"], 1);
    EXPECT_LT(p["speed_of_solo"].get<double>(), 0.9) << p.dump();
  }
  const std::string text = shell(colo("show --db " + db())).output;
  EXPECT_THAT(text, HasSubstr("note: main is protected: its floor is 0.90 of its solo speed; over "
                              "4 steady epochs"));
  EXPECT_THAT(text, HasSubstr("and spent 100% of that time below its floor"));
  EXPECT_THAT(text, HasSubstr("note: main's speed of solo by steady epoch: 0."));
}

// Issue 56, placement: on one GPU a heavy protected job (84% SM) takes one
// opportunistic neighbour, which starts below normal priority with the thread
// percentage colo chose (20%); the second follows once the first ended. Both
// policies. Its solo rate unknown, the auto policy runs it alone for its
// first steady epoch first; it runs on until both neighbours have run.
TEST_F(ColoRun, AProtectedJobsNeighbourStartsWithTheThreadPercentageColoChose) {
  std::string bin = dir_ + "/bin";
  shell("mkdir -p '" + bin + "' && cp '" COLO_FAKE_MPS_CONTROL "' '" + bin +
        "/nvidia-cuda-mps-control'");
  const std::string sides = dir_ + "/sides.txt";
  write_file("main.sh",
             "for e in 1 2; do sleep 0.3; printf '{\"event\":\"epoch_end\",\"epoch\":%d,"
             "\"samples\":1000}\\n' $e >> \"$COLO_PROGRESS_FILE\"; done\n"
             "i=0; while [ \"$(cat '" +
                 sides +
                 "' 2>/dev/null | wc -l)\" -lt 2 ] && [ $i -lt 600 ]; do\n"
                 "  sleep 0.05; i=$((i + 1)); done\n");
  std::string file = write_file(
      "jobs.toml",
      "[[job]]\nname = \"main\"\nqos = \"protected\"\nsm_activity = 84\ngpu_memory = \"4GiB\"\n"
      "command = [\"sh\", \"" +
          dir_ +
          "/main.sh\"]\n"
          "[[job]]\nname = \"side\"\nqos = \"opportunistic\"\nrepeat = 2\nsm_activity = 5\n"
          "gpu_memory = \"1GiB\"\n"
          "command = [\"sh\", \"-c\", \"env | grep -E '^CUDA_MPS_(CLIENT|ACTIVE)' | sort; echo x "
          ">> " +
          sides + "\"]\n");
  for (const char* policy : {"auto", "fixed --max-per-gpu 4"}) {
    shell("rm -rf '" + dir_ + "/logs' '" + sides + "'");
    CommandResult r =
        shell("PATH='" + bin + "':$PATH " +
              colo("run " + file + " --backend sim --mechanism mps --plain --gpus 0 --policy " +
                   policy + " --logs " + dir_ + "/logs --db " + db()) +
              " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << policy << ": " << r.output;
    std::string logs = shell("cat " + dir_ + "/logs/*/*/00[23]-side*.log").output;
    EXPECT_NE(logs.find("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=20"), std::string::npos)
        << policy << ": " << logs;
    EXPECT_NE(logs.find("CUDA_MPS_CLIENT_PRIORITY=1"), std::string::npos) << policy << ": " << logs;
  }
}

// A job imports the Python client with nothing installed: colo appends the
// client's folder to the job's PYTHONPATH, after the job's own entries.
TEST_F(ColoRun, JobsImportThePythonClientWithNoInstall) {
  std::string file = write_file("jobs.toml",
                                "[[job]]\nname = \"client\"\nenv = { PYTHONPATH = \"/mine\" }\n"
                                "command = [\"python3\", \"-c\", \"import colo_progress, os; "
                                "print('path=' + os.environ['PYTHONPATH'])\"]\n");
  CommandResult r = shell("cd / && " + colo("run " + file + " --backend sim --plain --logs " +
                                            dir_ + "/logs --db " + db()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string log = shell("cat " + dir_ + "/logs/*/*/001-client.log").output;
  EXPECT_NE(log.find("path=/mine:" + std::string(std::getenv("COLO_SOURCE_DIR")) + "/python\n"),
            std::string::npos)
      << log;
}

// Issue 33, item 5: when the first three jobs of a file to end all failed
// the same way, the ones still waiting are not started: they end cancelled,
// naming the cause and fail_fast; the run says so. A job that ended ok
// first, or fail_fast = false, keeps every job running.
TEST_F(ColoRun, WhenTheFirstJobsAllFailTheSameWayTheRestAreNotStarted) {
  const std::string broken =
      "command = [\"sh\", \"-c\", \"echo \\\"ModuleNotFoundError: No module named "
      "'colo_progress'\\\" >&2; exit 1\"]\nrepeat = 10\n";
  std::string file = write_file("broken.toml",
                                "[run]\nmax_per_gpu = 2\nmechanism = \"naive\"\n"
                                "[[job]]\nname = \"t\"\n" +
                                    broken);
  CommandResult r = shell(colo("run " + file + " --backend sim --policy fixed --plain --db " +
                               db() + " --logs " + dir_ + "/logs"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("fail-fast: the first 3 jobs of " + file +
                                  " to end all failed the same way"));
  EXPECT_THAT(r.output, HasSubstr("No module named 'colo_progress'"));
  CommandResult shown = shell(colo("show --json --db " + db()));
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  const nlohmann::json jobs = nlohmann::json::parse(shown.output)["jobs"];
  ASSERT_EQ(jobs.size(), 10u);
  int failed = 0, cancelled = 0;
  for (const nlohmann::json& j : jobs) {
    if (j["state"] == "failed") ++failed;
    if (j["state"] == "cancelled") {
      ++cancelled;
      EXPECT_THAT(j["reason"].get<std::string>(), HasSubstr("not started: the first 3 jobs"));
      EXPECT_THAT(j["reason"].get<std::string>(), HasSubstr("(fail_fast)"));
      EXPECT_FALSE(j["started_ms"].is_number()) << "never started";
    }
  }
  // Three failed first; at most two more were running then (2 per GPU).
  EXPECT_GE(cancelled, 5) << shown.output;
  EXPECT_EQ(failed + cancelled, 10) << shown.output;

  // fail_fast = false: every job runs (and fails).
  std::string all = write_file("all.toml",
                               "[run]\nmax_per_gpu = 2\nmechanism = \"naive\"\n"
                               "fail_fast = false\n[[job]]\nname = \"t\"\n" +
                                   broken);
  r = shell(colo("run " + all + " --backend sim --policy fixed --plain --db " + db() + " --logs " +
                 dir_ + "/logs"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("fail-fast")));
  shown = shell(colo("show --json --db " + db()));
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  const nlohmann::json every = nlohmann::json::parse(shown.output)["jobs"];
  EXPECT_EQ(std::count_if(every.begin(), every.end(),
                          [](const nlohmann::json& j) { return j["state"] == "failed"; }),
            10)
      << shown.output;

  // A job that ended ok first: the failures are not the file's cause.
  std::string mixed =
      write_file("mixed.toml",
                 "[run]\nmax_per_gpu = 1\nmechanism = \"naive\"\n[[job]]\nname = \"fine\"\n"
                 "command = [\"true\"]\n[[job]]\nname = \"t\"\n" +
                     broken);
  r = shell(colo("run " + mixed + " --backend sim --policy fixed --plain --db " + db() +
                 " --logs " + dir_ + "/logs"));
  EXPECT_THAT(r.output, Not(HasSubstr("fail-fast")));
}

// Issue 33, item 3: `colo run --resume RUN` runs again only the jobs of RUN
// that did not end ok, as they were submitted, each with the checkpoint
// directory it had: a job that saved its state there before failing finds it.
TEST_F(ColoRun, ResumeRunsOnlyTheUnfinishedJobsWithTheirCheckpoints) {
  const std::string mark = dir_ + "/fixed";
  std::string file = write_file(
      "jobs.toml",
      "[run]\nmechanism = \"naive\"\n[[job]]\nname = \"good\"\ncommand = [\"true\"]\nrepeat = 2\n"
      "[[job]]\nname = \"flaky\"\ncommand = [\"sh\", \"-c\", \"test -f " +
          mark +
          " || exit 3\"]\n"
          "[[job]]\nname = \"ckpt\"\ncommand = [\"sh\", \"-c\", \"if [ -f "
          "\\\"$COLO_CHECKPOINT_DIR/state\\\" ]; then echo resumed from $(cat "
          "\\\"$COLO_CHECKPOINT_DIR/state\\\"); else echo epoch5 > "
          "\\\"$COLO_CHECKPOINT_DIR/state\\\"; exit 4; fi\"]\n");
  const std::string run =
      " --backend sim --policy fixed --plain --db " + db() + " --logs " + dir_ + "/logs";
  CommandResult first = shell(colo("run " + file + run));
  ASSERT_EQ(first.exit_code, 1) << first.output;

  write_file("fixed", "");
  CommandResult resumed = shell(colo("run --resume 1" + run));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("resuming run 1 (" + file +
                                        "): 2 jobs that did not end ok, each with its "
                                        "checkpoint directory; 2 jobs ended ok and are not run "
                                        "again"));
  CommandResult shown = shell(colo("show 2 --json --db " + db()));
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  const nlohmann::json jobs = nlohmann::json::parse(shown.output)["jobs"];
  ASSERT_EQ(jobs.size(), 2u) << shown.output;
  EXPECT_EQ(jobs[0]["name"], "flaky");
  EXPECT_EQ(jobs[1]["name"], "ckpt");
  for (const nlohmann::json& j : jobs) EXPECT_EQ(j["state"], "ok") << j.dump();
  EXPECT_THAT(shell("cat '" + jobs[1]["log_path"].get<std::string>() + "'").output,
              HasSubstr("resumed from epoch5"));

  // Nothing left to resume, and neither a file nor --resume, are errors.
  CommandResult again = shell(colo("run --resume 2" + run));
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_THAT(again.output, HasSubstr("--resume 2: run 2: all 2 of its jobs ended ok"));
  CommandResult none = shell(colo("run" + run));
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_THAT(none.output, HasSubstr("run needs a job file, or --resume RUN"));
}

// Issue 58 (9): a resumed run carries the name and tags of the run it
// resumes, records the link both ways, and `colo show` and `colo export
// mlflow` join the attempts' epochs and metrics into one history.
TEST_F(ColoRun, AResumedRunCarriesItsLineageAndJoinsItsHistory) {
  const std::string mark = dir_ + "/fixed";
  // Continues from the epoch its checkpoint names; fails after epoch 3
  // until the mark exists, then ends at epoch 5.
  write_file("ckpt.sh",
             "e=$(cat \"$COLO_CHECKPOINT_DIR/epoch\" 2>/dev/null || echo 0)\n"
             "while [ $e -lt 5 ]; do\n"
             "  e=$((e + 1))\n"
             "  printf '{\"event\":\"epoch_end\",\"epoch\":%d,\"samples\":100,"
             "\"metrics\":{\"loss\":%d}}\\n' $e $((10 - e)) >> \"$COLO_PROGRESS_FILE\"\n"
             "  echo $e > \"$COLO_CHECKPOINT_DIR/epoch\"\n"
             "  if [ $e -eq 3 ] && [ ! -e " +
                 mark +
                 " ]; then exit 4; fi\n"
                 "done\n");
  std::string file = write_file("jobs.toml",
                                "[run]\nmechanism = \"naive\"\n[[job]]\nname = "
                                "\"w\"\ncommand = [\"sh\", \"" +
                                    dir_ + "/ckpt.sh\"]\n");
  const std::string run =
      " --backend sim --policy fixed --plain --db " + db() + " --logs " + dir_ + "/logs";
  ASSERT_EQ(
      shell(colo("run " + file + run + " --name lr-a --tag model=r26 --tag team=a")).exit_code, 1);
  write_file("fixed", "");
  // Its tags carried: one added, one removed (`--tag KEY=`), one kept.
  CommandResult resumed = shell(colo("run --resume lr-a --tag seed=2 --tag team=" + run));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;

  CommandResult shown = shell(colo("show 2 --json --db " + db()));
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  const nlohmann::json j = nlohmann::json::parse(shown.output);
  EXPECT_EQ(j["run"]["name"], "lr-a") << shown.output;
  EXPECT_EQ(j["run"]["tags"], (nlohmann::json{{"model", "r26"}, {"seed", "2"}}));
  EXPECT_EQ(j["run"]["resumes_run"], 1);
  const nlohmann::json& job = j["jobs"].at(0);
  EXPECT_EQ(job["epochs"], 2) << "this attempt's own";
  EXPECT_EQ(job["history"]["epochs"], 5) << job.dump();
  EXPECT_EQ(job["history"]["attempts"].size(), 2u);
  EXPECT_EQ(job["history"]["attempts"][0]["last_epoch"], 3);
  EXPECT_EQ(job["history"]["attempts"][1]["first_epoch"], 4);
  EXPECT_EQ(job["metrics"]["loss"]["points"], 5);
  EXPECT_EQ(job["metrics"]["loss"]["last"], 5.0);

  CommandResult text = shell(colo("show 2 --db " + db()));
  EXPECT_THAT(text.output, HasSubstr("Resumes run 1:")) << text.output;
  EXPECT_THAT(text.output, HasSubstr("note: w resumes an earlier attempt: one history of 5 "
                                     "epochs, epochs 1-3 in run 1 (job 1), epochs 4-5 here"));
  CommandResult older = shell(colo("show 1 --db " + db()));
  EXPECT_THAT(older.output, HasSubstr("Resumed by run 2:")) << older.output;
  CommandResult older_json = shell(colo("show 1 --json --db " + db()));
  EXPECT_EQ(nlohmann::json::parse(older_json.output)["run"]["resumed_by"], 2);

  const std::string to = dir_ + "/mlruns";
  CommandResult exported = shell(colo("export mlflow 2 --db " + db() + " --to '" + to + "'"));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  CommandResult loss = shell("cat '" + to + "'/*/*/metrics/loss | cut -d' ' -f2,3");
  EXPECT_EQ(loss.output, "9.0 1\n8.0 2\n7.0 3\n6.0 4\n5.0 5\n");
  CommandResult log = shell("ls '" + to + "'/*/*/artifacts/log/");
  EXPECT_THAT(log.output, HasSubstr(".log")) << log.output;
}

// Issue 58 (8): one target syntax everywhere: `colo run --resume` and `colo
// export mlflow` take a run's name as `colo show` does (and last), and say
// which forms they take when given one they do not.
TEST_F(ColoRun, ResumeAndExportTakeARunByItsName) {
  const std::string mark = dir_ + "/fixed";
  std::string file = write_file("jobs.toml",
                                "[run]\nmechanism = \"naive\"\n[[job]]\nname = \"good\"\n"
                                "command = [\"true\"]\n[[job]]\nname = \"flaky\"\ncommand = "
                                "[\"sh\", \"-c\", \"test -f " +
                                    mark + " || exit 3\"]\n");
  const std::string run =
      " --backend sim --policy fixed --plain --db " + db() + " --logs " + dir_ + "/logs";
  ASSERT_EQ(shell(colo("run " + file + run + " --name lr-sweep")).exit_code, 1);
  ASSERT_EQ(shell(colo("run " + file + run + " --name other")).exit_code, 1);

  write_file("fixed", "");
  CommandResult resumed = shell(colo("run --resume lr-sweep" + run));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_THAT(resumed.output,
              HasSubstr("resuming run 1 (" + file + "): 1 job that did not end ok"));
  CommandResult last = shell(colo("run --resume last" + run));
  EXPECT_EQ(last.exit_code, 2) << last.output;
  EXPECT_THAT(last.output, HasSubstr("--resume last: run 3: all 1 of its jobs ended ok"));

  CommandResult unknown = shell(colo("run --resume nosuch" + run));
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("'nosuch' is neither a run id nor the name of a run of "
                                        "yours; --resume takes a run id (12), last or a name of "
                                        "your own"));
  CommandResult range = shell(colo("run --resume 1-2" + run));
  EXPECT_EQ(range.exit_code, 2) << range.output;
  EXPECT_THAT(range.output, HasSubstr("'1-2' is a range of run ids, where one target is meant"));
  CommandResult numeric = shell(colo("label 2 --name 3-4 --db " + db()));
  EXPECT_EQ(numeric.exit_code, 2) << numeric.output;
  EXPECT_THAT(numeric.output, HasSubstr("a name cannot be a number, 'last', a range"));

  const std::string to = " --db " + db() + " --to '" + dir_ + "/mlruns'";
  // The resumed run carries the name (issue 58, 9): the name is the newest attempt's.
  CommandResult exported = shell(colo("export mlflow lr-sweep" + to));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_THAT(exported.output, HasSubstr("colo run 3: lr-sweep"));
  CommandResult bad = shell(colo("export mlflow 1/1" + to));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("the store has no submission 1"));
}

TEST_F(ColoRun, ShowReportsSpeedUpAgainstAnExclusiveRunOfTheSameJobs) {
  std::string file = write_file("jobs.toml", toy_job("t", 2, 300, "repeat = 3\n"));
  ASSERT_EQ(shell(colo("run " + file + " --backend sim --mechanism exclusive --plain --db " + db()))
                .exit_code,
            0);
  ASSERT_EQ(shell(colo("run " + file +
                       " --backend sim --mechanism naive --policy fixed --plain --db " + db()))
                .exit_code,
            0);
  CommandResult show = shell(colo("show --db " + db()));
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("speed-up"), std::string::npos) << show.output;
  auto store = open_store();
  ASSERT_TRUE(store);
  auto summary = analyse_run(*store, 0);
  ASSERT_TRUE(summary.ok());
  ASSERT_TRUE(summary->speedup_vs_exclusive.has_value());
  // Three jobs at once against one at a time: close to 3x, clearly above 2x.
  EXPECT_GT(*summary->speedup_vs_exclusive, 2.0);
  EXPECT_LT(*summary->speedup_vs_exclusive, 3.5);
  CommandResult runs = shell(colo("runs --db " + db()));
  EXPECT_NE(runs.output.find("exclusive"), std::string::npos) << runs.output;
}

TEST_F(ColoRun, AutoPolicyMeasuresAnUnknownJobWhereItRunsWithItsSiblingsBesideIt) {
  std::string file = write_file("jobs.toml", toy_job("toy", 4, 300, "repeat = 4\n"));
  CommandResult r = shell(colo("run " + file +
                               " --backend sim --mechanism naive --policy auto --plain "
                               "--sample-period 100ms --db " +
                               db()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("policy: auto"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("toy: never measured; prior: nothing measured on this GPU model yet"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("starting it on idle gpu0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(new: measured where it runs)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("auto: measured toy"), std::string::npos) << r.output;
  // Its siblings (the same signature) start beside it while it is measured,
  // under a share of the spare memory, instead of waiting for its figure.
  EXPECT_NE(r.output.find("starting beside its family's newcomer while that is measured"),
            std::string::npos)
      << r.output;
  EXPECT_LT(r.output.find("toy#4 started"), r.output.find("auto: measured toy")) << r.output;
  auto store = RunStore::open(db());
  ASSERT_TRUE(store.ok());
  Result<RunSummary> summary = analyse_run(*(*store), 0);
  ASSERT_TRUE(summary.ok());
  for (const JobSummary& j : summary->jobs) EXPECT_EQ(j.state, JobState::kOk) << j.name;

  // The next run knows the profile from the store: no probe.
  CommandResult again = shell(colo("run " + file +
                                   " --backend sim --mechanism naive --policy auto --plain "
                                   "--sample-period 100ms --db " +
                                   db()));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.output.find("never measured"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("toy profile:"), std::string::npos) << again.output;
  CommandResult profiles = shell(colo("profiles --db " + db()));
  EXPECT_NE(profiles.output.find("store: run"), std::string::npos) << profiles.output;
  EXPECT_NE(profiles.output.find("interference model refitted to this store: "), std::string::npos)
      << profiles.output;

  // A run with a store of its own (a Slurm shard's) knows it through
  // --profiles-from; a store that cannot be read is named, and the job measured anew.
  const std::string fresh =
      " --backend sim --mechanism naive --policy auto --plain "
      "--sample-period 100ms --db ";
  CommandResult elsewhere =
      shell(colo("run " + file + fresh + dir_ + "/other.db --profiles-from " + db()));
  ASSERT_EQ(elsewhere.exit_code, 0) << elsewhere.output;
  EXPECT_EQ(elsewhere.output.find("never measured"), std::string::npos) << elsewhere.output;
  EXPECT_NE(elsewhere.output.find("toy profile:"), std::string::npos) << elsewhere.output;
  EXPECT_NE(elsewhere.output.find(") of " + db()), std::string::npos) << elsewhere.output;
  CommandResult missing = shell(
      colo("run " + file + fresh + dir_ + "/third.db --profiles-from " + dir_ + "/missing.db"));
  ASSERT_EQ(missing.exit_code, 0) << missing.output;
  EXPECT_NE(missing.output.find("warning: --profiles-from " + dir_ + "/missing.db: "),
            std::string::npos)
      << missing.output;
  EXPECT_NE(missing.output.find("toy: never measured"), std::string::npos) << missing.output;
}

TEST_F(ColoRun, GpusLimitsTheRunToTheChosenDevices) {
  std::string file = write_file("jobs.toml", toy_job("toy", 2, 200, "repeat = 3\n"));
  CommandResult r = shell(colo("run " + file +
                               " --backend sim --sim-devices 3 --gpus 2 --mechanism naive --plain "
                               "--sample-period 100ms --db " +
                               db()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto store = RunStore::open(db());
  ASSERT_TRUE(store.ok());
  Result<RunSummary> summary = analyse_run(*(*store), 0);
  ASSERT_TRUE(summary.ok());
  for (const JobSummary& j : summary->jobs) EXPECT_EQ(j.device.value_or(-1), 2) << j.name;

  CommandResult bad = shell(colo("run " + file +
                                 " --backend sim --sim-devices 2 --gpus 1,5 --mechanism naive "
                                 "--plain --db " +
                                 db()));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("there is no GPU 5; this machine has GPU 0, 1"), std::string::npos)
      << bad.output;
}

TEST_F(ColoRun, BadJobFileNamesFileLineAndKey) {
  std::string file = write_file("bad.toml", "[[job]]\nname = \"a\"\ncomand = [\"true\"]\n");
  CommandResult r = shell(colo("run " + file + " --backend sim --db " + db()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.toml:3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("comand"), std::string::npos) << r.output;
  EXPECT_NE(access(db().c_str(), F_OK), 0) << "a rejected file must not create a run";
}

TEST_F(ColoRun, WithoutADriverColoSaysSoAndSuggestsTheSimulator) {
  CommandResult r = shell("COLO_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 " + colo("devices"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("--backend sim"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1)
      << "one line, please: " << r.output;
}

TEST_F(ColoRun, DevicesAndMonitorOnTheSimulatorSaySimulated) {
  CommandResult d = shell(colo("devices --backend sim"));
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("SIMULATED"), std::string::npos) << d.output;
  EXPECT_NE(d.output.find("3g.71gb"), std::string::npos) << d.output;
  CommandResult m = shell(colo("monitor --backend sim --count 2 --interval 100ms --json"));
  ASSERT_EQ(m.exit_code, 0) << m.output;
  EXPECT_NE(m.output.find("\"simulated\":true"), std::string::npos) << m.output;
}

}  // namespace
}  // namespace colo
