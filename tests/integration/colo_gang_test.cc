// Gangs end to end (issue 23): jobs with `gpus = N` beside one-GPU jobs on 2
// and 4 simulated GPUs, under `colo run`, `colo serve` and `colo simulate`.
// The gang is a stand-in for torchrun (ranks.sh): it starts one rank per GPU
// and, like torchrun, exits as soon as one rank fails.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "integration_util.h"
#include "sql_rows.h"

namespace colo {
namespace {

class GangTest : public ColoTestDir {
 protected:
  void SetUp() override {
    ColoTestDir::SetUp();
    // ranks.sh N SECONDS: rank r logs "rank r start|end <time> <pid> <attempt>"
    // to ranks.log; rank 0 reports progress. With fail-once present, rank 1
    // removes it and fails at once, and the launcher exits 1 without
    // stopping the other ranks (colo must).
    write_file("ranks.sh", R"sh(
n=$1; secs=$2
echo "launcher: gpus=$COLO_GPUS count=$COLO_GPU_COUNT cvd=$CUDA_VISIBLE_DEVICES port=$COLO_PORT master=$MASTER_PORT arg=$3"
for r in $(seq 0 $((n-1))); do
  (
    echo "rank $r start $(date +%s.%N) $BASHPID" >> ranks.log
    if [ $r = 0 ]; then echo $BASHPID >> rank0-pids; fi
    # Fails once rank 0 noted its pid: on a loaded machine rank 0 once
    # had not, and the test could not see it stopped.
    if [ $r = 1 ] && [ -f fail-once ]; then
      until [ -s rank0-pids ]; do sleep 0.02; done
      rm fail-once; exit 1
    fi
    sleep $secs
    echo "rank $r end $(date +%s.%N) $BASHPID" >> ranks.log
    if [ $r = 0 ]; then printf '{"event":"epoch_end","epoch":1,"samples":100}\n' >> "$COLO_PROGRESS_FILE"; fi
  ) &
done
for r in $(seq 1 $n); do wait -n || exit 1; done
)sh");
  }

  std::string gang_job(int gpus, double seconds) const {
    return "[[job]]\nname = \"ddp\"\ngpus = " + std::to_string(gpus) +
           "\ngpu_memory = \"10GiB\"\nsolo_time = \"" + std::to_string(seconds) +
           "s\"\nsm_activity = 40\n"
           "command = [\"bash\", \"ranks.sh\", \"{gpus}\", \"" +
           std::to_string(seconds) + "\", \"--master_port={port}\"]\n\n";
  }
  static std::string singles(const std::string& name, int n, double seconds) {
    return "[[job]]\nname = \"" + name + "\"\nrepeat = " + std::to_string(n) +
           "\ncommand = [\"sleep\", \"" + std::to_string(seconds) + "\"]\nsolo_time = \"" +
           std::to_string(seconds) + "s\"\ngpu_memory = \"1GiB\"\nsm_activity = 40\n\n";
  }
  std::string colo(const std::string& args) const {
    return "cd '" + dir_ + "' && COLO_HOME='" + dir_ + "/home' " + std::string(COLO_BINARY) + " " +
           args;
  }
  std::vector<std::string> lines_of(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  // Rank lines of one kind ("start", "end"): their times.
  std::vector<double> rank_times(const std::string& kind) const {
    std::vector<double> times;
    for (const std::string& line : lines_of("ranks.log")) {
      std::istringstream in(line);
      std::string word, what;
      int rank = 0;
      double t = 0;
      in >> word >> rank >> what >> t;
      if (what == kind) times.push_back(t);
    }
    return times;
  }
  std::vector<std::string> sql(const std::string& query) const { return sql_rows(db(), query); }
  // Job names in the order `colo run` started them.
  static std::vector<std::string> started(const std::string& output) {
    std::vector<std::string> names;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
      size_t at = line.find(" started on ");
      if (at != std::string::npos && line.find(' ') == at) names.push_back(line.substr(0, at));
    }
    return names;
  }
};

class GangOnGpus : public GangTest, public testing::WithParamInterface<int> {};

TEST_P(GangOnGpus, StartsOnAllItsGpusBesideSixOneGpuJobsAndItsRanksEndTogether) {
  const int gpus = GetParam();
  std::string file = write_file(
      "jobs.toml", singles("before", 1, 1) + gang_job(gpus, 1.5) + singles("after", 6, 1));
  CommandResult r =
      shell(colo("run jobs.toml --backend sim --sim-devices " + std::to_string(gpus) +
                 " --policy fixed --max-per-gpu 2 --mechanism naive --plain --db " + db()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Started once, on all its GPUs.
  std::string all;
  for (int d = 0; d < gpus; ++d) all += (d ? "," : "") + std::to_string(d);
  EXPECT_NE(
      r.output.find("ddp started on gpus " + all + " (a gang of " + std::to_string(gpus) + ")"),
      std::string::npos)
      << r.output;
  std::vector<std::string> names = started(r.output);
  EXPECT_EQ(std::count(names.begin(), names.end(), "ddp"), 1) << r.output;
  EXPECT_EQ(names.size(), 8u) << r.output;
  EXPECT_EQ(sql("SELECT gpus FROM jobs WHERE name = 'ddp'"), std::vector<std::string>{all});
  EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE state = 'ok'"), std::vector<std::string>{"8"});
  // What the launcher was given: N GPUs, its port in place of {port}.
  std::string log = shell("cat \"$(ls " + dir_ + "/home/runs/*/1/*-ddp.log 2>/dev/null || " +
                          "find " + dir_ + " -name '*-ddp.log' | head -n 1)\"")
                        .output;
  EXPECT_NE(log.find("gpus=" + all + " count=" + std::to_string(gpus)), std::string::npos) << log;
  const size_t cvd = log.find("cvd=");
  ASSERT_NE(cvd, std::string::npos) << log;
  const std::string uuids = log.substr(cvd + 4, log.find(' ', cvd) - cvd - 4);
  EXPECT_EQ(std::count(uuids.begin(), uuids.end(), ','), gpus - 1) << uuids;
  const size_t port = log.find("port=");
  const std::string port_value = log.substr(port + 5, log.find(' ', port) - port - 5);
  EXPECT_GT(std::atoi(port_value.c_str()), 0) << log;
  EXPECT_NE(log.find("master=" + port_value + " arg=--master_port=" + port_value),
            std::string::npos)
      << log;
  // Its ranks ran at once: they started and ended within half a second.
  std::vector<double> starts = rank_times("start"), ends = rank_times("end");
  ASSERT_EQ(starts.size(), static_cast<size_t>(gpus));
  ASSERT_EQ(ends.size(), static_cast<size_t>(gpus));
  EXPECT_LT(*std::max_element(starts.begin(), starts.end()) -
                *std::min_element(starts.begin(), starts.end()),
            0.5);
  EXPECT_LT(
      *std::max_element(ends.begin(), ends.end()) - *std::min_element(ends.begin(), ends.end()),
      0.5);
}

INSTANTIATE_TEST_SUITE_P(TwoAndFour, GangOnGpus, testing::Values(2, 4),
                         [](const testing::TestParamInfo<int>& p) {
                           return std::to_string(p.param) + "Gpus";
                         });

TEST_F(GangTest, ARankThatFailsRunsTheGangAgainWholeWithNothingLeftRunning) {
  write_file("fail-once", "");
  write_file("jobs.toml", gang_job(2, 3) + singles("single", 2, 1));
  CommandResult r =
      shell(colo("run jobs.toml --backend sim --sim-devices 2 --mechanism naive "
                 "--policy fixed --max-per-gpu 2 --plain --db " +
                 db()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a rank failed, so the gang runs again whole (attempt 2 of 3)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(sql("SELECT state, attempts FROM jobs j JOIN (SELECT job_id, max(attempt) AS "
                "attempts FROM job_attempts GROUP BY job_id) a ON a.job_id = j.id WHERE name = "
                "'ddp'"),
            std::vector<std::string>{"ok|2"});
  // Rank 0 of the first attempt (3 s of sleep left when rank 1 failed) was
  // stopped with its gang: no rank of any attempt is still running.
  std::vector<std::string> pids = lines_of("rank0-pids");
  ASSERT_EQ(pids.size(), 2u);
  for (const std::string& pid : pids) {
    EXPECT_NE(::kill(std::stoi(pid), 0), 0) << "rank 0 (pid " << pid << ") still runs";
  }
  EXPECT_EQ(rank_times("end").size(), 2u) << "only the second attempt's two ranks ended";
}

TEST_F(GangTest, AGangBehindAStreamOfOneGpuJobsStartsWhenItsKeptGpusEmpty) {
  write_file("long.toml", singles("long", 2, 3));
  write_file("gang.toml", gang_job(2, 1));
  write_file("stream.toml", singles("stream", 6, 1));
  const std::string env = "COLO_HOME='" + dir_ + "/home' COLO_LOCK_DIR='" + dir_ + "/locks' ";
  const std::string bin = env + std::string(COLO_BINARY) + " ";
  CommandResult started =
      shell("cd '" + dir_ + "' && " + bin + "serve --backend sim --sim-devices 2 --db " + db() +
            " --policy fixed --max-per-gpu 1 --mechanism naive > serve.log 2>&1 & "
            "echo $!");
  const pid_t service = std::stoi(started.output);
  ASSERT_TRUE(eventually([&] { return shell(bin + "queue").exit_code == 0; }, 20'000));
  ASSERT_EQ(shell("cd '" + dir_ + "' && " + bin + "submit long.toml").exit_code, 0);
  ASSERT_TRUE(eventually(
      [&] { return sql("SELECT 1 FROM service_jobs WHERE state = 'running'").size() == 2; },
      10'000));
  ASSERT_EQ(shell("cd '" + dir_ + "' && " + bin + "submit gang.toml").exit_code, 0);
  ASSERT_EQ(shell("cd '" + dir_ + "' && " + bin + "submit stream.toml").exit_code, 0);
  CommandResult waited = shell(bin + "wait 1 2 3 4 5 6 7 8 9");
  ::kill(service, SIGTERM);
  eventually([&] { return ::kill(service, 0) != 0; }, 20'000);
  std::string log = shell("cat '" + dir_ + "/serve.log'").output;
  ASSERT_EQ(waited.exit_code, 0) << waited.output << log;
  // The stream never took a GPU kept for the gang (the fixed policy expects
  // no ends, so nothing backfills): the gang started when the long jobs
  // ended, before every job of the stream.
  EXPECT_NE(log.find("gpu0, gpu1 kept for it: nothing new starts there"), std::string::npos) << log;
  auto start_of = [&](const std::string& where) {
    std::vector<std::string> rows = sql("SELECT min(started_ms) FROM jobs WHERE " + where);
    return rows.empty() || rows[0].empty() ? int64_t{-1} : std::stoll(rows[0]);
  };
  auto end_of = [&](const std::string& where) {
    std::vector<std::string> rows = sql("SELECT max(ended_ms) FROM jobs WHERE " + where);
    return rows.empty() || rows[0].empty() ? int64_t{-1} : std::stoll(rows[0]);
  };
  const int64_t gang_start = start_of("name = 'ddp'");
  const int64_t long_end = end_of("name LIKE 'long%'");
  ASSERT_GT(gang_start, 0) << log;
  EXPECT_LT(gang_start, start_of("name LIKE 'stream%'")) << log;
  // The bound: the jobs on its kept GPUs when it came (3 s each) have ended,
  // then it starts at the next placement (within 2 s).
  EXPECT_GE(gang_start, long_end - 100) << log;
  EXPECT_LE(gang_start, long_end + 2'000) << log;
}

TEST_F(GangTest, SimulateAndRunAgreeOnTheOrderOfStarts) {
  write_file("jobs.toml", singles("first", 2, 2) + gang_job(2, 1) + singles("stream", 4, 1));
  CommandResult sim =
      shell(colo("simulate jobs.toml --gpu-count 2 --policies exclusive --json "
                 "--db " +
                 dir_ + "/sim.db"));
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  nlohmann::json j = nlohmann::json::parse(sim.output.substr(sim.output.find('{')), nullptr, false);
  ASSERT_TRUE(j.is_object()) << sim.output;
  std::vector<std::string> simulated = j["policies"][0]["starts"];
  CommandResult run =
      shell(colo("run jobs.toml --backend sim --sim-devices 2 --mechanism "
                 "exclusive --plain --db " +
                 db()));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(started(run.output), simulated) << run.output << sim.output;
  ASSERT_FALSE(simulated.empty());
  EXPECT_EQ(simulated.front(), "ddp") << "gangs are placed first at each event";
}

TEST_F(GangTest, SlurmSubmitAsksForTheGpusItsGangsNeedOnEachNode) {
  write_file("jobs.toml", gang_job(2, 1) + singles("single", 2, 1));
  CommandResult too_few = shell(
      colo("slurm submit jobs.toml --backend sim --dry-run --dir " + dir_ + "/sub1 --db " + db()));
  EXPECT_NE(too_few.exit_code, 0) << too_few.output;
  EXPECT_NE(too_few.output.find("job 'ddp' needs 2 GPUs at once"), std::string::npos)
      << too_few.output;
  EXPECT_NE(too_few.output.find("--gpus-per-node 2"), std::string::npos) << too_few.output;
  CommandResult enough =
      shell(colo("slurm submit jobs.toml --backend sim --dry-run "
                 "--gpus-per-node 2 --dir " +
                 dir_ + "/sub2 --db " + db()));
  EXPECT_EQ(enough.exit_code, 0) << enough.output;
}

}  // namespace
}  // namespace colo
