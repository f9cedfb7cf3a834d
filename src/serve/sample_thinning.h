// The service's sample retention (ServeOptions::samples_full_for_ms): its
// run's samples are kept at the sampling rate for `full_for_ms`; every
// kSampleThinningMs, those that aged past it since the last time are thinned
// to one per GPU and process every `every_ms` (RunStore::thin_samples). The
// run is still running: what its samples give is derived when it has ended,
// from what is left of them. Not thread-safe; borrows the store, clock and log.
#pragma once

#include <cstdint>
#include <ostream>

#include "common/clock.h"
#include "store/run_store.h"

namespace colo {

class SampleThinning {
 public:
  static constexpr int64_t kSampleThinningMs = 600'000;  // 10 minutes

  // Thins only what run `run_id` sampled from now on; `every_ms` 0 never thins.
  SampleThinning(RunStore& store, Clock& clock, std::ostream& log, int64_t run_id,
                 int64_t full_for_ms, int64_t every_ms);

  // Thins what aged since the last time, when kSampleThinningMs have passed;
  // a failure is logged and tried again next time.
  void tick();

 private:
  // The start of the thinning span that holds `ms`.
  UnixMillis span_start(UnixMillis ms) const;

  RunStore& store_;
  Clock& clock_;
  std::ostream& log_;
  const int64_t run_id_;
  const int64_t full_for_ms_;
  const int64_t every_ms_;
  UnixMillis thinned_to_ms_;  // everything of the run before it is thinned
  int64_t next_ms_;           // monotonic
};

}  // namespace colo
