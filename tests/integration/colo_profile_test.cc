// Profiling windows (issue 36), on CPU PyTorch (Debian's python3-torch, as
// /usr/bin/python3 imports it): a window from the job file and one asked by
// `colo profile` of a running job each leave a Chrome trace and a summary
// whose top operator is the one the trace itself gives (recomputed without
// torch or colo: bench/check-profile-trace.py), shown by `colo
// show`; a job whose profiler is not installed runs unprofiled and says why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "integration_util.h"

namespace colo {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class ColoProfile : public ColoTestDir {
 protected:
  void SetUp() override {
    ColoTestDir::SetUp();
    ASSERT_EQ(shell("/usr/bin/python3 -c 'import torch.profiler'").exit_code, 0)
        << "CPU PyTorch is required for this test: apt-get install python3-torch (or run "
           "scripts/install-deps.sh)";
  }
  std::string colo(const std::string& args) const {
    return "COLO_HOME='" + dir_ + "/home' " + std::string(COLO_BINARY) + " " + args;
  }
  std::string job(const std::string& args, const std::string& profile) const {
    return "[[job]]\nname = \"tiny\"\ncommand = [\"/usr/bin/python3\", \"" COLO_SOURCE_DIR
           "/tests/integration/profile/tiny_train.py\"" +
           args + "]\n" + profile;
  }
  std::string run_flags() const {
    return " --backend sim --policy fixed --mechanism naive --plain --db " + db() + " --logs " +
           dir_ + "/logs";
  }
  // Starts `colo run FILE` (run_flags() and `flags`) in the background,
  // its pid in run.pid and its output in run.txt; true once `jobs` jobs each
  // ended an epoch (within 60 s).
  bool run_until_epochs(const std::string& file, const std::string& flags, size_t jobs) const {
    shell(colo("run " + file + run_flags() + flags) + " > '" + dir_ +
          "/run.txt' 2>&1 & echo $! > '" + dir_ + "/run.pid'");
    return eventually(
        [&] {
          const json j =
              json::parse(shell(colo("show --json --db " + db())).output, nullptr, false);
          if (!j.is_object() || j["jobs"].size() != jobs) return false;
          for (const json& job : j["jobs"])
            if (!job["epochs"].is_number() || job["epochs"].get<int>() < 1) return false;
          return true;
        },
        60'000);
  }
  // The top operator of the trace, recomputed from it alone.
  std::string top_of_trace(const std::string& trace) const {
    CommandResult r =
        shell("/usr/bin/python3 " COLO_SOURCE_DIR "/bench/check-profile-trace.py '" + trace + "'");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output.substr(0, r.output.find('\n'));
  }
};

TEST_F(ColoProfile, AWindowFromTheJobFileLeavesATraceWhoseTopOperatorItsSummaryNames) {
  std::string long_epochs = job(", \"--epochs\", \"2\", \"--steps\", \"30\"",
                                "profile = { tool = \"torch\", after_epoch = 1 }\n");
  long_epochs.replace(long_epochs.find("\"tiny\""), 6, "\"long\"");
  const std::string file = write_file(
      "p.toml", "[objective]\nmetric = \"loss\"\ngoal = \"min\"\n" +
                    job("", "profile = { tool = \"torch\", after_epoch = 1, steps = 5 }\n") +
                    long_epochs);
  CommandResult r = shell(colo("run " + file + run_flags()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  CommandResult shown = shell(colo("show --json --db " + db()));
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  const json profiles = json::parse(shown.output)["profiles"];
  ASSERT_TRUE(profiles.contains("tiny")) << shown.output;
  ASSERT_EQ(profiles["tiny"].size(), 1u);
  const json& w = profiles["tiny"][0];
  EXPECT_EQ(w["trigger"], "job file");
  EXPECT_EQ(w["steps"], 5);
  EXPECT_TRUE(w["rate_in"].is_number());
  EXPECT_TRUE(w["rate_before"].is_number()) << "the rate outside the window, beside it";
  EXPECT_TRUE(w["rate_after"].is_number()) << "and after it";
  ASSERT_FALSE(w["top"].empty());
  EXPECT_EQ(w["top"][0]["name"], "aten::mm");
  EXPECT_EQ(top_of_trace(w["trace"]), w["top"][0]["name"].get<std::string>());
  CommandResult text = shell(colo("show --db " + db()));
  EXPECT_THAT(text.output, HasSubstr("tiny window 1 (job file, closed after its steps):"));
  // Without steps or a duration: 20 steps at most (of an epoch of 30 here).
  ASSERT_TRUE(profiles.contains("long")) << shown.output;
  EXPECT_EQ(profiles["long"][0]["steps"], 20);
  EXPECT_THAT(text.output, HasSubstr("what profiling cost"));
  EXPECT_THAT(text.output, HasSubstr("aten::mm"));

  // The report has the windows too, each linked to its trace, and its
  // summary.txt says what colo show says.
  const std::string out = dir_ + "/report";
  CommandResult report = shell(colo("report last --no-png --out '" + out + "' --db " + db()));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  const std::string html = shell("cat '" + out + "/index.html'").output;
  EXPECT_THAT(html, HasSubstr("Profiling windows"));
  EXPECT_THAT(html, HasSubstr("<a href=\"file://" + w["trace"].get<std::string>() + "\" title="));
  EXPECT_THAT(shell("cat '" + out + "/csv/profile-windows.csv'").output, HasSubstr("aten::mm"));
  EXPECT_THAT(shell("cat '" + out + "/summary.txt'").output,
              HasSubstr("tiny window 1 (job file, closed after its steps):"));

  // The MLflow export carries the window's files as the run's artifacts, and
  // the objective as tags.
  CommandResult exported =
      shell(colo("export mlflow last --db " + db() + " --to '" + dir_ + "/mlruns'"));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const std::string run_dir =
      shell("dirname $(grep -lx tiny '" + dir_ + "'/mlruns/*/*/tags/mlflow.runName)").output;
  const std::string run = run_dir.substr(0, run_dir.find('\n')) + "/..";
  EXPECT_EQ(shell("cmp '" + w["trace"].get<std::string>() + "' '" + run +
                  "/artifacts/profile/torch-trace-1.json'")
                .exit_code,
            0);
  EXPECT_EQ(shell("cat '" + run + "/tags/colo.objective'").output, "loss");
  EXPECT_EQ(shell("cat '" + run + "/tags/colo.objective_goal'").output, "min");
}

TEST_F(ColoProfile, ColoProfileTakesAWindowOfARunningJob) {
  const std::string until = dir_ + "/stop";
  const std::string file = write_file("p.toml", job(", \"--until\", \"" + until + "\"", ""));
  // The run in the background; the job loops until `until` exists.
  ASSERT_TRUE(run_until_epochs(file, "", 1)) << shell("cat '" + dir_ + "/run.txt'").output;
  CommandResult p = shell(colo("profile tiny --run 1 --steps 4 --wait 60s --db " + db()));
  shell("touch '" + until + "'");
  EXPECT_EQ(p.exit_code, 0) << p.output;
  EXPECT_THAT(p.output, HasSubstr("asked tiny for a torch window of 4 steps"));
  EXPECT_THAT(p.output, HasSubstr("tiny window 1 (colo profile, closed after its steps):"));
  EXPECT_THAT(p.output, HasSubstr("4 steps"));
  ASSERT_TRUE(eventually(
      [&] { return shell("kill -0 $(cat '" + dir_ + "/run.pid') 2>/dev/null").exit_code != 0; },
      60'000));
  CommandResult shown = shell(colo("show --json --db " + db()));
  const json w = json::parse(shown.output)["profiles"]["tiny"][0];
  EXPECT_EQ(top_of_trace(w["trace"]), w["top"][0]["name"].get<std::string>());

  // An ended job is not profiled, and says how to profile from the start.
  CommandResult ended = shell(colo("profile tiny --run 1 --db " + db()));
  EXPECT_EQ(ended.exit_code, 2) << ended.output;
  EXPECT_THAT(ended.output, HasSubstr("job 'tiny' is ok, not running"));
}

// A window of steps in a job that reports only epochs closes at the next
// epoch's end; one still open when the job's script ends is written as the
// interpreter exits (a profiler left running then can crash the process: two
// resnet26 trainings on an H200 ended SIGSEGV and SIGABRT): the job ends ok.
TEST_F(ColoProfile, AWindowTheJobNeverClosesEndsAtAnEpochOrWithTheJob) {
  const std::string epochs_only =
      job(", \"--epochs\", \"3\", \"--no-steps\"",
          "profile = { tool = \"torch\", after_epoch = 1, steps = 20 }\n");
  std::string to_the_end = job(", \"--epochs\", \"2\"",
                               "profile = { tool = \"torch\", after_epoch = 1, steps = 500 }\n");
  to_the_end.replace(to_the_end.find("\"tiny\""), 6, "\"long\"");
  const std::string file = write_file("p.toml", epochs_only + to_the_end);
  CommandResult r = shell(colo("run " + file + run_flags()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json profiles = json::parse(shell(colo("show --json --db " + db())).output)["profiles"];
  ASSERT_TRUE(profiles.contains("tiny") && profiles.contains("long")) << profiles.dump();
  EXPECT_EQ(profiles["tiny"][0]["closed_by"], "epoch end");
  EXPECT_EQ(profiles["tiny"][0]["steps"], 0);
  EXPECT_EQ(profiles["long"][0]["closed_by"], "job end");
  EXPECT_EQ(profiles["long"][0]["steps"], 10) << "its last epoch's";
  EXPECT_EQ(top_of_trace(profiles["long"][0]["trace"]), "aten::mm");
  EXPECT_THAT(shell(colo("show --db " + db())).output,
              HasSubstr("long window 1 (job file, closed by the job's end)"));
}

// Issue 36, item 3: `colo show` pairs each job's window beside others with
// one of its signature alone, from another run of the store, and gives each
// kernel family's slowdown. The jobs here write their windows themselves, as
// the client does on a GPU (a summary and its spans file): a GEMM of 100 us
// alone, of 150 us beside the others. Barriers keep every job of a run
// running from before any window opens until all have closed.
TEST_F(ColoProfile, ShowSetsEachJobsKernelsBesideOthersAgainstItsSignatureAlone) {
  const std::string d = dir_ + "/w";
  const std::string script = write_file("window.sh", "d=" + d + R"sh(
n=$(cat "$d/n")
barrier() {  # waits (at most 60 s) until n jobs touched a file starting with $1
  touch "$d/$1.$$"; i=0
  while [ "$(ls "$d" | grep -c "^$1\.")" -lt "$n" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
}
mkdir -p "$COLO_PROFILE_DIR"
barrier in
s=$(date +%s.%N)
printf '0\t%s\tampere_sgemm_128x64_tn\n' "$(cat "$d/us")" > "$COLO_PROFILE_DIR/torch-kernels-1.tsv"
e=$(date +%s.%N)
printf '{"window": 1, "trigger": "colo profile", "started": %s, "ended": %s, "kernels": "torch-kernels-1.tsv"}\n' "$s" "$e" > "$COLO_PROFILE_DIR/torch-summary-1.json"
barrier out
)sh");
  const std::string job = "[[job]]\nname = \"w\"\ncommand = [\"sh\", \"" + script + "\"]\n";
  const auto run = [&](int jobs, int us, const std::string& file) {
    shell("rm -rf '" + d + "' && mkdir -p '" + d + "' && echo " + std::to_string(jobs) + " > '" +
          d + "/n' && echo " + std::to_string(us) + " > '" + d + "/us'");
    return shell(colo("run " + file + run_flags() + " --max-per-gpu 3 --sim-devices 1"));
  };
  CommandResult alone = run(1, 100, write_file("alone.toml", job));
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  CommandResult together = run(3, 150, write_file("together.toml", job + "repeat = 3\n"));
  ASSERT_EQ(together.exit_code, 0) << together.output;

  const json shown = json::parse(shell(colo("show 2 --json --db " + db())).output, nullptr, false);
  ASSERT_TRUE(shown.contains("interference")) << shown.dump();
  const json& rows = shown["interference"];
  ASSERT_EQ(rows.size(), 3u) << rows.dump();
  for (const json& row : rows) {
    EXPECT_EQ(row["alone_job"], "w of run 1");
    EXPECT_EQ(row["others"], 2);
    ASSERT_EQ(row["families"].size(), 1u);
    EXPECT_EQ(row["families"][0]["family"], "GEMM");
    EXPECT_DOUBLE_EQ(row["families"][0]["mean_us_alone"].get<double>(), 100);
    EXPECT_DOUBLE_EQ(row["families"][0]["slowdown"].get<double>(), 1.5);
  }
  CommandResult text = shell(colo("show 2 --db " + db()));
  EXPECT_THAT(text.output, HasSubstr("w#1: window 1 of w of run 1 (the same signature) alone on "
                                     "its GPU against window 1 beside 2 other jobs"));
  EXPECT_THAT(text.output, HasSubstr("1.50x"));
  // The report of run 2 shows the same table.
  const std::string out = dir_ + "/report";
  CommandResult report = shell(colo("report 2 --no-png --out '" + out + "' --db " + db()));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  const std::string html = shell("cat '" + out + "/index.html'").output;
  EXPECT_THAT(html, HasSubstr("Profiling windows"));
  EXPECT_THAT(html, HasSubstr("w#1: window 1 of w of run 1 (the same signature) alone"));
  // Run 1's job ran alone: nothing to set against.
  EXPECT_FALSE(
      json::parse(shell(colo("show 1 --json --db " + db())).output).contains("interference"));
}

// Issue 36, item 3: every job on a GPU asked at once. On CPU PyTorch the
// windows have no kernels: both are taken, and colo says there is no timeline.
TEST_F(ColoProfile, EveryJobOnAGpuIsAskedForAWindowAtOnce) {
  const std::string until = dir_ + "/stop";
  std::string two = job(", \"--until\", \"" + until + "\"", "");
  two.replace(two.find("name = \"tiny\""), 13, "name = \"tiny\"\nrepeat = 2");
  ASSERT_TRUE(run_until_epochs(write_file("p.toml", two), " --max-per-gpu 2", 2))
      << shell("cat '" + dir_ + "/run.txt'").output;
  CommandResult p = shell(colo("profile --gpu 0 --steps 3 --wait 60s --db " + db()));
  shell("touch '" + until + "'");
  EXPECT_EQ(p.exit_code, 0) << p.output;
  EXPECT_THAT(p.output, HasSubstr("asked tiny#1 for a torch window"));
  EXPECT_THAT(p.output, HasSubstr("asked tiny#2 for a torch window"));
  EXPECT_THAT(p.output, HasSubstr("tiny#1 window 1 (colo profile, closed after its steps)"));
  EXPECT_THAT(p.output, HasSubstr("tiny#2 window 1 (colo profile, closed after its steps)"));
  EXPECT_THAT(p.output, HasSubstr("no GPU kernels in these windows"));
  EXPECT_TRUE(eventually(
      [&] { return shell("kill -0 $(cat '" + dir_ + "/run.pid') 2>/dev/null").exit_code != 0; },
      60'000));
  CommandResult none = shell(colo("profile --gpu 3 --run 1 --db " + db()));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.output, HasSubstr("no job of run 1 is running on GPU 3"));
  CommandResult both = shell(colo("profile tiny#1 --gpu 0 --run 1 --db " + db()));
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.output, HasSubstr("a job, or --gpu N"));
}

TEST_F(ColoProfile, AJobWhoseProfilerIsNotInstalledRunsUnprofiledAndSaysWhy) {
  const std::string file = write_file(
      "p.toml",
      "[[job]]\nname = \"plain\"\ncommand = [\"true\"]\nprofile = { tool = \"nsys\", after = "
      "\"1s\", duration = \"2s\" }\n");
  // A PATH without nsys (nor ncu), with what `true` needs.
  CommandResult r = shell("PATH=/usr/bin:/bin " + colo("run " + file + run_flags()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("plain: profile: nsys is not installed here (not on PATH), so "
                                  "this attempt runs unprofiled"));
  EXPECT_THAT(shell("cat " + dir_ + "/logs/*/1/001-plain.log").output,
              HasSubstr("nsys is not installed here"));
}

// Under MPS, a job under `tool = "ncu"` stays a client of the server: colo
// starts it under `ncu --mps client` with ncu's control beside it (the
// stand-in ncu, tests/integration/fake-ncu, stands in for both). A control
// that fails ends its job with the control's own words, not a job waiting
// for ever.
TEST_F(ColoProfile, AnNcuJobUnderMpsIsAClientOfTheServerWithNcusControlBesideIt) {
  const std::string bin = dir_ + "/bin";
  shell("mkdir -p '" + bin + "' '" + dir_ + "/ncu' && cp '" COLO_FAKE_MPS_CONTROL "' '" + bin +
        "/nvidia-cuda-mps-control' && cp '" COLO_FAKE_NCU "' '" + bin + "/ncu'");
  const std::string file = write_file(
      "p.toml", "[defaults]\nenv = { FAKE_NCU_DIR = \"" + dir_ +
                    "/ncu\" }\n"
                    "[[job]]\nname = \"kept\"\ncommand = [\"true\"]\nprofile = { tool = \"ncu\" }\n"
                    "[[job]]\nname = \"lost\"\ncommand = [\"sleep\", \"300\"]\n"
                    "env = { FAKE_NCU_CONTROL = \"fail\" }\nprofile = { tool = \"ncu\" }\n");
  CommandResult r = shell("PATH='" + bin + "':$PATH " +
                          colo("run " + file +
                               " --backend sim --policy fixed --max-per-gpu 2 --mechanism mps "
                               "--plain --db " +
                               db() + " --logs " + dir_ + "/logs"));
  const json shown = json::parse(shell(colo("show --json --db " + db())).output, nullptr, false);
  ASSERT_TRUE(shown.is_object()) << r.output;
  ASSERT_EQ(shown["jobs"].size(), 2u) << r.output;
  for (const json& job : shown["jobs"]) {
    const std::string name = job["name"];
    const std::string log = shell("cat " + dir_ + "/logs/*/*/*-" + name + ".log").output;
    if (name == "kept") {
      EXPECT_EQ(job["state"], "ok") << log;
      EXPECT_THAT(log, HasSubstr("as a client of its MPS server (ncu's control beside it"));
      EXPECT_EQ(shell("find '" + dir_ + "/logs' -name 'ncu-attempt1.ncu-rep' | wc -l").output,
                "1\n");
      // The client ran with the server's pipe directory, not outside it.
      EXPECT_THAT(shell("cat '" + dir_ + "/ncu'/client-*").output, HasSubstr(dir_ + "/home/mps"));
    } else {
      EXPECT_EQ(job["state"], "failed") << log;
      EXPECT_THAT(std::string(job["reason"]), HasSubstr("Failed to discover MPS clients")) << log;
      EXPECT_THAT(log, HasSubstr("colo: ncu's control exited 1 before the job's end"));
    }
  }
}

// ncu runs one MPS control per machine (the stand-in too: a second control
// fails at once while one runs). Two jobs under `tool = "ncu"` on one MPS
// server at once: the second waits for the first's control, its log says
// so, and starts once that control ended, while the first job still trains;
// both end ok with their reports. The stand-in's controls end only once a
// job saw the other waiting (FAKE_NCU_CONTROL=held), and each job ends only
// once both started, so the two overlap whatever the timing, and a pair
// that held the machine's lock to its job's end would leave both waiting.
TEST_F(ColoProfile, TwoNcuJobsUnderMpsTakeTheMachinesOneControlInTurn) {
  const std::string bin = dir_ + "/bin";
  const std::string ncu = dir_ + "/ncu";
  shell("mkdir -p '" + bin + "' '" + ncu + "' && cp '" COLO_FAKE_MPS_CONTROL "' '" + bin +
        "/nvidia-cuda-mps-control' && cp '" COLO_FAKE_NCU "' '" + bin + "/ncu'");
  const std::string script =
      "touch " + ncu + "/started-$COLO_JOB_NAME; until grep -q 'waiting for ncu' " + dir_ +
      "/logs/*/*/*.log; do sleep 0.1; done; touch " + ncu + "/control-may-end; until [ -e " + ncu +
      "/started-a ] && [ -e " + ncu + "/started-b ]; do sleep 0.1; done";
  const std::string command = "[\"timeout\", \"60\", \"sh\", \"-c\", \"" + script + "\"]";
  const std::string file = write_file(
      "p.toml", "[defaults]\nenv = { FAKE_NCU_DIR = \"" + ncu +
                    "\", FAKE_NCU_CONTROL = \"held\" }\n"
                    "[[job]]\nname = \"a\"\nprofile = { tool = \"ncu\" }\ncommand = " +
                    command + "\n[[job]]\nname = \"b\"\nprofile = { tool = \"ncu\" }\ncommand = " +
                    command + "\n");
  CommandResult r = shell("PATH='" + bin + "':$PATH " +
                          colo("run " + file +
                               " --backend sim --policy fixed --max-per-gpu 2 --mechanism mps "
                               "--plain --db " +
                               db() + " --logs " + dir_ + "/logs"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const json shown = json::parse(shell(colo("show --json --db " + db())).output, nullptr, false);
  ASSERT_TRUE(shown.is_object()) << r.output;
  ASSERT_EQ(shown["jobs"].size(), 2u) << r.output;
  const std::string logs = shell("cat " + dir_ + "/logs/*/*/*.log").output;
  for (const json& job : shown["jobs"]) EXPECT_EQ(job["state"], "ok") << logs;
  EXPECT_THAT(logs, HasSubstr("colo: waiting for ncu's MPS control (one per machine), in use by "
                              "colo pid"));
  EXPECT_THAT(logs, Not(HasSubstr("Is another MPS control server running")));
  EXPECT_EQ(shell("find '" + dir_ + "/logs' -name 'ncu-attempt1.ncu-rep' | wc -l").output, "2\n")
      << logs;
}

}  // namespace
}  // namespace colo
