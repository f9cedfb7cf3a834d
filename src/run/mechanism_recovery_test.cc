#include "run/mechanism_recovery.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

// An MPS-kind mechanism that counts its health checks and watches.
class CountingMechanism final : public Mechanism {
 public:
  MechanismKind kind() const override { return MechanismKind::kMps; }
  int max_jobs_per_device() const override { return 48; }
  Status prepare(const std::vector<DeviceInfo>&) override { return OkStatus(); }
  Result<Environment> environment_for(const Placement&) override { return Environment{}; }
  Status health_check() override {
    ++checks;
    if (!healthy) return Error("the control daemon does not answer");
    return OkStatus();
  }
  void watch() override { ++watches; }
  Status teardown() override { return OkStatus(); }
  bool healthy = true;
  int checks = 0;
  int watches = 0;
};

TEST(MechanismRecovery, WatchesEverySecondAndChecksEveryPeriodWhileThereIsWork) {
  FakeClock clock;
  CountingMechanism mechanism;
  MechanismRecovery recovery(mechanism, clock, 5'000);
  recovery.start();
  const auto say = [](const std::string&) {};
  for (int tick = 0; tick < 100; ++tick) {  // 10 s of 100 ms ticks
    EXPECT_FALSE(recovery.check(/*has_work=*/true, say));
    clock.advance_ms(100);
  }
  EXPECT_EQ(mechanism.checks, 1);   // at 5 s
  EXPECT_EQ(mechanism.watches, 9);  // at 0-4 s and 6-9 s: every second the check does not run

  const int checks = mechanism.checks, watches = mechanism.watches;
  for (int tick = 0; tick < 100; ++tick) {
    recovery.check(/*has_work=*/false, say);
    clock.advance_ms(100);
  }
  EXPECT_EQ(mechanism.checks, checks) << "nothing runs: nothing to check";
  EXPECT_EQ(mechanism.watches, watches);

  mechanism.healthy = false;
  bool down = false;
  for (int tick = 0; tick < 60 && !down; ++tick) {
    down = recovery.check(true, say);
    clock.advance_ms(100);
  }
  EXPECT_TRUE(down);
  EXPECT_NE(recovery.down().find("the mps mechanism failed: the control daemon"),
            std::string::npos);
  const int watched = mechanism.watches;
  recovery.check(true, say);
  clock.advance_ms(2'000);
  recovery.check(true, say);
  EXPECT_EQ(mechanism.watches, watched) << "a mechanism that is down is not watched";
}

}  // namespace
}  // namespace colo
