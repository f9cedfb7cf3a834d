// The mig mechanism against the stand-in NVML library, loaded through dlopen
// like the driver: plan, create, run environment, teardown, refusals, foreign
// instances, and cleanup after a dead colo.
#include "sharing/mig_mechanism.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "common/names.h"
#include "fake_nvml/fake_nvml_loader.h"
#include "gpu/nvml_backend.h"
#include "gpu/sim_backend.h"
#include "sharing/make_mechanism.h"
#include "sharing/mps_daemon.h"

namespace colo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A job's MIG demand; unset fields absent.
MigJobDemand job(std::string name, std::optional<std::string> profile = std::nullopt,
                 std::optional<uint64_t> memory = std::nullopt,
                 std::optional<std::string> group = std::nullopt) {
  return {std::move(name), std::move(profile), memory, std::move(group)};
}

class MigMechanismTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake_.loaded() && fake_.has_mig()) << dlerror();
    fake_.reset();
    fake_.mig_set("model", "A100-40GB");
    fake_.mig_set("mode", "1");
    char name[] = "/tmp/colo-mig-test-XXXXXX";
    ASSERT_NE(mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A backend over the fake and its devices, read afresh (MIG mode may have changed).
  std::vector<DeviceInfo> open() {
    auto backend = NvmlBackend::create(FAKE_NVML_PATH, clock_);
    EXPECT_TRUE(backend.ok()) << backend.error().message();
    backend_ = std::move(backend).value();
    auto devices = backend_->devices();
    EXPECT_TRUE(devices.ok());
    return *devices;
  }

  std::unique_ptr<MigMechanism> mechanism(std::vector<MigJobDemand> jobs) {
    return std::make_unique<MigMechanism>(state_dir(), *backend_, std::move(jobs), clock_);
  }

  std::string state_dir() const { return dir_ + "/mig"; }
  size_t records() const {
    std::error_code ec;
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(state_dir(), ec))
      n += e.is_directory();
    return n;
  }

  FakeNvml fake_{FAKE_NVML_PATH};
  FakeClock clock_;
  std::unique_ptr<NvmlBackend> backend_;
  std::string dir_;
};

TEST_F(MigMechanismTest, CreatesAnInstancePerJobAndDestroysExactlyThat) {
  std::vector<DeviceInfo> devices = open();
  auto mig = mechanism({job("a"), job("b", "2g.10gb")});
  Status prepared = mig->prepare(devices);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message();
  // "a" gets the largest profile that fits beside "b"'s 2g.10gb.
  EXPECT_EQ(fake_.mig_describe(), "gpu0 gi1 p5 @0 [ci0/4]; gpu0 gi2 p14 @4 [ci0/2]");
  EXPECT_EQ(mig->max_jobs_per_device(), 2);
  ASSERT_NE(mig->record(), nullptr);
  EXPECT_EQ(mig->record()->gpu_instances.size(), 2u);
  EXPECT_EQ(mig->record()->device_uuid, devices[0].uuid);
  EXPECT_EQ(records(), 1u);

  auto env_a = mig->environment_for({"a", 0, std::nullopt, std::nullopt});
  auto env_b = mig->environment_for({"b", 0, std::nullopt, std::nullopt});
  ASSERT_TRUE(env_a.ok() && env_b.ok());
  EXPECT_THAT(env_a->at("CUDA_VISIBLE_DEVICES"), StartsWith("MIG-"));
  EXPECT_NE(env_a->at("CUDA_VISIBLE_DEVICES"), env_b->at("CUDA_VISIBLE_DEVICES"));
  EXPECT_THAT(env_b->at(kMigInstanceEnv), StartsWith("2g.10gb gi2 ci0 MIG-"));
  EXPECT_FALSE(mig->environment_for({"c", 0, std::nullopt, std::nullopt}).ok());
  EXPECT_TRUE(mig->health_check().ok());

  Status down = mig->teardown();
  ASSERT_TRUE(down.ok()) << down.error().message();
  EXPECT_EQ(fake_.mig_describe(), "");
  EXPECT_EQ(records(), 0u);
  EXPECT_TRUE(mig->teardown().ok());  // idempotent
  EXPECT_FALSE(mig->environment_for({"a", 0, std::nullopt, std::nullopt}).ok());
}

TEST_F(MigMechanismTest, AGroupSharesOneGpuInstanceOnComputeInstances) {
  std::vector<DeviceInfo> devices = open();
  auto mig = mechanism({job("dlrm", "4g.20gb", std::nullopt, "pair"),
                        job("resnet", std::nullopt, std::nullopt, "pair")});
  ASSERT_TRUE(mig->prepare(devices).ok());
  EXPECT_EQ(fake_.mig_describe(), "gpu0 gi1 p5 @0 [ci0/2 ci1/2]");
  mig.reset();  // the destructor tears down
  EXPECT_EQ(fake_.mig_describe(), "");
}

TEST_F(MigMechanismTest, InstancesItDidNotCreateAreNeverTouched) {
  ASSERT_EQ(fake_.mig_add_gpu_instance(0, 9, 4, 1), 1);  // someone's 3g.20gb at slice 4
  std::vector<DeviceInfo> devices = open();
  auto mig = mechanism({job("a"), job("b")});
  Status prepared = mig->prepare(devices);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message();
  EXPECT_EQ(fake_.mig_describe(),
            "gpu0 gi1 p9 @4 [ci0/3]; gpu0 gi2 p14 @0 [ci0/2]; gpu0 gi3 p14 @2 [ci0/2]");
  ASSERT_TRUE(mig->teardown().ok());
  EXPECT_EQ(fake_.mig_describe(), "gpu0 gi1 p9 @4 [ci0/3]");

  auto crowded = mechanism({job("a", "4g.20gb"), job("b", "1g.5gb")});
  Status refused = crowded->prepare(devices);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("already holds 3g.20gb at 4"));
  EXPECT_EQ(fake_.mig_describe(), "gpu0 gi1 p9 @4 [ci0/3]");
}

TEST_F(MigMechanismTest, RefusesWhenMigModeIsOffAndSaysHowToEnableIt) {
  fake_.mig_set("mode", "0");
  std::vector<DeviceInfo> devices = open();
  auto mig = mechanism({job("a")});
  Status refused = mig->prepare(devices);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("MIG mode is disabled on GPU 0"));
  EXPECT_THAT(refused.error().message(), HasSubstr("--yes-i-know"));
  EXPECT_THAT(refused.error().message(), HasSubstr("reset the GPU"));
  EXPECT_EQ(records(), 0u);

  fake_.mig_set("pending", "1");
  EXPECT_THAT(mig->prepare(devices).error().message(), HasSubstr("enabled but pending"));
}

TEST_F(MigMechanismTest, RefusesWithoutMigOrPermission) {
  std::vector<DeviceInfo> devices = open();
  std::vector<DeviceInfo> no_mig = devices;
  no_mig[0].mig_profiles.clear();
  EXPECT_THAT(mechanism({job("a")})->prepare(no_mig).error().message(),
              HasSubstr("no GPU of this run has MIG"));

  fake_.mig_set("permission", "0");
  auto mig = mechanism({job("a"), job("b")});
  Status refused = mig->prepare(devices);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("needs root"));
  EXPECT_EQ(fake_.mig_describe(), "");
  EXPECT_EQ(records(), 0u);

  auto sim = SimBackend::create("A100-40GB", 1, clock_);
  ASSERT_TRUE(sim.ok());
  MigMechanism on_sim(state_dir(), **sim, {job("a")}, clock_);
  EXPECT_THAT(on_sim.prepare(*(*sim)->devices()).error().message(),
              HasSubstr("cannot create MIG instances"));
}

// A run that cannot start must be refused before it is recorded: make_mechanism
// says so, and suggests only what can run here.
TEST_F(MigMechanismTest, MakeMechanismRefusesMigOnABackendWithoutMig) {
  auto sim = SimBackend::create("H100", 1, clock_);
  ASSERT_TRUE(sim.ok());
  MechanismOptions options;
  options.mps_control_program = "colo-no-such-mps-control";
  MechanismInputs inputs{sim->get(), {}};
  Result<std::unique_ptr<Mechanism>> made = make_mechanism(MechanismKind::kMig, options, inputs);
  ASSERT_FALSE(made.ok());
  EXPECT_THAT(made.error().message(), HasSubstr("the sim backend cannot create"));
  EXPECT_THAT(made.error().message(), HasSubstr("use --mechanism naive or exclusive"));
  Result<std::unique_ptr<Mechanism>> mps = make_mechanism(MechanismKind::kMps, options);
  ASSERT_FALSE(mps.ok());
  EXPECT_THAT(mps.error().message(), HasSubstr("colo-no-such-mps-control, which is not on PATH"));
  EXPECT_THAT(mps.error().message(), Not(HasSubstr("/usr/bin")));  // no $PATH dump
}

// A pid that no process has.
int64_t dead_pid() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

TEST_F(MigMechanismTest, CleanupDestroysOnlyWhatADeadColoRecorded) {
  // What a colo killed mid-run left: GPU instance 1 (recorded with its id),
  // GPU instance 2 (created, killed before its id was recorded), and a record
  // of GPU instance 3 whose id now belongs to someone else's instance.
  ASSERT_EQ(fake_.mig_add_gpu_instance(0, 14, 0, 1), 1);
  ASSERT_EQ(fake_.mig_add_gpu_instance(0, 14, 2, 0), 2);
  ASSERT_EQ(fake_.mig_add_gpu_instance(0, 19, 6, 1), 3);  // foreign: 1g.5gb at 6
  ASSERT_EQ(fake_.mig_add_gpu_instance(0, 14, 4, 0), 4);  // foreign, never recorded
  std::vector<DeviceInfo> devices = open();
  MigOwnerRecord record{dead_pid(), host_name(), 0, 0, devices[0].uuid, {}};
  record.gpu_instances = {{"2g.10gb", 14, 0, 2, 1, {{"a", 2, 0, "MIG-x"}}},
                          {"2g.10gb", 14, 2, 2, std::nullopt, {}},
                          {"1g.5gb", 19, 5, 1, 3, {}}};
  std::filesystem::create_directories(state_dir() + "/1-1");
  ASSERT_TRUE(write_mig_owner_record(state_dir() + "/1-1/owner.json", record).ok());
  // A live colo's record is left alone.
  MigOwnerRecord live = record;
  live.colo_pid = getpid();
  std::filesystem::create_directories(state_dir() + "/2-2");
  ASSERT_TRUE(write_mig_owner_record(state_dir() + "/2-2/owner.json", live).ok());

  auto lines = cleanup_stale_mig_instances(state_dir(), backend_->mig_control(), devices);
  ASSERT_TRUE(lines.ok()) << lines.error().message();
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_THAT((*lines)[0], HasSubstr("destroyed MIG instances left by colo pid"));
  EXPECT_EQ(fake_.mig_describe(), "gpu0 gi3 p19 @6 [ci0/1]; gpu0 gi4 p14 @4 []");
  EXPECT_FALSE(std::filesystem::exists(state_dir() + "/1-1"));
  EXPECT_TRUE(std::filesystem::exists(state_dir() + "/2-2"));

  // Without a MIG seam (simulated backend) records only wait.
  std::filesystem::create_directories(state_dir() + "/1-1");
  ASSERT_TRUE(write_mig_owner_record(state_dir() + "/1-1/owner.json", record).ok());
  auto waiting = cleanup_stale_mig_instances(state_dir(), nullptr, {});
  ASSERT_TRUE(waiting.ok());
  ASSERT_EQ(waiting->size(), 1u);
  EXPECT_THAT((*waiting)[0], HasSubstr("run colo with the nvml backend"));
}

}  // namespace
}  // namespace colo
