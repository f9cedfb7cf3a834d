// End-to-end tests of colo under hostile conditions: a store that is locked,
// full or read-only, jobs that leave processes behind, inputs that try to
// break the output. Real binary, real child processes, real SQLite files, on
// the simulated GPU backend.
//
// Tests that need a file system of their own (full, read-only) mount a tmpfs
// in a private mount namespace (`unshare -m`, root only) and are skipped,
// saying so, where that is not allowed.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "integration_util.h"
#include "store/run_store.h"

namespace colo {
namespace {

class ColoHardening : public ColoTestDir {
 protected:
  std::string colo(const std::string& args) const {
    return "COLO_HOME='" + dir_ + "/home' " + std::string(COLO_BINARY) + " " + args;
  }
  std::string run_args(const std::string& file, const std::string& db_path) const {
    return "run '" + file + "' --backend sim --mechanism naive --plain --db '" + db_path + "'";
  }

  // Runs `script` with sh in a private mount namespace, where `dir_/m` is a
  // tmpfs of `size` ("2m"). False (and the test should skip) when this
  // machine does not allow it.
  bool private_tmpfs_available() {
    CommandResult probe = shell("mkdir -p '" + dir_ +
                                "/m' && unshare -m --propagation private sh -c "
                                "'mount -t tmpfs -o size=1m tmpfs \"" +
                                dir_ + "/m\"'");
    return probe.exit_code == 0;
  }
  CommandResult in_private_tmpfs(const std::string& size, const std::string& script) {
    std::string path = write_file("in-tmpfs.sh", "set -u\nmount -t tmpfs -o size=" + size +
                                                     " tmpfs '" + dir_ + "/m'\n" + script);
    return shell("unshare -m --propagation private sh '" + path + "'");
  }
};

// ------------------------------------------------ item 13: read-only store

TEST_F(ColoHardening, RunsShowAndReportReadAStoreOnAReadOnlyFileSystem) {
  if (!private_tmpfs_available()) GTEST_SKIP() << "no private mounts here (needs root)";
  std::string file = write_file("jobs.toml", "[[job]]\nname = \"a\"\ncommand = [\"true\"]\n");
  std::string m = dir_ + "/m";
  CommandResult r = in_private_tmpfs(
      "4m", colo(run_args(file, m + "/colo.db")) + " >/dev/null || exit 9\n" +
                "mount -o remount,ro '" + m + "' || exit 8\n" +
                colo("runs --db '" + m + "/colo.db'") + " && echo RUNS_OK\n" +
                colo("show 1 --db '" + m + "/colo.db'") + " && echo SHOW_OK\n" +
                colo("report 1 --no-png --db '" + m + "/colo.db' --out '" + dir_ + "/report'") +
                " && echo REPORT_OK\n");
  EXPECT_NE(r.output.find("RUNS_OK"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("SHOW_OK"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("REPORT_OK"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("opened read-only"), std::string::npos) << r.output;
}

// ------------------------------------------------- item 8: full disk

TEST_F(ColoHardening, RunsWorksOnAFullDiskWithARunToMarkInterrupted) {
  if (!private_tmpfs_available()) GTEST_SKIP() << "no private mounts here (needs root)";
  std::string file =
      write_file("jobs.toml", "[[job]]\nname = \"a\"\ncommand = [\"sleep\", \"30\"]\n");
  std::string m = dir_ + "/m";
  // A colo killed mid-run leaves a run 'running' whose colo is gone: the next
  // command wants to write 'interrupted'; the disk is full by then.
  CommandResult r =
      in_private_tmpfs("4m", colo(run_args(file, m + "/colo.db")) +
                                 " >/dev/null & pid=$!; sleep 1; kill -KILL $pid; wait $pid\n"
                                 "dd if=/dev/zero of='" +
                                 m + "/fill' bs=64k 2>/dev/null\n" +
                                 colo("runs --db '" + m + "/colo.db'") + " && echo RUNS_OK\n");
  EXPECT_NE(r.output.find("RUNS_OK"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("opened read-only"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace colo
