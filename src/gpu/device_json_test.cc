#include "gpu/device_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace colo {
namespace {

using testing::HasSubstr;

TEST(DeviceJson, RoundTripsEveryFact) {
  DeviceInfo d;
  d.index = 2;
  d.name = "NVIDIA H200";
  d.uuid = "GPU-1234";
  d.pci_bus_id = "00000000:19:00.0";
  d.memory_total_bytes = 150'000'000'000ULL;
  d.sm_count = 132;
  d.cuda_compute_major = 9;
  d.cuda_compute_minor = 0;
  d.mig_enabled = false;
  d.mig_profiles = {{19, "1g.18gb", 1, 18'000'000'000ULL, 7, 16}};
  d.gpm_supported = true;
  d.supported_metrics = {"sm_active_pct", "power_w"};

  Result<std::vector<DeviceInfo>> back = devices_from_json(devices_to_json({d}).dump());
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), 1U);
  const DeviceInfo& b = back->front();
  EXPECT_EQ(b.index, 2);
  EXPECT_EQ(b.name, d.name);
  EXPECT_EQ(b.uuid, d.uuid);
  EXPECT_EQ(b.pci_bus_id, d.pci_bus_id);
  EXPECT_EQ(b.memory_total_bytes, d.memory_total_bytes);
  EXPECT_EQ(b.sm_count, 132);
  EXPECT_EQ(b.cuda_compute_major, 9);
  EXPECT_EQ(b.cuda_compute_minor, 0);
  EXPECT_EQ(b.mig_enabled, false);
  ASSERT_EQ(b.mig_profiles.size(), 1U);
  EXPECT_EQ(b.mig_profiles[0].name, "1g.18gb");
  EXPECT_EQ(b.mig_profiles[0].memory_bytes, 18'000'000'000ULL);
  EXPECT_TRUE(b.gpm_supported);
  EXPECT_EQ(b.supported_metrics, d.supported_metrics);
}

TEST(DeviceJson, AbsentFactsAreNullAndStayAbsent) {
  DeviceInfo d;
  d.name = "Simulated";
  nlohmann::json j = device_to_json(d);
  EXPECT_TRUE(j["sm_count"].is_null());
  EXPECT_TRUE(j["mig_enabled"].is_null());
  EXPECT_TRUE(j["compute_capability"].is_null());
  Result<std::vector<DeviceInfo>> back = devices_from_json(devices_to_json({d}).dump());
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->front().sm_count.has_value());
  EXPECT_FALSE(back->front().mig_enabled.has_value());
}

TEST(DeviceJson, ReadsTheRecordsOfEarlierColos) {
  Result<std::vector<DeviceInfo>> old = devices_from_json(
      R"([{"index":0,"name":"NVIDIA H100 80GB HBM3","uuid":"GPU-a","memory_total_bytes":85,)"
      R"("gpm":true,"metrics":["power_w"],"sm_count":132}])");
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_EQ(old->front().name, "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(old->front().gpm_supported);
  EXPECT_EQ(old->front().supported_metrics, std::vector<std::string>{"power_w"});
}

TEST(DeviceJson, RefusesWhatIsNotAListOfObjects) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {{"{}", "array"}, {"not json", "array"}, {"[1]", "object"}};
  for (const Case& c : cases) {
    Result<std::vector<DeviceInfo>> r = devices_from_json(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_THAT(r.error().message(), HasSubstr(c.says)) << c.text;
  }
}

}  // namespace
}  // namespace colo
