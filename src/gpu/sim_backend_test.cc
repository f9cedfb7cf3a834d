#include "gpu/sim_backend.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/units.h"

namespace colo {
namespace {

std::unique_ptr<SimBackend> make_sim(Clock& clock, std::string_view model = "H200", int count = 1) {
  auto backend = SimBackend::create(model, count, clock);
  EXPECT_TRUE(backend.ok()) << backend.error().message();
  return std::move(backend).value();
}

TEST(SimBackend, IsLabelledSimulated) {
  FakeClock clock;
  auto sim = make_sim(clock);
  EXPECT_EQ(sim->name(), "sim");
  EXPECT_TRUE(sim->simulated());
  EXPECT_EQ(sim->version(), "simulated H200");
  auto devices = sim->devices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].name, "Simulated NVIDIA H200");
}

TEST(SimBackend, ReturnsInjectedXidEventsOnceInOrder) {
  FakeClock clock;
  auto sim = make_sim(clock, "H200", 2);
  EXPECT_EQ(sim->xid_events_status(), "");
  EXPECT_TRUE(sim->poll_xid_events().empty());
  sim->inject_xid(1, 43);
  clock.advance_ms(10);
  sim->inject_xid(0, 79);
  std::vector<XidEvent> events = sim->poll_xid_events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].device, 1);
  EXPECT_EQ(events[0].xid, 43u);
  EXPECT_EQ(events[0].time_ms, clock.now_ms() - 10);
  EXPECT_EQ(events[1].device, 0);
  EXPECT_EQ(events[1].xid, 79u);
  EXPECT_EQ(events[1].time_ms, clock.now_ms());
  EXPECT_TRUE(sim->poll_xid_events().empty());
}

TEST(SimBackend, DescribesTheModelItImitates) {
  FakeClock clock;
  auto h200 = make_sim(clock, "h200", 2)->devices();
  ASSERT_TRUE(h200.ok());
  ASSERT_EQ(h200->size(), 2u);
  const DeviceInfo& d = (*h200)[1];
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.memory_total_bytes, 143771 * kMiB);
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.mig_enabled, false);
  EXPECT_NE(d.uuid, (*h200)[0].uuid);
  std::vector<std::string> names;
  for (const MigProfile& p : d.mig_profiles) names.push_back(p.name + "/" + std::to_string(p.id));
  EXPECT_EQ(names,
            (std::vector<std::string>{"1g.18gb/19", "1g.18gb+me/20", "1g.35gb/15", "2g.35gb/14",
                                      "3g.71gb/9", "4g.71gb/5", "7g.141gb/0"}));
  auto h100 = make_sim(clock, "H100")->devices();
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ((*h100)[0].memory_total_bytes, 81559 * kMiB);
  EXPECT_EQ((*h100)[0].mig_profiles.back().name, "7g.80gb");
  EXPECT_EQ((*h100)[0].mig_profiles.front().max_instances, 7);
}

TEST(SimBackend, RejectsUnknownModelsAndDevices) {
  FakeClock clock;
  auto unknown = SimBackend::create("GTX 480", 1, clock);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("A100-40GB"), std::string::npos);
  // The MIG tables' names (colo mig plan --gpu-model) name the same models.
  EXPECT_EQ(sim_gpu_model("h100-80gb")->model, "H100");
  EXPECT_EQ(sim_gpu_model("H200-141GB")->model, "H200");
  EXPECT_FALSE(SimBackend::create("H200", 0, clock).ok());
  auto sim = make_sim(clock);
  auto missing = sim->sample_device(1);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("GPU 1 does not exist"), std::string::npos);
  EXPECT_FALSE(sim->sample_processes(-1).ok());
}

TEST(SimBackend, IdleDeviceReadsZeroNotAbsent) {
  FakeClock clock;
  auto sample = make_sim(clock)->sample_device(0);
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->sm_active_pct, 0.0);
  EXPECT_EQ(sample->gpu_util_pct, 0.0);
  EXPECT_EQ(sample->memory_used_bytes, 0u);
  EXPECT_EQ(sample->power_w, 90.0);
  EXPECT_EQ(sample->time_ms, clock.now_ms());
}

TEST(SimBackend, ModelsLoadFromRegisteredProcesses) {
  FakeClock clock;
  auto sim = make_sim(clock);
  sim->process_started(0, 100, {4096 * kMiB, 70});
  sim->process_started(0, 200, {1024 * kMiB, 70});
  sim->process_started(1, 300, {1024 * kMiB, 50});  // a device the simulator lacks: ignored
  auto sample = sim->sample_device(0);
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->sm_active_pct, 100.0);
  EXPECT_EQ(sample->gpu_util_pct, 100.0);
  EXPECT_EQ(sample->memory_used_bytes, (4096 + 1024 + 2 * 500) * kMiB);
  EXPECT_EQ(sample->power_w, 700.0);

  auto processes = sim->sample_processes(0);
  ASSERT_TRUE(processes.ok());
  ASSERT_EQ(processes->size(), 2u);
  EXPECT_EQ((*processes)[0].pid, 100u);
  EXPECT_EQ((*processes)[0].used_memory_bytes, 4596 * kMiB);
  EXPECT_DOUBLE_EQ(*(*processes)[0].sm_util_pct, 50.0);  // 70 of a demand of 140
  EXPECT_FALSE((*processes)[0].mps_client);

  sim->process_exited(100);
  sample = sim->sample_device(0);
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->sm_active_pct, 70.0);
  EXPECT_DOUBLE_EQ(*sample->power_w, 90.0 + 610.0 * 0.7);
  EXPECT_EQ(sim->sample_processes(0)->at(0).sm_util_pct, 70.0);
  EXPECT_EQ(sample->gpu_util_pct, 100.0) << "busy: twice its 70% SM activity, at most 100%";
  sim->process_exited(200);
  sim->process_started(0, 400, {1024 * kMiB, 20});
  EXPECT_EQ(sim->sample_device(0)->gpu_util_pct, 40.0) << "busy: twice its 20% SM activity";
}

TEST(SimBackend, IntegratesEnergyOverTheClock) {
  FakeClock clock;
  auto sim = make_sim(clock);
  clock.advance_ms(1000);  // idle at 90 W
  EXPECT_EQ(sim->sample_device(0)->energy_mj, 90'000u);
  sim->process_started(0, 7, {0, 50});  // 90 + 610 x 0.5 = 395 W
  clock.advance_ms(2000);
  EXPECT_EQ(sim->sample_device(0)->energy_mj, 90'000u + 790'000u);
  sim->process_exited(7);
  clock.advance_ms(500);
  EXPECT_EQ(sim->sample_device(0)->energy_mj, 90'000u + 790'000u + 45'000u);
}

TEST(SimBackend, IsDeterministic) {
  auto run = [] {
    FakeClock clock;
    auto sim = make_sim(clock, "A100-40GB");
    std::vector<std::string> trace;
    for (int step = 0; step < 5; ++step) {
      sim->process_started(0, 10 + step, {static_cast<uint64_t>(step) * kMiB, 20.0 * step});
      clock.advance_ms(333);
      DeviceSample s = sim->sample_device(0).value();
      trace.push_back(std::to_string(s.time_ms) + " " + std::to_string(*s.sm_active_pct) + " " +
                      std::to_string(*s.energy_mj) + " " + std::to_string(*s.memory_used_bytes) +
                      " " + std::to_string(*s.pcie_rx_mib_per_s));
    }
    return trace;
  };
  EXPECT_EQ(run(), run());
}

TEST(SimBackend, HooksMayBeCalledWhileAnotherThreadSamples) {
  SystemClock clock;
  auto sim = make_sim(clock);
  std::thread hooks([&] {
    for (uint32_t pid = 1; pid <= 2000; ++pid) {
      sim->process_started(0, pid, {kMiB, 1});
      if (pid % 2 == 0) sim->process_exited(pid);
    }
  });
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(sim->sample_device(0).ok());
    ASSERT_TRUE(sim->sample_processes(0).ok());
  }
  hooks.join();
  EXPECT_EQ(sim->sample_processes(0)->size(), 1000u);
  EXPECT_EQ(sim->sample_device(0)->sm_active_pct, 100.0);
}

}  // namespace
}  // namespace colo
