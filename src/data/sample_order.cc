#include "data/sample_order.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace colo {
namespace {

void shuffle_range(std::vector<uint32_t>& v, uint64_t from, uint64_t to, std::mt19937_64& rng) {
  for (uint64_t i = to; i > from + 1; --i) {
    std::uniform_int_distribution<uint64_t> pick(from, i - 1);
    std::swap(v[i - 1], v[pick(rng)]);
  }
}

std::mt19937_64 epoch_rng(uint64_t seed, int64_t epoch) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(epoch), static_cast<uint32_t>(epoch >> 32), 0x5eedU};
  return std::mt19937_64(seq);
}

}  // namespace

SampleOrder::SampleOrder(uint64_t dataset_size, uint64_t seed)
    : size_(dataset_size), seed_(seed), current_(dataset_size) {
  std::iota(current_.begin(), current_.end(), 0U);
  std::mt19937_64 rng = epoch_rng(seed_, 0);
  shuffle_range(current_, 0, size_, rng);
}

uint32_t SampleOrder::sample_at(uint64_t position) const {
  const auto epoch = static_cast<int64_t>(position / size_);
  assert(epoch == latest_ || epoch == latest_ - 1);
  const std::vector<uint32_t>& order = epoch == latest_ ? current_ : previous_;
  return order[position % size_];
}

void SampleOrder::advance(std::vector<uint64_t> offsets) {
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  previous_ = current_;
  ++latest_;
  std::mt19937_64 rng = epoch_rng(seed_, latest_);
  uint64_t from = 0;
  for (uint64_t cut : offsets) {
    if (cut == 0 || cut >= size_) continue;
    shuffle_range(current_, from, cut, rng);
    from = cut;
  }
  shuffle_range(current_, from, size_, rng);
}

}  // namespace colo
