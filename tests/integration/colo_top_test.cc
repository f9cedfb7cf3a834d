// `colo top` end to end: the real binary in a real terminal (tmux: keys sent
// with send-keys, the screen read with capture-pane) against `colo serve
// --backend sim` running real jobs; and its print-once forms (a pipe,
// TERM=dumb). Needs tmux (Debian package tmux, in scripts/install-deps.sh);
// fails, saying so, without it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "integration_util.h"

namespace colo {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The screen row (0-based) whose text contains `what`; -1 when none does.
int row_of(const std::string& screen, const std::string& what) {
  std::vector<std::string> lines = lines_of(screen);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(what) != std::string::npos) return static_cast<int>(i);
  }
  return -1;
}

class ColoTop : public ColoTestDir {
 protected:
  void SetUp() override {
    ColoTestDir::SetUp();
    ASSERT_EQ(shell("command -v tmux").exit_code, 0)
        << "tmux is required for this test: apt-get install tmux (scripts/install-deps.sh)";
  }
  void TearDown() override {
    shell(tmux("kill-server"));
    if (service_pid_ > 0) {
      ::kill(service_pid_, SIGTERM);
      eventually([&] { return ::kill(service_pid_, 0) != 0; }, 20'000);
    }
    ColoTestDir::TearDown();
  }

  std::string env() const {
    return "COLO_HOME='" + dir_ + "/home' COLO_LOCK_DIR='" + dir_ + "/locks' ";
  }
  std::string colo(const std::string& args) const {
    return env() + std::string(COLO_BINARY) + " " + args;
  }
  // A tmux server of this test only.
  std::string tmux(const std::string& args) const {
    return "tmux -S '" + dir_ + "/tmux.sock' " + args;
  }

  void start_service(const std::string& args) {
    CommandResult r = shell(colo("serve --backend sim --db " + db() + " " + args) + " >> '" + dir_ +
                            "/serve.log' 2>&1 & echo $!");
    service_pid_ = std::stoi(r.output);
    ASSERT_TRUE(eventually([&] { return shell(colo("queue")).exit_code == 0; }, 20'000))
        << shell("cat '" + dir_ + "/serve.log'").output;
  }

  json queue() const {
    CommandResult r = shell(colo("queue --json"));
    return r.exit_code == 0 ? json::parse(r.output, nullptr, false) : json();
  }
  std::string state_of(int64_t id) const {
    json q = queue();
    if (!q.is_object()) return "";
    for (const json& j : q["jobs"]) {
      if (j["id"] == id) return j["state"];
    }
    return "";
  }
  int running() const {
    json q = queue();
    if (!q.is_object()) return -1;
    int n = 0;
    for (const json& j : q["jobs"]) n += j["state"] == "running";
    return n;
  }

  // Three jobs (alpha, beta, gamma: ids 1, 2, 3) of `epochs` epochs of 0.3 s.
  std::string job_file(int epochs) const {
    std::string text = "[defaults]\ngpu_memory = \"10GiB\"\n";
    for (const char* name : {"alpha", "beta", "gamma"}) {
      text += std::string("[[job]]\nname = \"") + name +
              "\"\ncommand = [\"sh\", \"-c\", \"echo hello from $COLO_JOB_NAME; for e in $(seq 1 " +
              std::to_string(epochs) +
              "); do sleep 0.3; printf '{\\\"event\\\":\\\"epoch_end\\\",\\\"epoch\\\":%d,"
              "\\\"samples\\\":600}\\\\n' $e >> \\\"$COLO_PROGRESS_FILE\\\"; done\"]\n";
    }
    return write_file("jobs.toml", text);
  }

  // `colo top` in a terminal of this size. Its exit status goes to top.exit,
  // and the terminal stays, with whatever colo top said last on it, so that a
  // failure shows why colo top ended (the screen was gone before).
  void start_top(int width, int height) {
    write_file("top.sh", colo("top --interval 300ms") + "\necho \"colo top exited $?\" > '" + dir_ +
                             "/top.exit'\nexec sleep 600\n");
    CommandResult r = shell(tmux("new-session -d -s top -x " + std::to_string(width) + " -y " +
                                 std::to_string(height) + " \"sh '" + dir_ + "/top.sh'\""));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  std::string top_exit() const { return shell("cat '" + dir_ + "/top.exit' 2>/dev/null").output; }
  // The screen; where there is none, why: the tmux server's state and the
  // service's log.
  std::string screen() const {
    CommandResult r = shell(tmux("capture-pane -p -t top"));
    if (r.exit_code == 0) return r.output;
    return r.output + "(no screen; " + top_exit() + ")\n" + shell("ls -la '" + dir_ + "'").output +
           shell("tail -n 20 '" + dir_ + "/serve.log'").output;
  }
  void keys(const std::string& keys) const { shell(tmux("send-keys -t top " + keys)); }
  // Waits until the screen shows `what`; the screen as last seen.
  std::string wait_for(const std::string& what, int64_t timeout_ms = 15'000) const {
    std::string last;
    eventually(
        [&] {
          last = screen();
          return last.find(what) != std::string::npos;
        },
        timeout_ms);
    return last;
  }

  pid_t service_pid_ = 0;
};

TEST_F(ColoTop, ShowsBarsAndJobsSortsFollowsALogAndCancelsWithAKey) {
  start_service("--policy fixed --max-per-gpu 3 --mechanism naive --grace 1s");
  ASSERT_EQ(shell(colo("submit " + job_file(200))).exit_code, 0);
  ASSERT_TRUE(eventually([&] { return running() == 3; }, 20'000));
  start_top(160, 40);

  // GPU bars and the three running jobs, with their epochs.
  std::string s = wait_for("gamma");
  EXPECT_THAT(s, HasSubstr("colo serve pid"));
  EXPECT_THAT(s, HasSubstr("gpu0 Simulated NVIDIA H200 SM["));
  EXPECT_THAT(s, HasSubstr("MEM["));
  EXPECT_THAT(s, HasSubstr("PWR["));
  EXPECT_THAT(s, HasSubstr("3 jobs"));
  for (const char* name : {"alpha", "beta", "gamma"}) EXPECT_NE(row_of(s, name), -1) << s;
  s = wait_for("running       0 naive         2");  // epochs arrive
  // Each job's process on the GPU, with its memory and job.
  s = wait_for("job 3 gamma");
  EXPECT_THAT(s, HasSubstr("job 1 alpha"));
  EXPECT_THAT(s, HasSubstr("job 2 beta"));

  // Queue order, then by id descending: gamma moves above alpha.
  EXPECT_LT(row_of(s, "    1 root"), row_of(s, "    3 root")) << s;
  keys("s");
  s = wait_for("sort (id)");
  keys("r");
  s = wait_for("sort (id, descending)");
  EXPECT_LT(row_of(s, "    3 root"), row_of(s, "    2 root")) << s;
  EXPECT_LT(row_of(s, "    2 root"), row_of(s, "    1 root")) << s;

  // Select the first row (the selection follows a job when the order changes),
  // follow its log, then back.
  keys("Home");
  keys("l");
  s = wait_for("hello from gamma");
  EXPECT_THAT(s, HasSubstr("log of job 3 (gamma)"));
  keys("q");
  s = wait_for("sort (id, descending)");

  // Filter to beta, then cancel it with a key; the service records it.
  keys("/ b e t a Enter");
  s = wait_for("[beta]");
  EXPECT_EQ(row_of(s, "    1 root"), -1) << s;
  keys("c");
  s = wait_for("cancel job 2? y");
  keys("y");
  ASSERT_TRUE(eventually([&] { return state_of(2) == "cancelled"; }, 20'000)) << screen();
  s = wait_for("beta  cancelled");
  EXPECT_EQ(state_of(1), "running");
  EXPECT_EQ(state_of(3), "running");

  // A smaller terminal: everything still fits, bars go below the GPU's name.
  keys("/ Escape");
  shell(tmux("resize-window -t top -x 70 -y 20"));
  s = wait_for("SM[");
  for (const std::string& line : lines_of(s)) EXPECT_LE(line.size(), 70u) << line;
  EXPECT_NE(row_of(s, "    1 root      alpha running"), -1) << s;

  // q quits: colo top ends, and ends well.
  keys("q");
  EXPECT_TRUE(eventually([&] { return !top_exit().empty(); }, 10'000)) << screen();
  EXPECT_EQ(top_exit(), "colo top exited 0\n");
}

TEST_F(ColoTop, PrintsOnceWhenTheOutputIsNotATerminalOrTermIsDumb) {
  // No service: this machine's (simulated) GPUs.
  CommandResult piped = shell(colo("top --backend sim --sim-devices 2") + " | cat");
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_THAT(piped.output, HasSubstr("no colo serve answers"));
  EXPECT_THAT(piped.output, HasSubstr("gpu0 Simulated NVIDIA H200 SM["));
  EXPECT_THAT(piped.output, HasSubstr("gpu1 Simulated NVIDIA H200 SM["));
  EXPECT_THAT(piped.output, Not(HasSubstr("q: quit")));
  EXPECT_THAT(piped.output, Not(HasSubstr("\x1b[")));

  // With a service, in a terminal whose TERM is dumb: the jobs, once.
  start_service("--policy fixed --max-per-gpu 3 --mechanism naive --grace 1s");
  ASSERT_EQ(shell(colo("submit " + job_file(100))).exit_code, 0);
  ASSERT_TRUE(eventually([&] { return running() == 3; }, 20'000));
  shell(tmux("new-session -d -s top -x 150 -y 30"));
  keys("'TERM=dumb " + colo("top --width 150") + "; echo exit=$?' Enter");
  std::string s = wait_for("exit=0");
  EXPECT_THAT(s, HasSubstr("ID OWNER"));
  EXPECT_THAT(s, HasSubstr("gamma"));
  EXPECT_THAT(s, Not(HasSubstr("q: quit")));
}

}  // namespace
}  // namespace colo
