#include "serve/sample_thinning.h"

#include <algorithm>

namespace colo {

SampleThinning::SampleThinning(RunStore& store, Clock& clock, std::ostream& log, int64_t run_id,
                               int64_t full_for_ms, int64_t every_ms)
    : store_(store),
      clock_(clock),
      log_(log),
      run_id_(run_id),
      full_for_ms_(full_for_ms),
      every_ms_(every_ms),
      thinned_to_ms_(span_start(clock.now_ms())),
      next_ms_(clock.monotonic_ms() + kSampleThinningMs) {}

UnixMillis SampleThinning::span_start(UnixMillis ms) const {
  const int64_t every = std::max<int64_t>(1, every_ms_);
  return ms - ms % every;
}

void SampleThinning::tick() {
  if (every_ms_ <= 0 || clock_.monotonic_ms() < next_ms_) return;
  next_ms_ = clock_.monotonic_ms() + kSampleThinningMs;
  const UnixMillis until = span_start(clock_.now_ms() - full_for_ms_);
  if (until <= thinned_to_ms_) return;
  Result<int64_t> removed = store_.thin_samples(run_id_, thinned_to_ms_, until, every_ms_);
  if (!removed.ok()) {
    log_ << "warning: samples not thinned (tried again in 10 minutes): "
         << removed.error().message() << '\n';
    return;
  }
  thinned_to_ms_ = until;
}

}  // namespace colo
