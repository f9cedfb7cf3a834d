// `colo run --mechanism mig` end to end: the real binary over the stand-in
// NVML library (COLO_NVML_LIBRARY), whose MIG state lives in a file
// ($FAKE_NVML_STATE) shared by this test and the colo processes it starts.
// colo is killed with SIGKILL at each step of a run (the stand-in kills it
// from inside the driver calls); the next start must leave no instance of
// colo's behind, and never touch the instance someone else created.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "fake_nvml/fake_nvml_loader.h"
#include "integration_util.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

class ColoMigRun : public ColoTestDir {
 protected:
  void SetUp() override {
    ColoTestDir::SetUp();
    state_ = dir_ + "/fake-nvml-mig.json";
    setenv("FAKE_NVML_STATE", state_.c_str(), 1);  // this process's view of the stand-in
    ASSERT_TRUE(fake_.loaded() && fake_.has_mig());
    fake_.reset();
    fake_.mig_set("model", "H100-80GB");
    fake_.mig_set("mode", "1");
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_STATE");
    ColoTestDir::TearDown();
  }

  std::string colo(const std::string& args) const {
    return "COLO_HOME='" + dir_ +
           "/home' COLO_NVML_LIBRARY='" FAKE_NVML_PATH "' FAKE_NVML_STATE='" + state_ + "' " +
           COLO_BINARY + " " + args;
  }
  std::string run(const std::string& file, const std::string& mechanism = "mig") const {
    return colo("run " + file + " --mechanism " + mechanism + " --plain --sample-period 100ms " +
                "--db " + db() + " --logs '" + dir_ + "/logs'");
  }
  // Ownership records colo keeps while it holds MIG instances.
  std::string records() const {
    return shell("ls -A '" + dir_ + "/home/mig' 2>/dev/null | wc -l").output;
  }

  std::string state_;
  FakeNvml fake_{FAKE_NVML_PATH};
};

// Three jobs: one on a 3g.40gb; two sharing one GPU instance's memory.
std::string jobs(const std::string& command) {
  std::string out;
  for (const char* name : {"vision", "rec-a", "rec-b"}) {
    out += std::string("[[job]]\nname = \"") + name + "\"\ncommand = [\"sh\", \"-c\", \"" +
           command + "\"]\n";
    out += std::string(name) == "vision" ? "mig_profile = \"3g.40gb\"\n" : "mig_group = \"rec\"\n";
  }
  return out;
}

TEST_F(ColoMigRun, EachJobRunsOnItsOwnInstanceAndNothingIsLeft) {
  std::string file =
      write_file("mig.toml", jobs("echo $CUDA_VISIBLE_DEVICES > $COLO_JOB_NAME.uuid; sleep 0.3"));
  CommandResult r = shell("cd '" + dir_ + "' && " + run(file));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mechanism mig"));
  std::string uuids = shell("cat '" + dir_ + "'/*.uuid | sort -u").output;
  EXPECT_EQ(std::count(uuids.begin(), uuids.end(), '\n'), 3) << uuids;
  EXPECT_EQ(uuids.rfind("MIG-", 0), 0u) << uuids;
  EXPECT_EQ(fake_.mig_describe(), "");
  EXPECT_EQ(records(), "0\n");

  CommandResult show = shell(colo("show --db " + db()));
  EXPECT_THAT(show.output, HasSubstr("idle MIG instances"));
  EXPECT_THAT(show.output, HasSubstr("3g.40gb gi1 ci0"));
  EXPECT_THAT(show.output, HasSubstr("4g.40gb gi2 ci1"));  // the group: two compute instances
}

TEST_F(ColoMigRun, RefusesWhenMigModeIsOffOrPermissionIsMissing) {
  std::string file = write_file("mig.toml", jobs("true"));
  fake_.mig_set("mode", "0");
  CommandResult off = shell(run(file));
  EXPECT_EQ(off.exit_code, 3) << off.output;
  EXPECT_THAT(off.output, HasSubstr("MIG mode is disabled on GPU 0"));
  EXPECT_THAT(off.output, HasSubstr("colo mig enable --gpu 0 --yes-i-know"));

  fake_.mig_set("mode", "1");
  fake_.mig_set("permission", "0");
  CommandResult denied = shell(run(file));
  EXPECT_EQ(denied.exit_code, 3) << denied.output;
  EXPECT_THAT(denied.output, HasSubstr("needs root"));
  EXPECT_EQ(fake_.mig_describe(), "");
  EXPECT_EQ(records(), "0\n");
}

TEST_F(ColoMigRun, MigModeChangesOnlyWithTheExplicitFlag) {
  fake_.mig_set("mode", "0");
  CommandResult refused = shell(colo("mig enable --gpu 0"));
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("--yes-i-know"));
  EXPECT_THAT(refused.output, HasSubstr("GPU reset"));

  CommandResult enabled = shell(colo("mig enable --gpu 0 --yes-i-know"));
  EXPECT_EQ(enabled.exit_code, 0) << enabled.output;
  EXPECT_THAT(enabled.output, HasSubstr("MIG mode now disabled, after the next reset enabled"));
  EXPECT_THAT(enabled.output, HasSubstr("colo never resets a GPU itself"));

  fake_.mig_set("permission", "0");
  CommandResult denied = shell(colo("mig disable --gpu 0 --yes-i-know"));
  EXPECT_EQ(denied.exit_code, 3) << denied.output;
  EXPECT_THAT(denied.output, HasSubstr("needs root"));
}

TEST_F(ColoMigRun, StatusAsJson) {
  fake_.mig_set("mode", "1");
  ASSERT_EQ(fake_.mig_add_gpu_instance(0, 19, 6, 1), 1);
  CommandResult r = shell("(" + colo("mig status --gpu 0 --json") + " 2>/dev/null)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json status = nlohmann::json::parse(r.output);
  EXPECT_EQ(status["gpu"], 0);
  EXPECT_EQ(status["mig_mode"], true);
  EXPECT_EQ(status["mig_mode_after_reset"], true);
  ASSERT_EQ(status["gpu_instances"].size(), 1U);
  const nlohmann::json& gi = status["gpu_instances"][0];
  EXPECT_EQ(gi["profile_id"], 19);
  EXPECT_EQ(gi["profile"], "1g.10gb");
  EXPECT_EQ(gi["start"], 6);
  EXPECT_EQ(gi["size"], 1);
  ASSERT_EQ(gi["compute_instances"].size(), 1U);
  EXPECT_THAT(gi["compute_instances"][0]["uuid"].get<std::string>(), testing::StartsWith("MIG-"));
}

// Where the stand-in kills colo; "" kills it from a job while the jobs run.
class ColoMigCrash : public ColoMigRun, public ::testing::WithParamInterface<const char*> {};

TEST_P(ColoMigCrash, TheNextStartDestroysWhatTheKilledColoCreatedAndNothingElse) {
  // Someone else's 1g.10gb at memory slice 6: colo plans around it and never touches it.
  ASSERT_EQ(fake_.mig_add_gpu_instance(0, 19, 6, 1), 1);
  const std::string foreign = "gpu0 gi1 p19 @6 [ci0/1]";
  const std::string kill_at = GetParam();
  std::string command = "sleep 0.2";
  if (kill_at.empty()) {
    command = "kill -9 $PPID; sleep 5";  // the job's parent is colo
  } else {
    fake_.mig_set("kill_at", kill_at.c_str());
  }
  std::string file = write_file("mig.toml", jobs(command));
  CommandResult killed = shell(run(file) + "; echo exit=$?");
  ASSERT_THAT(killed.output, HasSubstr("exit=137"));
  EXPECT_EQ(records(), "1\n") << "colo left no ownership record";
  if (kill_at != "gi_create:before") {
    EXPECT_NE(fake_.mig_describe(), foreign) << "nothing to clean up: the test tests nothing";
  }

  // The next start, under another mechanism.
  std::string quick = write_file("quick.toml", "[[job]]\nname = \"q\"\ncommand = [\"true\"]\n");
  CommandResult next = shell(run(quick, "naive"));
  EXPECT_EQ(next.exit_code, 0) << next.output;
  EXPECT_EQ(fake_.mig_describe(), foreign) << next.output;
  EXPECT_EQ(records(), "0\n") << next.output;
  if (kill_at != "gi_create:before") {
    EXPECT_THAT(next.output, HasSubstr("destroyed MIG instances left by colo pid"));
  }
}

INSTANTIATE_TEST_SUITE_P(AtEachStep, ColoMigCrash,
                         ::testing::Values("gi_create:before", "gi_create:after", "ci_create:after",
                                           ""),
                         [](const auto& info) {
                           std::string name = info.param;
                           if (name.empty()) return std::string("WhileJobsRun");
                           for (char& c : name) c = std::isalnum(c) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace colo
