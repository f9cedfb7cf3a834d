// End-to-end tests of `colo serve` and its clients: the real binary as a
// background service, real clients, real child processes, a real SQLite
// file, on the simulated GPU backend; SIGKILL, SIGHUP, two colo processes on
// one machine, a second Unix user.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "analysis/stored.h"
#include "integration_util.h"
#include "sql_rows.h"

namespace colo {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class ColoServe : public ColoTestDir {
 protected:
  void TearDown() override {
    if (service_pid_ > 0) stop_service();
    ColoTestDir::TearDown();
  }

  std::string env() const {
    return "COLO_HOME='" + dir_ + "/home' COLO_LOCK_DIR='" + dir_ + "/locks' ";
  }
  std::string colo(const std::string& args) const {
    return env() + std::string(COLO_BINARY) + " " + args;
  }

  // Starts `colo serve ARGS` in the background, its output in serve.log, and
  // waits until it answers. Its store is db(), or with `default_db` the
  // default one (COLO_HOME's colo.db).
  void start_service(const std::string& args, bool default_db = false) {
    CommandResult r = shell(
        colo("serve --backend sim " + (default_db ? std::string() : "--db " + db() + " ") + args) +
        " >> '" + dir_ + "/serve.log' 2>&1 & echo $!");
    service_pid_ = std::stoi(r.output);
    ASSERT_TRUE(eventually([&] { return shell(colo("queue")).exit_code == 0; }, 20'000))
        << service_log();
  }
  void kill_service(int sig) {
    ::kill(service_pid_, sig);
    eventually([&] { return ::kill(service_pid_, 0) != 0 || is_zombie(service_pid_); }, 30'000);
    service_pid_ = 0;
  }
  void stop_service() { kill_service(SIGTERM); }
  static bool is_zombie(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    size_t paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
  }
  std::string service_log() const { return shell("cat '" + dir_ + "/serve.log'").output; }

  // The fake MPS control program first on PATH, for --mechanism mps.
  void fake_mps_on_path() {
    std::string bin = dir_ + "/bin";
    shell("mkdir -p '" + bin + "' && cp '" COLO_FAKE_MPS_CONTROL "' '" + bin +
          "/nvidia-cuda-mps-control'");
    setenv("PATH", (bin + ":" + std::getenv("PATH")).c_str(), 1);
  }

  json queue() const {
    CommandResult r = shell(colo("queue --json"));
    return r.exit_code == 0 ? json::parse(r.output, nullptr, false) : json();
  }
  // The reason of a queued job that starts with `prefix`, once one does
  // (within 20 s); "" if none did.
  std::string queued_reason(const std::string& prefix) const {
    std::string reason;
    eventually(
        [&] {
          json q = queue();
          if (!q.is_object()) return false;
          for (const json& j : q["jobs"]) {
            if (j["state"] == "queued" && j.value("reason", "").rfind(prefix, 0) == 0)
              reason = j["reason"];
          }
          return !reason.empty();
        },
        20'000);
    return reason;
  }
  int count_in_state(const std::string& state) const {
    json q = queue();
    if (!q.is_object()) return -1;
    return static_cast<int>(std::count_if(q["jobs"].begin(), q["jobs"].end(),
                                          [&](const json& j) { return j["state"] == state; }));
  }

  std::vector<int64_t> submit(const std::string& file) const {
    CommandResult r = shell(colo("submit --json " + file));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    json j = json::parse(r.output.substr(r.output.find('{')), nullptr, false);
    return j.is_object() ? j["ids"].get<std::vector<int64_t>>() : std::vector<int64_t>{};
  }

  // `colo wait` on every job of `ids`.
  CommandResult wait_all(const std::vector<int64_t>& ids) const {
    std::string args;
    for (int64_t id : ids) args += " " + std::to_string(id);
    return shell(colo("wait" + args));
  }

  // Rows of a query on the store, each row's columns joined by '|'.
  std::vector<std::string> sql(const std::string& query) const { return sql_rows(db(), query); }

  // A job that appends "start ID" and "end ID" to marks, with `epochs`
  // epochs of `seconds` each reported in between. With `leftover`, it first
  // starts a minute-long process of its own, whose pid goes to leftovers: a
  // process that outlives the job's main one when colo dies.
  std::string job(const std::string& name, int epochs, double seconds, int repeat = 1,
                  bool leftover = false) const {
    return "[[job]]\nname = \"" + name + "\"\nrepeat = " + std::to_string(repeat) +
           "\ncommand = [\"sh\", \"-c\", \"" +
           (leftover ? "sleep 60 & echo $! >> '" + dir_ + "/leftovers'; " : std::string()) +
           "echo start $COLO_JOB_ID >> '" + dir_ + "/marks'; for e in $(seq 1 " +
           std::to_string(epochs) + "); do sleep " + std::to_string(seconds) +
           "; printf '{\\\"event\\\":\\\"epoch_end\\\",\\\"epoch\\\":%d,\\\"samples\\\":100}\\\\n' "
           "$e >> \\\"$COLO_PROGRESS_FILE\\\"; done; echo end $COLO_JOB_ID >> '" +
           dir_ + "/marks'\"]\n";
  }
  std::vector<std::string> marks() const { return lines_of("marks"); }
  std::vector<std::string> lines_of(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  pid_t service_pid_ = 0;
};

TEST_F(ColoServe, SubmitCrashRestartEveryJobEndsOkExactlyOnce) {
  // The jobs' main processes die with colo (PR_SET_PDEATHSIG); what they
  // started lives on until the restarted service stops it.
  std::string a = write_file("a.toml", job("alpha", 6, 0.4, 2, /*leftover=*/true));
  std::string b = write_file("b.toml", job("beta", 6, 0.4, 2));
  start_service("--policy fixed --max-per-gpu 2 --mechanism naive --grace 1s");
  std::vector<int64_t> ids = submit(a);
  std::vector<int64_t> more = submit(b);  // a second client
  ids.insert(ids.end(), more.begin(), more.end());
  ASSERT_EQ(ids.size(), 4u);
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 2; }, 20'000)) << service_log();
  std::this_thread::sleep_for(std::chrono::milliseconds(900));  // an epoch or two in

  kill_service(SIGKILL);
  start_service("--policy fixed --max-per-gpu 2 --mechanism naive --grace 1s");
  CommandResult waited = wait_all(ids);
  ASSERT_EQ(waited.exit_code, 0) << waited.output << service_log();

  // Every job ended ok once, in the service's queue and in the attempts.
  std::vector<std::string> rows = sql("SELECT id, state, attempts FROM service_jobs ORDER BY id");
  ASSERT_EQ(rows.size(), 4u);
  int restarted = 0;
  for (const std::string& row : rows) {
    EXPECT_NE(row.find("|ok|"), std::string::npos) << row;
    restarted += row.back() == '2';
    EXPECT_TRUE(row.back() == '1' || row.back() == '2') << row;
  }
  EXPECT_EQ(restarted, 2) << "the two that ran when the service was killed";
  EXPECT_EQ(sql("SELECT service_job_id FROM jobs WHERE state = 'ok' GROUP BY service_job_id "
                "HAVING count(*) = 1")
                .size(),
            4u);
  EXPECT_EQ(sql("SELECT id FROM jobs WHERE state = 'ok'").size(), 4u) << "nothing duplicated";
  EXPECT_EQ(sql("SELECT id FROM jobs WHERE state = 'interrupted'").size(), 2u)
      << "each interrupted attempt recorded";
  EXPECT_EQ(sql("SELECT a.attempt FROM job_attempts a JOIN jobs j ON a.job_id = j.id "
                "WHERE a.state = 'interrupted' AND a.attempt = 1")
                .size(),
            2u);
  EXPECT_EQ(sql("SELECT j.service_job_id FROM job_attempts a JOIN jobs j ON a.job_id = j.id "
                "WHERE a.state = 'ok' GROUP BY j.service_job_id")
                .size(),
            4u)
      << "each job's ok attempt, numbered on from the interrupted one";
  EXPECT_EQ(sql("SELECT 1 FROM job_attempts WHERE state = 'ok' AND attempt = 2").size(), 2u);
  std::map<std::string, int> ends;
  int starts = 0;
  for (const std::string& m : marks()) {
    if (m.rfind("end ", 0) == 0) ++ends[m];
    starts += m.rfind("start ", 0) == 0;
  }
  EXPECT_EQ(ends.size(), 4u);
  for (const auto& [line, n] : ends) EXPECT_EQ(n, 1) << line;
  EXPECT_EQ(starts, 6);
  EXPECT_NE(service_log().find("running it again (attempt 2)"), std::string::npos);
  EXPECT_NE(service_log().find(" leftover job processes of run 1"), std::string::npos)
      << service_log();
  std::vector<std::string> leftovers = lines_of("leftovers");
  EXPECT_EQ(leftovers.size(), 4u) << "one per attempt";
  for (const std::string& pid : leftovers) {
    EXPECT_TRUE(eventually(
        [&] {
          const pid_t p = std::stoi(pid);
          return ::kill(p, 0) != 0 || is_zombie(p);
        },
        10'000))
        << "leftover " << pid << " still runs";
  }
}

// The service's policy is its own: a job file's [run] policy is ignored,
// and the warning names the policy that runs (it once named none).
TEST_F(ColoServe, SubmitWarnsThatAJobFilesPolicyIsIgnoredNamingTheServicesPolicy) {
  std::string file = write_file("jobs.toml", "[run]\npolicy = \"auto\"\n" + job("named", 1, 0.1));
  start_service("--policy fixed --max-per-gpu 2 --mechanism naive");
  CommandResult r = shell(colo("submit " + file));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(it runs fixed, up to 2 jobs per GPU); ignored"), std::string::npos)
      << r.output;
  EXPECT_EQ(queue()["service"]["policy"], "fixed, up to 2 jobs per GPU");
}

// Messages about one job say "job" once, and one of anything is singular
// (they once said "job 1: job 1 has already ended" and "submitted 1 jobs").
TEST_F(ColoServe, OneJobIsNamedOnceAndInTheSingular) {
  std::string file = write_file("one.toml", job("single", 1, 0.1));
  start_service("--policy fixed --max-per-gpu 1 --mechanism naive");
  CommandResult ran = shell(colo("run " + file));
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ran.output.find("submitted 1 job (1)"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("\n1 job: 1 ok, 0 not ok"), std::string::npos) << ran.output;
  CommandResult again = shell(colo("cancel 1"));
  EXPECT_NE(again.exit_code, 0);
  EXPECT_EQ(again.output, "colo: job 1 has already ended (ok)\n");
  // Many ids as ranges (a sweep of 10,000 once printed every id).
  CommandResult three = shell(colo("submit " + write_file("three.toml", job("three", 1, 0.1, 3))));
  EXPECT_EQ(three.output, "submitted 3 jobs: 2-4; submission 1/2 (colo show 1/2)\n");
  EXPECT_EQ(queue()["service"]["policy"], "fixed, up to 1 job per GPU");
}

// Issue 33 (5): each submission is a part of the service's run that can be
// named at submission (colo submit --name, colo run --name through the
// service), listed under the run, shown alone and compared with another.
TEST_F(ColoServe, NamedSubmissionsAreShownAloneAndCompared) {
  start_service("--policy fixed --max-per-gpu 2 --mechanism naive");
  CommandResult a = shell(colo("submit " + write_file("a.toml", job("alpha", 1, 0.1, 2)) +
                               " --name sweep-a --tag model=r26 --note 'two of them'"));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_THAT(a.output, HasSubstr("submission 1/1 (colo show sweep-a)"));
  CommandResult b =
      shell(colo("run " + write_file("b.toml", job("beta", 1, 0.1)) + " --name sweep-b"));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  ASSERT_EQ(wait_all({1, 2, 3}).exit_code, 0) << service_log();

  CommandResult runs = shell(colo("runs --db " + db()));
  EXPECT_THAT(runs.output, HasSubstr("1/1  sweep-a model=r26")) << runs.output;
  EXPECT_THAT(runs.output, HasSubstr("1/2  sweep-b")) << runs.output;
  CommandResult shown = shell(colo("show sweep-a --db " + db()));
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_THAT(shown.output, HasSubstr("Submission 1/1"));
  EXPECT_THAT(shown.output, HasSubstr("Note two of them"));
  EXPECT_THAT(shown.output, HasSubstr("alpha"));
  EXPECT_THAT(shown.output, Not(HasSubstr("beta")));
  json alone = json::parse(shell(colo("show 1/2 --json --db " + db())).output, nullptr, false);
  ASSERT_TRUE(alone.is_object());
  EXPECT_EQ(alone["jobs"].size(), 1u);
  EXPECT_EQ(alone["submission"]["name"], "sweep-b");
  CommandResult both = shell(colo("show sweep-a sweep-b --db " + db()));
  ASSERT_EQ(both.exit_code, 0) << both.output;
  EXPECT_THAT(both.output, HasSubstr("Run #1/1 sweep-a against run #1/2 sweep-b"));
  EXPECT_THAT(both.output, HasSubstr("2: all ok"));
  CommandResult relabel = shell(colo("label sweep-a --name x --db " + db()));
  EXPECT_EQ(relabel.exit_code, 2);
  EXPECT_THAT(relabel.output, HasSubstr("a submission is named when it is submitted"));
}

// Issue 58 (8): `colo cancel` takes ranges as colo submit prints them, a
// submission (RUN/SUB or its name) and --mine; `colo export mlflow` and
// `colo wait` take the same forms.
TEST_F(ColoServe, CancelTakesARangeASubmissionAndMine) {
  start_service("--policy fixed --mechanism naive");
  ASSERT_EQ(shell(colo("drain")).exit_code, 0) << service_log();
  const std::string file = write_file("four.toml", job("four", 1, 0.1, 4));
  CommandResult first = shell(colo("submit " + file));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("submitted 4 jobs: 1-4; submission 1/1"));
  CommandResult second = shell(colo("submit " + file + " --name later"));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  CommandResult third = shell(colo("submit " + file));
  ASSERT_EQ(third.exit_code, 0) << third.output;

  CommandResult range = shell(colo("cancel 2-3"));
  EXPECT_EQ(range.exit_code, 0) << range.output;
  EXPECT_THAT(range.output, HasSubstr("job 2: cancelling\njob 3: cancelling\n"));
  CommandResult by_name = shell(colo("cancel later"));
  EXPECT_EQ(by_name.exit_code, 0) << by_name.output;
  EXPECT_THAT(by_name.output, HasSubstr("job 5: cancelling\njob 6: cancelling\njob 7: cancelling\n"
                                        "job 8: cancelling\n"));
  CommandResult by_id = shell(colo("cancel 1/3"));
  EXPECT_EQ(by_id.exit_code, 0) << by_id.output;
  EXPECT_THAT(by_id.output, HasSubstr("job 9: cancelling"));
  CommandResult bad = shell(colo("cancel 21-12"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("'21-12' is no range"));
  EXPECT_THAT(bad.output, HasSubstr("colo cancel takes a job id (12), a range of job ids (12-21)"));
  CommandResult mine = shell(colo("cancel --mine"));
  EXPECT_EQ(mine.exit_code, 0) << mine.output;
  EXPECT_THAT(mine.output, HasSubstr("job 1: cancelling\njob 4: cancelling\n"));
  EXPECT_THAT(mine.output, Not(HasSubstr("job 2:")));
  CommandResult none = shell(colo("cancel --mine"));
  EXPECT_EQ(none.exit_code, 0) << none.output;
  EXPECT_THAT(none.output, HasSubstr("nothing to cancel"));
  ASSERT_TRUE(eventually([&] { return count_in_state("cancelled") == 12; }, 20'000))
      << service_log();
  CommandResult waited = shell(colo("wait 1-12"));
  EXPECT_EQ(waited.exit_code, 1) << waited.output;  // ended, not ok
}

// Issue 58 (8): a submission exported by its name or RUN/SUB is its jobs
// alone, as an MLflow experiment of its own.
TEST_F(ColoServe, ExportTakesASubmissionByNameOrRunSlashSub) {
  start_service("--policy fixed --max-per-gpu 2 --mechanism naive");
  ASSERT_EQ(
      shell(colo("submit " + write_file("a.toml", job("alpha", 1, 0.1, 2)) + " --name sweep-a"))
          .exit_code,
      0);
  ASSERT_EQ(shell(colo("submit " + write_file("b.toml", job("beta", 1, 0.1)))).exit_code, 0);
  ASSERT_EQ(wait_all({1, 2, 3}).exit_code, 0) << service_log();
  const std::string to = " --db " + db() + " --to '" + dir_ + "/mlruns'";
  CommandResult by_name = shell(colo("export mlflow sweep-a" + to));
  ASSERT_EQ(by_name.exit_code, 0) << by_name.output;
  EXPECT_THAT(by_name.output, HasSubstr("colo submission 1/1: sweep-a"));
  EXPECT_THAT(by_name.output, HasSubstr("sweep-a': 2 runs")) << by_name.output;
  CommandResult by_id = shell(colo("export mlflow 1/2" + to));
  ASSERT_EQ(by_id.exit_code, 0) << by_id.output;
  EXPECT_THAT(by_id.output, HasSubstr("colo submission 1/2"));
  EXPECT_THAT(by_id.output, HasSubstr("b.toml': 1 runs")) << by_id.output;
}

// Issue 33 (3): `colo submit --resume` queues again, through the service,
// the jobs of a submission that did not end ok, with their checkpoints.
TEST_F(ColoServe, SubmitResumeRunsTheUnfinishedJobsWithTheirCheckpoints) {
  start_service("--policy fixed --max-per-gpu 2 --mechanism naive");
  // ckpt fails once, leaving its state in its checkpoint directory.
  const std::string file = write_file("r.toml", R"([[job]]
name = "fine"
command = ["true"]

[[job]]
name = "ckpt"
command = ["sh", "-c", """if [ -e "$COLO_CHECKPOINT_DIR/s" ]; then
  echo resumed from $(cat "$COLO_CHECKPOINT_DIR/s")
else
  echo 7 > "$COLO_CHECKPOINT_DIR/s"; exit 3
fi"""]
)");
  CommandResult first = shell(colo("submit " + file + " --name first"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(wait_all({1, 2}).exit_code, 0);  // ckpt failed

  CommandResult neither = shell(colo("submit"));
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_THAT(neither.output, HasSubstr("a job file, or --resume SUB"));
  CommandResult resumed = shell(colo("submit --resume first"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output << service_log();
  EXPECT_THAT(resumed.output,
              HasSubstr("resuming submission first: 1 job that did not end ok (1 with a "
                        "checkpoint directory); 1 job ended ok and is not run again"));
  EXPECT_THAT(resumed.output, HasSubstr("submitted 1 job: 3; submission 1/2"));
  ASSERT_EQ(wait_all({3}).exit_code, 0) << service_log();
  EXPECT_EQ(shell(colo("logs 3")).output, "resumed from 7\n");
  CommandResult again = shell(colo("submit --resume 1/1"));
  EXPECT_NE(again.exit_code, 0);
  EXPECT_THAT(again.output, HasSubstr("resumed already, as job 3"));
}

// Issue 58 (9, 10): a resumed submission carries the name and tags of the
// one it resumes and the link both ways; `colo show` joins its job's epochs
// with the earlier attempt's; its MLflow export names who ran it, tags the
// submission and holds the job's log.
TEST_F(ColoServe, AResumedSubmissionCarriesItsLineageAndItsExportWhoRanWhat) {
  start_service("--policy fixed --max-per-gpu 2 --mechanism naive");
  const std::string file = write_file("r.toml", R"([[job]]
name = "ckpt"
command = ["sh", "-c", """e=$(cat "$COLO_CHECKPOINT_DIR/e" 2>/dev/null || echo 0)
while [ $e -lt 3 ]; do
  e=$((e + 1)); echo $e > "$COLO_CHECKPOINT_DIR/e"
  printf '{"event":"epoch_end","epoch":%d,"metrics":{"loss":%d}}\n' $e $((10 - e)) >> "$COLO_PROGRESS_FILE"
  echo "epoch $e"
  if [ $e -eq 2 ] && [ ! -e "$COLO_CHECKPOINT_DIR/once" ]; then touch "$COLO_CHECKPOINT_DIR/once"; exit 3; fi
done"""]
restart = "never"
)");
  ASSERT_EQ(shell(colo("submit " + file + " --name first --tag model=r26 --tag team=a")).exit_code,
            0);
  EXPECT_NE(wait_all({1}).exit_code, 0) << service_log();  // failed after epoch 2
  // Its tags carried: one removed (`--tag KEY=`), the other kept.
  CommandResult resumed = shell(colo("submit --resume first --tag team="));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output << service_log();
  EXPECT_THAT(resumed.output, HasSubstr("submission 1/2"));
  ASSERT_EQ(wait_all({2}).exit_code, 0) << service_log();

  // `colo wait` answers once the store holds the job's end and so its events.
  CommandResult shown = shell(colo("show 1/2 --json --db " + db()));
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  nlohmann::json j = nlohmann::json::parse(shown.output);
  EXPECT_EQ(j["submission"]["name"], "first") << shown.output;
  EXPECT_EQ(j["submission"]["tags"], (nlohmann::json{{"model", "r26"}}));
  EXPECT_EQ(j["submission"]["resumes_submission"], 1);
  ASSERT_EQ(j["jobs"].size(), 1u);
  EXPECT_EQ(j["jobs"][0]["history"]["epochs"], 3) << j["jobs"][0].dump();
  EXPECT_EQ(j["jobs"][0]["metrics"]["loss"]["points"], 3);
  CommandResult older = shell(colo("show 1/1 --db " + db()));
  EXPECT_THAT(older.output, HasSubstr("Resumed by submission 1/2:")) << older.output;

  const std::string to = dir_ + "/mlruns";
  CommandResult exported = shell(colo("export mlflow 1/2 --db " + db() + " --to '" + to + "'"));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const std::string me = shell("id -un").output;
  EXPECT_EQ(shell("cat '" + to + "'/*/*/tags/mlflow.user").output + "\n", me);
  EXPECT_EQ(shell("cat '" + to + "'/*/*/tags/colo.submission").output, "1/2");
  EXPECT_EQ(shell("cat '" + to + "'/*/*/tags/colo.submission_name").output, "first");
  EXPECT_EQ(shell("cat '" + to + "'/*/*/artifacts/log/*").output, "epoch 3\n");
  EXPECT_EQ(shell("cut -d' ' -f2,3 '" + to + "'/*/*/metrics/loss").output, "9.0 1\n8.0 2\n7.0 3\n");
}

// `colo wait ID && colo show RUN/SUB --json` (a script's report): a job that
// wrote its progress and exited at once is seen with every epoch and metric,
// each time (its events once reached the store up to a second after `colo
// wait` returned: 0 epochs on a loaded machine).
TEST_F(ColoServe, WaitReturnsOnlyOnceTheStoreHoldsAllTheJobReported) {
  start_service("--policy fixed --max-per-gpu 4 --mechanism naive");
  const std::string file = write_file("burst.toml", R"([[job]]
name = "burst"
command = ["sh", "-c", """for e in 1 2 3 4 5; do
  printf '{"event":"epoch_end","epoch":%d,"samples":100,"metrics":{"loss":%d}}\n' $e $((10 - e)) >> "$COLO_PROGRESS_FILE"
done"""]
)");
  for (int round = 1; round <= 5; ++round) {
    CommandResult submitted = shell(colo("submit --json " + file));
    ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
    json s = json::parse(submitted.output.substr(submitted.output.find('{')), nullptr, false);
    ASSERT_TRUE(s.is_object()) << submitted.output;
    const int64_t id = s["ids"][0].get<int64_t>();
    const std::string sub = std::to_string(s["run"].get<int64_t>()) + "/" +
                            std::to_string(s["submission"].get<int64_t>());
    CommandResult waited = shell(colo("wait " + std::to_string(id)) + " && " +
                                 colo("show " + sub + " --json --db " + db()));
    ASSERT_EQ(waited.exit_code, 0) << "round " << round << ": " << waited.output << service_log();
    json shown = json::parse(waited.output.substr(waited.output.find('{')), nullptr, false);
    ASSERT_TRUE(shown.is_object()) << waited.output;
    ASSERT_EQ(shown["jobs"].size(), 1u) << waited.output;
    EXPECT_EQ(shown["jobs"][0]["epochs"], 5) << "round " << round << ": " << waited.output;
    EXPECT_EQ(shown["jobs"][0]["metrics"]["loss"]["points"], 5) << "round " << round;
  }
}

// A job that ends while another process holds the store's write lock:
// `colo wait` does not answer before its end is written, says on stderr that
// it waits for the store and why, and answers once the lock is gone.
TEST_F(ColoServe, WaitSaysItWaitsForALockedStoreAndAnswersOnceItIsWritten) {
  start_service("--policy fixed --max-per-gpu 2 --mechanism naive");
  const std::string go = dir_ + "/go";
  const std::string file = write_file("held.toml", R"([[job]]
name = "held"
command = ["sh", "-c", """while [ ! -e ')" + go + R"(' ]; do sleep 0.05; done
printf '{"event":"epoch_end","epoch":1,"samples":100}\n' >> "$COLO_PROGRESS_FILE"
"""]
)");
  const std::vector<int64_t> ids = submit(file);
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 1; }, 20'000)) << service_log();
  sqlite3* locker = nullptr;
  ASSERT_EQ(sqlite3_open(db().c_str(), &locker), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(locker, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const std::string out = dir_ + "/wait.out";
  const std::string err = dir_ + "/wait.err";
  shell("(" + colo("wait " + std::to_string(ids[0])) + " > '" + out + "' 2> '" + err +
        "'; echo rc=$? >> '" + out + "') > /dev/null 2>&1 &");
  shell("touch '" + go + "'");
  const auto text_of = [&](const std::string& path) { return shell("cat '" + path + "'").output; };
  EXPECT_TRUE(eventually(
      [&] { return text_of(err).find("waiting for the store to record it") != std::string::npos; },
      30'000))
      << text_of(err) << text_of(out) << service_log();
  EXPECT_THAT(text_of(err), HasSubstr("database is locked"));
  EXPECT_THAT(text_of(out), Not(HasSubstr("rc="))) << "answered before the store held its end";
  sqlite3_close(locker);
  EXPECT_TRUE(eventually([&] { return text_of(out).find("rc=") != std::string::npos; }, 30'000))
      << text_of(out) << text_of(err) << service_log();
  EXPECT_EQ(text_of(out), std::to_string(ids[0]) + " held: ok\nrc=0\n");
  EXPECT_EQ(sql("SELECT COUNT(*) FROM job_events WHERE kind = 'epoch_end'"),
            std::vector<std::string>{"1"});
}

// Issue 54 (item 5): `colo backup` of the store while the service runs jobs
// and writes it (a plain cp of colo.db missed what was still in the WAL):
// the copy holds the runs and jobs the live store held, is readable by its
// owner only whatever the umask, and `colo runs --db` reads it.
TEST_F(ColoServe, ABackupWhileTheServiceRunsJobsHoldsTheSameRunsAndJobs) {
  start_service("--policy fixed --max-per-gpu 2 --mechanism naive --grace 1s");
  std::vector<int64_t> ended = submit(write_file("short.toml", job("short", 1, 0.1, 2)));
  ASSERT_EQ(wait_all(ended).exit_code, 0) << service_log();
  submit(write_file("long.toml", job("long", 60, 0.5, 2)));
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 2; }, 20'000)) << service_log();

  const std::string backup = dir_ + "/backups/colo.db";
  shell("mkdir -p '" + dir_ + "/backups'");
  CommandResult r = shell("umask 022; " + colo("backup --db " + db() + " " + backup));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("backed up " + db() + " to " + backup + ": "));
  EXPECT_THAT(r.output, HasSubstr("1 run, 4 jobs, schema version"));
  struct stat st {};
  ASSERT_EQ(::stat(backup.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  // The same runs and jobs as the live store; the long jobs still run in both.
  auto runs_of = [&](const std::string& store) {
    json runs = json::parse(shell(colo("runs --json --db " + store)).output, nullptr, false);
    std::vector<std::string> out;
    for (const json& run : runs["runs"])
      out.push_back(std::to_string(run["id"].get<int64_t>()) + " " +
                    run["state"].get<std::string>() + " " +
                    std::to_string(run["job_count"].get<int64_t>()));
    return out;
  };
  EXPECT_EQ(runs_of(backup), runs_of(db()));
  EXPECT_THAT(runs_of(backup), ::testing::ElementsAre("1 running 4"));
  const std::string jobs = "SELECT id, name FROM jobs ORDER BY id";
  EXPECT_EQ(sql_rows(backup, jobs), sql(jobs));
  EXPECT_EQ(sql_rows(backup, "SELECT state FROM jobs ORDER BY id"),
            (std::vector<std::string>{"ok", "ok", "running", "running"}));

  // A second backup over the first is refused unless forced; --check reads it.
  CommandResult again = shell(colo("backup --db " + db() + " " + backup));
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_THAT(again.output, HasSubstr("already exists"));
  CommandResult forced = shell(colo("backup --force --db " + db() + " " + backup));
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  CommandResult checked = shell(colo("backup --check " + backup));
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_THAT(checked.output, HasSubstr(": sound (every page read): "));
}

// Issue 37 (item 2): a service keeps what its run taught as it stops (its
// samples' figures and its facts), so that the first command after days of
// service reads them instead of deriving them from every sample.
TEST_F(ColoServe, AStoppedServiceKeepsWhatItsRunTaught) {
  std::string file = write_file("one.toml", job("single", 1, 0.1));
  start_service("--policy fixed --max-per-gpu 1 --mechanism naive");
  ASSERT_EQ(shell(colo("run " + file)).exit_code, 0) << service_log();
  stop_service();
  std::unique_ptr<RunStore> store = open_store();
  ASSERT_TRUE(store);
  Result<std::vector<RunRow>> runs = store->list_runs(0);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().state, RunState::kOk);
  for (auto [kind, version] : {std::pair{kSampleFiguresKind, kSampleFiguresVersion},
                               std::pair{kRunFactsKind, kRunFactsVersion}}) {
    Result<std::optional<std::string>> kept = store->derived(runs->front().id, kind, version);
    ASSERT_TRUE(kept.ok());
    EXPECT_TRUE(kept->has_value()) << kind << "\n" << service_log();
  }
}

// Issue 35, item 10: a shared loader was started and waited for (up to
// 120 s) inside the service's loop, so a FIFO as dataset made every user's
// `colo queue` time out. The loader now starts outside the loop: the service
// answers meanwhile, other jobs run, and the reader, held queued until its
// loader accepts consumers, can be cancelled.
TEST_F(ColoServe, ALoaderThatNeverOpensItsDatasetHoldsOnlyItsOwnReaders) {
  const std::string fifo = dir_ + "/stuck.bin";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string reader =
      write_file("reader.toml", "[data.stuck]\npath = \"" + fifo +
                                    "\"\nformat = \"cifar10\"\n\n[[job]]\nname = \"reader\"\n"
                                    "dataset = \"stuck\"\ncommand = [\"true\"]\n");
  start_service("--policy fixed --mechanism naive");
  std::vector<int64_t> held = submit(reader);
  ASSERT_EQ(held.size(), 1u) << service_log();
  std::vector<int64_t> other = submit(write_file("other.toml", job("other", 1, 0.1)));
  ASSERT_EQ(other.size(), 1u);
  CommandResult waited = shell(colo("wait " + std::to_string(other[0])));
  EXPECT_EQ(waited.exit_code, 0) << waited.output << service_log();
  EXPECT_EQ(count_in_state("queued"), 1) << "the reader waits for its loader";
  CommandResult cancelled = shell(colo("cancel " + std::to_string(held[0])));
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.output;
  EXPECT_TRUE(eventually([&] { return count_in_state("cancelled") == 1; }, 20'000))
      << queue().dump() << service_log();
  // Its loader had no other reader: stopped, and recorded.
  EXPECT_TRUE(
      eventually([&] { return service_log().find("data loader") != std::string::npos; }, 20'000));
}

// Issue 33, item 11: a cancelled job's log ends saying who cancelled it.
TEST_F(ColoServe, ACancelledJobsLogSaysWhoCancelledIt) {
  start_service("--policy fixed --mechanism naive --grace 1s");
  std::vector<int64_t> ids =
      submit(write_file("long.toml", "[[job]]\nname = \"long\"\ncommand = [\"sleep\", \"60\"]\n"));
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 1; }, 20'000)) << service_log();
  CommandResult cancelled = shell(colo("cancel " + std::to_string(ids[0])));
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.output;
  ASSERT_TRUE(eventually([&] { return count_in_state("cancelled") == 1; }, 20'000))
      << service_log();
  CommandResult log = shell(colo("logs " + std::to_string(ids[0])));
  EXPECT_EQ(log.exit_code, 0) << log.output;
  EXPECT_NE(log.output.find("cancelled by root; stopping it (TERM, then KILL after 1.0s)"),
            std::string::npos)
      << log.output;
}

TEST_F(ColoServe, SighupToAFollowingClientLeavesItsJobsRunning) {
  std::string file = write_file("jobs.toml", job("follow", 4, 0.5, 2));
  start_service("--policy fixed --mechanism naive");
  CommandResult r = shell(colo("run " + file) + " > '" + dir_ +
                          "/client.out' 2>&1 & pid=$!; sleep 1.5; kill -HUP $pid; wait $pid; "
                          "echo rc=$?");
  std::string out = shell("cat '" + dir_ + "/client.out'").output;
  EXPECT_NE(r.output.find("rc=0"), std::string::npos) << r.output << out;
  EXPECT_NE(out.find("colo serve runs on this machine"), std::string::npos) << out;
  EXPECT_NE(out.find("stopped following; the jobs keep running"), std::string::npos) << out;
  EXPECT_EQ(count_in_state("running") + count_in_state("queued"), 2) << "still there";
  CommandResult waited = shell(colo("wait 1 2"));
  EXPECT_EQ(waited.exit_code, 0) << waited.output << service_log();
  EXPECT_NE(waited.output.find("1 follow#1: ok"), std::string::npos) << waited.output;
}

TEST_F(ColoServe, ColoRunFollowsItsJobsAndCtrlCCancelsThem) {
  std::string quick = write_file("quick.toml", job("quick", 2, 0.2, 2));
  start_service("--policy fixed --mechanism naive --grace 1s");
  CommandResult done = shell(colo("run " + quick));
  EXPECT_EQ(done.exit_code, 0) << done.output;
  EXPECT_NE(done.output.find("2 jobs: 2 ok, 0 not ok"), std::string::npos) << done.output;
  std::string slow = write_file("slow.toml", job("slow", 100, 0.5));
  CommandResult cancelled =
      shell(colo("run " + slow) + " & pid=$!; sleep 1.5; kill -INT $pid; wait $pid; echo rc=$?");
  EXPECT_NE(cancelled.output.find("rc=130"), std::string::npos) << cancelled.output;
  EXPECT_NE(cancelled.output.find("cancelled"), std::string::npos) << cancelled.output;
  json q = queue();
  ASSERT_TRUE(q.is_object());
  bool found = false;
  for (const json& j : q["jobs"]) {
    if (j["name"] == "slow") {
      found = true;
      EXPECT_EQ(j["state"], "cancelled");
      EXPECT_NE(j["reason"].get<std::string>().find("cancelled by"), std::string::npos);
    }
  }
  EXPECT_TRUE(found) << q.dump();
  EXPECT_NE(shell(colo("logs 1")).output.find(""), std::string::npos);
}

TEST_F(ColoServe, TwoColoProcessesNeverShareAGpu) {
  // Each job records when it held which GPU.
  auto file = [&](const std::string& name) {
    return write_file(name + ".toml",
                      "[[job]]\nname = \"" + name +
                          "\"\nrepeat = 3\ncommand = [\"sh\", \"-c\", \"echo $CUDA_VISIBLE_DEVICES "
                          "$(date +%s%N) $(sleep 0.6; date +%s%N) >> '" +
                          dir_ + "/intervals'\"]\n");
  };
  std::string one = file("one");
  std::string two = file("two");
  const std::string args =
      " --backend sim --sim-devices 2 --mechanism exclusive --policy fixed "
      "--local --plain --db " +
      db();
  CommandResult r = shell(
      colo("run " + one + args) + " > '" + dir_ + "/one.out' 2>&1 & " + colo("run " + two + args) +
      " > '" + dir_ + "/two.out' 2>&1 & wait; cat '" + dir_ + "/one.out' '" + dir_ + "/two.out'");
  EXPECT_NE(r.output.find("waiting for GPU"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("in use by colo pid"), std::string::npos) << r.output;
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> by_gpu;
  std::ifstream in(dir_ + "/intervals");
  std::string gpu;
  int64_t start = 0;
  int64_t end = 0;
  int jobs = 0;
  while (in >> gpu >> start >> end) {
    by_gpu[gpu].emplace_back(start, end);
    ++jobs;
  }
  EXPECT_EQ(jobs, 6) << r.output;
  EXPECT_EQ(by_gpu.size(), 2u);
  for (auto& [uuid, intervals] : by_gpu) {
    std::sort(intervals.begin(), intervals.end());
    for (size_t i = 1; i < intervals.size(); ++i) {
      EXPECT_LE(intervals[i - 1].second, intervals[i].first)
          << uuid << ": two jobs on one GPU at once";
    }
  }
}

// A Unix user, in a group of their own (for --socket-group), made for one
// test and removed after it. Needs root, useradd and runuser (CI has them).
struct TestUser {
  static constexpr const char* kWhyNot =
      "needs root, useradd and runuser to create a second Unix user (CI has them)";
  static bool possible() {
    return geteuid() == 0 && shell("command -v useradd && command -v runuser").exit_code == 0;
  }
  explicit TestUser(const std::string& prefix)
      : name(prefix + std::to_string(getpid() % 100000)), group(name + "g") {
    made = shell("groupadd " + group + " && useradd -M -d /nonexistent -G " + group + " " + name)
               .exit_code == 0;
  }
  TestUser(const TestUser&) = delete;
  TestUser& operator=(const TestUser&) = delete;
  ~TestUser() { shell("userdel " + name + "; groupdel " + group); }
  bool created() const { return made; }

  std::string name, group;
  bool made = false;
};

TEST_F(ColoServe, AnotherUserCannotCancelAndJobsRunAsTheirSubmitter) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a second Unix user (CI runs as root)";
  if (shell("command -v useradd && command -v runuser").exit_code != 0)
    GTEST_SKIP() << "useradd or runuser missing";
  const std::string user = "colot" + std::to_string(getpid() % 100000);
  const std::string group = user + "g";
  const std::string outsider = user + "x";  // not in the socket's group
  ASSERT_EQ(shell("groupadd " + group + " && useradd -M -d /nonexistent -G " + group + " " + user +
                  " && useradd -M -d /nonexistent " + outsider)
                .exit_code,
            0);
  struct Cleanup {
    std::string user, outsider, group;
    ~Cleanup() { shell("userdel " + user + "; userdel " + outsider + "; groupdel " + group); }
  } cleanup{user, outsider, group};
  shell("chmod 755 '" + dir_ + "'");
  const std::string uid = shell("id -u " + user).output;

  std::string mine =
      write_file("mine.toml", "[[job]]\nname = \"roots\"\ncommand = [\"sleep\", \"60\"]\n");
  std::string theirs =
      write_file("theirs.toml",
                 "[[job]]\nname = \"theirs\"\ncommand = [\"sh\", \"-c\", \"id -u; echo "
                 "HOME=$HOME USER=$USER; touch $COLO_CHECKPOINT_DIR/ok\"]\n");
  start_service(
      "--policy fixed --mechanism naive --grace 1s --keep-checkpoints 1h --socket-group " + group);
  shell("chmod 755 '" + dir_ + "/home'");
  std::vector<int64_t> root_job = submit(mine);
  ASSERT_EQ(root_job.size(), 1u);
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 1; }, 10'000));

  auto as_user = [&](const std::string& args) {
    return shell("runuser -u " + user + " -- env " + env() + std::string(COLO_BINARY) + " " + args +
                 " --socket '" + dir_ + "/home/colo.sock'");
  };
  // Someone outside the socket's group is told which group to join, not "no colo serve answers".
  CommandResult outside =
      shell("runuser -u " + outsider + " -- env " + env() + std::string(COLO_BINARY) +
            " queue --socket '" + dir_ + "/home/colo.sock'");
  EXPECT_NE(outside.exit_code, 0);
  EXPECT_NE(outside.output.find("only members of group '" + group + "' may"), std::string::npos)
      << outside.output;
  // A refusal of permission exits 5, its own code (issue 58, item 15; it was 1 or 3).
  CommandResult refused = as_user("cancel " + std::to_string(root_job[0]));
  EXPECT_EQ(refused.exit_code, 5) << refused.output;
  EXPECT_NE(refused.output.find("belongs to root; you (" + user + ") may cancel only your own"),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(count_in_state("running"), 1) << "still running";
  EXPECT_EQ(as_user("logs " + std::to_string(root_job[0])).exit_code, 5);
  EXPECT_EQ(as_user("drain").exit_code, 5);

  CommandResult submitted = as_user("submit --json " + theirs);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output << service_log();
  const int64_t their_id =
      json::parse(submitted.output.substr(submitted.output.find('{')))["ids"][0];
  CommandResult waited = as_user("wait " + std::to_string(their_id));
  EXPECT_EQ(waited.exit_code, 0) << waited.output << service_log();
  CommandResult log = as_user("logs " + std::to_string(their_id));
  EXPECT_EQ(log.exit_code, 0) << log.output;
  EXPECT_EQ(log.output.substr(0, log.output.find('\n') + 1), uid) << log.output;
  EXPECT_NE(log.output.find("HOME=/nonexistent USER=" + user), std::string::npos) << log.output;
  EXPECT_EQ(shell("stat -c %U '" + dir_ + "/home/serve/'*/checkpoints/" + std::to_string(their_id) +
                  "/ok")
                .output,
            user + "\n");

  CommandResult cancelled = shell(colo("cancel " + std::to_string(root_job[0])));
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.output;
}

// What a user used survives a restart of the service (kept in the store as
// it stops), `colo usage` shows it with the weight the service was given,
// and a weight that names no one, or is not a number above 0, is refused
// before the service starts.
TEST_F(ColoServe, UsageOutlivesARestartAndColoUsageShowsItWithItsWeight) {
  for (const std::string bad :
       {"root=0", "root=two", "=2", "nosuchuser-colo=2", "@nosuchgroup-colo=2"}) {
    CommandResult refused =
        shell(colo("serve --backend sim --db " + db() + " --fair-share-weight " + bad));
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.output;
    EXPECT_NE(refused.output.find("--fair-share-weight '" + bad + "'"), std::string::npos)
        << refused.output;
  }
  start_service("--sim-devices 1 --mechanism naive --grace 1s --fair-share-weight root=3");
  CommandResult empty = shell(colo("usage"));
  EXPECT_EQ(empty.exit_code, 0) << empty.output;
  EXPECT_NE(empty.output.find("no one has used it yet"), std::string::npos) << empty.output;
  std::vector<int64_t> ids = submit(write_file("u.toml", job("used", 3, 0.5)));
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(shell(colo("wait " + std::to_string(ids[0]))).exit_code, 0) << service_log();
  double used = 0;
  std::string last;
  ASSERT_TRUE(eventually(
      [&] {
        CommandResult u = shell(colo("usage --json"));
        last = u.output;
        json j = json::parse(u.output, nullptr, false);
        if (!j.is_object() || !j["owners"].contains("root")) return false;
        used = j["owners"]["root"].value("total_ms", 0.0);
        return used > 0 && j["owners"]["root"].value("weight", 0.0) == 3;
      },
      20'000))
      << last << service_log();
  // Its totals are the store's per-job figures: one job, all of root's usage.
  CommandResult report = shell(colo("usage --since 1h --json"));
  json r = json::parse(report.output, nullptr, false);
  ASSERT_TRUE(r.is_object() && r["ended"].size() == 1u) << report.output;
  EXPECT_EQ(r["ended"][0]["owner"], "root");
  EXPECT_EQ(r["ended"][0]["jobs"], 1);
  EXPECT_EQ(r["ended"][0]["failed"], 0);
  EXPECT_NEAR(r["ended"][0]["share_ms"].get<double>(),
              r["owners"]["root"]["total_ms"].get<double>(), 1.0);
  EXPECT_GE(r["ended"][0]["gpu_ms"].get<double>(), r["ended"][0]["solo_ms"].get<double>());
  // Alone on its GPU: it held the GPU all its time, and its energy is the
  // GPU's over that time (the simulated GPU draws at least its idle power).
  EXPECT_NEAR(r["ended"][0]["share_ms"].get<double>(), r["ended"][0]["gpu_ms"].get<double>(), 1.0);
  const std::vector<std::string> energy =
      sql("SELECT sum(energy_j), sum(gpu_ms) FROM service_jobs");
  ASSERT_EQ(energy.size(), 1u);
  EXPECT_NEAR(r["ended"][0]["energy_j"].get<double>(), std::stod(energy[0]), 0.01);
  EXPECT_GT(r["ended"][0]["energy_j"].get<double>(), 0) << "the job's share of its GPU's energy";
  CommandResult csv = shell(colo("usage --since 1h --csv"));
  EXPECT_EQ(csv.exit_code, 0) << csv.output;
  EXPECT_EQ(csv.output.rfind("user,weight,usage_lately_ms,usage_total_ms,running,queued,"
                             "ended_jobs,failed,gpu_ms,solo_ms,share_ms,energy_j,cancelled,"
                             "rated_gpu_ms,rated_share_ms\n\"root\",3,",
                             0),
            0u)
      << csv.output;
  // By group: root's figures under its primary group, the same totals.
  const std::string group = shell("id -gn root").output;
  CommandResult grouped = shell(colo("usage --since 1h --by group --json"));
  json g = json::parse(grouped.output, nullptr, false);
  ASSERT_TRUE(g.is_object() && g["ended"].size() == 1u) << grouped.output;
  EXPECT_EQ(g["ended"][0]["group"].get<std::string>() + "\n", group);
  EXPECT_EQ(g["ended"][0]["solo_ms"], r["ended"][0]["solo_ms"]);
  EXPECT_NE(shell(colo("usage --by group")).output.find("GROUP"), std::string::npos);
  stop_service();
  std::vector<std::string> kept =
      sql("SELECT owner_name, usage_ms > 0, total_ms FROM service_usage");
  ASSERT_EQ(kept.size(), 1u) << service_log();
  EXPECT_EQ(kept[0].rfind("root|1|", 0), 0u) << kept[0];
  EXPECT_GE(std::stod(kept[0].substr(7)), used);
  std::vector<std::string> per_job = sql("SELECT sum(share_ms) FROM service_jobs");
  ASSERT_EQ(per_job.size(), 1u);
  EXPECT_NEAR(std::stod(kept[0].substr(7)), std::stod(per_job[0]), 1.0)
      << "the kept total is the sum of the jobs' own";

  start_service("--sim-devices 1 --mechanism naive --grace 1s");
  CommandResult after = shell(colo("usage"));
  ASSERT_EQ(after.exit_code, 0) << after.output;
  EXPECT_TRUE(std::regex_search(after.output, std::regex("root +1 +[0-9][^ ]* +100%")))
      << "the usage before the restart, now at weight 1:\n"
      << after.output;
}

// --max-gpus-per-user 1 on two GPUs taking one job each: the user's jobs
// run one at a time although a GPU is free, and `colo queue` says why.
TEST_F(ColoServe, AUsersQuotaOfGpusBoundsTheirRunningJobsAndTheQueueSaysWhy) {
  start_service(
      "--sim-devices 2 --mechanism naive --max-per-gpu 1 --grace 1s --max-gpus-per-user 1");
  std::vector<int64_t> ids = submit(write_file("q.toml", job("q", 2, 0.4, 3)));
  ASSERT_EQ(ids.size(), 3u);
  const std::string reason = queued_reason("quota:");
  ASSERT_FALSE(reason.empty()) << service_log();
  EXPECT_NE(reason.find("root runs 1.0 GPUs' worth, at most 1 per user"), std::string::npos)
      << reason;
  CommandResult waited = wait_all(ids);
  ASSERT_EQ(waited.exit_code, 0) << waited.output << service_log();
  // Never two at once: each started after the one before it ended.
  std::vector<std::string> spans =
      sql("SELECT started_ms, ended_ms FROM service_jobs ORDER BY started_ms");
  ASSERT_EQ(spans.size(), 3u);
  for (size_t i = 1; i < spans.size(); ++i) {
    const int64_t started = std::stoll(spans[i].substr(0, spans[i].find('|')));
    const int64_t ended_before = std::stoll(spans[i - 1].substr(spans[i - 1].find('|') + 1));
    EXPECT_GE(started, ended_before) << spans[i - 1] << " then " << spans[i];
  }
}

// Quotas per user and per group: two users of one group bounded together
// by --max-gpus-for @GROUP=1 on two free GPUs run one job at a time between
// them, the queue saying so, while root's jobs (outside the group) take the
// other GPU; --max-jobs-for refuses a submission past a user's own bound or
// the group's, naming the flag.
TEST_F(ColoServe, AGroupsQuotaBoundsItsMembersTogetherAndAUsersOwnReplacesTheDefault) {
  for (const std::string bad : {"--max-gpus-for root=0", "--max-jobs-for root=1.5",
                                "--max-gpus-for nosuchuser-colo=1", "--max-jobs-for @=3"}) {
    CommandResult refused = shell(colo("serve --backend sim --db " + db() + " " + bad));
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.output;
    EXPECT_NE(refused.output.find(bad.substr(0, bad.find(' ')) + " '" +
                                  bad.substr(bad.find(' ') + 1) + "'"),
              std::string::npos)
        << refused.output;
  }
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  TestUser a("colqa");
  TestUser b("colqb");
  ASSERT_TRUE(a.created() && b.created());
  ASSERT_EQ(shell("usermod -aG " + a.group + " " + b.name).exit_code, 0);
  shell("chmod 755 '" + dir_ + "'");
  start_service("--sim-devices 2 --mechanism naive --max-per-gpu 1 --grace 1s --socket-group " +
                a.group + " --max-gpus-for @" + a.group + "=1 --max-jobs-for @" + a.group +
                "=3 --max-jobs-for root=2");
  shell("chmod 755 '" + dir_ + "/home'");
  const std::string two =
      write_file("two.toml", "[[job]]\nname = \"g\"\ncommand = [\"sleep\", \"1\"]\nrepeat = 2\n");
  const std::string one =
      write_file("one.toml", "[[job]]\nname = \"g\"\ncommand = [\"sleep\", \"1\"]\n");
  auto as = [&](const TestUser& u, const std::string& args) {
    return shell("runuser -u " + u.name + " -- env " + env() + std::string(COLO_BINARY) + " " +
                 args + " --socket '" + dir_ + "/home/colo.sock'");
  };
  std::vector<int64_t> ids;
  auto submitted = [&](const CommandResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.output << service_log();
    if (r.exit_code != 0) return;
    const json answer = json::parse(r.output.substr(r.output.find('{')));
    for (int64_t id : answer["ids"]) ids.push_back(id);
  };
  submitted(as(a, "submit --json " + two));
  CommandResult refused = as(b, "submit " + two);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("group " + a.group +
                                "'s members have 2 jobs queued or running, "
                                "and this colo serve takes at most 3 of theirs together (its "
                                "--max-jobs-for @" +
                                a.group + "=3)"),
            std::string::npos)
      << refused.output;
  submitted(as(b, "submit --json " + one));
  ASSERT_EQ(ids.size(), 3u);
  const std::string reason = queued_reason("quota:");
  ASSERT_FALSE(reason.empty()) << service_log();
  EXPECT_NE(reason.find("group " + a.group +
                        " runs 1.0 GPUs' worth, at most 1 (colo serve "
                        "--max-gpus-for @" +
                        a.group + "=1)"),
            std::string::npos)
      << reason;
  // root is outside the group: its own bound (2 jobs), not the group's, applies.
  CommandResult too_many = shell(colo(
      "submit " + write_file("three.toml",
                             "[[job]]\nname = \"r\"\ncommand = [\"sleep\", \"1\"]\nrepeat = 3\n")));
  EXPECT_NE(too_many.exit_code, 0);
  EXPECT_NE(too_many.output.find("takes at most 2 of yours (its --max-jobs-for root=2)"),
            std::string::npos)
      << too_many.output;
  std::vector<int64_t> roots = submit(one);
  ASSERT_EQ(roots.size(), 1u);
  std::string all;
  for (int64_t id : ids) all += " " + std::to_string(id);
  CommandResult waited = shell(colo("wait" + all + " " + std::to_string(roots[0])));
  ASSERT_EQ(waited.exit_code, 0) << waited.output << service_log();
  // The group's three jobs never two at once; root's ran beside them.
  std::vector<std::string> spans =
      sql("SELECT started_ms, ended_ms FROM service_jobs WHERE owner_uid != 0 ORDER BY started_ms");
  ASSERT_EQ(spans.size(), 3u);
  for (size_t i = 1; i < spans.size(); ++i) {
    const int64_t started = std::stoll(spans[i].substr(0, spans[i].find('|')));
    const int64_t ended_before = std::stoll(spans[i - 1].substr(spans[i - 1].find('|') + 1));
    EXPECT_GE(started, ended_before) << spans[i - 1] << " then " << spans[i];
  }
  const std::vector<std::string> root_span =
      sql("SELECT started_ms, ended_ms FROM service_jobs WHERE owner_uid = 0");
  ASSERT_EQ(root_span.size(), 1u);
  const int64_t group_last_end = std::stoll(spans.back().substr(spans.back().find('|') + 1));
  EXPECT_LT(std::stoll(root_span[0].substr(0, root_span[0].find('|'))), group_last_end)
      << "root's job did not wait for the group's";
}

// --max-protected-gpus-per-user 1 on three free GPUs: root's second
// protected job waits, saying which bound holds it, while another user's
// protected job starts on a free GPU and runs beside root's first; a bad
// value is refused naming the flag. (Issue 56, 5.)
TEST_F(ColoServe, AUsersBoundOnProtectedGpusHoldsTheirSecondWhileAnotherUsersRuns) {
  for (const std::string bad :
       {"--max-protected-gpus-per-user 0", "--max-protected-gpus-per-group 1.5"}) {
    CommandResult refused = shell(colo("serve --backend sim --db " + db() + " " + bad));
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.output;
    EXPECT_THAT(refused.output, HasSubstr(bad.substr(0, bad.find(' ')))) << refused.output;
  }
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  TestUser b("colpb");
  ASSERT_TRUE(b.created());
  shell("chmod 755 '" + dir_ + "'");
  // The fixed policy starts every job that fits at once: only the bound holds root's second.
  start_service(
      "--policy fixed --sim-devices 3 --mechanism naive --max-per-gpu 1 --grace 1s "
      "--socket-group " +
      b.group + " --max-protected-gpus-per-user 1");
  shell("chmod 755 '" + dir_ + "/home'");
  const auto protected_job = [&](const std::string& name, int seconds, int repeat) {
    return write_file(name + ".toml",
                      "[[job]]\nname = \"" + name +
                          "\"\nqos = \"protected\"\nrepeat = " + std::to_string(repeat) +
                          "\ncommand = [\"sleep\", \"" + std::to_string(seconds) + "\"]\n");
  };
  std::vector<int64_t> roots = submit(protected_job("mine", 4, 2));
  ASSERT_EQ(roots.size(), 2u);
  const std::string reason = queued_reason("quota:");
  EXPECT_EQ(reason,
            "quota: root already holds 1 protected GPU, at most 1 per user (colo serve "
            "--max-protected-gpus-per-user 1)")
      << service_log();
  CommandResult theirs = shell(
      "runuser -u " + b.name + " -- env " + env() + std::string(COLO_BINARY) + " submit --json " +
      protected_job("theirs", 1, 1) + " --socket '" + dir_ + "/home/colo.sock'");
  ASSERT_EQ(theirs.exit_code, 0) << theirs.output << service_log();
  const int64_t their_id = json::parse(theirs.output.substr(theirs.output.find('{')))["ids"][0];
  CommandResult waited = shell(colo("wait " + std::to_string(roots[0]) + " " +
                                    std::to_string(roots[1]) + " " + std::to_string(their_id)));
  ASSERT_EQ(waited.exit_code, 0) << waited.output << service_log();
  // root's two never at once; the other user's started before root's first ended.
  const std::vector<std::string> spans =
      sql("SELECT started_ms, ended_ms FROM service_jobs WHERE owner_uid = 0 ORDER BY started_ms");
  ASSERT_EQ(spans.size(), 2u);
  const int64_t first_end = std::stoll(spans[0].substr(spans[0].find('|') + 1));
  EXPECT_GE(std::stoll(spans[1].substr(0, spans[1].find('|'))), first_end)
      << spans[0] << " then " << spans[1];
  const std::vector<std::string> their_span =
      sql("SELECT started_ms FROM service_jobs WHERE owner_uid != 0");
  ASSERT_EQ(their_span.size(), 1u);
  EXPECT_LT(std::stoll(their_span[0]), first_end) << "the other user's protected job waited";
}

// --preempt-after: a job of higher priority that waits stops a running
// preemptible one of lower priority, which saves a checkpoint on TERM, waits
// until the other started, and resumes from its checkpoint; both end ok.
TEST_F(ColoServe, AHigherPriorityJobPreemptsALowerOneWhichResumesFromItsCheckpoint) {
  const std::string marks_path = dir_ + "/marks";
  // `sleep & wait`: the trap runs as soon as TERM comes. The marks path
  // (a temporary directory's) has no spaces.
  write_file("low.sh", R"(e=0
if [ -f "$COLO_CHECKPOINT_DIR/ckpt" ]; then e=$(cat "$COLO_CHECKPOINT_DIR/ckpt"); echo resume $e >> MARKS; fi
trap 'echo $e > "$COLO_CHECKPOINT_DIR/ckpt"; echo saved $e >> MARKS; exit 0' TERM
while [ $e -lt 8 ]; do
  sleep 0.3 & wait $!
  e=$((e+1))
  printf '{"event":"epoch_end","epoch":%d,"samples":100}\n' $e >> "$COLO_PROGRESS_FILE"
done
echo done $e >> MARKS
)");
  shell("sed -i 's|MARKS|" + marks_path + "|g' '" + dir_ + "/low.sh'");
  std::string low = write_file("low.toml", "[[job]]\nname = \"low\"\ncommand = [\"sh\", \"" + dir_ +
                                               "/low.sh\"]\npriority = -10\npreemptible = true\n");
  std::string high = write_file(
      "high.toml", "[[job]]\nname = \"high\"\ncommand = [\"sh\", \"-c\", \"echo high >> '" +
                       marks_path + "'; sleep 1\"]\n");
  start_service("--sim-devices 1 --mechanism naive --max-per-gpu 1 --grace 5s --preempt-after 1s");
  std::vector<int64_t> ids = submit(low);
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 1; }, 20'000)) << service_log();
  std::vector<int64_t> more = submit(high);
  ASSERT_EQ(more.size(), 1u);
  CommandResult waited =
      shell(colo("wait " + std::to_string(ids[0]) + " " + std::to_string(more[0])));
  ASSERT_EQ(waited.exit_code, 0) << waited.output << service_log();

  const std::vector<std::string> m = marks();
  ASSERT_GE(m.size(), 4u) << service_log();
  EXPECT_EQ(m[0].rfind("saved ", 0), 0u) << m[0];
  EXPECT_EQ(m[1], "high");
  EXPECT_EQ(m[2], "resume " + m[0].substr(6)) << "it resumes where it saved";
  EXPECT_EQ(m.back(), "done 8");
  EXPECT_NE(service_log().find("preempted for job " + std::to_string(more[0])), std::string::npos)
      << service_log();
  EXPECT_EQ(sql("SELECT state, attempts FROM service_jobs WHERE id = " + std::to_string(ids[0])),
            std::vector<std::string>{"ok|2"});
}

// User A's sweep of 8 is queued on one GPU that takes two at a time; user B
// then submits one job, under `--queue-order ORDER`. Returns when B's job
// started and when each job of A's started that was still waiting as B's came
// (from the store). `while_b_waits` (when set) runs once B's job is
// submitted, with its id. Nothing here waits on the clock.
class ColoServeTwoUsers : public ColoServe {
 protected:
  struct Starts {
    int64_t b_started = 0;
    std::vector<int64_t> a_waiting_started;
  };
  // The two users' job files: by default, known memory and SM activity
  // (placed by profile, two to the GPU).
  struct Workload {
    std::string sweep =
        "[[job]]\nname = \"sweep\"\ncommand = [\"sleep\", \"2\"]\nrepeat = 8\n"
        "gpu_memory = \"30GiB\"\nsm_activity = 30\n";
    std::string single =
        "[[job]]\nname = \"single\"\ncommand = [\"sleep\", \"1\"]\n"
        "gpu_memory = \"30GiB\"\nsm_activity = 30\n";
    std::function<void(int64_t)> while_b_waits;
  };
  Starts sweep_then_another_users_job(const std::string& order) {
    return sweep_then_another_users_job(order, Workload{});
  }
  Starts sweep_then_another_users_job(const std::string& order, const Workload& work) {
    TestUser other("colof");
    EXPECT_TRUE(other.created());
    shell("chmod 755 '" + dir_ + "'");
    std::string sweep = write_file("sweep.toml", work.sweep);
    std::string single = write_file("single.toml", work.single);
    start_service(
        "--sim-devices 1 --policy auto --mechanism naive --max-per-gpu 2 --grace 1s "
        "--queue-order " +
        order + " --socket-group " + other.group);
    shell("chmod 755 '" + dir_ + "/home'");
    std::vector<int64_t> sweep_ids = submit(sweep);
    EXPECT_EQ(sweep_ids.size(), 8u);
    // A's usage shows once its jobs have run a moment.
    EXPECT_TRUE(eventually(
        [&] {
          json q = queue();
          return q.is_object() && q["owners"].contains("root") &&
                 q["owners"]["root"].value("usage_ms", 0.0) > 0;
        },
        20'000))
        << service_log();
    CommandResult submitted =
        shell("runuser -u " + other.name + " -- env " + env() + std::string(COLO_BINARY) +
              " submit --json " + single + " --socket '" + dir_ + "/home/colo.sock'");
    EXPECT_EQ(submitted.exit_code, 0) << submitted.output << service_log();
    if (submitted.exit_code != 0) return {};
    const int64_t theirs =
        json::parse(submitted.output.substr(submitted.output.find('{')))["ids"][0];
    if (work.while_b_waits) work.while_b_waits(theirs);
    std::string all;
    for (int64_t id : sweep_ids) all += " " + std::to_string(id);
    CommandResult waited = shell(colo("wait" + all + " " + std::to_string(theirs)));
    EXPECT_EQ(waited.exit_code, 0) << waited.output << service_log();

    const std::vector<std::string> b =
        sql("SELECT submitted_ms, started_ms FROM service_jobs "
            "WHERE id = " +
            std::to_string(theirs));
    EXPECT_EQ(b.size(), 1u);
    if (b.size() != 1) return {};
    const int64_t b_submitted = std::stoll(b[0].substr(0, b[0].find('|')));
    Starts starts{std::stoll(b[0].substr(b[0].find('|') + 1)), {}};
    for (const std::string& row :
         sql("SELECT started_ms FROM service_jobs WHERE owner_uid = 0 ORDER BY id")) {
      const int64_t started = std::stoll(row);
      if (started > b_submitted) starts.a_waiting_started.push_back(started);  // not yet running
    }
    EXPECT_GE(starts.a_waiting_started.size(), 4u) << "B came while most of the sweep waited";
    return starts;
  }
};

// Fair share (issue 32): B's job starts at the first free place, ahead of
// every job of A's still waiting, and A's sweep keeps the GPU full meanwhile.
// Issue 58 (11): while it waits, `colo queue` lists B's job first of the
// queued, and the sweep's say fair share puts B's first.
TEST_F(ColoServeTwoUsers, AnotherUsersJobGoesAheadOfASweepQueuedBeforeIt) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  Workload work;
  // B's job waits for a place (the sweep's jobs run 4 s, two at a time).
  work.sweep =
      "[[job]]\nname = \"sweep\"\ncommand = [\"sleep\", \"4\"]\nrepeat = 8\n"
      "gpu_memory = \"30GiB\"\nsm_activity = 30\n";
  work.while_b_waits = [&](int64_t theirs) {
    json q = queue();
    ASSERT_TRUE(q.is_object());
    json seen = json::array();
    bool b_queued = false;
    for (const json& j : q["jobs"]) {
      if (j["state"] == "queued") seen.push_back(j);
      b_queued = b_queued || (j["id"] == theirs && j["state"] == "queued");
    }
    if (!b_queued) return;  // a place freed at once: nothing waits to be ordered
    ASSERT_FALSE(seen.empty()) << q.dump();
    EXPECT_EQ(seen[0]["id"], theirs) << seen.dump();
    EXPECT_THAT(seen[0].value("reason", ""), Not(HasSubstr("fair share"))) << seen.dump();
    // The others: the policy's own word (a place reserved, backfill) where
    // it has one, else fair share's, naming B's owner, never "root used".
    for (size_t i = 1; i < seen.size(); ++i) {
      EXPECT_EQ(seen[i]["owner"], "root");
      EXPECT_THAT(seen[i].value("reason", ""), Not(HasSubstr("fair share: root"))) << seen.dump();
    }
    const std::string table = shell(colo("queue")).output;
    const size_t queued = table.find("queued (");
    ASSERT_NE(queued, std::string::npos) << table;
    EXPECT_LT(table.find("colof", queued), table.find("root", queued)) << table;
  };
  const Starts starts = sweep_then_another_users_job("fair-share", work);
  for (int64_t a : starts.a_waiting_started)
    EXPECT_LE(starts.b_started, a) << "a job of the sweep queued before B's started first";
}

// --queue-order fcfs: B's job waits behind the whole sweep (the baseline the
// fair-share benchmark compares against).
TEST_F(ColoServeTwoUsers, FirstComeFirstServedKeepsAnotherUsersJobBehindTheSweep) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  const Starts starts = sweep_then_another_users_job("fcfs");
  for (int64_t a : starts.a_waiting_started)
    EXPECT_GE(starts.b_started, a) << "B's job went ahead of a job of the sweep queued before it";
}

// Issue 53: the head of the queue gets a place. Nothing is known of the
// jobs (colo serve's defaults: the auto policy, fair share): A's sweep starts
// with a newcomer measured where it runs (8 s) and a sibling beside it (2 s);
// B's job, a newcomer too, fits beside none of them. B's job was first in
// the order, but each place that freed went to the sweep's next sibling
// beside the running newcomer until that ended. Now the GPU is kept for it:
// the place that frees waits for the other.
TEST_F(ColoServeTwoUsers, ANewcomerIsKeptTheGpuASweepWouldRefill) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  Workload work;
  work.sweep =
      "[[job]]\nname = \"sweep\"\ncommand = [\"sh\", \"-c\", \"case $COLO_JOB_NAME in *#1) sleep "
      "8;; *) sleep 2;; esac\"]\nrepeat = 8\n";
  work.single = "[[job]]\nname = \"single\"\ncommand = [\"sleep\", \"1\"]\n";
  std::string reason;
  work.while_b_waits = [&](int64_t theirs) {
    // Its reason while it waits for the GPU kept for it.
    eventually(
        [&] {
          json q = queue();
          if (!q.is_object()) return false;
          for (const json& j : q["jobs"]) {
            if (j["id"] != theirs) continue;
            if (j["state"] != "queued") return true;
            reason = j.value("reason", "");
          }
          return reason.rfind("reserved:", 0) == 0;
        },
        30'000);
  };
  const Starts starts = sweep_then_another_users_job("fair-share", work);
  for (int64_t a : starts.a_waiting_started)
    EXPECT_LE(starts.b_started, a) << "a job of the sweep queued before B's started first";
  EXPECT_EQ(reason, "reserved: next on gpu0, when a job there ends") << service_log();
}

// Two users' jobs under --mechanism mps (issue 57): each job says which
// pipe directory it was given, writes its checkpoint directory below the
// logs root, and connects to its MPS server through the stand-in control
// program (named so that colo does not take it for a daemon process), which
// records each client's uid (fake-mps-clients) and, without -M, refuses a
// second user's client. Needs root and a second user (TestUser).
class ColoServeMpsUsers : public ColoServe {
 protected:
  struct Seen {
    std::string line;  // the service's "MPS: ..." line
    std::string my_pipe, their_pipe;
    std::string my_clients, their_clients;  // the uids each pipe's server recorded
    bool multiuser = false;                 // the stand-in was started with -M
  };

  // Starts the service with `flags` (FAKE_MPS_NO_MULTIUSER set when
  // `driver_has_multiuser` is false), runs one job of root's and one of
  // `b`'s, and says what they saw, read while the service runs.
  Seen two_users_jobs(const TestUser& b, bool driver_has_multiuser, const std::string& flags) {
    shell("chmod 755 '" + dir_ + "'");
    fake_mps_on_path();
    const std::string client = dir_ + "/bin/fake-mps-client";
    shell("cp '" COLO_FAKE_MPS_CONTROL "' '" + client + "' && chmod 755 '" + client + "'");
    const std::string command =
        "command = [\"sh\", \"-c\", \"echo pipe=$CUDA_MPS_PIPE_DIRECTORY; echo fake_client_connect "
        "| " +
        client + " && touch $COLO_CHECKPOINT_DIR/ok && echo checkpoint-ok; touch " + dir_ +
        "/marks/$COLO_JOB_ID; while [ ! -e " + dir_ + "/marks/go ]; do sleep 0.1; done\"]\n";
    shell("mkdir -p '" + dir_ + "/marks' && chmod 1777 '" + dir_ + "/marks'");
    std::string mine = write_file("mine.toml", "[[job]]\nname = \"mine\"\n" + command);
    std::string theirs = write_file("theirs.toml", "[[job]]\nname = \"theirs\"\n" + command);
    if (!driver_has_multiuser) setenv("FAKE_MPS_NO_MULTIUSER", "1", 1);
    start_service("--policy fixed --max-per-gpu 4 --mechanism mps --grace 1s --socket-group " +
                  b.group + " " + flags);
    unsetenv("FAKE_MPS_NO_MULTIUSER");
    shell("chmod 755 '" + dir_ + "/home'");
    Seen seen;
    // A secret in the first submission makes the service write a file below
    // the logs root before any job starts: the other user must still pass.
    CommandResult mine_submitted = shell("COLO_TEST_TOKEN=x " + colo("submit --json " + mine));
    EXPECT_EQ(mine_submitted.exit_code, 0) << mine_submitted.output << service_log();
    CommandResult submitted =
        shell("runuser -u " + b.name + " -- env " + env() + std::string(COLO_BINARY) +
              " submit --json " + theirs + " --socket '" + dir_ + "/home/colo.sock'");
    EXPECT_EQ(submitted.exit_code, 0) << submitted.output << service_log();
    if (mine_submitted.exit_code != 0 || submitted.exit_code != 0) return seen;
    const int64_t my_id =
        json::parse(mine_submitted.output.substr(mine_submitted.output.find('{')))["ids"][0];
    const int64_t their_id =
        json::parse(submitted.output.substr(submitted.output.find('{')))["ids"][0];
    // Both run at once (they wait for "go"): each is a client of its server
    // while the other is.
    EXPECT_TRUE(eventually(
        [&] {
          return std::filesystem::exists(dir_ + "/marks/" + std::to_string(my_id)) &&
                 std::filesystem::exists(dir_ + "/marks/" + std::to_string(their_id));
        },
        20'000))
        << service_log();
    auto pipe_of = [&](int64_t id) {
      const std::string log = shell(colo("logs " + std::to_string(id))).output;
      EXPECT_NE(log.find("connected"), std::string::npos) << "job " << id << ": " << log;
      EXPECT_NE(log.find("checkpoint-ok"), std::string::npos) << "job " << id << ": " << log;
      const size_t at = log.find("pipe=");
      return at == std::string::npos ? std::string()
                                     : log.substr(at + 5, log.find('\n', at) - at - 5);
    };
    seen.my_pipe = pipe_of(my_id);
    seen.their_pipe = pipe_of(their_id);
    auto uids_of = [&](const std::string& pipe) {
      return shell("cut -d' ' -f1 '" + pipe + "/fake-mps-clients' | sort -n | tr '\\n' ' '").output;
    };
    seen.my_clients = uids_of(seen.my_pipe);
    seen.their_clients = uids_of(seen.their_pipe);
    seen.multiuser = std::filesystem::exists(seen.my_pipe + "/fake-mps-multiuser");
    shell("touch '" + dir_ + "/marks/go'");
    CommandResult waited =
        shell(colo("wait " + std::to_string(my_id) + " " + std::to_string(their_id)));
    EXPECT_EQ(waited.exit_code, 0) << waited.output << service_log();
    const std::string log = service_log();
    const size_t at = log.find("MPS: ");
    seen.line = at == std::string::npos ? "" : log.substr(at, log.find('\n', at) - at);
    EXPECT_EQ(log.find("MPS: ", at + 1), std::string::npos) << "said once: " << log;
    return seen;
  }

  // Root's "buggy" asserts once three neighbours have reported progress: one
  // of root's (it hangs on the fault) and two of `b`'s, in `b_modes` (exit:
  // fails as a terminated client; hang; run: runs on), under one multi-user
  // server (`shared`) or a daemon per user. Returns the four jobs' ids, root's
  // first (the caller waits for them), and the culprit script's path.
  std::pair<std::vector<int64_t>, std::string> fault_beside_two_users(
      const TestUser& b, bool shared, const std::array<std::string, 2>& b_modes) {
    shell("chmod 755 '" + dir_ + "'");
    fake_mps_on_path();
    const std::string marks = dir_ + "/marks";
    shell("mkdir -p '" + marks + "' && chmod 1777 '" + marks + "'");
    constexpr const char* kAssertion =
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
        "block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.";
    // Its first attempt, once the fault is there: exits as a terminated
    // client ($2 = exit), hangs ($2 = hang) or runs on ($2 = run); later
    // attempts train.
    const std::string healthy = write_file(
        "healthy.sh",
        "first=0; [ -e \"$COLO_CHECKPOINT_DIR/ran\" ] || { first=1; touch "
        "\"$COLO_CHECKPOINT_DIR/ran\"; }\n"
        "for e in 1 2 3 4 5 6 7 8; do\n"
        "  if [ $first = 1 ] && [ \"$2\" != run ] && [ -e '" +
            marks +
            "/fault' ]; then\n"
            "    if [ \"$2\" = exit ]; then\n"
            "      echo 'RuntimeError: CUDA error: the MPS client has been terminated by the "
            "server. "
            "To continue using CUDA, the process must be terminated and relaunched'; exit 1\n"
            "    fi\n"
            "    sleep 600\n"
            "  fi\n"
            "  sleep 0.3; printf '{\"event\":\"epoch_end\",\"epoch\":%d,\"samples\":1000}\\n' $e "
            ">> "
            "\"$COLO_PROGRESS_FILE\"; echo epoch $e\n"
            "  touch '" +
            marks +
            "/reported.'$1\n"
            "done\n");
    const std::string culprit = write_file(
        "culprit.sh", "while [ $(ls '" + marks +
                          "'/reported.* 2>/dev/null | wc -l) -lt 3 ]; do sleep 0.1; done\n"
                          "echo '" +
                          std::string(kAssertion) +
                          "'\n"
                          "echo 'RuntimeError: CUDA error: device-side assert triggered'\n"
                          "touch '" +
                          marks + "/fault'; exit 1\n");
    shell("chmod 644 '" + healthy + "' '" + culprit + "'");
    auto job = [&](const std::string& name, const std::string& script, const std::string& mode) {
      return "[[job]]\nname = \"" + name + "\"\ncommand = [\"sh\", \"" + script + "\", \"" + name +
             "\", \"" + mode + "\"]\n";
    };
    const std::string mine =
        write_file("mine.toml", job("buggy", culprit, "") + job("mine-hung", healthy, "hang"));
    const std::string theirs =
        write_file("theirs.toml", job("theirs-reached", healthy, b_modes[0]) +
                                      job("theirs-hung", healthy, b_modes[1]));
    if (!shared) setenv("FAKE_MPS_NO_MULTIUSER", "1", 1);
    start_service(
        "--policy fixed --max-per-gpu 4 --sim-devices 1 --mechanism mps --grace 1s "
        "--socket-group " +
        b.group);
    unsetenv("FAKE_MPS_NO_MULTIUSER");
    shell("chmod 755 '" + dir_ + "/home'");
    EXPECT_THAT(service_log(), HasSubstr(shared ? "MPS: one multi-user server per GPU"
                                                : "MPS: a daemon per user"));
    CommandResult mine_submitted = shell(colo("submit --json " + mine));
    EXPECT_EQ(mine_submitted.exit_code, 0) << mine_submitted.output << service_log();
    CommandResult submitted =
        shell("runuser -u " + b.name + " -- env " + env() + std::string(COLO_BINARY) +
              " submit --json " + theirs + " --socket '" + dir_ + "/home/colo.sock'");
    EXPECT_EQ(submitted.exit_code, 0) << submitted.output << service_log();
    std::vector<int64_t> ids;
    for (const CommandResult* r : {&mine_submitted, &submitted}) {
      const size_t at = r->output.find('{');
      const json answer =
          at == std::string::npos ? json() : json::parse(r->output.substr(at), nullptr, false);
      if (answer.is_object()) {
        for (const json& id : answer["ids"]) ids.push_back(id.get<int64_t>());
      }
    }
    EXPECT_EQ(ids.size(), 4u) << mine_submitted.output << submitted.output;
    return {ids, culprit};
  }
};

// Where the driver has multi-user MPS and the service runs as root (the
// default, auto), every user's jobs are clients of one server: one pipe
// directory, root's, reached through the socket's group, which the stand-in
// started with -M and which served both users' clients at once.
TEST_F(ColoServeMpsUsers, TwoUsersJobsShareOneMultiUserMpsServer) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  TestUser b("colom");
  ASSERT_TRUE(b.created());
  const Seen seen = two_users_jobs(b, /*driver_has_multiuser=*/true, "");
  EXPECT_EQ(seen.line, "MPS: one multi-user server per GPU (users share it)") << service_log();
  ASSERT_FALSE(seen.my_pipe.empty());
  EXPECT_EQ(seen.my_pipe, seen.their_pipe) << "one server for both users";
  EXPECT_TRUE(seen.multiuser) << "started with -M";
  const std::string uid = shell("id -u " + b.name).output;
  EXPECT_EQ(seen.my_clients, "0 " + uid.substr(0, uid.size() - 1) + " ") << "both, at once";
  EXPECT_EQ(shell("stat -c '%U %G %a' '" + seen.my_pipe + "'").output,
            "root " + b.group + " 750\n");
  EXPECT_EQ(shell("stat -c '%U %G %a' '" + seen.my_pipe + "/..'").output,
            "root " + b.group + " 710\n")
      << "the socket's group passes through, and no one else";
  stop_service();
  EXPECT_FALSE(std::filesystem::exists(seen.my_pipe)) << "its daemon stopped with the service";
}

// The default daemon runs the servers of different users one after another,
// never together (on an H200 a second user's client waited until the first
// user's ended: docs/results/2026-11-29-h200-mps-two-users). Where the driver
// has no multi-user mode, or --mps-users separate says so, each user's jobs
// are clients of a daemon of their own, whose pipe directory that user owns
// and reaches (the stand-in refuses a second user's client on one daemon).
TEST_F(ColoServeMpsUsers, TwoUsersJobsUnderMpsAreClientsOfADaemonEachWithoutMultiUserMode) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  TestUser b("colom");
  ASSERT_TRUE(b.created());
  const Seen seen = two_users_jobs(b, /*driver_has_multiuser=*/false, "");
  EXPECT_EQ(seen.line,
            "MPS: a daemon per user (the driver has no multi-user mode; users' jobs time-slice)")
      << service_log();
  ASSERT_FALSE(seen.my_pipe.empty());
  ASSERT_FALSE(seen.their_pipe.empty());
  EXPECT_NE(seen.my_pipe, seen.their_pipe) << "one daemon per user";
  EXPECT_FALSE(seen.multiuser);
  const std::string uid = shell("id -u " + b.name).output;
  EXPECT_EQ(seen.my_clients, "0 ");
  EXPECT_EQ(seen.their_clients, uid.substr(0, uid.size() - 1) + " ");
  EXPECT_EQ(shell("stat -c %U '" + seen.their_pipe + "'").output, b.name + "\n");
  EXPECT_EQ(shell("stat -c %U '" + seen.my_pipe + "'").output, "root\n");
  stop_service();
  EXPECT_FALSE(std::filesystem::exists(seen.their_pipe)) << "its daemon stopped with the service";
}

TEST_F(ColoServeMpsUsers, SeparateDaemonsWhenTheOperatorSaysSo) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  TestUser b("colom");
  ASSERT_TRUE(b.created());
  const Seen seen = two_users_jobs(b, /*driver_has_multiuser=*/true, "--mps-users separate");
  EXPECT_EQ(seen.line, "MPS: a daemon per user (--mps-users separate; users' jobs time-slice)")
      << service_log();
  EXPECT_NE(seen.my_pipe, seen.their_pipe);
  EXPECT_FALSE(seen.multiuser);
}

// A fatal GPU fault in one multi-user MPS server with clients of two users
// (issue 57): root's "buggy" asserts once its three neighbours (one of
// root's, two of b's) have reported progress. The neighbours the fault
// reached (one fails as a terminated client, two hang) run again, not
// counted, whoever owns them; the culprit runs alone and ends failed. Each
// user is told in their own job's record and log what happened; b's never
// name root's job or carry its assertion line, and root's culprit counts
// b's jobs without naming them.
TEST_F(ColoServeMpsUsers, AFaultInTheSharedServerRestartsInnocentsOfEveryUserUncounted) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  TestUser b("colof");
  ASSERT_TRUE(b.created());
  const auto [ids, culprit] = fault_beside_two_users(b, /*shared=*/true, {"exit", "hang"});
  ASSERT_EQ(ids.size(), 4u);
  CommandResult waited = wait_all(ids);
  EXPECT_NE(waited.exit_code, 0) << "buggy failed: " << waited.output;

  // Per job: its end, attempts and uncounted ones, and each attempt's reason and log.
  auto attempts_of = [&](int64_t id, const std::string& column) {
    return sql("SELECT a." + column +
               " FROM job_attempts a JOIN jobs j ON a.job_id = j.id WHERE j.service_job_id = " +
               std::to_string(id) + " ORDER BY a.attempt");
  };
  const std::vector<std::string> names = {"buggy", "mine-hung", "theirs-reached", "theirs-hung"};
  for (size_t i = 1; i < ids.size(); ++i) {
    const bool theirs_job = i >= 2;
    EXPECT_EQ(sql("SELECT state, uncounted FROM service_jobs WHERE id = " + std::to_string(ids[i])),
              std::vector<std::string>{"ok|1"})
        << names[i] << ": ran again, not counted\n"
        << service_log();
    const std::vector<std::string> reasons = attempts_of(ids[i], "reason");
    ASSERT_EQ(reasons.size(), 2u) << names[i] << "\n" << service_log();
    EXPECT_THAT(reasons[0], HasSubstr("not counted as an attempt")) << names[i];
    if (theirs_job) {
      EXPECT_THAT(reasons[0], HasSubstr("a job of another user raised a fatal GPU fault on gpu0"))
          << names[i];
    } else {
      EXPECT_THAT(reasons[0], HasSubstr("(buggy, root) raised a fatal GPU fault on gpu0"))
          << names[i];
    }
    const std::string log = shell("cat '" + attempts_of(ids[i], "log_path")[0] + "'").output;
    EXPECT_THAT(log, HasSubstr("fatal GPU fault on gpu0 under MPS")) << names[i] << ": " << log;
    if (theirs_job) {
      for (const std::string& other :
           {std::string("buggy"), std::string("Assertion"), std::string("mine-hung"), culprit}) {
        EXPECT_THAT(reasons[0], Not(HasSubstr(other))) << names[i] << ": " << reasons[0];
        EXPECT_THAT(log, Not(HasSubstr(other))) << names[i] << ": " << log;
      }
    }
  }
  EXPECT_EQ(sql("SELECT state, attempts FROM service_jobs WHERE id = " + std::to_string(ids[0])),
            std::vector<std::string>{"failed|2"});
  const std::vector<std::string> culprit_reasons = attempts_of(ids[0], "reason");
  ASSERT_EQ(culprit_reasons.size(), 2u);
  EXPECT_THAT(culprit_reasons[0], HasSubstr("its next attempt runs alone, outside the shared MPS"));
  EXPECT_THAT(culprit_reasons[0], HasSubstr("mine-hung")) << "root's own neighbour, by name";
  EXPECT_THAT(culprit_reasons[0], HasSubstr("2 jobs of other users")) << culprit_reasons[0];
  EXPECT_THAT(culprit_reasons[0], Not(HasSubstr("theirs"))) << culprit_reasons[0];
  EXPECT_THAT(culprit_reasons[1], HasSubstr("the fault is its own: it failed again alone"));
}

// With a daemon per user, a fault stays in its user's server: root's jobs
// are contained as above, and the other user's jobs, clients of a server of
// their own, are neither watched nor stopped, nor told of it.
TEST_F(ColoServeMpsUsers, AFaultInOneUsersServerLeavesAnotherUsersJobsAlone) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  TestUser b("colof");
  ASSERT_TRUE(b.created());
  const auto [ids, culprit] = fault_beside_two_users(b, /*shared=*/false, {"run", "run"});
  ASSERT_EQ(ids.size(), 4u);
  CommandResult waited = wait_all(ids);
  EXPECT_NE(waited.exit_code, 0) << "buggy failed: " << waited.output;
  EXPECT_EQ(sql("SELECT state, uncounted FROM service_jobs WHERE id = " + std::to_string(ids[1])),
            std::vector<std::string>{"ok|1"})
      << "root's neighbour, in root's server: restarted, not counted\n"
      << service_log();
  for (size_t i : {size_t{2}, size_t{3}}) {
    EXPECT_EQ(sql("SELECT state, attempts, uncounted FROM service_jobs WHERE id = " +
                  std::to_string(ids[i])),
              std::vector<std::string>{"ok|1|0"})
        << "b's job " << ids[i] << ": one attempt, never stopped\n"
        << service_log();
    const std::string log = shell(colo("logs " + std::to_string(ids[i]))).output;
    EXPECT_THAT(log, Not(HasSubstr("fatal GPU fault"))) << log;
  }
  const std::vector<std::string> culprit_reason =
      sql("SELECT a.reason FROM job_attempts a JOIN jobs j ON a.job_id = j.id WHERE "
          "j.service_job_id = " +
          std::to_string(ids[0]) + " AND a.attempt = 1");
  ASSERT_EQ(culprit_reason.size(), 1u);
  EXPECT_THAT(culprit_reason[0], Not(HasSubstr("other user"))) << culprit_reason[0];
  (void)culprit;
}

// --mps-users shared is refused, saying why, where it cannot be had: a
// driver without -M, or another mechanism. (Without root: the unit test
// MpsUsers.ChoosesSharedOnlyAsRootWithMultiUserModeAndSaysWhichInOneLine.)
TEST_F(ColoServe, MpsUsersSharedIsRefusedWhereItCannotBeHad) {
  fake_mps_on_path();
  struct Case {
    std::string env, flags, says;
  };
  const std::vector<Case> cases = {
      {"FAKE_MPS_NO_MULTIUSER=1 ", "--mechanism mps --mps-users shared",
       geteuid() == 0 ? "offers no multi-user mode" : "needs colo serve to run as root"},
      {"", "--mechanism naive --mps-users shared", "--mps-users applies to --mechanism mps only"},
  };
  for (const Case& c : cases) {
    CommandResult r =
        shell(c.env + colo("serve --backend sim --db " + db() + " " + c.flags) + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << c.flags << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.says)) << c.flags;
  }
}

// Issue 53 (1): a job runs as its submitter whoever starts it again: a
// restart of the service under it, and an admin's `colo submit --resume` of
// a user's failed submission (which ran the user's code as root, and made
// root its owner). Each attempt appends its uid to a file in its checkpoint
// directory, which follows it (kept: --keep-checkpoints).
TEST_F(ColoServe, AJobStartedAgainOnSomeonesBehalfRunsAsItsSubmitter) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  TestUser b("color");
  ASSERT_TRUE(b.created());
  shell("chmod 755 '" + dir_ + "'");
  const std::string uid = shell("id -u " + b.name).output;
  const std::string note_uid = R"(id -u >> "$COLO_CHECKPOINT_DIR/uids"; )";
  const std::string file = write_file(
      "paths.toml",
      "[[job]]\nname = \"resumed\"\nrestart = \"never\"\ncommand = [\"sh\", \"-c\", \"\"\"" +
          note_uid + R"(if [ -e "$COLO_CHECKPOINT_DIR/once" ]; then exit 0; fi
touch "$COLO_CHECKPOINT_DIR/once"; exit 3"""]
)" + "\n[[job]]\nname = \"restarted\"\ncommand = [\"sh\", \"-c\", \"\"\"" +
          note_uid + R"(if [ -e "$COLO_CHECKPOINT_DIR/once" ]; then exit 0; fi
touch "$COLO_CHECKPOINT_DIR/once"; exec sleep 60"""]
)");
  const std::string args =
      "--policy fixed --mechanism naive --max-per-gpu 3 --grace 1s --keep-checkpoints 1h "
      "--socket-group " +
      b.group;
  start_service(args);
  shell("chmod 755 '" + dir_ + "/home'");
  const auto as_b = [&](const std::string& a) {
    return shell("runuser -u " + b.name + " -- env " + env() + std::string(COLO_BINARY) + " " + a +
                 " --socket '" + dir_ + "/home/colo.sock'");
  };
  CommandResult submitted = as_b("submit --json --name theirs " + file);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output << service_log();
  const json answer = json::parse(submitted.output.substr(submitted.output.find('{')));
  const std::vector<int64_t> ids = answer["ids"].get<std::vector<int64_t>>();
  ASSERT_EQ(ids.size(), 2u);
  const std::string submission = std::to_string(answer["run"].get<int64_t>()) + "/" +
                                 std::to_string(answer["submission"].get<int64_t>());
  const auto uids_of = [&](int64_t id) {
    return shell("cat '" + dir_ + "/home/serve/'*/checkpoints/" + std::to_string(id) + "/uids")
        .output;
  };
  // 'resumed' has failed (else the stop below would interrupt it first, on a
  // busy machine) and 'restarted' runs; the service stops and starts again.
  ASSERT_TRUE(eventually(
      [&] {
        return uids_of(ids[1]) == uid &&
               sql("SELECT state FROM service_jobs WHERE id = " + std::to_string(ids[0])) ==
                   std::vector<std::string>{"failed"};
      },
      20'000))
      << service_log();
  stop_service();
  start_service(args);
  EXPECT_EQ(wait_all({ids[1]}).exit_code, 0) << service_log();
  EXPECT_NE(wait_all({ids[0]}).exit_code, 0) << "'resumed' failed, as it should, once";
  EXPECT_EQ(uids_of(ids[1]), uid + uid) << "the attempt after the service's restart";

  // Root resumes b's submission to help; by name only among its own.
  CommandResult by_name = shell(colo("submit --resume theirs"));
  EXPECT_NE(by_name.exit_code, 0);
  EXPECT_THAT(by_name.output, HasSubstr("names no submission of yours (root)"));
  EXPECT_THAT(by_name.output, HasSubstr(b.name + "'s submission " + submission));
  CommandResult resumed = shell(colo("submit --json --resume " + submission));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output << service_log();
  const int64_t again =
      json::parse(resumed.output.substr(resumed.output.find('{')))["ids"][0].get<int64_t>();
  EXPECT_EQ(wait_all({again}).exit_code, 0) << service_log();
  EXPECT_EQ(uids_of(again), uid + uid) << "its first attempt, then the resumed one";
  EXPECT_EQ(
      sql("SELECT owner_uid, owner_name FROM service_jobs WHERE id = " + std::to_string(again)),
      (std::vector<std::string>{uid.substr(0, uid.size() - 1) + "|" + b.name}));
  EXPECT_EQ(as_b("logs " + std::to_string(again)).exit_code, 0) << "b's job, b's log";

  // Issue 58 (9, 10): the resumed submission keeps b's name; root's MLflow
  // export of it names b as who ran its job (not root, who exports it).
  const json resumed_answer = json::parse(resumed.output.substr(resumed.output.find('{')));
  const std::string resumed_submission =
      std::to_string(resumed_answer["run"].get<int64_t>()) + "/" +
      std::to_string(resumed_answer["submission"].get<int64_t>());
  const std::string to = dir_ + "/mlruns";
  CommandResult exported =
      shell(colo("export mlflow " + resumed_submission + " --db " + db() + " --to '" + to + "'"));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_EQ(shell("cat '" + to + "'/*/*/tags/mlflow.user").output, b.name);
  EXPECT_EQ(shell("cat '" + to + "'/*/*/tags/colo.submission_name").output, "theirs");
  EXPECT_EQ(shell("cat '" + to + "'/*/*/tags/colo.submission").output, resumed_submission);
}

// Issue 53 (2): a name is looked up among the caller's own submissions and
// runs. Root's submission "nightly" fails; b's submission of that name comes
// later; root's `colo submit --resume nightly` and `colo show nightly` find
// root's, and b's finds b's.
TEST_F(ColoServe, ANameFindsTheCallersOwnSubmissionNeverAnotherUsers) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  TestUser b("colon");
  ASSERT_TRUE(b.created());
  shell("chmod 755 '" + dir_ + "'");
  start_service("--policy fixed --mechanism naive --grace 1s --socket-group " + b.group);
  shell("chmod 755 '" + dir_ + "/home'");
  const auto failing = [&](const std::string& file, const std::string& name) {
    return write_file(file, "[[job]]\nname = \"" + name + "\"\nrestart = \"never\"\n" +
                                "command = [\"sh\", \"-c\", \"exit 3\"]\n");
  };
  CommandResult mine = shell(colo("submit --json --name nightly " + failing("r.toml", "roots")));
  ASSERT_EQ(mine.exit_code, 0) << mine.output;
  EXPECT_NE(wait_all({1}).exit_code, 0);
  CommandResult theirs =
      shell("runuser -u " + b.name + " -- env " + env() + std::string(COLO_BINARY) +
            " submit --json --name nightly " + failing("b.toml", "theirs") + " --socket '" + dir_ +
            "/home/colo.sock'");
  ASSERT_EQ(theirs.exit_code, 0) << theirs.output << service_log();
  EXPECT_NE(wait_all({2}).exit_code, 0);

  CommandResult shown = shell(colo("show nightly --db " + db()));
  EXPECT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_THAT(shown.output, HasSubstr("roots"));
  EXPECT_THAT(shown.output, Not(HasSubstr("theirs")));
  CommandResult resumed = shell(colo("submit --json --resume nightly"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output << service_log();
  EXPECT_EQ(json::parse(resumed.output.substr(resumed.output.find('{')))["resumed"][0]["from"], 1);
  EXPECT_EQ(sql("SELECT name, owner_uid FROM service_jobs WHERE id = 3"),
            (std::vector<std::string>{"roots|0"}));
}

// Issue 53 (8): early stopping judges a trial only among its own
// submission's, as the service recorded it: two submissions of one job file
// (two users sharing a file, or one that claims another's source) are not
// mixed. Here a trial reporting loss 5 is not stopped by another
// submission's trial that reported 0.
TEST_F(ColoServe, EarlyStoppingJudgesATrialOnlyAmongItsOwnSubmissions) {
  start_service("--sim-devices 1 --mechanism naive --max-per-gpu 2 --grace 1s");
  const auto sweep = [&](const std::string& name, const std::string& loss) {
    return write_file(
        name,
        "[objective]\nmetric = \"loss\"\ngoal = \"min\"\n"
        "[early_stop]\nrule = \"median\"\nmin_epochs = 1\nmin_trials = 1\n"
        "[[job]]\nname = \"t\"\ncommand = [\"sh\", \"-c\", \"for e in 1 2 3 4; do sleep 0.3; "
        "printf '{\\\"event\\\":\\\"epoch_end\\\",\\\"epoch\\\":%d,\\\"samples\\\":10,"
        "\\\"loss\\\":" +
            loss + "}\\\\n' $e >> \\\"$COLO_PROGRESS_FILE\\\"; done\"]\n");
  };
  // The same [[job]] table on the same line: one source, two submissions.
  std::vector<int64_t> good = submit(sweep("sweep.toml", "0"));
  ASSERT_EQ(wait_all(good).exit_code, 0) << service_log();
  std::vector<int64_t> worse = submit(sweep("sweep.toml", "5"));
  ASSERT_EQ(worse.size(), 1u);
  EXPECT_EQ(wait_all(worse).exit_code, 0) << service_log();
  EXPECT_EQ(sql("SELECT state FROM service_jobs WHERE id = " + std::to_string(worse[0])),
            (std::vector<std::string>{"ok"}))
      << service_log();
}

// Issue 53 (7): fair share charges what colo saw, not what the job says. A
// job alone on its GPU reports a huge rate while colo measures it, then a
// tiny one: it held the whole GPU all along and is charged for it (it was
// charged 22.4 s for 50 s).
TEST_F(ColoServe, AJobAloneIsChargedItsWholeGpuWhateverRateItReports) {
  start_service("--sim-devices 1 --mechanism naive --grace 1s");
  const std::string epochs =
      R"(for e in 1 2 3; do sleep 0.3; printf '{"event":"epoch_end","epoch":%d,"samples":1000000}\n' $e >> "$COLO_PROGRESS_FILE"; done; )"
      R"(for e in $(seq 4 14); do sleep 0.3; printf '{"event":"epoch_end","epoch":%d,"samples":1}\n' $e >> "$COLO_PROGRESS_FILE"; done)";
  json spec = {{"name", "claims"}, {"command", {"sh", "-c", epochs}}};
  const std::string file =
      write_file("claims.toml",
                 "[[job]]\nname = \"claims\"\ncommand = " + json(spec["command"]).dump() + "\n");
  std::vector<int64_t> ids = submit(file);
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(wait_all(ids).exit_code, 0) << service_log();
  json r;
  ASSERT_TRUE(eventually(
      [&] {
        r = json::parse(shell(colo("usage --since 1h --json")).output, nullptr, false);
        return r.is_object() && r["ended"].size() == 1u && r["owners"].contains("root");
      },
      20'000))
      << service_log();
  const double gpu_ms = r["ended"][0]["gpu_ms"].get<double>();
  EXPECT_GT(gpu_ms, 3'000);
  EXPECT_NEAR(r["ended"][0]["share_ms"].get<double>(), gpu_ms, 1.0) << r.dump();
  EXPECT_GE(r["owners"]["root"]["total_ms"].get<double>(), 0.99 * gpu_ms) << r.dump();
}

// Finding 6 of issue 53: under a root service, every directory a job run as
// its submitter passes through is 0711 (the state directory, the logs root,
// profiles/, data/, checkpoints/, jobs/), so that A's job writes a torch
// profiling window into its own profile directory and B's job reads a shared
// loader started as B (whose directory is below data/); each of their own
// directories is theirs.
TEST_F(ColoServe, TwoUsersJobsReachTheirProfileWindowAndSharedLoaderThroughTheirParents) {
  if (!TestUser::possible()) GTEST_SKIP() << TestUser::kWhyNot;
  TestUser a("colpa");
  TestUser b("colpb");
  ASSERT_TRUE(a.created() && b.created());
  ASSERT_EQ(shell("usermod -aG " + a.group + " " + b.name).exit_code, 0);
  shell("chmod 755 '" + dir_ + "'");  // the job files and the dataset; not the state directory
  const bool torch = shell("/usr/bin/python3 -c 'import torch'").exit_code == 0;
  if (!torch) std::cerr << "no torch for /usr/bin/python3: no window is taken, no batch read\n";

  // A: a torch window of 3 steps from its job file (CPU torch), else a file
  // written into its profile directory.
  const std::string a_command =
      torch ? "command = [\"/usr/bin/python3\", \"" COLO_SOURCE_DIR
              "/tests/integration/profile/tiny_train.py\", \"--epochs\", \"2\"]\n"
              "profile = { tool = \"torch\", after_epoch = 1, steps = 3 }\n"
            : "command = [\"sh\", \"-c\", \"echo {} > $COLO_PROFILE_DIR/torch-summary-1.json && "
              "touch $COLO_CHECKPOINT_DIR/ok\"]\n";
  const std::string mine = write_file("a.toml", "[[job]]\nname = \"windowed\"\n" + a_command);
  // B: one epoch of a CIFAR-10 file of 40 samples through the shared loader.
  std::string cifar;
  for (int i = 0; i < 40; ++i)
    cifar +=
        std::string(1, static_cast<char>(i % 10)) + std::string(3 * 1024, static_cast<char>(i));
  std::filesystem::create_directories(dir_ + "/cifar");
  write_file("cifar/data_batch_1.bin", cifar);
  const std::string reader =
      write_file("reader.py",
                 "import colo_data\n"
                 "loader = colo_data.Loader(batch_size=8, device='cpu')\n"
                 "print('samples', sum(images.shape[0] for images, labels in loader))\n");
  // Without torch, a job that reads nothing: its loader still starts as B.
  const std::string b_command = (torch ? "command = [\"/usr/bin/python3\", \"" + reader + "\"]\n"
                                       : "command = [\"true\"]\n") +
                                "dataset = \"cifar\"\n";
  const std::string theirs =
      write_file("b.toml", "[data.cifar]\npath = \"" + dir_ +
                               "/cifar\"\nsize = 32\naugment = false\nring = \"2MiB\"\nchunk = "
                               "8\n\n[[job]]\nname = \"reader\"\n" +
                               b_command);
  shell("chmod -R a+rX '" + dir_ + "/cifar' '" + reader + "' '" + mine + "' '" + theirs + "'");

  // The default store, in the state directory, whose opening alone would
  // make the directory 0700.
  start_service("--policy fixed --mechanism naive --grace 1s --socket-group " + a.group,
                /*default_db=*/true);
  auto as = [&](const TestUser& u, const std::string& args) {
    return shell("runuser -u " + u.name + " -- env " + env() + std::string(COLO_BINARY) + " " +
                 args + " --socket '" + dir_ + "/home/colo.sock'");
  };
  auto submitted_id = [&](const CommandResult& r) -> int64_t {
    EXPECT_EQ(r.exit_code, 0) << r.output << service_log();
    if (r.exit_code != 0) return 0;
    return json::parse(r.output.substr(r.output.find('{')))["ids"][0];
  };
  const int64_t a_id = submitted_id(as(a, "submit --json " + mine));
  const int64_t b_id = submitted_id(as(b, "submit --json " + theirs));
  ASSERT_GT(a_id, 0);
  ASSERT_GT(b_id, 0);
  CommandResult waited = shell(colo("wait " + std::to_string(a_id) + " " + std::to_string(b_id)));
  EXPECT_EQ(waited.exit_code, 0) << waited.output
                                 << shell(colo("logs " + std::to_string(a_id))).output
                                 << shell(colo("logs " + std::to_string(b_id))).output
                                 << service_log();

  auto stat = [&](const std::string& format, const std::string& path) {
    const std::string out = shell("stat -c " + format + " " + path).output;
    return out.substr(0, out.find('\n'));
  };
  const std::string home = "'" + dir_ + "/home'";
  const std::string service_dir = home + "/serve/*";
  EXPECT_EQ(stat("%a", home), "711") << "the state directory";
  for (const char* parent : {"", "/jobs", "/checkpoints", "/profiles", "/data"})
    EXPECT_EQ(stat("%a", service_dir + parent), "711") << "the service's directory" << parent;
  const std::string summary =
      service_dir + "/profiles/" + std::to_string(a_id) + "/torch-summary-1.json";
  EXPECT_EQ(stat("%U", summary), a.name) << shell(colo("logs " + std::to_string(a_id))).output;
  std::string b_uid = shell("id -u " + b.name).output;
  b_uid.resize(b_uid.find('\n'));
  EXPECT_EQ(stat("'%U %a'", service_dir + "/data/" + b_uid), b.name + " 700")
      << "B's loader's directory";
  if (torch) {
    const std::string b_log = shell(colo("logs " + std::to_string(b_id))).output;
    EXPECT_NE(b_log.find("samples 40"), std::string::npos) << b_log << service_log();
  }
}

TEST_F(ColoServe, MpsServerDeathIsNamedAndItsJobsRunAgain) {
  fake_mps_on_path();
  // Long enough that the health check (every 5 s) sees the daemon gone.
  std::string file = write_file("jobs.toml", job("mpsjob", 16, 0.5, 2));
  start_service("--policy fixed --mechanism mps --grace 1s");
  std::vector<int64_t> ids = submit(file);
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 2; }, 20'000));
  // Kill the (fake) MPS control daemon: the mechanism fails under its clients.
  CommandResult killed =
      shell("kill -KILL $(cat '" + dir_ + "'/home/mps/*/pipe/nvidia-cuda-mps-control.pid)");
  ASSERT_EQ(killed.exit_code, 0) << killed.output;
  CommandResult waited =
      shell(colo("wait " + std::to_string(ids[0]) + " " + std::to_string(ids[1])));
  EXPECT_EQ(waited.exit_code, 0) << waited.output << service_log();
  std::string log = service_log();
  EXPECT_NE(log.find("the mps mechanism failed: MPS health check failed"), std::string::npos)
      << log;
  EXPECT_NE(log.find("mps mechanism restarted"), std::string::npos) << log;
  for (const std::string& row : sql("SELECT state, attempts FROM service_jobs"))
    EXPECT_EQ(row, "ok|2");
  EXPECT_EQ(sql("SELECT id FROM job_events WHERE kind = 'requeued'").size(), 2u);
}

// Jobs were once lost silently: after `rm` of the store, submits still
// succeeded and a restart found none of them.
TEST_F(ColoServe, AStoreDeletedUnderTheServiceStopsItTakingWorkLoudlyAndKeepsTheQueue) {
  std::string file = write_file("jobs.toml", job("held", 20, 0.5, 3));
  start_service("--policy fixed --max-per-gpu 1");
  std::vector<int64_t> ids = submit(file);
  ASSERT_EQ(ids.size(), 3u);
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 1; }, 20'000)) << service_log();
  ASSERT_EQ(std::remove(db().c_str()), 0);
  ASSERT_TRUE(eventually(
      [&] { return service_log().find("ERROR: the store") != std::string::npos; }, 10'000))
      << service_log();
  const std::string log = service_log();
  EXPECT_NE(log.find("was deleted under the service"), std::string::npos) << log;
  CommandResult refused = shell(colo("submit " + file));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("colo serve is halted: the store " + db() +
                                " was deleted under the service"),
            std::string::npos)
      << refused.output;
  CommandResult saved = shell("cat '" + dir_ + "'/home/serve/*/queue-when-the-store-was-lost-*");
  ASSERT_EQ(saved.exit_code, 0) << log;
  json kept = json::parse(saved.output, nullptr, false);
  ASSERT_TRUE(kept.is_object()) << saved.output;
  EXPECT_EQ(kept["jobs"].size(), 3u) << saved.output;
  stop_service();
  EXPECT_NE(service_log().find("its store was lost, so no job is kept"), std::string::npos)
      << service_log();
}

// The service once checked its store by opening and closing the file every
// second, which dropped the POSIX locks SQLite held on it: the next reader
// (`colo runs --db`, as the docs suggest) took itself for the last user and
// deleted the WAL under the service, and a SIGKILL then lost a job that had
// ended ok and one that was running.
TEST_F(ColoServe, AReaderOfTheStoreThenASigkillLoseNoJob) {
  std::string file = write_file("jobs.toml", job("quick", 1, 0.1) + job("long", 400, 0.5));
  start_service("--policy fixed --max-per-gpu 2 --mechanism naive --grace 1s");
  std::vector<int64_t> ids = submit(file);
  ASSERT_EQ(ids.size(), 2u);
  ASSERT_TRUE(eventually(
      [&] { return count_in_state("ok") == 1 && count_in_state("running") == 1; }, 20'000))
      << service_log();
  // The service checks its store with each snapshot (every second): two
  // snapshots later it has, and then readers come and go.
  const int64_t since = queue()["time_ms"].get<int64_t>();
  ASSERT_TRUE(eventually([&] { return queue()["time_ms"].get<int64_t>() > since + 1500; }, 20'000));
  for (int i = 0; i < 3; ++i) {
    CommandResult runs = shell(colo("runs --db " + db()));
    ASSERT_EQ(runs.exit_code, 0) << runs.output;
  }
  EXPECT_EQ(shell("ls '" + db() + "-wal'").exit_code, 0) << "the WAL was deleted under the service";
  kill_service(SIGKILL);
  EXPECT_EQ(sql("SELECT name, state FROM service_jobs ORDER BY id"),
            (std::vector<std::string>{"quick|ok", "long|running"}));
}

// What the service's run teaches is kept as its jobs end (issue 59): within a
// keep's period (10 s) of two jobs ending, while a third still runs, the store
// holds the run's part; a SIGKILL then loses none of it, and the next command
// completes it into the run's facts.
TEST_F(ColoServe, WhatEndedJobsTaughtIsKeptWhileTheServiceRuns) {
  std::string file = write_file("jobs.toml", job("quick", 3, 0.1, 2) + job("long", 400, 0.5));
  start_service("--policy fixed --max-per-gpu 3 --mechanism naive --grace 1s");
  std::vector<int64_t> ids = submit(file);
  ASSERT_EQ(ids.size(), 3u);
  ASSERT_TRUE(eventually(
      [&] { return count_in_state("ok") == 2 && count_in_state("running") == 1; }, 20'000))
      << service_log();
  ASSERT_TRUE(eventually(
      [&] { return !sql("SELECT kind FROM run_derived WHERE kind = 'learning-part'").empty(); },
      40'000))
      << service_log();
  kill_service(SIGKILL);
  EXPECT_TRUE(sql("SELECT kind FROM run_derived WHERE kind = 'learning'").empty());
  CommandResult profiles = shell(colo("profiles --db " + db()));
  EXPECT_EQ(profiles.exit_code, 0) << profiles.output;
  EXPECT_EQ(sql("SELECT kind FROM run_derived WHERE kind = 'learning'"),
            (std::vector<std::string>{"learning"}));
}

// A damaged store halts the service loudly, as a deleted one does: truncated
// to nothing, or overwritten behind its header, it once went unnoticed, took
// new submissions and lost the queue at shutdown.
TEST_F(ColoServe, AStoreTruncatedOrOverwrittenUnderTheServiceHaltsItLoudly) {
  for (const char* damage : {"truncate -s 0", "overwrite"}) {
    SCOPED_TRACE(damage);
    std::string file = write_file("jobs.toml", job("held", 40, 0.5, 2));
    start_service("--policy fixed --max-per-gpu 1 --mechanism naive --grace 1s");
    std::vector<int64_t> ids = submit(file);
    ASSERT_EQ(ids.size(), 2u);
    ASSERT_TRUE(eventually([&] { return count_in_state("running") == 1; }, 20'000))
        << service_log();
    shell(std::string(damage) == "overwrite"
              ? "dd if=/dev/zero of='" + db() +
                    "' bs=1 seek=100 count=4000 conv=notrunc 2>/dev/null"
              : "truncate -s 0 '" + db() + "'");
    ASSERT_TRUE(eventually(
        [&] { return service_log().find("ERROR: the store") != std::string::npos; }, 10'000))
        << service_log();
    CommandResult refused = shell(colo("submit " + file));
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.output.find("colo serve is halted: the store " + db()), std::string::npos)
        << refused.output;
    CommandResult saved = shell("cat '" + dir_ + "'/home/serve/*/queue-when-the-store-was-lost-*");
    ASSERT_EQ(saved.exit_code, 0) << service_log();
    EXPECT_EQ(json::parse(saved.output, nullptr, false)["jobs"].size(), 2u) << saved.output;
    stop_service();
    shell("rm -f '" + db() + "' '" + db() + "'-wal '" + db() + "'-shm '" + dir_ +
          "'/home/serve/*/queue-when-the-store-was-lost-* '" + dir_ + "/serve.log'");
  }
}

TEST_F(ColoServe, SigtermStopsAndTheNextStartRunsTheJobsAgain) {
  std::string file = write_file("jobs.toml", job("again", 4, 0.5) +
                                                 "[[job]]\nname = \"once\"\nrestart = \"never\"\n" +
                                                 "command = [\"sleep\", \"30\"]\n");
  start_service("--policy fixed --mechanism naive --grace 1s");
  std::vector<int64_t> ids = submit(file);
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 2; }, 20'000));
  stop_service();
  EXPECT_NE(service_log().find("colo serve stopped"), std::string::npos) << service_log();
  EXPECT_EQ(sql("SELECT state FROM service_jobs ORDER BY id"),
            (std::vector<std::string>{"queued", "interrupted"}));
  start_service("--policy fixed --mechanism naive --grace 1s");
  CommandResult waited = shell(colo("wait " + std::to_string(ids[0])));
  EXPECT_EQ(waited.exit_code, 0) << waited.output << service_log();
  EXPECT_EQ(sql("SELECT state, attempts FROM service_jobs ORDER BY id"),
            (std::vector<std::string>{"ok|2", "interrupted|1"}));
}

// Issue 54 (1): routine restarts cost no job. Four graceful restarts
// (SIGTERM, as `systemctl restart` does) and then a SIGKILL of the service
// while two jobs run: each comes back from its checkpoint, and every one
// ends ok (before, the fifth start gave up on both: "gave up after 5
// attempts", though none of their attempts had failed).
TEST_F(ColoServe, FourRestartsAndACrashLoseNoJob) {
  // Each job counts in its checkpoint, a count every 0.2 s, and ends ok once
  // the test has made the file "go" (a fixed count ran out before the fifth
  // restart on a busy machine).
  const std::string counting =
      R"(n=$(cat "$COLO_CHECKPOINT_DIR/n" 2>/dev/null || echo 0)
while [ ! -e ')" +
      dir_ +
      R"(/go' ]; do n=$((n + 1)); echo $n > "$COLO_CHECKPOINT_DIR/n"; echo "count $n"; sleep 0.2; done)";
  const std::string file = write_file(
      "long.toml", "[[job]]\nname = \"long\"\nrepeat = 2\ncommand = [\"sh\", \"-c\", \"\"\"" +
                       counting + "\"\"\"]\n");
  const std::string args = "--policy fixed --mechanism naive --max-per-gpu 2 --grace 1s";
  start_service(args);
  std::vector<int64_t> ids = submit(file);
  ASSERT_EQ(ids.size(), 2u);
  for (int restart = 1; restart <= 5; ++restart) {
    ASSERT_TRUE(eventually([&] { return count_in_state("running") == 2; }, 20'000))
        << "restart " << restart << "\n"
        << service_log();
    if (restart < 5) {
      stop_service();
    } else {
      kill_service(SIGKILL);
    }
    start_service(args);
  }
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 2; }, 20'000)) << service_log();
  write_file("go", "");
  CommandResult waited = wait_all(ids);
  EXPECT_EQ(waited.exit_code, 0) << waited.output << service_log();
  EXPECT_EQ(sql("SELECT state, attempts, uncounted FROM service_jobs ORDER BY id"),
            (std::vector<std::string>{"ok|6|5", "ok|6|5"}))
      << service_log();
  CommandResult queue = shell(colo("queue"));
  EXPECT_THAT(queue.output, HasSubstr("ok"));
}

// Issue 54 (2): `colo drain` stops the service starting queued jobs while
// running ones finish, `--wait` returns once none runs, only admins may, and
// `colo undrain` starts the queue again (before, a drain was only
// `--on-sigterm drain`, chosen at start).
TEST_F(ColoServe, DrainLetsRunningJobsFinishAndStartsNoneUntilUndrain) {
  start_service("--policy fixed --mechanism naive --max-per-gpu 1 --grace 1s");
  std::vector<int64_t> first = submit(write_file("first.toml", job("first", 4, 0.5)));
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(eventually([&] { return count_in_state("running") == 1; }, 20'000));
  CommandResult drained = shell(colo("drain"));
  ASSERT_EQ(drained.exit_code, 0) << drained.output;
  EXPECT_THAT(drained.output, HasSubstr("colo serve is drained"));
  std::vector<int64_t> second = submit(write_file("second.toml", job("second", 1, 0.1)));
  ASSERT_EQ(second.size(), 1u) << "a drained service still queues";
  EXPECT_THAT(queued_reason("drained"), HasSubstr("colo undrain"));
  CommandResult waited = shell(colo("drain --wait"));
  EXPECT_EQ(waited.exit_code, 0) << waited.output;
  EXPECT_EQ(count_in_state("running"), 0);
  EXPECT_EQ(sql("SELECT state FROM service_jobs ORDER BY id"),
            (std::vector<std::string>{"ok", "queued"}));
  if (TestUser::possible()) {
    TestUser b("colod");
    ASSERT_TRUE(b.created());
    shell("chmod 755 '" + dir_ + "' '" + dir_ + "/home' && chgrp " + b.group + " '" + dir_ +
          "/home/colo.sock'");
    CommandResult refused =
        shell("runuser -u " + b.name + " -- env " + env() + std::string(COLO_BINARY) +
              " undrain --socket '" + dir_ + "/home/colo.sock'");
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_THAT(refused.output, HasSubstr("only the service's admins"));
  }
  CommandResult undrained = shell(colo("undrain"));
  ASSERT_EQ(undrained.exit_code, 0) << undrained.output;
  EXPECT_EQ(wait_all(second).exit_code, 0) << service_log();
}

// Issue 54 (3): the state directory stays bounded. A job that floods its
// log keeps its head and tail (one wrote 30 MB in a second); a job that
// ends ok leaves no checkpoint directory (300 short jobs left 305), one
// that failed keeps its own for a resume; and `colo gc` reaches the running
// service's ended jobs, whose files it removes whole (logs, progress files,
// checkpoints), which it never could (the service's run never ends).
TEST_F(ColoServe, DiskStaysBoundedLogsCutCheckpointsGoAndGcReachesTheLiveService) {
  start_service("--policy fixed --mechanism naive --max-per-gpu 4 --grace 1s --max-log-size 64KiB");
  const std::string file = write_file("disk.toml", R"([[job]]
name = "flood"
command = ["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' 'y'; echo; echo THE-END; touch \"$COLO_CHECKPOINT_DIR/s\""]

[[job]]
name = "fine"
repeat = 3
command = ["sh", "-c", "touch \"$COLO_CHECKPOINT_DIR/s\""]

[[job]]
name = "broke"
restart = "never"
command = ["sh", "-c", "touch \"$COLO_CHECKPOINT_DIR/s\"; exit 3"]
)");
  std::vector<int64_t> ids = submit(file);
  ASSERT_EQ(ids.size(), 5u);
  wait_all(ids);
  EXPECT_EQ(sql("SELECT state FROM service_jobs ORDER BY id"),
            (std::vector<std::string>{"ok", "ok", "ok", "ok", "failed"}));
  const std::string serve = shell("ls -d '" + dir_ + "/home/serve/'*").output;
  const std::string root = serve.substr(0, serve.find('\n'));
  const std::string flood_log = shell("ls " + root + "/jobs/1-*.log").output;
  ASSERT_FALSE(flood_log.empty());
  std::ifstream in(flood_log.substr(0, flood_log.find('\n')));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_LT(text.size(), 64u * 1024) << "cut to its first and last quarter";
  EXPECT_THAT(text, HasSubstr("of this log were cut here: it passed its cap of 64.0 KiB"));
  EXPECT_THAT(text, HasSubstr("THE-END")) << "its tail is kept";
  EXPECT_EQ(shell("ls " + root + "/checkpoints").output, std::to_string(ids[4]) + "\n")
      << "only the failed job keeps its checkpoints";

  CommandResult gc = shell(colo("gc --older-than 1ms --db " + db()));
  EXPECT_EQ(gc.exit_code, 0) << gc.output;
  EXPECT_THAT(gc.output, HasSubstr("removed the files of 5 jobs of the running colo serve"));
  EXPECT_EQ(
      shell("ls -A " + root + "/jobs " + root + "/checkpoints | grep -v ':$' | grep .").output, "");
  CommandResult again = shell(colo("gc --older-than 1ms --db " + db()));
  EXPECT_THAT(again.output, HasSubstr("removed the files of 0 jobs"));
}

// A TCP port on 127.0.0.1 that nothing listens on now.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// The TCP sockets process `pid` listens on (from /proc: its socket inodes,
// matched against /proc/net/tcp and tcp6 in state LISTEN).
std::vector<std::string> listening_sockets(pid_t pid) {
  std::vector<std::string> inodes;
  CommandResult fds = shell("ls -l /proc/" + std::to_string(pid) + "/fd");
  std::istringstream lines(fds.output);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find("socket:[");
    if (at != std::string::npos) inodes.push_back(line.substr(at + 8, line.find(']', at) - at - 8));
  }
  std::vector<std::string> listening;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state == "0A" && std::find(inodes.begin(), inodes.end(), inode) != inodes.end())
        listening.push_back(local);
    }
  }
  return listening;
}

TEST_F(ColoServe, NothingListensOnTheNetworkUnlessAsked) {
  start_service("--policy fixed --mechanism naive");
  EXPECT_EQ(queue()["service"]["http"], "");
  EXPECT_TRUE(listening_sockets(service_pid_).empty());
  stop_service();
  start_service("--policy fixed --mechanism naive --http 127.0.0.1:0");
  const std::string address = queue()["service"]["http"];
  ASSERT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address << service_log();
  std::vector<std::string> listening = listening_sockets(service_pid_);
  ASSERT_EQ(listening.size(), 1u);
  EXPECT_EQ(listening[0].substr(0, 9), "0100007F:") << "127.0.0.1 only";
  CommandResult bad = shell(colo("serve --backend sim --http 127.0.0.1:99999 --db " + db()));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--http 127.0.0.1:99999: expected ADDR:PORT"), std::string::npos)
      << bad.output;
}

// Issue 11's two-GPU criterion, on the simulated backend: a sweep submitted
// to a service that owns two GPUs runs on both. Eight grid points of a
// stand-in job (bench/gain_standin.py) that each hold 30 GiB of a simulated
// 141 GB H200: together they fit on neither GPU alone.
TEST_F(ColoServe, ASweepSubmittedToTheServiceSpreadsOverBothGpus) {
  shell("mkdir -p '" + dir_ + "/shared'");
  std::string file = write_file(
      "grid.toml",
      "[[job]]\nname = \"toy\"\ncommand = [\"python3\", \"" COLO_SOURCE_DIR
      "/bench/gain_standin.py\", \"--shared\", \"" +
          dir_ +
          "/shared\", \"--gain\", \"3.2\", \"--epochs\", \"8\", \"--epoch-s\", \"0.2\", "
          "\"--startup\", \"0.3\", \"--sm-activity\", \"20\", \"--memory-mib\", \"30720\", "
          "\"--lr\", \"{lr}\"]\ngrid = { lr = [0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001, "
          "0.0005] }\n");
  start_service("--sim-devices 2 --mechanism naive --grace 1s");
  std::vector<int64_t> ids = submit(file);
  ASSERT_EQ(ids.size(), 8u);
  CommandResult waited = wait_all(ids);
  ASSERT_EQ(waited.exit_code, 0) << waited.output << service_log();

  EXPECT_EQ(sql("SELECT DISTINCT device FROM jobs ORDER BY device"),
            (std::vector<std::string>{"0", "1"}))
      << service_log();
  std::vector<std::string> ends = sql("SELECT state, attempts FROM service_jobs");
  EXPECT_EQ(ends, std::vector<std::string>(8, "ok|1")) << service_log();
}

// Issue 32: a queued job that no quota or fair share holds still says why
// it waits: a one-GPU job for room on a GPU, a gang for its GPUs at once.
TEST_F(ColoServe, AQueuedJobSaysItWaitsForRoomAndAGangForItsGpus) {
  start_service("--sim-devices 2 --mechanism naive --max-per-gpu 1 --grace 1s");
  std::vector<int64_t> ids = submit(write_file("long.toml", job("long", 60, 0.5, 2)));
  ASSERT_EQ(ids.size(), 2u);
  ASSERT_TRUE(eventually(
      [&] {
        json q = queue();
        return q.is_object() && q["gpus"].size() == 2 && q["gpus"][0]["jobs_running"] == 1 &&
               q["gpus"][1]["jobs_running"] == 1;
      },
      20'000))
      << service_log();
  for (int64_t id : submit(write_file("more.toml", job("more", 1, 0.1)))) ids.push_back(id);
  EXPECT_EQ(queued_reason("room:"), "room: no GPU has room for it now (gpu0 runs 1, gpu1 runs 1)")
      << service_log();
  for (int64_t id : submit(write_file("gang.toml", job("ddp", 1, 0.1) + "gpus = 2\n")))
    ids.push_back(id);
  EXPECT_EQ(queued_reason("gang:"), "gang: needs 2 GPUs at once (gpu0 runs 1, gpu1 runs 1)")
      << service_log();
  for (int64_t id : ids) shell(colo("cancel " + std::to_string(id)));
}

// Issue 34 under the service, as under `colo run` (ColoCold): a gang never
// measured starts at once beside one-GPU jobs, each rank under its prior's
// MPS memory limit, instead of holding both GPUs until it is measured.
TEST_F(ColoServe, ANewcomerGangStartsBesideOneGpuJobs) {
  std::string file = write_file("gang.toml", cold_gang_beside_singles());
  fake_mps_on_path();
  start_service("--sim-devices 2 --policy auto --mechanism mps --grace 1s");
  std::vector<int64_t> ids = submit(file);
  ASSERT_EQ(ids.size(), 5u);
  CommandResult waited = wait_all(ids);
  ASSERT_EQ(waited.exit_code, 0) << waited.output << service_log();
  EXPECT_NE(service_log().find("ddp: a gang never measured; prior: "), std::string::npos)
      << service_log();
  EXPECT_EQ(service_log().find("which it has to itself"), std::string::npos) << service_log();
  const std::vector<std::string> gang = sql("SELECT started_ms FROM jobs WHERE name = 'ddp'");
  ASSERT_EQ(gang.size(), 1u) << service_log();
  const int64_t at = std::stoll(gang[0]);
  const std::vector<std::string> beside =
      sql("SELECT name FROM jobs WHERE name != 'ddp' AND abs(started_ms - " + std::to_string(at) +
          ") < 1000");
  EXPECT_GE(beside.size(), 2u) << service_log();
  EXPECT_EQ(sql("SELECT DISTINCT state FROM service_jobs"), std::vector<std::string>{"ok"});
}

// A real Prometheus (Debian's `prometheus`) scrapes colo serve's /metrics;
// its query API then has the GPU's dcgm-exporter metric and colo's per-job
// metric with the job's label (hpc_job), and its own `job` label intact.
TEST_F(ColoServe, PrometheusScrapesGpuAndPerJobMetrics) {
  const std::string prometheus = shell("command -v prometheus").output;
  if (prometheus.empty()) {
    GTEST_SKIP() << "prometheus is not installed (Debian package prometheus; "
                    "scripts/install-deps.sh installs it)";
  }
  std::string file = write_file("jobs.toml", job("scraped", 240, 0.5));
  start_service("--mechanism naive --sample-period 200ms --http 127.0.0.1:0");
  const std::string address = queue()["service"]["http"];
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  std::vector<int64_t> ids = submit(file);
  ASSERT_EQ(ids.size(), 1u);
  const std::string id = std::to_string(ids[0]);

  // colo's own answer first: the running job's detail and its metric.
  httplib::Client colo_http("127.0.0.1", port);
  colo_http.set_connection_timeout(2);
  colo_http.set_read_timeout(10);
  ASSERT_TRUE(eventually(
      [&] {
        httplib::Result r = colo_http.Get("/metrics");
        return r && r->status == 200 &&
               r->body.find("colo_job_epoch{hpc_job=\"" + id + "\"") != std::string::npos;
      },
      30'000))
      << service_log();
  httplib::Result detail = colo_http.Get("/api/jobs/" + id);
  ASSERT_TRUE(detail);
  json d = json::parse(detail->body, nullptr, false);
  ASSERT_TRUE(d.is_object()) << detail->body;
  EXPECT_EQ(d["job"]["state"], "running");
  ASSERT_EQ(d["attempts"].size(), 1u) << detail->body;
  EXPECT_EQ(d["attempts"][0]["state"], "running");

  const int prom_port = free_port();
  ASSERT_GT(prom_port, 0);
  write_file("prometheus.yml",
             "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
             "scrape_configs:\n  - job_name: colo\n    honor_labels: true\n"
             "    static_configs:\n      - targets: ['" +
                 address + "']\n");
  CommandResult started =
      shell("prometheus --config.file='" + dir_ + "/prometheus.yml' --storage.tsdb.path='" + dir_ +
            "/prometheus' --web.listen-address=127.0.0.1:" + std::to_string(prom_port) + " > '" +
            dir_ + "/prometheus.log' 2>&1 & echo $!");
  const pid_t prom_pid = std::stoi(started.output);
  httplib::Client prom("127.0.0.1", prom_port);
  prom.set_connection_timeout(2);
  prom.set_read_timeout(10);
  auto query = [&](const std::string& q) {
    httplib::Result r = prom.Get("/api/v1/query", httplib::Params{{"query", q}}, {});
    if (!r || r->status != 200) return json();
    json j = json::parse(r->body, nullptr, false);
    return j.is_object() && j["status"] == "success" ? j["data"]["result"] : json();
  };
  json sm;
  json epoch;
  const bool scraped = eventually(
      [&] {
        sm = query("DCGM_FI_PROF_SM_ACTIVE");
        epoch = query("colo_job_epoch{hpc_job=\"" + id + "\"}");
        return sm.is_array() && !sm.empty() && epoch.is_array() && !epoch.empty();
      },
      90'000);
  ::kill(prom_pid, SIGTERM);  // the shell's child, not ours: nothing to reap
  ASSERT_TRUE(scraped) << shell("tail -20 '" + dir_ + "/prometheus.log'").output << service_log();
  EXPECT_EQ(sm[0]["metric"]["gpu"], "0") << sm.dump();
  EXPECT_EQ(sm[0]["metric"]["UUID"].get<std::string>().rfind("GPU-", 0), 0u) << sm.dump();
  EXPECT_NE(sm[0]["metric"]["modelName"], "") << sm.dump();
  const double ratio = std::stod(sm[0]["value"][1].get<std::string>());
  EXPECT_GE(ratio, 0.0);
  EXPECT_LE(ratio, 1.0);
  EXPECT_EQ(epoch[0]["metric"]["hpc_job"], id) << epoch.dump();
  // Prometheus's own label still names the scrape job: colo's labels leave it alone.
  EXPECT_EQ(epoch[0]["metric"]["job"], "colo") << epoch.dump();
  EXPECT_EQ(sm[0]["metric"]["job"], "colo") << sm.dump();
  std::string user = shell("id -un").output;
  user.erase(user.find_last_not_of('\n') + 1);
  EXPECT_EQ(epoch[0]["metric"]["user"], user) << epoch.dump();
  EXPECT_GE(std::stoi(epoch[0]["value"][1].get<std::string>()), 1);
  shell(colo("cancel " + id));
}

}  // namespace
}  // namespace colo
