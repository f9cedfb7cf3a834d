#include "common/stop_signal.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace colo {
namespace {

// Issue 33, item 18: colo told a SIGTERM'd run to press "Ctrl-C again", and
// a Ctrl-C'd service to send "SIGTERM again". The name follows the signal.
TEST(StopSignal, NamesTheSignalThatLastAskedToStop) {
  EXPECT_EQ(stop_signal_name("Ctrl-C"), "Ctrl-C") << "none noted yet";
  note_stop_signal(SIGTERM);
  EXPECT_EQ(stop_signal_name("Ctrl-C"), "SIGTERM");
  note_stop_signal(SIGINT);
  EXPECT_EQ(stop_signal_name("SIGTERM"), "Ctrl-C");
  note_stop_signal(SIGUSR1);
  EXPECT_EQ(stop_signal_name("x"), "signal " + std::to_string(SIGUSR1));
}

}  // namespace
}  // namespace colo
