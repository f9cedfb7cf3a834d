// colo's command-line conventions end to end (issue 16): help, --version,
// exit codes, the --json shapes of docs/cli.md (parsed), flag spellings and
// the messages a new user meets first. The real binary on the simulated
// backend, a real store per test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "integration_util.h"
#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class ColoCli : public ColoTestDir {
 protected:
  // `colo ARGS` with this test's COLO_HOME (so its default store).
  std::string colo(const std::string& args) const {
    return "COLO_HOME='" + dir_ + "/home' " + std::string(COLO_BINARY) + " " + args;
  }
  CommandResult run(const std::string& args) const { return shell(colo(args)); }
  // stdout only, parsed; a test failure and null when it is not JSON.
  json json_of(const std::string& args) const {
    CommandResult r = shell("(" + colo(args) + " 2>/dev/null)");
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
    json parsed = json::parse(r.output, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << args << " printed no JSON:\n" << r.output;
    return parsed.is_discarded() ? json() : parsed;
  }
  // A job file of `jobs` jobs running `script` (sh -c).
  std::string job_file(const std::string& name, const std::string& script, int jobs = 1) {
    std::string text;
    for (int i = 0; i < jobs; ++i) {
      text += "[[job]]\nname = \"j" + std::to_string(i) + "\"\ncommand = [\"sh\", \"-c\", \"" +
              script + "\"]\n";
    }
    return write_file(name, text);
  }
  std::string sim_run(const std::string& file) const {
    return "run " + file + " --backend sim --mechanism naive --plain --db '" + db() + "'";
  }
};

// The subcommands a help text lists under "Subcommands:".
std::vector<std::string> subcommands_in(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  std::string line;
  bool listing = false;
  while (std::getline(in, line)) {
    if (line.rfind("Subcommands:", 0) == 0) {
      listing = true;
      continue;
    }
    if (!listing) continue;
    if (line.empty() || line[0] != ' ') break;
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.push_back(name);
  }
  return names;
}

TEST_F(ColoCli, BareColoPrintsHelpWithExitCodesAndMigAndExitsZero) {
  CommandResult r = run("");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Usage: colo"));
  EXPECT_THAT(r.output, HasSubstr("MIG"));
  EXPECT_THAT(r.output, AllOf(HasSubstr("Exit codes:"), HasSubstr("  1    a job failed"),
                              HasSubstr("  2    bad input"), HasSubstr("  3    environment"),
                              HasSubstr("  130  cancelled")));
  EXPECT_EQ(run("--help").output, r.output);
}

TEST_F(ColoCli, VersionPrintsTheVersionAndExitsZero) {
  CommandResult r = run("--version");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::MatchesRegex("colo [0-9]+\\.[0-9]+\\.[0-9]+\n"));
}

// A mistyped command is named, with the nearest one, at any depth; a word
// where a command takes an argument is left to that command.
TEST_F(ColoCli, AnUnknownCommandIsNamedWithTheNearestOne) {
  CommandResult top = run("sho last");
  EXPECT_EQ(top.exit_code, 2) << top.output;
  EXPECT_THAT(top.output, HasSubstr("colo: unknown command 'sho' (did you mean 'show'?); `colo "
                                    "--help` lists them"));
  CommandResult nested = run("mig plann");
  EXPECT_EQ(nested.exit_code, 2) << nested.output;
  EXPECT_THAT(nested.output, HasSubstr("colo mig: unknown command 'plann' (did you mean 'plan'?)"));
  CommandResult far = run("frobnicate");
  EXPECT_EQ(far.exit_code, 2) << far.output;
  EXPECT_THAT(far.output, HasSubstr("unknown command 'frobnicate'; `colo --help` lists them"));
  CommandResult argument = run("show nosuchrun --db " + dir_ + "/none.db");
  EXPECT_THAT(argument.output, Not(HasSubstr("unknown command"))) << argument.output;
}

// Every other error of the command line names the command, and where its
// help is.
TEST_F(ColoCli, ACommandLineErrorNamesTheCommandAndItsHelp) {
  CommandResult missing = run("rm");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_THAT(missing.output,
              HasSubstr("colo rm: targets is required; `colo rm --help` shows how"));
  CommandResult bad = run("run " + dir_ + "/none.toml --backend sim");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("colo run: "));
  EXPECT_THAT(bad.output, HasSubstr("none.toml"));
  EXPECT_THAT(bad.output, HasSubstr("`colo run --help` shows how"));
  CommandResult help = run("rm --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_THAT(help.output, HasSubstr("Usage: colo rm"));
}

// A mistyped option too, from the command that was given it.
TEST_F(ColoCli, AnUnknownOptionIsNamedWithTheNearestOne) {
  const std::string file = write_file("t.toml", "[[job]]\nname = \"t\"\ncommand = [\"true\"]\n");
  CommandResult r = run("run " + file + " --backend sim --polcy auto --db " + dir_ + "/a.db");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("colo run: unknown option '--polcy' (did you mean '--policy'?); "
                                  "`colo run --help` lists them"));
  EXPECT_THAT(r.output, Not(HasSubstr("SIMULATED"))) << "nothing ran";
  CommandResult nested = run("mig plan --gpu-modle H100=2");
  EXPECT_EQ(nested.exit_code, 2) << nested.output;
  EXPECT_THAT(nested.output, HasSubstr("colo mig plan: unknown option '--gpu-modle' (did you mean "
                                       "'--gpu-model'?)"));
}

TEST_F(ColoCli, EverySubcommandsHelpEndsWithAnExample) {
  std::vector<std::string> pending = subcommands_in(run("--help").output);
  ASSERT_GE(pending.size(), 10U);
  std::set<std::string> seen;
  while (!pending.empty()) {
    const std::string path = pending.back();
    pending.pop_back();
    if (!seen.insert(path).second) continue;
    CommandResult help = run(path + " --help");
    EXPECT_EQ(help.exit_code, 0) << path;
    const size_t example = help.output.rfind("Example:\n  colo ");
    EXPECT_NE(example, std::string::npos) << "`colo " << path << " --help` has no example";
    for (const std::string& sub : subcommands_in(help.output)) pending.push_back(path + " " + sub);
  }
  EXPECT_TRUE(seen.count("mig plan")) << "the walk did not reach nested subcommands";
}

// Issue 33, item 12: on a machine without a GPU, COLO_BACKEND=sim spares
// every command its --backend sim; --backend still wins, and a value that is
// no backend says where it came from.
TEST_F(ColoCli, ColoBackendSetsTheDefaultBackend) {
  const std::string file = write_file("t.toml", "[[job]]\nname = \"t\"\ncommand = [\"true\"]\n");
  CommandResult simulated =
      shell("COLO_BACKEND=sim " + colo("run " + file + " --plain --db " + dir_ + "/a.db"));
  EXPECT_EQ(simulated.exit_code, 0) << simulated.output;
  EXPECT_THAT(simulated.output, HasSubstr("SIMULATED"));
  CommandResult bad =
      shell("COLO_BACKEND=simm " + colo("run " + file + " --plain --db " + dir_ + "/b.db"));
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("COLO_BACKEND='simm' is not a backend: set it to nvml, sim or "
                                    "auto, or unset it"));
  CommandResult flag_wins = shell(
      "COLO_BACKEND=simm " + colo("run " + file + " --backend sim --plain --db " + dir_ + "/c.db"));
  EXPECT_EQ(flag_wins.exit_code, 0) << flag_wins.output;
}

// Issue 33 (9): a colo binary copied alone (no checkout or installation
// beside it, none in the working directory) still gives its jobs `import
// colo_progress`: the client compiled into it, written under COLO_HOME.
TEST_F(ColoCli, AColoBinaryAloneGivesItsJobsThePythonClient) {
  ASSERT_EQ(shell("mkdir -p '" + dir_ + "/alone/bin' && cp " + std::string(COLO_BINARY) + " '" +
                  dir_ + "/alone/bin/colo'")
                .exit_code,
            0);
  write_file("alone/train.py",
             "import colo_progress\n"
             "print('client:', colo_progress.__file__)\n"
             "colo_progress.Progress().epoch_end(1, samples=10, loss=0.5)\n");
  write_file("alone/job.toml", "[[job]]\nname = \"t\"\ncommand = [\"python3\", \"train.py\"]\n");
  CommandResult r =
      shell("cd '" + dir_ + "/alone' && env -u COLO_PYTHON_DIR -u PYTHONPATH COLO_HOME='" + dir_ +
            "/home' bin/colo run job.toml --backend sim --plain --logs logs");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  CommandResult log = shell("cat '" + dir_ + "/alone/logs/'*/*/*.log");
  EXPECT_THAT(log.output, HasSubstr("client: " + dir_ + "/home/python-client/")) << log.output;
  EXPECT_THAT(r.output, HasSubstr("loss")) << r.output;
}

// Issue 33 (11): `colo logs JOB --run RUN` prints a job of `colo run`, by
// name or id, and --follow prints until it ended; wrong names are named.
TEST_F(ColoCli, LogsOfAJobOfColoRunByNameAndFollowedToItsEnd) {
  const std::string go = dir_ + "/go";
  const std::string file =
      write_file("slow.toml",
                 "[[job]]\nname = \"slow\"\ncommand = [\"sh\", \"-c\", \"echo first; "
                 "while [ ! -e " +
                     go + " ]; do sleep 0.05; done; echo second\"]\n");
  ASSERT_EQ(shell("(" + colo(sim_run(file) + " --logs '" + dir_ + "/logs'") + " >'" + dir_ +
                  "/run.out' 2>&1 &)")
                .exit_code,
            0);
  // Once the job has printed its first line, follow it, then let it end.
  ASSERT_TRUE(eventually(
      [&] {
        return run("logs slow --run 1 --db '" + db() + "'").output.find("first") !=
               std::string::npos;
      },
      30'000));
  ASSERT_EQ(shell("(" + colo("logs slow --run 1 --follow --db '" + db() + "'") + " >'" + dir_ +
                  "/follow.out' 2>&1; echo $? >'" + dir_ + "/follow.rc') >/dev/null 2>&1 &")
                .exit_code,
            0);
  write_file("go", "");
  ASSERT_TRUE(
      eventually([&] { return shell("cat '" + dir_ + "/follow.rc'").exit_code == 0; }, 30'000));
  EXPECT_EQ(shell("cat '" + dir_ + "/follow.rc'").output, "0\n");
  EXPECT_EQ(shell("cat '" + dir_ + "/follow.out'").output, "first\nsecond\n");

  CommandResult by_id = run("logs 1 --run 1 --db '" + db() + "'");
  EXPECT_EQ(by_id.exit_code, 0) << by_id.output;
  EXPECT_EQ(by_id.output, "first\nsecond\n");
  CommandResult wrong = run("logs slwo --run 1 --db '" + db() + "'");
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.output,
              HasSubstr("run 1 has no job named or numbered 'slwo' (its jobs: slow)"));
  CommandResult not_an_id = run("logs slow --socket '" + dir_ + "/none.sock'");
  EXPECT_EQ(not_an_id.exit_code, 2);
  EXPECT_THAT(not_an_id.output, HasSubstr("colo logs slow --run RUN"));
}

// Issue 33 (13): the simulated GPU has a capacity. Three jobs of 58.6 GiB
// (as they state, simulated_gpu_memory_mib) on one 140 GiB GPU: the one whose
// memory passed the GPU's runs out of memory, as on a real GPU, and runs
// again after; the run's peak stays within the GPU.
TEST_F(ColoCli, TheSimulatedGpuRunsOutOfMemoryWhenItsJobsExceedIt) {
  // Each job waits until all three have started (marker files), so that all
  // three state their memory together however loaded the machine is.
  write_file("big.py",
             "import glob, os, time, colo_progress\n"
             "d = os.path.dirname(os.path.abspath(__file__))\n"
             "open(os.path.join(d, 'started.%d' % os.getpid()), 'w').close()\n"
             "end = time.time() + 30\n"
             "while len(glob.glob(os.path.join(d, 'started.*'))) < 3 and time.time() < end:\n"
             "    time.sleep(0.05)\n"
             "p = colo_progress.Progress()\n"
             "for e in range(1, 4):\n"
             "    p.epoch_end(e, samples=100, simulated_gpu_memory_mib=60000)\n"
             "    time.sleep(0.5)\n");
  const std::string file =
      write_file("big.toml",
                 "[run]\npolicy = \"fixed\"\nmax_per_gpu = 3\n\n[[job]]\nname = \"big\"\n"
                 "command = [\"python3\", \"" +
                     dir_ + "/big.py\"]\nrepeat = 3\n");
  CommandResult r = run(sim_run(file) + " --logs '" + dir_ + "/logs'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const json show = json_of("show --json --db '" + db() + "'");
  int retried = 0;
  for (const json& job : show["jobs"]) {
    EXPECT_EQ(job["state"], "ok") << job;
    retried += job["attempts"].get<int>() - 1;
  }
  EXPECT_EQ(retried, 1) << r.output;
  EXPECT_LE(show["peak_memory_used_bytes"].get<uint64_t>(), 143771ull << 20);  // a simulated H200
  EXPECT_THAT(shell("cat '" + dir_ + "/logs/'*/*/*.log").output,
              HasSubstr("out of GPU memory on gpu0 (SIMULATED: its 59.1 GiB on top of the 118 GiB "
                        "the other jobs held"));
}

TEST_F(ColoCli, ExitCodesFollowTheConvention) {
  EXPECT_EQ(run(sim_run(job_file("ok.toml", "exit 0"))).exit_code, 0);
  CommandResult failed = run(sim_run(job_file("failed.toml", "exit 3")));
  EXPECT_EQ(failed.exit_code, 1) << failed.output;
  EXPECT_EQ(run("runs --no-such-flag").exit_code, 2);
  EXPECT_EQ(run("run " + dir_ + "/missing.toml").exit_code, 2);
  CommandResult no_store = run("show --db '" + dir_ + "/none.db'");
  EXPECT_EQ(no_store.exit_code, 3) << no_store.output;
  // SIGINT to colo: its jobs are stopped, the run is recorded cancelled.
  CommandResult cancelled = shell("timeout --preserve-status -s INT 3 env " +
                                  colo(sim_run(job_file("long.toml", "sleep 60"))));
  EXPECT_EQ(cancelled.exit_code, 130) << cancelled.output;
}

TEST_F(ColoCli, MessagesOfTheFirstDefectsFound) {
  ASSERT_EQ(run(sim_run(job_file("one.toml", "exit 0"))).exit_code, 0);
  CommandResult missing = run("show 99 --db '" + db() + "'");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_THAT(missing.output, HasSubstr("`colo runs` lists the runs"));
  EXPECT_THAT(missing.output, Not(HasSubstr("colo list")));

  CommandResult mig = run("mig enable --backend sim");
  EXPECT_EQ(mig.exit_code, 2);
  EXPECT_THAT(mig.output, HasSubstr("or a reboot, and while MIG mode is on"));

  CommandResult zero = run("runs -n 0");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_THAT(zero.output, HasSubstr("--limit: must be a whole number of at least 1, not '0'"));
  EXPECT_THAT(zero.output, Not(HasSubstr("1797693")));

  CommandResult model = run("bench --gpu H100");
  EXPECT_EQ(model.exit_code, 2);
  EXPECT_THAT(model.output, HasSubstr("--gpu: must be a whole number from 0 to 1023, not 'H100'"));
  EXPECT_THAT(model.output, HasSubstr("a GPU model is --gpu-model"));
  EXPECT_THAT(model.output, Not(HasSubstr("1797693")));

  CommandResult banner = run(sim_run(job_file("single.toml", "exit 0")));
  EXPECT_THAT(banner.output, HasSubstr(": 1 job from"));
  EXPECT_THAT(banner.output, HasSubstr(" on 1 GPU ("));
}

// A run that cannot start records nothing and says why in one line.
TEST_F(ColoCli, AMechanismThatCannotStartRecordsNothing) {
  const std::string file = job_file("three.toml", "exit 0", 3);
  const std::string base = "run " + file + " --backend sim --plain --db '" + db() + "'";
  CommandResult mps = shell("PATH=/usr/bin:/bin " + colo(base + " --mechanism mps"));
  EXPECT_EQ(mps.exit_code, 3) << mps.output;
  EXPECT_THAT(mps.output, HasSubstr("--mechanism mps needs the MPS control program"));
  EXPECT_THAT(mps.output, Not(HasSubstr("/usr/bin:/bin")));
  CommandResult mig = shell("PATH=/usr/bin:/bin " + colo(base + " --mechanism mig"));
  EXPECT_EQ(mig.exit_code, 3) << mig.output;
  EXPECT_THAT(mig.output, HasSubstr("the sim backend cannot create"));
  EXPECT_THAT(mig.output, HasSubstr("use --mechanism naive or exclusive"));
  EXPECT_NE(access(db().c_str(), F_OK), 0) << "a run that never started left a store";
}

TEST_F(ColoCli, SimulatingOneJobSaysJobInTheSingular) {
  const std::string file = job_file("one.toml", "exit 0", 1);
  CommandResult sim = run("simulate " + file + " --no-store");
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
  EXPECT_THAT(sim.output, HasSubstr("SIMULATED: 1 job from"));
  // Which event was slowest is the host's timing (CI once saw the one that
  // started nothing), so either count may show, each in its own number.
  EXPECT_THAT(sim.output, ::testing::ContainsRegex("an event that started (0 jobs|1 job)\\)"));
  EXPECT_THAT(sim.output, Not(HasSubstr(" 1 jobs")));
  EXPECT_THAT(sim.output, Not(HasSubstr(" 0 job)")));
}

// `colo simulate --arrivals`: a trace replayed on a cluster of more than 64
// GPUs, each policy's mean completion from submission; a trace's error names
// its file and line and loses nothing (exit 2, nothing simulated).
TEST_F(ColoCli, SimulateReplaysATraceOfArrivalsAndNamesItsErrors) {
  const std::string file = job_file("two.toml", "exit 0", 2);
  const std::string trace = write_file("trace.csv", "time,job,count\n0,j0,300\n1h,j1\n");
  CommandResult sim = run("simulate " + file +
                          " --no-store --gpu-count 128 --policies "
                          "exclusive,auto --arrivals " +
                          trace);
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  EXPECT_THAT(sim.output, HasSubstr("SIMULATED: 301 jobs from"));
  EXPECT_THAT(sim.output, HasSubstr("on 128 x"));
  EXPECT_THAT(sim.output, HasSubstr(": submitted over 1h"));
  EXPECT_THAT(sim.output, HasSubstr("MEAN COMPLETION"));
  EXPECT_THAT(sim.output, ::testing::ContainsRegex("exclusive .* 301 +0 +0"));

  const std::string bad = write_file("bad.csv", "0,j0\n5,j9\n");
  CommandResult refused = run("simulate " + file + " --no-store --arrivals " + bad);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("bad.csv:2: no [[job]] named 'j9' in the job file"));
  EXPECT_THAT(refused.output, Not(HasSubstr("POLICY")));
  EXPECT_NE(run("simulate " + file + " --no-store --gpu-count 1025").exit_code, 0);
}

// The README's commands name files that exist (it once named jobs.toml and
// sweep.toml, which do not), and `colo profiles FILE`, which reads a job file
// without running it, takes its file as written.
TEST_F(ColoCli, TheReadmesCommandsNameFilesThatExist) {
  std::ifstream readme(COLO_SOURCE_DIR "/README.md");
  ASSERT_TRUE(readme) << COLO_SOURCE_DIR "/README.md";
  ASSERT_EQ(run(sim_run(job_file("one.toml", "exit 0"))).exit_code, 0) << "a store to read";
  bool in_shell = false;
  int files = 0;
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind("```", 0) == 0) {
      in_shell = !in_shell && line == "```sh";
      continue;
    }
    if (!in_shell || line.rfind("colo ", 0) != 0) continue;
    const std::string command = line.substr(0, line.find("  #"));
    std::istringstream words(command);
    std::vector<std::string> args;
    for (std::string w; words >> w;) args.push_back(w);
    for (const std::string& a : args) {
      if (a.size() < 6 || a.substr(a.size() - 5) != ".toml") continue;
      ++files;
      EXPECT_EQ(access((COLO_SOURCE_DIR "/" + a).c_str(), R_OK), 0) << line;
    }
    if (args.size() > 1 && args[1] == "profiles") {
      CommandResult r =
          shell("cd " COLO_SOURCE_DIR " && " + colo(command.substr(5) + " --db '" + db() + "'"));
      EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.output;
    }
  }
  EXPECT_GE(files, 10) << "the README's job files";
}

TEST_F(ColoCli, OldFlagSpellingsStillWorkWithANote) {
  const std::string file = job_file("two.toml", "exit 0", 2);
  CommandResult sim = run("simulate " + file + " --gpu H100 --gpus 2 --no-store");
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
  EXPECT_THAT(sim.output, HasSubstr("--gpu is deprecated; write --gpu-model H100"));
  EXPECT_THAT(sim.output, HasSubstr("--gpus is deprecated; write --gpu-count 2"));
  EXPECT_THAT(sim.output, HasSubstr("on 2 x Simulated NVIDIA H100"));
  CommandResult now = run("simulate " + file + " --gpu-model H100-80GB --gpu-count 2 --no-store");
  EXPECT_EQ(now.exit_code, 0) << now.output;
  EXPECT_THAT(now.output, Not(HasSubstr("deprecated")));
  EXPECT_THAT(now.output, HasSubstr("on 2 x Simulated NVIDIA H100"));
  CommandResult devices = run("devices --backend sim --sim-gpu A100-40GB");
  EXPECT_EQ(devices.exit_code, 0) << devices.output;
  EXPECT_THAT(devices.output, HasSubstr("--sim-gpu is deprecated; write --gpu-model A100-40GB"));
  CommandResult mig = run("mig status --backend sim --device 0");
  EXPECT_THAT(mig.output, HasSubstr("--device is deprecated; write --gpu 0"));
  EXPECT_EQ(run("bench --suite paper-uniform -n").exit_code, 2) << "-n is --limit, not --dry-run";
}

TEST_F(ColoCli, JsonOfRunsShowAndProfiles) {
  ASSERT_EQ(run(sim_run(job_file("a.toml", "exit 0", 2))).exit_code, 0);
  ASSERT_EQ(run(sim_run(job_file("b.toml", "exit 4"))).exit_code, 1);
  json runs = json_of("runs --json --db '" + db() + "'");
  ASSERT_TRUE(runs["runs"].is_array());
  ASSERT_EQ(runs["runs"].size(), 2U);
  EXPECT_EQ(runs["runs"][0]["id"], 2);  // newest first
  EXPECT_EQ(runs["runs"][0]["state"], "failed");
  EXPECT_EQ(runs["runs"][1]["state"], "ok");
  EXPECT_EQ(runs["runs"][1]["job_count"], 2);
  EXPECT_EQ(runs["runs"][1]["mechanism"], "naive");
  EXPECT_EQ(runs["runs"][1]["simulated"], true);
  EXPECT_TRUE(runs["runs"][1]["started_ms"].is_number_integer());
  EXPECT_EQ(json_of("runs --json -n 1 --db '" + db() + "'")["runs"].size(), 1U);
  // Filtered by state, name and tag (issue 58): the newest that match, within --limit.
  json failed = json_of("runs --json --state failed --db '" + db() + "'");
  ASSERT_EQ(failed["runs"].size(), 1U);
  EXPECT_EQ(failed["runs"][0]["id"], 2);
  ASSERT_EQ(run("label 1 --name first --tag team=vision --db '" + db() + "'").exit_code, 0);
  json named = json_of("runs --json --name first --tag team --db '" + db() + "'");
  ASSERT_EQ(named["runs"].size(), 1U);
  EXPECT_EQ(named["runs"][0]["id"], 1);
  EXPECT_TRUE(json_of("runs --json --tag team=nlp --db '" + db() + "'")["runs"].empty());
  CommandResult bad = run("runs --state done --db '" + db() + "'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.output, HasSubstr("--state 'done': give running, ok, failed, cancelled or "
                                    "interrupted"));

  json show = json_of("show 1 --json --db '" + db() + "'");
  EXPECT_EQ(show["run"]["id"], 1);
  ASSERT_EQ(show["jobs"].size(), 2U);
  EXPECT_EQ(show["jobs"][0]["state"], "ok");

  json profiles = json_of("profiles --json --db '" + db() + "'");
  ASSERT_TRUE(profiles["profiles"].is_array());
  ASSERT_FALSE(profiles["profiles"].empty());
  const json& p = profiles["profiles"][0];
  for (const char* key : {"signature", "job", "gpu_name", "simulated", "jobs_measured",
                          "peak_memory_bytes", "sm_active_pct", "solo_ms", "source"}) {
    EXPECT_TRUE(p.contains(key)) << key;
  }
  EXPECT_TRUE(profiles["interference_model"].is_string());
}

TEST_F(ColoCli, JsonOfSimulateBenchPlanReportAndDevices) {
  const std::string file = job_file("four.toml", "exit 0", 4);
  json sim = json_of("simulate " + file +
                     " --json --no-store --gpu-count 2 --policies exclusive,mps-2 --deadline 1h");
  EXPECT_EQ(sim["simulated"], true);
  EXPECT_EQ(sim["jobs"], 4);
  EXPECT_EQ(sim["gpu_count"], 2);
  EXPECT_EQ(sim["gpu_model"], "H200");
  ASSERT_EQ(sim["policies"].size(), 2U);
  EXPECT_EQ(sim["policies"][0]["policy"], "exclusive");
  EXPECT_EQ(sim["policies"][0]["jobs_ok"], 4);
  EXPECT_GT(sim["policies"][0]["makespan_ms"].get<int64_t>(), 0);
  ASSERT_EQ(sim["plans"].size(), 2U);
  EXPECT_TRUE(sim["plans"][0]["tried"].is_array());

  json plan =
      json_of("bench --suite paper-uniform --cases 'small/*' --dry-run --json --backend sim");
  EXPECT_EQ(plan["suite"], "paper-uniform");
  ASSERT_FALSE(plan["cases"].empty());
  EXPECT_THAT(plan["cases"][0]["name"].get<std::string>(), ::testing::StartsWith("small/"));
  EXPECT_GT(plan["estimated_total_s"].get<double>(), 0);
  EXPECT_EQ(run("bench --suite paper-uniform --json --backend sim").exit_code, 2);

  ASSERT_EQ(run(sim_run(file)).exit_code, 0);
  json report =
      json_of("report last --no-png --json --out '" + dir_ + "/report' --db '" + db() + "'");
  EXPECT_EQ(report["index_html"], dir_ + "/report/index.html");
  EXPECT_FALSE(report["csv_files"].empty());
  EXPECT_TRUE(report["png_files"].empty());
  EXPECT_TRUE(report["png_note"].is_string());
  EXPECT_EQ(access(report["summary_txt"].get<std::string>().c_str(), R_OK), 0);

  json devices = json_of("devices --json --backend sim --sim-devices 2");
  EXPECT_EQ(devices["simulated"], true);
  EXPECT_EQ(devices["devices"].size(), 2U);
  json mig = json_of("mig plan 3g.40gb --gpu-model H100 --json");
  EXPECT_EQ(mig["ok"], true);
  EXPECT_EQ(mig["placements"][0]["profile"], "3g.40gb");
}

// The live table redraws a terminal, but not one whose TERM is dumb.
TEST_F(ColoCli, TheLiveTableHonoursTermDumb) {
  const std::string file = job_file("tty.toml", "sleep 1", 2);
  auto on_a_terminal = [&](const std::string& term) {
    return shell("TERM=" + term + " script -qec \"" +
                 colo("run " + file + " --backend sim --mechanism naive --db '" + db() + "'") +
                 "\" /dev/null");
  };
  CommandResult redrawn = on_a_terminal("xterm");
  ASSERT_EQ(redrawn.exit_code, 0) << redrawn.output;
  EXPECT_THAT(redrawn.output, HasSubstr("\x1b["));
  CommandResult dumb = on_a_terminal("dumb");
  ASSERT_EQ(dumb.exit_code, 0) << dumb.output;
  EXPECT_THAT(dumb.output, Not(HasSubstr("\x1b[")));
  EXPECT_THAT(dumb.output, HasSubstr("j1 ok after"));
}

TEST_F(ColoCli, ExperimentsListWhatReportTakes) {
  {
    std::unique_ptr<RunStore> store = open_store();
    ASSERT_TRUE(store);
    testing::add_fake_experiment(*store);
  }
  json list = json_of("experiments --json --db '" + db() + "'");
  ASSERT_EQ(list["experiments"].size(), 1U);
  const json& e = list["experiments"][0];
  EXPECT_EQ(e["id"], 1);
  EXPECT_EQ(e["suite"], "paper-uniform");
  EXPECT_GT(e["cases"].get<int>(), 0);
  EXPECT_GT(e["cases_run"].get<int>(), 0);
  EXPECT_LE(e["cases_run"].get<int>(), e["cases"].get<int>());
  CommandResult text = run("experiments --db '" + db() + "'");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("paper-uniform"));
  EXPECT_THAT(text.output, HasSubstr("colo report exp:ID"));
}

TEST_F(ColoCli, RmAndGcRemoveRunsWithTheirLogs) {
  {
    std::unique_ptr<RunStore> store = open_store();
    ASSERT_TRUE(store);
    testing::add_fake_run(*store, testing::FakeRun{}, testing::kFakeT0);  // run 1, in 2023
  }
  ASSERT_EQ(run(sim_run(job_file("new.toml", "echo hello", 2))).exit_code, 0);  // run 2
  json shown = json_of("show 2 --json --db '" + db() + "'");
  const std::string log = shown["jobs"][0]["log_path"].get<std::string>();
  ASSERT_EQ(access(log.c_str(), R_OK), 0) << log;

  CommandResult dry = run("gc --older-than 30d --dry-run --db '" + db() + "'");
  EXPECT_EQ(dry.exit_code, 0) << dry.output;
  EXPECT_THAT(dry.output, HasSubstr("would remove run 1"));
  EXPECT_EQ(json_of("runs --json --db '" + db() + "'")["runs"].size(), 2U);
  CommandResult gc = run("gc --older-than 30d --db '" + db() + "'");
  EXPECT_EQ(gc.exit_code, 0) << gc.output;
  EXPECT_THAT(gc.output, HasSubstr("removed run 1"));
  json left = json_of("runs --json --db '" + db() + "'");
  ASSERT_EQ(left["runs"].size(), 1U);
  EXPECT_EQ(left["runs"][0]["id"], 2);

  CommandResult rm = run("rm 2 --db '" + db() + "'");
  EXPECT_EQ(rm.exit_code, 0) << rm.output;
  EXPECT_THAT(rm.output, HasSubstr("removed run 2 and its 2 job logs"));
  EXPECT_NE(access(log.c_str(), F_OK), 0) << "the job log is still there";
  EXPECT_TRUE(json_of("runs --json --db '" + db() + "'")["runs"].empty());
  CommandResult again = run("rm 2 --db '" + db() + "'");
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_THAT(again.output, HasSubstr("no run #2"));
  EXPECT_EQ(run("rm two --db '" + db() + "'").exit_code, 2);
}

// A run's old samples are thinned, and what colo show reads of them was kept
// first: the same figures after as before.
TEST_F(ColoCli, GcThinsOldSamplesAndShowKeepsItsFigures) {
  {
    std::unique_ptr<RunStore> store = open_store();
    ASSERT_TRUE(store);
    testing::FakeRun fake;
    fake.degree = 2;
    testing::add_fake_run(*store, fake, testing::kFakeT0);  // run 1, in 2023: samples every 500 ms
  }
  auto samples = [&] {
    std::unique_ptr<RunStore> store = open_store();
    auto rows = store->device_samples(1);
    return rows.ok() ? rows->size() : 0;
  };
  const size_t before = samples();
  ASSERT_GT(before, 40U);
  const json shown = json_of("show 1 --json --db '" + db() + "'");

  CommandResult dry = run("gc --thin-samples-after 7d --thin-to 5s --dry-run --db '" + db() + "'");
  EXPECT_EQ(dry.exit_code, 0) << dry.output;
  EXPECT_THAT(dry.output, HasSubstr("would thin run 1's samples to one every 5.0s"));
  EXPECT_EQ(samples(), before);
  CommandResult gc = run("gc --thin-samples-after 7d --thin-to 5s --db '" + db() + "'");
  EXPECT_EQ(gc.exit_code, 0) << gc.output;
  EXPECT_THAT(gc.output, HasSubstr("thinned run 1: "));
  EXPECT_LE(samples(), before / 10 + 2) << "one in ten left: 500 ms to 5 s";
  const json after = json_of("show 1 --json --db '" + db() + "'");
  for (const char* figure : {"energy_j", "mean_sm_active_pct", "peak_memory_used_bytes"})
    EXPECT_EQ(after[figure], shown[figure]) << figure;
  ASSERT_EQ(after["jobs"].size(), shown["jobs"].size());
  for (size_t i = 0; i < shown["jobs"].size(); ++i) {
    for (const char* figure : {"energy_j", "mean_sm_active_pct", "peak_memory_bytes"})
      EXPECT_EQ(after["jobs"][i][figure], shown["jobs"][i][figure]) << figure;
  }
  EXPECT_EQ(run("gc --db '" + db() + "'").exit_code, 2) << "nothing to collect said";
}

TEST_F(ColoCli, ReportRefusesAFolderColoDidNotWriteUnlessForced) {
  ASSERT_EQ(run(sim_run(job_file("r.toml", "exit 0"))).exit_code, 0);
  const std::string mine = dir_ + "/mine";
  write_file("keep.txt", "");
  ASSERT_EQ(shell("mkdir '" + mine + "' && cp '" + dir_ + "/keep.txt' '" + mine + "/'").exit_code,
            0);
  const std::string report = "report last --no-png --db '" + db() + "' --out ";
  CommandResult refused = run(report + "'" + mine + "'");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("colo did not write"));
  EXPECT_NE(access((mine + "/index.html").c_str(), F_OK), 0);
  EXPECT_EQ(run(report + "'" + mine + "' --force").exit_code, 0);
  EXPECT_EQ(access((mine + "/keep.txt").c_str(), F_OK), 0);
  const std::string fresh = dir_ + "/fresh";
  EXPECT_EQ(run(report + "'" + fresh + "'").exit_code, 0);
  CommandResult again = run(report + "'" + fresh + "'");  // colo's own: overwritten
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

// Long work shows a progress line on a terminal, and nothing extra when piped.
TEST_F(ColoCli, ProgressLineOnATerminalOnly) {
  const std::string simulate =
      colo("simulate " + job_file("p.toml", "exit 0", 3) + " --no-store --policies exclusive,auto");
  CommandResult terminal = shell("TERM=xterm script -qec \"" + simulate + "\" /dev/null");
  ASSERT_EQ(terminal.exit_code, 0) << terminal.output;
  EXPECT_THAT(terminal.output, HasSubstr("\rcolo: simulate: 2 of 2 policies done, 3 jobs"));
  EXPECT_THAT(terminal.output, HasSubstr("\r\x1b[K"));  // cleared before the results
  CommandResult piped = shell(simulate);
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_THAT(piped.output, Not(HasSubstr("colo: simulate:")));
  EXPECT_THAT(piped.output, Not(HasSubstr("\r")));
  EXPECT_THAT(shell("TERM=dumb script -qec \"" + simulate + "\" /dev/null").output,
              Not(HasSubstr("colo: simulate:")));

  ASSERT_EQ(run(sim_run(job_file("r.toml", "exit 0"))).exit_code, 0);
  const std::string report =
      colo("report last --no-png --db '" + db() + "' --out '" + dir_ + "/r'");
  CommandResult shown = shell("TERM=xterm script -qec \"" + report + "\" /dev/null");
  EXPECT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_THAT(shown.output, HasSubstr("colo: report: writing the HTML and CSV"));
  EXPECT_THAT(shell(report).output, Not(HasSubstr("colo: report:")));
}

}  // namespace
}  // namespace colo
