// The built-in MIG tables, model lookup, and the live geometry read through
// NvmlBackend from the stand-in NVML library (dlopen, like the driver).
#include "mig/mig_profiles.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_nvml/fake_nvml_loader.h"
#include "gpu/nvml_backend.h"
#include "gpu/sim_backend.h"
#include "mig/mig_planner.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(MigProfiles, ModelLookupAcceptsModelAndNvmlNames) {
  const std::pair<const char*, const char*> cases[] = {
      {"A100-40GB", "A100-40GB"},
      {"a100-80gb", "A100-80GB"},
      {"H100-80GB", "H100-80GB"},
      {"h200", "H200-141GB"},
      {"H200-141GB", "H200-141GB"},
      {"NVIDIA H200", "H200-141GB"},
      {"NVIDIA A100-SXM4-40GB", "A100-40GB"},
      {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
      {"NVIDIA A100 80GB PCIe", "A100-80GB"},
      {"NVIDIA H100 80GB HBM3", "H100-80GB"},
      {"Simulated NVIDIA A100-SXM4-40GB", "A100-40GB"},
  };
  for (const auto& [name, model] : cases) {
    Result<MigGeometry> g = builtin_mig_geometry(name);
    ASSERT_TRUE(g.ok()) << name << ": " << g.error().message();
    EXPECT_EQ(g->model, model) << name;
  }
  for (const char* unknown : {"NVIDIA A100-PCIE", "NVIDIA H100 NVL 94GB", "V100", "Tesla T4"}) {
    Result<MigGeometry> g = builtin_mig_geometry(unknown);
    ASSERT_FALSE(g.ok()) << unknown;
    EXPECT_THAT(g.error().message(), HasSubstr("known models: A100-40GB, A100-80GB"));
  }
  // An A100 name without its size is resolved by the device's memory.
  EXPECT_EQ(builtin_mig_geometry("NVIDIA A100-PCIE", uint64_t{81920} << 20)->model, "A100-80GB");
}

TEST(MigProfiles, H200MatchesNvidiaSmiLgip) {
  // docs/results/2026-11-22-h200-gpu-check/lgip.txt: name, id, instances, memory GiB x 100, SMs.
  struct Row {
    const char* name;
    int id, instances, memory_centigib, sms;
  };
  const Row lgip[] = {{"1g.18gb", 19, 7, 1600, 16},  {"1g.18gb+me", 20, 1, 1600, 16},
                      {"1g.35gb", 15, 4, 3250, 26},  {"2g.35gb", 14, 3, 3250, 32},
                      {"3g.71gb", 9, 2, 6975, 60},   {"4g.71gb", 5, 1, 6975, 64},
                      {"7g.141gb", 0, 1, 14000, 132}};
  Result<MigGeometry> g = builtin_mig_geometry("NVIDIA H200");
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->profiles.size(), std::size(lgip));
  for (size_t i = 0; i < std::size(lgip); ++i) {
    const MigProfileSpec& p = g->profiles[i];
    EXPECT_EQ(p.name, lgip[i].name);
    EXPECT_EQ(p.id, lgip[i].id) << p.name;
    EXPECT_EQ(p.max_count, lgip[i].instances) << p.name;
    EXPECT_EQ(p.memory_bytes * 100 / (uint64_t{1} << 30), uint64_t(lgip[i].memory_centigib))
        << p.name;
    EXPECT_EQ(p.sm_count, lgip[i].sms) << p.name;
  }
}

TEST(MigProfiles, EveryTableIsConsistent) {
  for (const MigGeometry& g : builtin_mig_geometries()) {
    SCOPED_TRACE(g.model);
    EXPECT_EQ(g.compute_slices, 7);
    EXPECT_EQ(g.memory_slices, 8);
    for (const MigProfileSpec& p : g.profiles) {
      SCOPED_TRACE(p.name);
      ASSERT_FALSE(p.starts.empty());
      EXPECT_EQ(p.name.substr(0, 2), std::to_string(p.compute_slices) + "g");
      for (int s : p.starts) EXPECT_LE(s + p.memory_slices, g.memory_slices);
      // An empty GPU holds max_count instances: the planner agrees with the table.
      EXPECT_TRUE(plan_mig(g, {{p.name, p.max_count, std::nullopt}}).ok());
      EXPECT_FALSE(plan_mig(g, {{p.name, p.max_count + 1, std::nullopt}}).ok());
    }
  }
}

class LiveGeometry : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake_.loaded()) << dlerror();
    fake_.reset();
  }
  FakeNvml fake_{FAKE_NVML_PATH};
  FakeClock clock_;
};

TEST_F(LiveGeometry, PlacementsComeFromNvml) {
  auto backend = NvmlBackend::create(FAKE_NVML_PATH, clock_);
  ASSERT_TRUE(backend.ok()) << backend.error().message();
  auto devices = (*backend)->devices();
  ASSERT_TRUE(devices.ok());
  auto g = live_mig_geometry(**backend, devices->front());
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_THAT(g->source, HasSubstr("placements from nvml"));
  EXPECT_EQ(g->memory_slices, 8);
  EXPECT_EQ(g->compute_slices, 7);
  const MigProfileSpec* p = g->find_profile("3g.71gb");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->id, 9);
  EXPECT_EQ(p->starts, (std::vector<int>{0, 4}));
  EXPECT_EQ(p->memory_slices, 4);
  EXPECT_EQ(g->find_profile("1g.35gb")->starts, (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(g->find_profile("1g.18gb+me")->max_count, 1);
  // Same rules as the built-in table: the same plans.
  auto plan = plan_mig(*g, *parse_mig_requests(*g, {"3g.71gb 2g.35gb:2"}));
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->back().start, 4);
  EXPECT_FALSE(plan_mig(*g, *parse_mig_requests(*g, {"3g.71gb 1g.18gb:5"})).ok());
}

TEST_F(LiveGeometry, RefusedPlacementsFallBackToTheBuiltInTableAndSaySo) {
  fake_.set("placements_result", NVML_ERROR_NOT_SUPPORTED);
  auto backend = NvmlBackend::create(FAKE_NVML_PATH, clock_);
  ASSERT_TRUE(backend.ok());
  auto devices = (*backend)->devices();
  ASSERT_TRUE(devices.ok());
  auto g = live_mig_geometry(**backend, devices->front());
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_THAT(g->source, HasSubstr("placements from the built-in H200-141GB table"));
  EXPECT_THAT(g->source, HasSubstr("Not Supported"));
  EXPECT_THAT(g->source, HasSubstr("MIG mode is disabled"));
  EXPECT_EQ(g->find_profile("2g.35gb")->starts, (std::vector<int>{0, 2, 4}));
}

TEST_F(LiveGeometry, NoBuiltInTableAndNoPlacementsIsAnError) {
  fake_.set("placements_result", NVML_ERROR_INVALID_ARGUMENT);
  auto backend = NvmlBackend::create(FAKE_NVML_PATH, clock_);
  ASSERT_TRUE(backend.ok());
  auto devices = (*backend)->devices();
  ASSERT_TRUE(devices.ok());
  DeviceInfo unknown = devices->front();
  unknown.name = "NVIDIA B999";
  auto g = live_mig_geometry(**backend, unknown);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.error().message(), HasSubstr("no built-in MIG table for GPU 'NVIDIA B999'"));
}

TEST_F(LiveGeometry, OldDriverWithoutTheFunctionFallsBack) {
  FakeNvml minimal(FAKE_NVML_MINIMAL_PATH);
  ASSERT_TRUE(minimal.loaded());
  minimal.reset();
  auto backend = NvmlBackend::create(FAKE_NVML_MINIMAL_PATH, clock_);
  ASSERT_TRUE(backend.ok());
  auto placements = (*backend)->mig_placements(0, 9);
  ASSERT_FALSE(placements.ok());
  EXPECT_THAT(placements.error().message(),
              HasSubstr("no nvmlDeviceGetGpuInstancePossiblePlacements_v2"));
}

TEST(LiveGeometrySim, SimBackendAnswersTheGuidePlacements) {
  FakeClock clock;
  auto sim = SimBackend::create("A100-40GB", 1, clock);
  ASSERT_TRUE(sim.ok());
  auto devices = (*sim)->devices();
  ASSERT_TRUE(devices.ok());
  auto g = live_mig_geometry(**sim, devices->front());
  ASSERT_TRUE(g.ok()) << g.error().message();
  Result<MigGeometry> builtin = builtin_mig_geometry("A100-40GB");
  for (const MigProfileSpec& p : builtin->profiles) {
    const MigProfileSpec* live = g->find_profile(p.name);
    if (live == nullptr) continue;  // the simulated model lists no +me profile
    EXPECT_EQ(live->starts, p.starts) << p.name;
    EXPECT_EQ(live->memory_slices, p.memory_slices) << p.name;
  }
  EXPECT_FALSE((*sim)->mig_placements(0, 42).ok());
  EXPECT_FALSE((*sim)->mig_placements(3, 0).ok());
}

}  // namespace
}  // namespace colo
