// MechanismRecovery: the health of a run's mechanism while it has work, and
// its restart after it failed under running jobs (the MPS server or control
// daemon died).
//
// The engine asks check() every tick: every health_check_ms, while the run
// has jobs queued or running, the mechanism's health check runs, and every
// kWatchMs in between, its cheaper watch() (MPS: a server that dies is seen
// even when it lived less than health_check_ms). An MPS
// mechanism that fails it is down (check() says so once: the engine then
// stops its running jobs, to run them again); another mechanism is warned
// about once per episode and left up. A job failure the mechanism explains
// (Mechanism::check_after_job_failure) marks it down through failed(). While
// it is down no job is placed, and once no job runs, restart() tears it down
// and prepares it again, every health_check_ms until it comes back.
//
// Not thread-safe: the engine's thread owns it. Borrows the mechanism and
// the clock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "gpu/gpu_backend.h"
#include "sharing/mechanism.h"

namespace colo {

class MechanismRecovery {
 public:
  using Say = std::function<void(const std::string&)>;

  MechanismRecovery(Mechanism& mechanism, Clock& clock, int64_t health_check_ms);

  static constexpr int64_t kWatchMs = 1'000;

  // The first check comes one period from now.
  void start();
  // Why the mechanism is down ("the mps mechanism failed: ..."); empty when it is up.
  const std::string& down() const { return down_; }
  // The periodic check (see the file comment); true when the mechanism has
  // just gone down.
  bool check(bool has_work, const Say& say);
  // The mechanism failed under the running jobs: down, to be restarted as
  // soon as they are gone.
  void failed(const std::string& reason);
  // While down, once due: tear down and prepare again on `devices`.
  void restart(const std::vector<DeviceInfo>& devices, const Say& say);

 private:
  Mechanism& mechanism_;
  Clock& clock_;
  int64_t period_ms_;
  int64_t next_ms_ = 0;
  int64_t next_watch_ms_ = 0;
  std::string down_;
  bool warned_ = false;
};

}  // namespace colo
