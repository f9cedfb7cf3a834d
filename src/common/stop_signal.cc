#include "common/stop_signal.h"

#include <signal.h>

#include <atomic>

namespace colo {
namespace {

std::atomic<int> g_last_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

}  // namespace

void note_stop_signal(int signo) { g_last_stop_signal.store(signo, std::memory_order_relaxed); }

std::string stop_signal_name(const std::string& otherwise) {
  switch (const int signo = g_last_stop_signal.load(std::memory_order_relaxed)) {
    case 0:
      return otherwise;
    case SIGINT:
      return "Ctrl-C";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(signo);
  }
}

}  // namespace colo
