#include "run/mechanism_recovery.h"

#include <fmt/format.h>

#include "common/units.h"

namespace colo {

MechanismRecovery::MechanismRecovery(Mechanism& mechanism, Clock& clock, int64_t health_check_ms)
    : mechanism_(mechanism), clock_(clock), period_ms_(health_check_ms) {}

void MechanismRecovery::start() { next_ms_ = clock_.monotonic_ms() + period_ms_; }

bool MechanismRecovery::check(bool has_work, const Say& say) {
  const int64_t now = clock_.monotonic_ms();
  if (!down_.empty()) return false;
  if (now < next_ms_) {
    if (has_work && now >= next_watch_ms_) {
      next_watch_ms_ = now + kWatchMs;
      mechanism_.watch();
    }
    return false;
  }
  next_ms_ = now + period_ms_;
  next_watch_ms_ = now + kWatchMs;
  if (!has_work) return false;
  Status health = mechanism_.health_check();
  if (health.ok()) {
    warned_ = false;
    return false;
  }
  if (mechanism_.kind() == MechanismKind::kMps) {
    failed(health.error().message());
    return true;
  }
  if (!warned_) {
    warned_ = true;
    say(fmt::format("warning: {} mechanism unhealthy: {}", to_string(mechanism_.kind()),
                    health.error().message()));
  }
  return false;
}

void MechanismRecovery::failed(const std::string& reason) {
  down_ = fmt::format("the {} mechanism failed: {}", to_string(mechanism_.kind()), reason);
  next_ms_ = clock_.monotonic_ms();  // restart as soon as the jobs are gone
}

void MechanismRecovery::restart(const std::vector<DeviceInfo>& devices, const Say& say) {
  if (down_.empty() || clock_.monotonic_ms() < next_ms_) return;
  (void)mechanism_.teardown();
  next_ms_ = clock_.monotonic_ms() + period_ms_;
  if (Status s = mechanism_.prepare(devices); !s.ok()) {
    say(fmt::format("could not restart the {} mechanism ({}); trying again in {}",
                    to_string(mechanism_.kind()), s.error().message(),
                    format_duration_ms(period_ms_)));
    (void)mechanism_.teardown();
    return;
  }
  say(fmt::format("{} mechanism restarted; the queue resumes", to_string(mechanism_.kind())));
  down_.clear();
  warned_ = false;
}

}  // namespace colo
