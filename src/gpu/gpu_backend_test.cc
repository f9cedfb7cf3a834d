#include "gpu/gpu_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/device_metrics.h"
#include "gpu/nvml_backend.h"
#include "gpu/sim_backend.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// The composed names must equal the ones nvidia-smi shows, for every model the
// simulator knows (whose tables are copied from nvidia-smi mig -lgip).
TEST(ComposeMigProfileName, MatchesNvidiaSmiNames) {
  FakeClock clock;
  for (const char* model : {"H200", "H100", "A100-40GB"}) {
    SimGpuModel m = sim_gpu_model(model).value();
    const uint64_t device_mib = m.memory_total_bytes >> 20;
    for (const MigProfile& p : m.mig_profiles) {
      const unsigned int index = p.name.ends_with("+me") ? 7 : 0;
      EXPECT_EQ(compose_mig_profile_name(p.slice_count, p.memory_bytes >> 20, device_mib, index),
                p.name)
          << model;
    }
  }
  // The driver reports profile memory below the nominal share.
  EXPECT_EQ(compose_mig_profile_name(1, 16896, 143771, 0), "1g.18gb");
  EXPECT_EQ(compose_mig_profile_name(3, 67840, 143771, 2), "3g.71gb");
  EXPECT_EQ(compose_mig_profile_name(1, 9984, 81559, 0), "1g.10gb");
  EXPECT_EQ(compose_mig_profile_name(1, 4864, 40960, 13), "1g.5gb-me");
}

TEST(DeviceMetrics, NamesOnlyPresentFields) {
  DeviceSample sample;
  EXPECT_TRUE(present_metric_names(sample).empty());
  sample.power_w = 0.0;  // zero is a value, not absence
  sample.sm_active_pct = 12.0;
  EXPECT_EQ(present_metric_names(sample), (std::vector<std::string>{"sm_active_pct", "power_w"}));
  EXPECT_EQ(canonical_metric_order({"power_w", "energy_mj", "power_w", "sm_active_pct"}),
            (std::vector<std::string>{"sm_active_pct", "power_w", "energy_mj"}));
  DeviceInfo info;
  info.name = "NVIDIA H200";
  info.supported_metrics = {"sm_active_pct", "power_w"};
  const std::string line = describe_metrics(info);
  EXPECT_THAT(line, HasSubstr("GPU 0 NVIDIA H200: 2 metrics (sm_active_pct, power_w)"));
  EXPECT_THAT(line, HasSubstr("absent: sm_occupancy_pct"));
}

}  // namespace
}  // namespace colo
