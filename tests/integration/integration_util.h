// What the end-to-end tests share: running shell commands, and a fixture
// with a fresh directory (COLO_HOME, store, job files) per test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "analysis/run_summary.h"
#include "store/run_store.h"

namespace colo {

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

// Runs `script` with /bin/sh, stdout and stderr together.
inline CommandResult shell(const std::string& script) {
  CommandResult r;
  FILE* pipe = popen((script + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Polls `pred` every 100 ms until it holds or `timeout_ms` has passed; its last answer.
template <class Pred>
bool eventually(Pred pred, int64_t timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return pred();
}

// The most jobs of `run` that ran at once.
inline size_t most_at_once(const colo::RunSummary& run) {
  std::vector<std::pair<colo::UnixMillis, int>> edges;
  for (const colo::JobSummary& j : run.jobs) {
    if (!j.started_ms || !j.ended_ms) continue;
    edges.emplace_back(*j.started_ms, 1);
    edges.emplace_back(*j.ended_ms, -1);
  }
  std::sort(edges.begin(), edges.end());
  int now = 0;
  int most = 0;
  for (const auto& [t, d] : edges) most = std::max(most, now += d);
  return static_cast<size_t>(most);
}

#ifdef COLO_SOURCE_DIR
// The independent check: bench/verify-speedup.py on the logs of the jobs in
// `show` (`colo show --json` of the latest run), with the first job of the
// run before it in `store` as the solo run. Its JSON; null when it printed none.
inline nlohmann::json verify_from_logs(RunStore& store, const nlohmann::json& show) {
  auto runs = store.list_runs(2);
  if (!runs.ok() || runs->size() != 2u) return nullptr;
  auto solo = store.run_record((*runs)[1].id);
  if (!solo.ok() || solo->jobs.empty()) return nullptr;
  std::string logs;
  for (const nlohmann::json& job : show["jobs"])
    logs += " '" + job["log_path"].get<std::string>() + "'";
  const CommandResult verified =
      shell("python3 " COLO_SOURCE_DIR "/bench/verify-speedup.py --json --solo '" +
            solo->jobs[0].log_path + "' --together" + logs);
  return nlohmann::json::parse(verified.output, nullptr, false);
}

// Issue 34's case on the simulated backend (bench/sim_train.py): a resnet50
// gang of two ranks (`ddp`) and four one-GPU resnet26 jobs (`single`), no
// memory hints: nothing known of any of them on a fresh store.
inline std::string cold_gang_beside_singles() {
  const std::string sim = "[\"python3\", \"" COLO_SOURCE_DIR "/bench/sim_train.py\", ";
  const std::string epochs = "\"--epochs\", \"3\", \"--epoch-samples\", \"20000\"]\n";
  return "[[job]]\nname = \"ddp\"\ngpus = 2\ncommand = " + sim + "\"--model\", \"resnet50\", " +
         epochs + "\n[[job]]\nname = \"single\"\nrepeat = 4\ncommand = " + sim +
         "\"--model\", \"resnet26\", " + epochs;
}
#endif

// A fresh directory per test, removed unless the test failed (to look at).
// Where this machine lets colo make cgroups, each test also gets a cgroup
// parent of its own ($COLO_CGROUP_PARENT for the colos it starts): a colo
// cleaning up after a dead colo stops the run cgroups of every dead colo
// under its parent, and must not reach another test's leftovers, which that
// test means to see stopped by its own next colo.
class ColoTestDir : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/colo-it-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // GPU locks of this test only: tests run in parallel on the same simulated GPUs.
    setenv("COLO_LOCK_DIR", (dir_ + "/locks").c_str(), 1);
    // The colo under test finds bench/ and the Python client in this source
    // tree, wherever it was built (ctest gives COLO_SOURCE_DIR; an installed
    // layout is install_test's).
    if (const char* source = std::getenv("COLO_SOURCE_DIR")) {
      setenv("COLO_BENCH_DIR", (std::string(source) + "/bench").c_str(), 1);
      setenv("COLO_PYTHON_DIR", (std::string(source) + "/python").c_str(), 1);
    }
    CommandResult cgroup = shell(
        "p=$(findmnt -n -t cgroup2 -o TARGET | head -n 1) && [ -n \"$p\" ] && "
        "mkdir -p \"$p/colo\" && d=\"$p/colo/test-" +
        dir_.substr(dir_.rfind('/') + 1) + "\" && mkdir \"$d\" && printf %s \"$d\"");
    if (cgroup.exit_code == 0 && !cgroup.output.empty()) {
      cgroup_parent_ = cgroup.output;
      setenv("COLO_CGROUP_PARENT", cgroup_parent_.c_str(), 1);
    } else {
      unsetenv("COLO_CGROUP_PARENT");
    }
  }
  void TearDown() override {
    if (!cgroup_parent_.empty()) {
      shell("d='" + cgroup_parent_ +
            "'; [ -e \"$d/cgroup.kill\" ] && echo 1 > \"$d/cgroup.kill\"; sleep 0.1; "
            "find \"$d\" -depth -type d -exec rmdir {} + 2>/dev/null");
      unsetenv("COLO_CGROUP_PARENT");
    }
    if (!HasFailure()) shell("rm -rf '" + dir_ + "'");
  }

  std::string write_file(const std::string& name, const std::string& text) const {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::string db() const { return dir_ + "/colo.db"; }

  std::unique_ptr<RunStore> open_store() const {
    auto store = RunStore::open(db());
    EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message());
    return store.ok() ? std::move(store).value() : nullptr;
  }

  std::string dir_;
  std::string cgroup_parent_;  // empty: none (colo chooses, or runs without cgroups)
};

}  // namespace colo
