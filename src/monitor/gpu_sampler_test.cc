#include "monitor/gpu_sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "common/testing/eventually.h"
#include "common/units.h"
#include "gpu/sim_backend.h"

namespace colo {
namespace {

using ::testing::Each;
using ::testing::HasSubstr;

std::unique_ptr<SimBackend> make_sim(Clock& clock) {
  return std::move(SimBackend::create("H200", 1, clock)).value();
}

using ::colo::testutil::eventually;

int64_t process_cpu_ms() {
  timespec cpu{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  return static_cast<int64_t>(cpu.tv_sec) * 1000 + cpu.tv_nsec / 1'000'000;
}

void burn_cpu_ms(int64_t ms) {
  const int64_t until = process_cpu_ms() + ms;
  volatile uint64_t sink = 0;
  while (process_cpu_ms() < until) {
    for (int i = 0; i < 10000; ++i) sink = sink + i;
  }
}

TEST(GpuSampler, CollectsDeviceAndProcessSamples) {
  SystemClock clock;
  auto sim = make_sim(clock);
  sim->process_started(0, 4242, {1024 * kMiB, 60});
  GpuSampler sampler(*sim, clock, {0}, {.period_ms = 10, .process_period_ms = 20});
  sampler.start();
  ASSERT_TRUE(eventually([&] { return sampler.stats().process_samples >= 3; }));
  sampler.stop();
  const SamplerStats stats = sampler.stats();
  SamplerBatch batch = sampler.drain();

  EXPECT_EQ(static_cast<int64_t>(batch.devices.size()), stats.device_samples);
  EXPECT_EQ(static_cast<int64_t>(batch.processes.size()), stats.process_samples);
  EXPECT_GE(batch.devices.size(), batch.processes.size());
  EXPECT_TRUE(batch.errors.empty());
  EXPECT_EQ(batch.devices.front().sm_active_pct, 60.0);
  EXPECT_EQ(batch.processes.front().pid, 4242u);
  for (size_t i = 1; i < batch.devices.size(); ++i) {
    EXPECT_GE(batch.devices[i].time_ms, batch.devices[i - 1].time_ms);
  }
  EXPECT_GT(stats.wall_ms, 0);
  EXPECT_TRUE(sampler.drain().devices.empty());                     // drained once
  EXPECT_EQ(sampler.stats().device_samples, stats.device_samples);  // stopped: no more
}

TEST(GpuSampler, StopsPromptlyDuringALongPeriod) {
  SystemClock clock;
  auto sim = make_sim(clock);
  GpuSampler sampler(*sim, clock, {0}, {.period_ms = 60'000, .process_period_ms = 60'000});
  sampler.start();
  ASSERT_TRUE(eventually([&] { return sampler.stats().device_samples == 1; }));
  const auto before = std::chrono::steady_clock::now();
  sampler.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(500));
  EXPECT_EQ(sampler.drain().devices.size(), 1u);
}

TEST(GpuSampler, FailingReadsAreCollectedAndSamplingGoesOn) {
  SystemClock clock;
  auto sim = make_sim(clock);
  GpuSampler sampler(*sim, clock, {0, 5}, {.period_ms = 10, .process_period_ms = 10});
  sampler.start();
  ASSERT_TRUE(eventually([&] { return sampler.stats().device_samples >= 3; }));
  sampler.stop();
  SamplerBatch batch = sampler.drain();
  EXPECT_GE(batch.devices.size(), 3u);
  ASSERT_FALSE(batch.errors.empty());
  EXPECT_THAT(batch.errors, Each(HasSubstr("GPU 5 does not exist")));
  EXPECT_EQ(sampler.stats().errors, static_cast<int64_t>(batch.errors.size()));
}

TEST(GpuSampler, SchedulesOnTheClockWithoutSpinning) {
  FakeClock clock;
  auto sim = make_sim(clock);
  GpuSampler sampler(*sim, clock, {0}, {.period_ms = 100, .process_period_ms = 0});
  sampler.start();
  ASSERT_TRUE(eventually([&] { return sampler.stats().device_samples == 1; }));
  // The fake clock stands still: no further sample however long we wait.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(sampler.stats().device_samples, 1);
  EXPECT_LT(sampler.stats().thread_cpu_ms, 50);
  clock.advance_ms(100);
  ASSERT_TRUE(eventually([&] { return sampler.stats().device_samples == 2; }));
  EXPECT_EQ(sampler.stats().wall_ms, 100);
  sampler.stop();
  SamplerBatch batch = sampler.drain();
  ASSERT_EQ(batch.devices.size(), 2u);
  EXPECT_EQ(batch.devices[1].time_ms - batch.devices[0].time_ms, 100);
  EXPECT_TRUE(batch.processes.empty());  // process_period_ms 0: lists never read
}

TEST(GpuSampler, HandsOutXidEventsInArrivalOrderEachPeriod) {
  FakeClock clock;
  auto sim = std::move(SimBackend::create("H200", 2, clock)).value();
  GpuSampler sampler(*sim, clock, {0, 1}, {.period_ms = 100, .process_period_ms = 0});
  sampler.start();
  ASSERT_TRUE(eventually([&] { return sampler.stats().device_samples == 2; }));
  sim->inject_xid(1, 43);
  sim->inject_xid(0, 13);
  clock.advance_ms(100);
  ASSERT_TRUE(eventually([&] { return sampler.stats().xid_events == 2; }));
  sim->inject_xid(1, 79);
  clock.advance_ms(100);
  ASSERT_TRUE(eventually([&] { return sampler.stats().xid_events == 3; }));
  sampler.stop();
  SamplerBatch batch = sampler.drain();
  ASSERT_EQ(batch.xid_events.size(), 3u);
  EXPECT_EQ(batch.xid_events[0].device, 1);
  EXPECT_EQ(batch.xid_events[0].xid, 43u);
  EXPECT_EQ(batch.xid_events[1].device, 0);
  EXPECT_EQ(batch.xid_events[1].xid, 13u);
  EXPECT_EQ(batch.xid_events[2].xid, 79u);
  EXPECT_EQ(batch.xid_events[2].time_ms - batch.xid_events[0].time_ms, 100);
  EXPECT_EQ(batch.xid_events_dropped, 0);
  EXPECT_TRUE(sampler.drain().xid_events.empty());  // drained once
}

TEST(GpuSampler, KeepsTheFirstXidEventsAndCountsThoseItDrops) {
  FakeClock clock;
  auto sim = make_sim(clock);
  GpuSampler sampler(*sim, clock, {0}, {.period_ms = 100, .process_period_ms = 0});
  sampler.start();
  ASSERT_TRUE(eventually([&] { return sampler.stats().device_samples == 1; }));
  for (uint64_t i = 0; i < 1200; ++i) sim->inject_xid(0, i);
  clock.advance_ms(100);
  ASSERT_TRUE(eventually([&] { return sampler.stats().xid_events == 1200; }));
  SamplerBatch batch = sampler.drain();
  ASSERT_EQ(batch.xid_events.size(), 1000u);
  EXPECT_EQ(batch.xid_events.front().xid, 0u);
  EXPECT_EQ(batch.xid_events.back().xid, 999u);
  EXPECT_EQ(batch.xid_events_dropped, 200);
  EXPECT_EQ(sampler.stats().xid_events_dropped, 200);

  sim->inject_xid(0, 43);  // drained: room again, and the drop count starts over
  clock.advance_ms(100);
  ASSERT_TRUE(eventually([&] { return sampler.stats().xid_events == 1201; }));
  sampler.stop();
  batch = sampler.drain();
  ASSERT_EQ(batch.xid_events.size(), 1u);
  EXPECT_EQ(batch.xid_events[0].xid, 43u);
  EXPECT_EQ(batch.xid_events_dropped, 0);
}

// A backend whose device reads cost CPU, to see whose CPU time is counted.
class CpuHungryBackend final : public GpuBackend {
 public:
  std::string name() const override { return "cpu-hungry"; }
  bool simulated() const override { return true; }
  std::string version() const override { return "test"; }
  Result<std::vector<DeviceInfo>> devices() override { return std::vector<DeviceInfo>{}; }
  Result<DeviceSample> sample_device(int index) override {
    burn_cpu_ms(5);
    DeviceSample sample;
    sample.device = index;
    return sample;
  }
  Result<std::vector<ProcessSample>> sample_processes(int) override {
    return std::vector<ProcessSample>{};
  }
};

TEST(GpuSampler, CountsOnlyTheSamplingThreadsCpuTime) {
  SystemClock clock;
  CpuHungryBackend hungry;
  GpuSampler busy(hungry, clock, {0}, {.period_ms = 1, .process_period_ms = 0});
  busy.start();
  ASSERT_TRUE(eventually([&] { return busy.stats().device_samples >= 10; }));
  busy.stop();
  EXPECT_GE(busy.stats().thread_cpu_ms, 40);

  auto sim = make_sim(clock);
  GpuSampler idle(*sim, clock, {0}, {.period_ms = 50, .process_period_ms = 0});
  idle.start();
  burn_cpu_ms(200);  // this thread's CPU time is not the sampler's
  idle.stop();
  EXPECT_LT(idle.stats().thread_cpu_ms, 100);
}

class FakeProcessTable final : public ProcessTable {
 public:
  explicit FakeProcessTable(std::map<pid_t, pid_t> parents) : parents_(std::move(parents)) {}
  std::optional<pid_t> parent_of(pid_t pid) const override {
    auto it = parents_.find(pid);
    if (it == parents_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<pid_t, pid_t> parents_;
};

TEST(JobAttributor, FindsTheJobOfAProcessOrItsAncestors) {
  // 1 <- 10 (job 7's root) <- 11 (python launcher) <- 12 (worker); 20 unrelated.
  FakeProcessTable table({{10, 1}, {11, 10}, {12, 11}, {20, 1}, {1, 0}});
  JobAttributor attributor(table);
  attributor.add_job(10, 7);
  EXPECT_EQ(attributor.job_for(10), 7);
  EXPECT_EQ(attributor.job_for(12), 7);
  EXPECT_EQ(attributor.job_for(20), std::nullopt);
  EXPECT_EQ(attributor.job_for(999), std::nullopt);  // gone from the table
  attributor.remove_job(10);
  EXPECT_EQ(attributor.job_for(12), std::nullopt);
}

TEST(JobAttributor, StopsOnCyclesAndDeepChains) {
  FakeProcessTable cycle({{5, 6}, {6, 5}});
  JobAttributor in_cycle(cycle);
  in_cycle.add_job(99, 1);
  EXPECT_EQ(in_cycle.job_for(5), std::nullopt);

  std::map<pid_t, pid_t> chain;
  for (pid_t pid = 1000; pid < 1100; ++pid) chain[pid + 1] = pid;  // 1100 <- ... <- 1000
  FakeProcessTable deep(chain);
  JobAttributor attributor(deep);
  attributor.add_job(1000, 3);
  EXPECT_EQ(attributor.job_for(1064), 3);  // 64 levels up
  EXPECT_EQ(attributor.job_for(1065), std::nullopt);
}

TEST(ProcfsProcessTable, FindsTheParentOfAForkedChildWithAnAwkwardName) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    prctl(PR_SET_NAME, "a) (b c) d", 0, 0, 0);  // comm with spaces and parentheses
    const char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  close(ready[1]);

  ProcfsProcessTable table;
  EXPECT_EQ(table.parent_of(child), getpid());
  EXPECT_EQ(table.parent_of(getpid()), getppid());
  JobAttributor attributor(table);
  attributor.add_job(getpid(), 42);
  EXPECT_EQ(attributor.job_for(child), 42);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(table.parent_of(child), std::nullopt);
}

}  // namespace
}  // namespace colo
