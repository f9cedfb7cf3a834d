#include "common/clock.h"

#include <thread>

namespace colo {

void SystemClock::sleep_for_ms(int64_t ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace colo
