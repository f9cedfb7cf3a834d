// NvmlBackend against the stand-in NVML library (testing/fake_nvml.cc),
// loaded through the same dlopen path as the real driver.
#include "gpu/nvml_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/units.h"
#include "fake_nvml/fake_nvml_loader.h"

namespace colo {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

class NvmlBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake_.loaded()) << dlerror();
    fake_.reset();
  }

  std::unique_ptr<NvmlBackend> create(const char* path = FAKE_NVML_PATH) {
    auto backend = NvmlBackend::create(path, clock_);
    EXPECT_TRUE(backend.ok()) << backend.error().message();
    return backend.ok() ? std::move(backend).value() : nullptr;
  }

  // The machine's picture: an MPS server, two MPS clients and a plain process.
  void add_mps_scene() {
    fake_.add_process(NVML_PROCESS_MODE_COMPUTE, 100, 66 * kMiB);  // MPS server
    fake_.add_process(NVML_PROCESS_MODE_COMPUTE, 201, 3000 * kMiB);
    fake_.add_process(NVML_PROCESS_MODE_COMPUTE, 202, 4000 * kMiB);
    fake_.add_process(NVML_PROCESS_MODE_COMPUTE, 300, 5000 * kMiB);  // plain process
    fake_.add_process(NVML_PROCESS_MODE_MPS, 201, 3000 * kMiB);
    fake_.add_process(NVML_PROCESS_MODE_MPS, 202, 4000 * kMiB);
  }

  FakeNvml fake_{FAKE_NVML_PATH};
  FakeClock clock_;
};

TEST_F(NvmlBackendTest, ReadsDeviceFacts) {
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->name(), "nvml");
  EXPECT_FALSE(backend->simulated());
  EXPECT_EQ(backend->version(), "driver 580.95.05, NVML 13.580.95.05");
  auto devices = backend->devices();
  ASSERT_TRUE(devices.ok()) << devices.error().message();
  ASSERT_EQ(devices->size(), 1u);
  const DeviceInfo& d = (*devices)[0];
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_EQ(d.uuid, "GPU-fa4e0000-0000-0000-0000-000000000000");
  EXPECT_EQ(d.pci_bus_id, "00000000:19:00.0");
  EXPECT_EQ(d.memory_total_bytes, 143771 * kMiB);
  EXPECT_EQ(d.sm_count, 132);  // 16896 cores / 128 per SM on compute capability 9.0
  EXPECT_EQ(d.power_limit_w, 700.0);
  EXPECT_EQ(d.cuda_compute_major, 9);
  EXPECT_EQ(d.cuda_compute_minor, 0);
  EXPECT_EQ(d.mig_enabled, false);
  EXPECT_TRUE(d.gpm_supported);
  std::vector<std::string> profiles;
  for (const MigProfile& p : d.mig_profiles)
    profiles.push_back(p.name + "/" + std::to_string(p.id));
  EXPECT_EQ(profiles,
            (std::vector<std::string>{"1g.18gb/19", "2g.35gb/14", "3g.71gb/9", "4g.71gb/5",
                                      "7g.141gb/0", "1g.18gb+me/20", "1g.35gb/15"}));
  EXPECT_EQ(d.mig_profiles[0].memory_bytes, 16384 * kMiB);  // the built-in H200 table
  EXPECT_EQ(d.mig_profiles[0].max_instances, 7);
  EXPECT_EQ(d.mig_profiles[0].sm_count, 16);
  // Found by sampling: GPM metrics included, the one GPM refuses (tensor) not.
  EXPECT_EQ(d.supported_metrics,
            (std::vector<std::string>{"sm_active_pct", "sm_occupancy_pct", "dram_active_pct",
                                      "gpu_util_pct", "memory_used_bytes", "memory_total_bytes",
                                      "power_w", "energy_mj", "pcie_rx_mib_per_s",
                                      "pcie_tx_mib_per_s", "sm_clock_mhz"}));
}

TEST_F(NvmlBackendTest, ComposesProfileNamesWhenTheDriverGivesNone) {
  fake_.set("profile_info_v_result", NVML_ERROR_FUNCTION_NOT_FOUND);
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  auto devices = backend->devices();
  ASSERT_TRUE(devices.ok());
  std::vector<std::string> profiles;
  for (const MigProfile& p : (*devices)[0].mig_profiles) profiles.push_back(p.name);
  EXPECT_EQ(profiles, (std::vector<std::string>{"1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb",
                                                "7g.141gb", "1g.18gb+me", "1g.35gb"}));
}

TEST_F(NvmlBackendTest, GpmNeedsTwoSamplesMoreThan100MsApart) {
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  auto first = backend->sample_device(0);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->sm_active_pct.has_value());
  EXPECT_FALSE(first->pcie_rx_mib_per_s.has_value());

  clock_.advance_ms(100);  // not more than 100 ms: nothing to average yet
  EXPECT_FALSE(backend->sample_device(0)->sm_active_pct.has_value());

  clock_.advance_ms(1);
  auto second = backend->sample_device(0);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->sm_active_pct, 92.0);
  EXPECT_EQ(second->sm_occupancy_pct, 11.8);
  EXPECT_EQ(second->dram_active_pct, 7.4);
  EXPECT_EQ(second->pcie_tx_mib_per_s, 38.0);
  EXPECT_EQ(second->pcie_rx_mib_per_s, 60.0);
  EXPECT_FALSE(second->tensor_active_pct.has_value());  // metric's own NOT_SUPPORTED

  clock_.advance_ms(50);  // too soon: the previous averages are repeated
  EXPECT_EQ(backend->sample_device(0)->sm_active_pct, 92.0);
  clock_.advance_ms(200);  // samples swap correctly (the fake rejects reversed order)
  fake_.set("gpm_tensor_result", NVML_SUCCESS);
  auto third = backend->sample_device(0);
  EXPECT_EQ(third->sm_active_pct, 92.0);
  EXPECT_EQ(third->tensor_active_pct, 0.0);
  // Each value averages over the window since the previous GPM sample only.
  fake_.set("gpm_sm_util_pct", 40);
  clock_.advance_ms(200);
  EXPECT_EQ(backend->sample_device(0)->sm_active_pct, 40.0);

  EXPECT_EQ(fake_.get("gpm_samples_live"), 2);
  backend.reset();
  EXPECT_EQ(fake_.get("gpm_samples_live"), 0);
  EXPECT_EQ(fake_.get("shutdown_calls"), 1);
}

TEST_F(NvmlBackendTest, ReadsClassicMetricsInTheirUnits) {
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->sample_device(0);
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->time_ms, clock_.now_ms());
  EXPECT_EQ(sample->device, 0);
  EXPECT_EQ(sample->memory_used_bytes, 2048 * kMiB);  // from the v2 struct
  EXPECT_EQ(sample->memory_total_bytes, 143771 * kMiB);
  EXPECT_EQ(sample->gpu_util_pct, 87.0);
  EXPECT_EQ(sample->power_w, 412.5);
  EXPECT_EQ(sample->sm_clock_mhz, 1980u);
  EXPECT_EQ(sample->energy_mj, 5'001'000u);
}

TEST_F(NvmlBackendTest, ReadsTheCostlyEnergyCounterAtMostOncePerSecond) {
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  EXPECT_TRUE(backend->sample_device(0)->energy_mj.has_value());
  clock_.advance_ms(500);
  EXPECT_FALSE(backend->sample_device(0)->energy_mj.has_value());
  clock_.advance_ms(500);
  EXPECT_EQ(backend->sample_device(0)->energy_mj, 5'002'000u);
  EXPECT_EQ(fake_.get("energy_reads"), 2);
}

TEST_F(NvmlBackendTest, UnsupportedMetricIsAbsentNotZero) {
  fake_.set("power_result", NVML_ERROR_NOT_SUPPORTED);
  fake_.set("gpm_supported", 0);
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  clock_.advance_ms(500);
  backend->sample_device(0).value();
  clock_.advance_ms(500);
  auto sample = backend->sample_device(0);
  ASSERT_TRUE(sample.ok());
  EXPECT_FALSE(sample->power_w.has_value());
  EXPECT_FALSE(sample->sm_active_pct.has_value());
  EXPECT_TRUE(sample->gpu_util_pct.has_value());
  auto devices = backend->devices();
  ASSERT_TRUE(devices.ok());
  EXPECT_FALSE((*devices)[0].gpm_supported);
  EXPECT_THAT((*devices)[0].supported_metrics, Not(Contains("power_w")));
  EXPECT_THAT((*devices)[0].supported_metrics, Contains("memory_used_bytes"));
}

TEST_F(NvmlBackendTest, LostGpuFailsTheSample) {
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  fake_.set("gpu_lost", 1);
  auto sample = backend->sample_device(0);
  ASSERT_FALSE(sample.ok());
  EXPECT_THAT(sample.error().message(), HasSubstr("GPU 0: reading metrics failed: GPU is lost"));
  EXPECT_THAT(sample.error().message(), HasSubstr("nvidia-smi -i 0"));
  EXPECT_FALSE(backend->sample_processes(0).ok());
}

TEST_F(NvmlBackendTest, RejectsADeviceIndexItDoesNotHave) {
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->sample_device(3);
  ASSERT_FALSE(sample.ok());
  EXPECT_THAT(sample.error().message(), HasSubstr("GPU 3 does not exist"));
}

TEST_F(NvmlBackendTest, FailedInitIsOneActionableLine) {
  fake_.set("init_result", NVML_ERROR_DRIVER_NOT_LOADED);
  auto backend = NvmlBackend::create(FAKE_NVML_PATH, clock_);
  ASSERT_FALSE(backend.ok());
  EXPECT_THAT(backend.error().message(),
              HasSubstr("nvmlInit failed: Driver Not Loaded (NVML error 9)"));
  EXPECT_THAT(backend.error().message(), HasSubstr("--backend sim"));
  EXPECT_EQ(fake_.get("shutdown_calls"), 0);  // never initialised, never shut down
}

TEST_F(NvmlBackendTest, NoGpusIsAnError) {
  fake_.set("device_count", 0);
  auto backend = NvmlBackend::create(FAKE_NVML_PATH, clock_);
  ASSERT_FALSE(backend.ok());
  EXPECT_THAT(backend.error().message(), HasSubstr("reports no GPUs"));
}

// Checks the scene of add_mps_scene() as a backend reports it.
void expect_mps_scene(const std::vector<ProcessSample>& processes) {
  ASSERT_EQ(processes.size(), 4u);
  EXPECT_EQ(processes[0].pid, 100u);
  EXPECT_EQ(processes[0].used_memory_bytes, 66 * kMiB);
  EXPECT_FALSE(processes[0].mps_client);
  EXPECT_EQ(processes[1].pid, 201u);
  EXPECT_TRUE(processes[1].mps_client);
  EXPECT_EQ(processes[1].used_memory_bytes, 3000 * kMiB);
  EXPECT_EQ(processes[2].pid, 202u);
  EXPECT_TRUE(processes[2].mps_client);
  EXPECT_EQ(processes[3].pid, 300u);
  EXPECT_FALSE(processes[3].mps_client);
  EXPECT_EQ(processes[3].used_memory_bytes, 5000 * kMiB);
}

TEST_F(NvmlBackendTest, ListsProcessesFromTheDetailList) {
  add_mps_scene();
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  auto processes = backend->sample_processes(0);
  ASSERT_TRUE(processes.ok()) << processes.error().message();
  expect_mps_scene(*processes);
}

TEST_F(NvmlBackendTest, ReadsClassicListsWith24ByteEntries) {
  fake_.set("detail_list_result", NVML_ERROR_NOT_SUPPORTED);
  fake_.set("process_stride", 24);
  add_mps_scene();
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  auto processes = backend->sample_processes(0);
  ASSERT_TRUE(processes.ok()) << processes.error().message();
  expect_mps_scene(*processes);
}

TEST_F(NvmlBackendTest, DetectsClassicListsWith32ByteEntries) {
  fake_.set("detail_list_result", NVML_ERROR_NOT_SUPPORTED);
  fake_.set("process_stride", 32);
  add_mps_scene();
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  auto processes = backend->sample_processes(0);
  ASSERT_TRUE(processes.ok()) << processes.error().message();
  expect_mps_scene(*processes);
}

TEST_F(NvmlBackendTest, AddsPerProcessSmUtilization) {
  add_mps_scene();
  const unsigned long long t0 = static_cast<unsigned long long>(clock_.now_ms()) * 1000;
  fake_.add_utilization(300, 84, t0 - 500'000);
  fake_.add_utilization(300, 130, t0 - 100'000);  // NVML sometimes says > 100
  fake_.add_utilization(100, 11, t0 - 200'000);   // the MPS server, not its clients
  fake_.add_utilization(201, 40, t0 - 200'000);   // a client listed anyway: ignored
  auto backend = create();
  ASSERT_NE(backend, nullptr);

  auto processes = backend->sample_processes(0).value();
  EXPECT_EQ(fake_.get("last_seen_timestamp_us"), 0);
  ASSERT_EQ(processes.size(), 4u);
  EXPECT_EQ(processes[0].sm_util_pct, 11.0);
  EXPECT_FALSE(processes[1].sm_util_pct.has_value());
  EXPECT_FALSE(processes[2].sm_util_pct.has_value());
  EXPECT_EQ(processes[3].sm_util_pct, 100.0);  // latest sample, clamped

  clock_.advance_ms(1000);  // no newer samples: NOT_FOUND, so known to be idle
  processes = backend->sample_processes(0).value();
  EXPECT_EQ(fake_.get("last_seen_timestamp_us"), static_cast<long long>(t0));
  EXPECT_EQ(processes[0].sm_util_pct, 0.0);
  EXPECT_EQ(processes[3].sm_util_pct, 0.0);
  EXPECT_FALSE(processes[1].sm_util_pct.has_value());
}

TEST_F(NvmlBackendTest, FailingUtilizationQueryLeavesSmUtilAbsent) {
  add_mps_scene();
  fake_.set("process_utilization_result", NVML_ERROR_NOT_SUPPORTED);  // e.g. under MIG
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  auto processes = backend->sample_processes(0).value();
  ASSERT_EQ(processes.size(), 4u);
  for (const ProcessSample& p : processes) EXPECT_FALSE(p.sm_util_pct.has_value()) << p.pid;
}

// XidEvent as "device/xid", to compare lists in one line.
std::vector<std::string> describe(const std::vector<XidEvent>& events) {
  std::vector<std::string> out;
  for (const XidEvent& e : events) out.push_back(fmt::format("{}/{}", e.device, e.xid));
  return out;
}

TEST_F(NvmlBackendTest, AnInjectedXidComesBackOnceWithItsDeviceAndNumber) {
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->xid_events_status(), "");
  EXPECT_TRUE(backend->poll_xid_events().empty());

  clock_.advance_ms(250);
  fake_.inject_xid(0, 43);
  std::vector<XidEvent> events = backend->poll_xid_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].device, 0);
  EXPECT_EQ(events[0].xid, 43u);
  EXPECT_EQ(events[0].time_ms, clock_.now_ms());
  EXPECT_FALSE(events[0].gpu_instance_id.has_value());  // 0xFFFFFFFF: not a MIG instance's
  EXPECT_FALSE(events[0].compute_instance_id.has_value());
  EXPECT_TRUE(backend->poll_xid_events().empty());       // once
  EXPECT_EQ(fake_.get("event_wait_max_timeout_ms"), 0);  // never blocks
}

TEST_F(NvmlBackendTest, XidEventsOnTwoDevicesComeBackInArrivalOrder) {
  fake_.set("device_count", 2);
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->xid_events_status(), "");
  fake_.inject_xid(1, 31);
  fake_.inject_xid(0, 13);
  fake_.inject_xid(1, 43);
  EXPECT_EQ(describe(backend->poll_xid_events()),
            (std::vector<std::string>{"1/31", "0/13", "1/43"}));
  EXPECT_TRUE(backend->poll_xid_events().empty());
}

TEST_F(NvmlBackendTest, TakesABoundedNumberOfXidEventsPerPoll) {
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  for (int i = 0; i < 100; ++i) fake_.inject_xid(0, 1000 + i);
  std::vector<XidEvent> first = backend->poll_xid_events();
  std::vector<XidEvent> second = backend->poll_xid_events();
  ASSERT_EQ(first.size(), 64u);
  ASSERT_EQ(second.size(), 36u);  // the rest stayed queued, none lost
  EXPECT_EQ(first.front().xid, 1000u);
  EXPECT_EQ(second.front().xid, 1064u);
  EXPECT_EQ(second.back().xid, 1099u);
}

TEST_F(NvmlBackendTest, UnsupportedXidRegistrationYieldsNoEventsAndNoError) {
  fake_.set("register_events_result", NVML_ERROR_NOT_SUPPORTED);
  auto backend = create();
  ASSERT_NE(backend, nullptr);  // never fails the backend
  EXPECT_EQ(backend->xid_events_status(),
            "Xid events (GPU faults) are not watched on GPU 0 (Not Supported (NVML error 3))");
  fake_.inject_xid(0, 43);
  EXPECT_TRUE(backend->poll_xid_events().empty());
  EXPECT_EQ(fake_.get("event_waits"), 0);       // nothing to wait on
  EXPECT_EQ(fake_.get("event_sets_live"), 0);   // and the set was freed
  EXPECT_TRUE(backend->sample_device(0).ok());  // sampling unaffected
}

TEST_F(NvmlBackendTest, ADeviceRefusingXidEventsLeavesTheOthersWatched) {
  fake_.set("device_count", 2);
  fake_.set("register_events_result_gpu0", NVML_ERROR_NO_PERMISSION);
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->xid_events_status(),
            "Xid events (GPU faults) are not watched on GPU 0 (Insufficient Permissions (NVML "
            "error 4))");
  fake_.inject_xid(0, 43);
  fake_.inject_xid(1, 79);
  EXPECT_EQ(describe(backend->poll_xid_events()), (std::vector<std::string>{"1/79"}));
}

TEST_F(NvmlBackendTest, ADeviceWithoutXidEventTypeIsNotRegistered) {
  fake_.set("supported_event_types", 0x4);  // PState only
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->xid_events_status(),
            "Xid events (GPU faults) are not watched on GPU 0 (the driver offers no Xid events "
            "there)");
  EXPECT_TRUE(backend->poll_xid_events().empty());
}

TEST_F(NvmlBackendTest, FailingEventSetCreationIsAStatusNotAnError) {
  fake_.set("event_set_create_result", NVML_ERROR_UNKNOWN);
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  EXPECT_THAT(backend->xid_events_status(), HasSubstr("nvmlEventSetCreate failed"));
  EXPECT_TRUE(backend->poll_xid_events().empty());
}

TEST_F(NvmlBackendTest, FreesTheEventSetWithTheBackend) {
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(fake_.get("event_sets_live"), 1);
  backend.reset();
  EXPECT_EQ(fake_.get("event_sets_live"), 0);
}

// An old driver: oldest symbol names, no GPM, no MPS list, no utilization.
TEST(NvmlBackendMinimal, MissingOptionalSymbolsMeanAbsentMetrics) {
  FakeNvml fake(FAKE_NVML_MINIMAL_PATH);
  ASSERT_TRUE(fake.loaded()) << dlerror();
  fake.reset();
  fake.add_process(NVML_PROCESS_MODE_COMPUTE, 42, 10 * kMiB);
  FakeClock clock;
  auto created = NvmlBackend::create(FAKE_NVML_MINIMAL_PATH, clock);
  ASSERT_TRUE(created.ok()) << created.error().message();
  auto& backend = *created;
  EXPECT_EQ(backend->version(), "driver unknown, NVML unknown");

  auto devices = backend->devices();
  ASSERT_TRUE(devices.ok()) << devices.error().message();
  const DeviceInfo& d = (*devices)[0];
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_EQ(d.memory_total_bytes, 143771 * kMiB);  // from the v1 struct
  EXPECT_FALSE(d.gpm_supported);
  EXPECT_FALSE(d.sm_count.has_value());
  EXPECT_FALSE(d.mig_enabled.has_value());
  EXPECT_TRUE(d.mig_profiles.empty());
  EXPECT_EQ(d.supported_metrics,
            (std::vector<std::string>{"memory_used_bytes", "memory_total_bytes"}));

  auto sample = backend->sample_device(0);
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->memory_used_bytes, 1234 * kMiB);
  EXPECT_FALSE(sample->power_w.has_value());
  EXPECT_FALSE(sample->energy_mj.has_value());

  auto processes = backend->sample_processes(0);
  ASSERT_TRUE(processes.ok()) << processes.error().message();
  ASSERT_EQ(processes->size(), 1u);
  EXPECT_EQ((*processes)[0].pid, 42u);
  EXPECT_FALSE((*processes)[0].mps_client);
  EXPECT_FALSE((*processes)[0].sm_util_pct.has_value());
  EXPECT_EQ(fake.get("init_calls"), 1);

  EXPECT_THAT(backend->xid_events_status(), HasSubstr("lacks the NVML event functions"));
  fake.inject_xid(0, 43);
  EXPECT_TRUE(backend->poll_xid_events().empty());
}

}  // namespace
}  // namespace colo
