// SampleOrder: the one stream of samples a shared loader produces, epoch
// after epoch. Stream position p is sample order(p / N)[p % N] of a dataset
// of N samples.
//
// Every consumer reads N consecutive stream positions per epoch, starting
// wherever it joined (offset o = start % N). For that window to hold every
// sample exactly once, the first o positions of the next epoch must hold the
// same samples as the first o of this one. So the next epoch's order is this
// one's, shuffled within the segments cut at the offsets of the consumers
// present (advance()); with no consumer joined mid-epoch it is a full
// reshuffle. Offsets of consumers that left no longer cut.
//
// Orders are kept for the latest epoch and the one before it. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace colo {

class SampleOrder {
 public:
  // Epoch 0 is a full shuffle of 0..dataset_size-1.
  SampleOrder(uint64_t dataset_size, uint64_t seed);

  uint64_t dataset_size() const { return size_; }
  // The newest epoch with an order.
  int64_t latest_epoch() const { return latest_; }
  // The sample at stream position `position`, whose epoch must be the latest
  // or the one before.
  uint32_t sample_at(uint64_t position) const;
  // Generates the order of epoch latest_epoch() + 1, cut at `offsets`
  // (positions within an epoch; 0 and repeats are ignored).
  void advance(std::vector<uint64_t> offsets);

 private:
  uint64_t size_;
  uint64_t seed_;
  int64_t latest_ = 0;
  std::vector<uint32_t> current_;
  std::vector<uint32_t> previous_;
};

}  // namespace colo
